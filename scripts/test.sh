#!/usr/bin/env bash
# Quick start, step 2: the whole test suite. Configure, build and run every CTest label
# (unit, nvrtc, and gpu — which skips with a reason where there is no GPU), then the parser
# fuzz smoke runs under ASan/UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --workflow --preset ci
if [ -f tests/fuzz/CMakeLists.txt ]; then
  cmake --preset fuzz >/dev/null
  # Only the fuzz targets: the rest of the suite already ran under the ci preset above.
  cmake --build --preset fuzz --target fuzz_variant fuzz_records fuzz_population fuzz_gates
  ctest --preset fuzz -R fuzz
fi
# The figures the safety tests print (CTest keeps every test's output in LastTest.log).
echo "== figures"
grep -hE "^(kills=|concurrent (appenders|merges):)" build/Testing/Temporary/LastTest.log || true
grep -hE "^Done [0-9]+ runs in" build-fuzz/Testing/Temporary/LastTest.log 2>/dev/null || true
