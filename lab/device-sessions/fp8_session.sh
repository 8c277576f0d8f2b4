#!/usr/bin/env bash
# The fp8 device calls (docs/fp8.md), each one call of at most 10 minutes. Everything that must
# come back goes under $OUT. The cuDNN frontend wheel travels in the carried folder named by
# $EVO_WHEELS (the device has no PyPI).
#   lab/device-sessions/fp8_session.sh calibrate   # build; fp8 GPU tests; cuDNN FP8 error -> tolerances; a smoke run of stage 3
#   lab/device-sessions/fp8_session.sh run         # build; evo run stage 3 on fp8-d64,fp8-d128 --sanitize; cuDNN FP8 peers; mission shape
#   lab/device-sessions/fp8_session.sh causal      # build; the causal fp8 tasks on mission + long-smoke --sanitize; their cuDNN FP8 peers
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
source lab/device-sessions/device_steps.sh
device_env
evo=build/harness/evo

build() { [ -x "$evo" ] || build_evo || exit 1; }  # all targets: `calibrate` runs GPU tests

case "${1:-}" in
  calibrate)
    gpu_info
    install_wheels
    build
    python3 -c 'import torch, cudnn; print("torch", torch.__version__, "cudnn backend", cudnn.backend_version(), "frontend", cudnn.__version__)' | tee -a "$OUT/gpu.txt"
    timeout 150 ctest --test-dir build -L gpu -R 'GpuReference|Fp8' --output-on-failure -V > "$OUT/ctest-fp8.log" 2>&1
    echo "ctest exit $?" | tee -a "$OUT/ctest-fp8.log"
    grep -E "Passed|Failed|adversarial/|tests passed" "$OUT/ctest-fp8.log" | tail -12
    timeout 200 python3 scripts/calibrate_fp8.py --gates gates/gates.json --out "$OUT/nvidia-h200-fp8.json" 2>&1 | tee "$OUT/calibrate.log" | tail -12
    timeout 120 $evo run --stage 3 --task fp8-d64 --budget 4 --bench mission --results-dir /tmp/smoke \
      --populations-dir /tmp/smoke-pop 2>&1 | tee "$OUT/smoke.log" | tail -15
    cp /tmp/smoke/*.jsonl "$OUT/" 2>/dev/null
    ;;
  run)
    install_wheels
    build
    timeout 420 $evo run --stage 3 --task fp8-d64,fp8-d128 --sanitize --results-dir /tmp/fp8-results \
      --populations-dir /tmp/fp8-pop 2>&1 | tee "$OUT/stage3-fp8.log" | tail -25
    timeout 120 python3 scripts/peers_cudnn_fp8.py --tasks fp8-d64,fp8-d128 --out "$OUT/peers-fp8.json" 2>&1 | tee "$OUT/peers-fp8.log" | tail -12
    cp /tmp/fp8-results/*.jsonl "$OUT/" 2>/dev/null
    ;;
  causal)
    install_wheels
    build
    timeout 300 $evo run --stage 3 --task fp8-d64-causal,fp8-d128-causal --bench mission,long-smoke --sanitize \
      --results-dir /tmp/fp8-results --populations-dir /tmp/fp8-pop 2>&1 | tee "$OUT/stage3-fp8-causal.log" | tail -14
    timeout 100 python3 scripts/peers_cudnn_fp8.py --tasks fp8-d64-causal,fp8-d128-causal --sets mission,long-smoke \
      --out "$OUT/peers-fp8-causal.json" 2>&1 | tee "$OUT/peers-fp8-causal.log" | tail -6
    cp /tmp/fp8-results/*.jsonl "$OUT/" 2>/dev/null
    ;;
  *)
    echo "usage: lab/device-sessions/fp8_session.sh calibrate|run|causal" >&2
    exit 1
    ;;
esac
