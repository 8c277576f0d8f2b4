#!/usr/bin/env bash
# Issue 31: does the builtin's model learn a landscape, judged against many permuted ones, and
# what does the model-free `spacefill` (the builtin's screens without its model) do? CPU only.
# Figures and reading: lab/notes/ablation-20261201-permutations.md. Run from the repository root
# after `cmake --preset ci && ninja -C build evo`. PERMS (default 1..20) permuted landscapes per
# dataset for builtin and screened (seeds 1001-1040 each); spacefill on the measured landscape.
# About 60 CPU-minutes on this 2-core machine for the two 608-configuration domains (the
# builtin's GP dominates); DATASETS narrows it. OUT (default /tmp/ablation-perm) gets one line per
# (dataset, permutation) and summary.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/ablation-perm}
PERMS=${PERMS:-$(seq -s ' ' 1 20)}
DATASETS=${DATASETS:-$(ls results/datasets/*.json)}
mkdir -p "$OUT"
evo=build/harness/evo
gpu_s_to_2() { grep '^| GPU-s to 2 %' | sed 's/^| GPU-s to 2 % | //'; }
: >"$OUT/lines.txt"
for d in $DATASETS; do
  n=$(basename "$d" .json)
  echo "$n permute=0: $($evo ablate "$d" --strategies builtin screened spacefill | gpu_s_to_2)" >>"$OUT/lines.txt"
  for p in $PERMS; do
    echo "$n permute=$p: $($evo ablate "$d" --strategies builtin screened --permute "$p" | gpu_s_to_2)" >>"$OUT/lines.txt"
  done
done
python3 - "$OUT/lines.txt" >"$OUT/summary.md" <<'PY'
import re, statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) permute=(\d+): (.*)", line.strip())
    vals = [float(x) for x in re.findall(r"([\d.]+) \[", m.group(3))]
    rows.setdefault(m.group(1), {})[int(m.group(2))] = vals
print("| dataset | builtin | screened | spacefill | permuted: builtin median [range] | screened median | builtin / screened median | landscapes where the builtin did as well as on the measured one | where its ratio was as low |")
print("|---|---:|---:|---:|---|---:|---:|---:|---:|")
for n, by in rows.items():
    real = by[0]
    perm = [v for p, v in sorted(by.items()) if p > 0]
    b, s = [v[0] for v in perm], [v[1] for v in perm]
    r = [x / y for x, y in zip(b, s)]
    print(f"| {n} | {real[0]} | {real[1]} | {real[2]} | {st.median(b):.1f} [{min(b)} – {max(b)}] | {st.median(s):.1f} | "
          f"{st.median(r):.2f} | {sum(x <= real[0] for x in b)} of {len(b)} | {sum(x <= real[0] / real[1] for x in r)} of {len(r)} |")
PY
cat "$OUT/summary.md"
