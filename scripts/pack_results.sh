#!/usr/bin/env bash
# Packs finished records: every results/*.jsonl becomes results/*.jsonl.gz (gzip -9n, so packing
# the same file twice gives the same bytes), which evo reads as it reads the plain file
# (harness/store/records.h). Why: the records are the bulk of the repository (~270 KB a deep-gated
# record, a sixth of that packed), and every device call carries the whole working tree under a
# 64 MiB limit. Run it before committing new records; a file some evo process still appends to
# (its run not finished) must not be packed: name the files then, e.g.
#   scripts/pack_results.sh                      every results/*.jsonl
#   scripts/pack_results.sh results/2026*Z-*.jsonl   only these
set -euo pipefail
cd "$(dirname "$0")/.."
files=("$@")
((${#files[@]})) || files=(results/*.jsonl)
packed=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  case "$f" in *.jsonl) ;; *) echo "pack_results: $f is not a *.jsonl records file" >&2; exit 1 ;; esac
  [ -e "$f.gz" ] && { echo "pack_results: $f.gz exists already; merge or rename $f first" >&2; exit 1; }
  gzip -9n "$f"
  packed=$((packed + 1))
done
echo "pack_results: packed $packed file(s)"
