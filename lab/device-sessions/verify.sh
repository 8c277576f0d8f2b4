#!/usr/bin/env bash
# The whole merged tree on the GPU host in one call (16 cores; the build machine has 2): the
# README's quick start on a fresh copy (setup.sh), every target with GCC 13 warnings counted,
# ctest -L 'unit|nvrtc' and ctest -L gpu (adversarial verdicts printed). Files: setup.log,
# warnings.txt, ctest-cpu.log, ctest-gpu.log. Run from the repository root with $OUT set.
# CPU_S and GPU_S (200, 200) bound the two ctest steps; CPU_S=0 skips the CPU labels, and
# GPU_S=400 leaves the deep-tier adversarial test (first run: its time is not known) room.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT}"
export XDG_CACHE_HOME=/tmp/evo-cache PYTHONUNBUFFERED=1
fresh=/tmp/evo-fresh
rm -rf "$fresh"; mkdir -p "$fresh"
tar --exclude=./build --exclude='./build-*' --exclude=./.git --exclude=./.dev -cf - . | tar -xf - -C "$fresh"
cd "$fresh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/warnings.txt"
{ c++ --version | head -1; cmake --version | head -1; } >>"$OUT/warnings.txt"
start=$(date +%s)
scripts/setup.sh >"$OUT/setup.log" 2>&1
echo "setup.sh exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/setup.log"
cmake --build build -j 16 -- -k 0 >"$OUT/build-all.log" 2>&1
echo "build of every target: exit $?; GCC warnings: $(grep -c 'warning:' "$OUT/build-all.log")" | tee -a "$OUT/warnings.txt"
grep -E 'warning:|error:' "$OUT/build-all.log" | head -20 >>"$OUT/warnings.txt"
echo "built at ${SECONDS}s"
if [ "${CPU_S:-200}" != 0 ]; then  # CPU_S=0: CI already ran these on the merged tree; give the GPU the time
  timeout "${CPU_S:-200}" ctest --test-dir build -L 'unit|nvrtc' -j 14 --timeout 190 >"$OUT/ctest-cpu.log" 2>&1
  echo "ctest -L unit|nvrtc exit $? at ${SECONDS}s"; grep -E "tests passed|\(Failed\)|\(Timeout\)" "$OUT/ctest-cpu.log" | head -12
fi
timeout "${GPU_S:-200}" ctest --test-dir build -L gpu -V >"$OUT/ctest-gpu.log" 2>&1
echo "ctest -L gpu exit $? at ${SECONDS}s"; grep -E "tests passed|\(Failed\)|Passed|Failed" "$OUT/ctest-gpu.log" | tail -8
grep -E "^verdict" "$OUT/ctest-gpu.log" | awk '{v=$3; e=$5; gsub(/\)/,"",e); if (v!=e) print}' | cut -c1-160
rm -f "$OUT/build-all.log"
