#!/usr/bin/env bash
# Quick start, step 2: the whole test suite. Configure, build and run every CTest label (unit,
# nvrtc, gpu and cluster, which skip with a reason where there is no GPU or no Slurm), then the
# parser fuzz smoke under ASan/UBSan, then the project's standing checks (layout and format).
#
# In CI (CI set, as .ci/run does) warnings are errors and the fuzz smoke must run; elsewhere a
# newer compiler's new warning does not stop the suite, and without clang the fuzz smoke is
# skipped with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=release
[ -n "${CI:-}" ] && preset=ci
scripts/install-deps.sh --tests
cmake --workflow --preset "$preset"

fuzz=1
if ! scripts/install-deps.sh --fuzz; then
  [ -n "${CI:-}" ] && { echo "test.sh: the fuzz smoke cannot run in CI (no clang with libFuzzer)" >&2; exit 2; }
  echo "test.sh: fuzz smoke skipped: clang with its libFuzzer runtime is not installed" >&2
  fuzz=0
fi
if ((fuzz)); then
  cmake --preset fuzz >/dev/null
  # Only the fuzz targets: the rest of the suite already ran above.
  cmake --build --preset fuzz --target fuzz_variant fuzz_records fuzz_population fuzz_gates
  ctest --preset fuzz -R fuzz
fi

echo "== standing checks"
python3 scripts/code_stats.py --check
scripts/format.sh --check

# The figures the safety tests print (CTest keeps every test's output in LastTest.log).
echo "== figures"
grep -hE "^(kills=|concurrent (appenders|merges):)" build/Testing/Temporary/LastTest.log || true
grep -hE "^Done [0-9]+ runs in" build-fuzz/Testing/Temporary/LastTest.log 2>/dev/null || true
