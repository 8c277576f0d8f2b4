#!/usr/bin/env bash
# The release checks of 2026-11-26 on the H200, one device call per step, everything packed into
# one archive under $OUT (a call returns at most 8 files). Run from the repository root.
#   release_check.sh gate     build every target; ctest -L gpu (run 1); per-candidate GPU-s of the
#                             old tree ($EVO_OLD, main at 2ce758f) against this one; a stage-0 run
#                             whose records show the timing-integrity fields and the tier
#   release_check.sh repeat   scripts/setup.sh on a fresh copy with a GCC 13 warning count, then
#                             ctest -L gpu runs 2 and 3 there (setup_h200.sh)
#   release_check.sh export   lab/device-sessions/export.sh (issue 24)
#   release_check.sh final    every target, ctest -L gpu verbose (each trick's verdict), export.sh
#   release_check.sh search   every target, ctest -L gpu once, then search.sh resumes the stage-7
#                             dataset with what is left of SEARCH_WALL_S (default 330)
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT}"
export XDG_CACHE_HOME=/tmp/evo-cache PYTHONUNBUFFERED=1
final=$OUT
OUT=/tmp/evo-release-out && rm -rf "$OUT" && mkdir -p "$OUT"
export OUT
pack() { tar -C "$OUT" -czf "$final/$1.tgz" . ; ls -la "$OUT" > "$final/$1-files.txt"; }
ctest_gpu() {  # run number
  echo "== ctest -L gpu, run $1 ($(date -u +%FT%TZ))" >>"$OUT/ctest-gpu.log"
  timeout 330 ctest --test-dir build -L gpu --output-on-failure >>"$OUT/ctest-gpu.log" 2>&1
  echo "ctest -L gpu run $1 exit $?" | tee -a "$OUT/ctest-gpu.log"
  grep -E "tests passed|Passed|Failed|\*\*\*" "$OUT/ctest-gpu.log" | tail -12
}
case "${1:?gate|repeat|export}" in
  gate)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
    (cmake --preset release >/dev/null && cmake --build --preset release -j 16) >"$OUT/build.log" 2>&1
    echo "build exit $? warnings $(grep -c 'warning:' "$OUT/build.log")"
    ctest_gpu 1
    EVO_OLD=$PWD/.dev/old timeout 200 bash lab/device-sessions/timing.sh cost
    timeout 150 bash lab/device-sessions/timing.sh stage0 | tail -25
    pack gate ;;
  repeat)
    # ctest -L gpu runs 2 and 3 in the fresh copy that scripts/setup.sh builds (GCC 13 warnings counted)
    CPU_TESTS=0 GPU_RUNS=2 timeout 560 bash lab/device-sessions/setup_h200.sh
    echo "setup: $(tail -1 "$OUT/setup.log")"; cat "$OUT/warnings.txt"
    grep -E "run [0-9] exit|tests passed|Failed|\*\*\*" "$OUT/ctest-gpu.log" | tail -12
    pack repeat ;;
  export)
    timeout 380 bash lab/device-sessions/export.sh
    pack export ;;
  search)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
    (cmake --preset release >/dev/null && cmake --build build -j 16) >"$OUT/build.log" 2>&1
    echo "build exit $? warnings $(grep -c 'warning:' "$OUT/build.log")"
    ctest_gpu 1
    EVO=$PWD/build/harness/evo WALL_S=${SEARCH_WALL_S:-330} timeout 400 bash lab/device-sessions/search.sh
    pack search ;;
  final)  # every target built (the release preset's build builds evo only), ctest -L gpu verbose, export
    (cmake --preset release >/dev/null && cmake --build build -j 16) >"$OUT/build.log" 2>&1
    echo "build exit $? warnings $(grep -c 'warning:' "$OUT/build.log")"
    echo "== ctest -L gpu -V ($(date -u +%FT%TZ))" >"$OUT/ctest-gpu-verbose.log"
    timeout 200 ctest --test-dir build -L gpu -V >>"$OUT/ctest-gpu-verbose.log" 2>&1
    echo "ctest -L gpu exit $?"; grep -E "tests passed|Test +#" "$OUT/ctest-gpu-verbose.log" | tail -8
    timeout 330 bash lab/device-sessions/export.sh
    pack final ;;
esac
