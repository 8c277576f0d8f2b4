#!/usr/bin/env bash
# The stage-7 FP8 device call (variants/7-tma-ws/tma_ws_fp8.cu), one call of at most 10 minutes:
# build; evo run --stage 7 on fp8-d64,fp8-d128 with --sanitize; the cuDNN FP8 peer in the same call.
# Everything that must come back goes under $OUT; the cuDNN frontend wheel travels in the carried
# folder named by $EVO_WHEELS (docs/fp8.md).
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache}
export PYTHONUNBUFFERED=1
evo=build/harness/evo
if [ -n "${EVO_WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$EVO_WHEELS"/*.whl &&
    export PYTHONPATH=/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# BUILD_TARGET=evo when the caller runs no tests (a minute less on the device); the log comes back only on failure.
if ! cmake --build build -j 16 ${BUILD_TARGET:+--target "$BUILD_TARGET"} >"$OUT/build.log" 2>&1; then
  grep -E "error" -A3 "$OUT/build.log" | head -30
  exit 1
fi
rm -f "$OUT/build.log"
timeout "${RUN_TIMEOUT:-330}" $evo run --stage 7 --task "${TASKS:-fp8-d64,fp8-d128}" --budget "${BUDGET:-3}" --sanitize \
  --results-dir /tmp/fp8wg-results --populations-dir /tmp/fp8wg-pop 2>&1 | tee "$OUT/stage7-fp8.log" | tail -30
cp /tmp/fp8wg-results/*.jsonl "$OUT/" 2>/dev/null
timeout "${PEERS_TIMEOUT:-120}" python3 scripts/peers_cudnn_fp8.py --tasks "${TASKS:-fp8-d64,fp8-d128}" --out "$OUT/peers-fp8.json" 2>&1 |
  tee "$OUT/peers-fp8.log" | tail -12
