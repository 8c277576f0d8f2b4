#!/usr/bin/env bash
# The C++ of harness/ and tests/ in the house style (.clang-format).
#   scripts/format.sh           reformat in place
#   scripts/format.sh --check   exit 1 naming the files that differ (CI runs this)
# Kernel sources (.cu) are left alone: their bytes are hashed into the records. Skipped with
# the reason where clang-format is missing, except in CI (CI set), where it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
formatter=${CLANG_FORMAT:-clang-format}
if ! command -v "$formatter" >/dev/null; then
  if [ -n "${CI:-}" ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-format >/dev/null
  else
    echo "format.sh: skipped: no clang-format (install it, or set CLANG_FORMAT)" >&2
    exit 0
  fi
fi
mapfile -t files < <(git ls-files 'harness/*.cpp' 'harness/*.h' 'tests/*.cpp' 'tests/*.h')
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    "$formatter" --style=file "$f" | cmp -s - "$f" || bad+=("$f")
  done
  if ((${#bad[@]})); then
    echo "format.sh: not in the house style (run scripts/format.sh): ${bad[*]}" >&2
    exit 1
  fi
  echo "format.sh: ${#files[@]} files in the house style"
else
  "$formatter" --style=file -i "${files[@]}"
fi
