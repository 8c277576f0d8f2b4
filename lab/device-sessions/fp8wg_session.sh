#!/usr/bin/env bash
# The stage-7 FP8 device call (variants/7-tma-ws/tma_ws_fp8.cu), one call of at most 10 minutes:
# build; evo run --stage 7 on fp8-d64,fp8-d128 with --sanitize; the cuDNN FP8 peer in the same call.
# Everything that must come back goes under $OUT; the cuDNN frontend wheel travels in the carried
# folder named by $EVO_WHEELS (docs/fp8.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
source lab/device-sessions/device_steps.sh
device_env
evo=build/harness/evo
# DEVICE_PREPARED=1: the calling script (h200_fp8_screen.sh) has installed the wheels and built evo.
if [ -z "${DEVICE_PREPARED:-}" ]; then
  install_wheels
  gpu_info
  build_evo || exit 1
fi
timeout "${RUN_TIMEOUT:-330}" $evo run --stage 7 --task "${TASKS:-fp8-d64,fp8-d128}" --budget "${BUDGET:-3}" --sanitize \
  --results-dir /tmp/fp8wg-results --populations-dir /tmp/fp8wg-pop 2>&1 | tee "$OUT/stage7-fp8.log" | tail -30
cp /tmp/fp8wg-results/*.jsonl "$OUT/" 2>/dev/null
timeout "${PEERS_TIMEOUT:-120}" python3 scripts/peers_cudnn_fp8.py --tasks "${TASKS:-fp8-d64,fp8-d128}" --out "$OUT/peers-fp8.json" 2>&1 |
  tee "$OUT/peers-fp8.log" | tail -12
