#!/usr/bin/env bash
# FP8 D=128 on the H200, one device call: build; screen stage 7's tma_ws_fp8 configurations
# (scripts/screen_configs.py) against the previous version of the file on the S >= 2048 shapes;
# cuDNN FP8 on the same shapes in the same call; one Nsight Compute reading of the previous and
# the current default on 8x16x16x2048x2048x128. A screen, not a record: the winner is recorded
# by `evo run --sanitize` with its peers (lab/device-sessions/fp8wg_session.sh).
#   git show main:variants/7-tma-ws/tma_ws_fp8.cu > .dev/fp8old/tma_ws_fp8_v1.cu   (carry .dev/fp8old and .whl)
#   OLD=.dev/fp8old/tma_ws_fp8_v1.cu EVO_WHEELS=.whl lab/device-sessions/h200_fp8_screen.sh
# RECORD_TASKS=fp8-d64,fp8-d128 also records the current file (lab/device-sessions/fp8wg_session.sh) in the same call.
# SCREEN_TASK picks the screened task (fp8-d128); CTEST_GPU=1 ends the call with `ctest -L gpu`.
# The cuDNN frontend wheel travels in the carried folder named by $EVO_WHEELS (docs/fp8.md).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
source lab/device-sessions/device_steps.sh
device_env
evo=build/harness/evo
V=variants/7-tma-ws/tma_ws_fp8.cu
BENCH=${BENCH:-8x16x16x2048x2048x128,2x16x16x8192x8192x128,1x16x16x16384x16384x128}
install_wheels
gpu_info
build_evo evo || exit 1
echo "built at ${SECONDS}s"
# shellcheck disable=SC2086
timeout "${SCREEN_TIMEOUT:-300}" python3 scripts/screen_configs.py --task "${SCREEN_TASK:-fp8-d128}" --stage 7 --bench "$BENCH" ${SCREEN_ARGS:-} \
  ${OLD:+old=$OLD} ${CONFIGS:-$V $V:L_BY_MMA=0 $V:Q_REGS=0 $V:RESCALE_SKIP=0 $V:PINGPONG=1 $V:STAGES=3 $V:PROD_REGS=56} 2>&1 | tee "$OUT/screen.log"
cat /tmp/evo-screen/results/*.jsonl > "$OUT/screen.jsonl" 2>/dev/null
echo "screened at ${SECONDS}s"
if [ -n "${RECORD_TASKS:-}" ]; then
  # Also record: stage 7 on RECORD_TASKS with --sanitize and every task's cuDNN FP8 peers, in this
  # call (lab/device-sessions/fp8wg_session.sh; its peers cover the screened shapes too).
  TASKS=$RECORD_TASKS DEVICE_PREPARED=1 RUN_TIMEOUT=${RUN_TIMEOUT:-200} PEERS_TIMEOUT=${PEERS_TIMEOUT:-180} lab/device-sessions/fp8wg_session.sh
else
  timeout 120 python3 scripts/peers_cudnn_fp8.py --tasks "${SCREEN_TASK:-fp8-d128}" --sets "$BENCH" --out "$OUT/peers-fp8.json" 2>&1 |
    tee "$OUT/peers-fp8.log" | tail -6
fi
echo "peers at ${SECONDS}s"
# Nsight Compute: one benchmark launch of the first two screened roots (c0, c1).
for c in c0 c1; do
  [ -d /tmp/evo-screen/$c ] && [ "$SECONDS" -lt "${NCU_UNTIL_S:-420}" ] || continue
  echo "== ncu $c: $(ls /tmp/evo-screen/$c/variants/7-tma-ws/*.cu)" >> "$OUT/ncu.txt"
  EVO_ROOT=/tmp/evo-screen/$c timeout 90 ncu --clock-control none --target-processes all --kernel-name evo_attn_fwd \
    --launch-skip 20 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
    --section MemoryWorkloadAnalysis \
    $evo run --stage 7 --task fp8-d128 --budget 1 --shapes 1x2x2x64x64x128 --seeds 0 --bench 8x16x16x2048x2048x128 \
    --results-dir /tmp/ncu-$c/results --populations-dir /tmp/ncu-$c/pop >> "$OUT/ncu.txt" 2>&1
done
[ -f "$OUT/ncu.txt" ] && grep -E "== ncu|evo_attn_fwd \(|Duration|Issue Slots|Executed Ipc A|Shared Memory|Pipe|Stall|Warp Cycles" "$OUT/ncu.txt" | head -60
if [ -n "${CTEST_GPU:-}" ]; then
  # The GPU-labelled tests, after the measurements (they need every target built).
  build_evo && (cd build && timeout "${CTEST_TIMEOUT:-200}" ctest -L gpu --output-on-failure 2>&1) > "$OUT/ctest-gpu.log"
  echo "ctest exit $? at ${SECONDS}s" | tee -a "$OUT/ctest-gpu.log"
  tail -4 "$OUT/ctest-gpu.log"
fi
echo "end at ${SECONDS}s"
