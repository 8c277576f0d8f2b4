#!/usr/bin/env bash
# The H200 session of the sampled gate's second part (issue 12), in one device call (≤ 10 min):
# build, the huge set (tests/gpu/huge_test.cpp, then the stage-6 elite of fp16-d64 on it), the
# elites of stages 0-6 of the other tasks under the sampled gate (and fp16-d64's stage 3 again),
# then `ctest -L gpu` (adversarial suite included). Everything that comes back goes under $OUT.
#   OUT=... lab/device-sessions/gate2_session.sh [all|huge|elites|ctest]   (run on 2026-11-23 at 07:47 UTC: all)
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache}
evo=build/harness/evo
mkdir -p "$OUT/records"

build() {
  [ -x "$evo" ] && [ -x build/tests/evo_tests_gpu ] && return 0
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  if ! cmake --build build -j 16 >"$OUT/build.log" 2>&1; then
    grep -E "error" -A3 "$OUT/build.log" | head -30
    exit 1
  fi
}

huge() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
  timeout 240 ctest --test-dir build -R HugeSet -V > "$OUT/huge-ctest.log" 2>&1
  grep -E "huge case|Passed|Failed|SKIPPED|tests passed|Expected|Which is|reason" "$OUT/huge-ctest.log" | head -20
  # The stage-6 elite of fp16-d64 (wgmma) on the huge set, sampled cases and the mission timing with it.
  timeout 120 python3 scripts/rerun_elites.py --evo "$evo" --results-dir "$OUT/records/huge" --stages 6-6 \
    --tasks fp16-d64 --shapes huge 2>&1 | tee "$OUT/huge-stage6.log" | tail -6
}

elites() {
  timeout 240 python3 scripts/rerun_elites.py --evo "$evo" --results-dir "$OUT/records/elites" --stages 0-6 \
    --tasks fp16-d128,bf16-d128,fp16-d64-causal 2>&1 | tee "$OUT/elites.log" | grep -E "^stage|exit" | head -30
  timeout 60 python3 scripts/rerun_elites.py --evo "$evo" --results-dir "$OUT/records/elites" --stages 3-3 \
    --tasks fp16-d64 2>&1 | tee -a "$OUT/elites.log" | tail -5
}

ctest_gpu() {
  timeout 300 ctest --test-dir build -L gpu -E HugeSet -V > "$OUT/ctest-gpu.log" 2>&1
  grep -E "adversarial candidates|sanitizer-only|tests passed|Failed|Passed" "$OUT/ctest-gpu.log" | tail -12
}

build
case "${1:-all}" in
  huge) huge ;;
  elites) elites ;;
  ctest) ctest_gpu ;;
  all) huge; elites; ctest_gpu ;;
esac
tar -C "$OUT" -czf "$OUT/records.tgz" records && rm -rf "$OUT/records"
