#!/usr/bin/env bash
# The sampled-gate session (issue 12) on the H200, in phases that each fit one device call.
#   lab/device-sessions/gate_session.sh debug     # build, input calibration, ctest -L gpu, the stage-6 elite once
#   lab/device-sessions/gate_session.sh evidence  # ctest -L gpu -V, stages 0-6 elites re-run, stage-6 elite default run
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache}
TASKS=fp16-d64,fp16-d128,bf16-d128,fp16-d64-causal
evo=build/harness/evo

build() {
  [ -x "$evo" ] && return 0
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  if ! cmake --build build -j 16 --target evo evo_tests_gpu >"$OUT/build.log" 2>&1; then
    grep -E "error" -A3 "$OUT/build.log" | head -30
    exit 1
  fi
}

stage6_default() {  # the stage-6 elite of fp16-d64 with the default benchmark: GPU-seconds per candidate
  python3 scripts/rerun_elites.py --evo "$evo" --results-dir "$OUT/stage6-default" --stages 6-6 --tasks fp16-d64 \
    --bench default 2>&1 | tee "$OUT/stage6-default.log"
}

case "${1:-}" in
  debug)
    build
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
    (time python3 scripts/calibrate_tolerances.py --inputs gates/gates.json --out "$OUT/calibration-inputs.json") 2>&1 |
      tail -30 | tee "$OUT/calibration.log"
    (time ctest --test-dir build -L gpu --output-on-failure) 2>&1 | tee "$OUT/ctest-gpu.log" | tail -60
    stage6_default
    ;;
  evidence)
    build
    (time ctest --test-dir build -L gpu -V) >"$OUT/ctest-gpu.log" 2>&1
    grep -E "adversarial candidates|sanitizer-only|tests passed|tests failed|Failed|FAILED|Passed" "$OUT/ctest-gpu.log" | tail -20
    (time python3 scripts/rerun_elites.py --evo "$evo" --results-dir "$OUT/elites" --stages 0-6) 2>&1 | tee "$OUT/elites.log" | tail -70
    stage6_default
    tar czf "$OUT/records.tgz" -C "$OUT" elites stage6-default
    ;;
  short)  # what fits the rest of the device share: elites of fp16-d64, stage-6 default run, the adversarial suite
    build
    stage6_default
    (time python3 scripts/rerun_elites.py --evo "$evo" --results-dir "$OUT/elites" --stages 0-5 --tasks fp16-d64) 2>&1 |
      tee "$OUT/elites.log" | tail -40
    tar czf "$OUT/records.tgz" -C "$OUT" elites stage6-default
    (time timeout "${CTEST_S:-150}" ctest --test-dir build -R Adversarial -V) >"$OUT/ctest-gpu.log" 2>&1
    grep -E "adversarial candidates|Passed|Failed|FAILED|expected verdict|Failure" "$OUT/ctest-gpu.log" | tail -40
    ;;
  *)
    echo "usage: $0 debug|evidence|short" >&2
    exit 1
    ;;
esac
