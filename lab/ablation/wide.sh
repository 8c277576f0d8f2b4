#!/usr/bin/env bash
# Issue 31, the wide stage-9 fp16-d64 domain (lab/notes/hard-domain-plan.md, option A): the
# pre-registered ablation and decision rule, CPU only. Figures and reading:
# lab/notes/ablation-20261129-wide.md. Run from the repository root after
# `cmake --preset ci && ninja -C build evo`; OUT (default /tmp/ablation-wide) gets one file per
# command. About 25 minutes on a shared 2-core machine (the builtin with a prior is the slowest).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/ablation-wide}
mkdir -p "$OUT"
evo=build/harness/evo
D=results/datasets/nvidia-h200-stage9-fp16-d64-wide.json
P=results/datasets/nvidia-h200-stage9-bf16-d128.json

# The landscape, and the 161 configurations the committed fp16-d64 dataset shares with it
# (run-to-run noise, the fenced split_kv_tma's cost, where its +2.02 % runner-up went).
python3 - "$D" results/datasets/nvidia-h200-stage9-fp16-d64.json >"$OUT/landscape.txt" <<'PY'
import json, statistics as st, sys
new, old = (json.load(open(f)) for f in sys.argv[1:3])
def key(c): return (c["variant"], tuple(sorted(c["params"].items())))
def fit(c, f): return (c.get(f) or {}).get("fitness_us")
def value(d):  # full fitness, else screen x the median full/screen ratio (SimDomain::full_value)
    m = st.median(fit(c, "full") / fit(c, "screen") for c in d["configs"] if fit(c, "full") and fit(c, "screen"))
    return {key(c): fit(c, "full") or fit(c, "screen") * m for c in d["configs"] if c["outcome"] == "ok"}
vn, vo = value(new), value(old)
bn, bo = min(vn.values()), min(vo.values())
print(f"wide: {len(vn)} ok, optimum {bn:.2f} us; committed fp16-d64: {len(vo)} ok, optimum {bo:.2f} us")
for t in (1, 2, 5, 10):
    print(f"within {t} %: {sum(v <= bn * (1 + t / 100) for v in vn.values())}")
print("\ntop 10 of the wide domain (gap, us, in the committed dataset's gap):")
for k, v in sorted(vn.items(), key=lambda kv: kv[1])[:10]:
    was = f"{(vo[k] / bo - 1) * 100:+.2f} %" if k in vo else "new"
    print(f"  {(v / bn - 1) * 100:+.2f} % {v:.2f} {k[0]} {dict(k[1])} (committed: {was})")
both = [k for k in vo if k in vn]
on = {k: c for c in new["configs"] for k in [key(c)]}
oo = {k: c for c in old["configs"] for k in [key(c)]}
for f in ("screen", "full"):
    r = [fit(on[k], f) / fit(oo[k], f) for k in both if fit(on[k], f) and fit(oo[k], f)]
    q = st.quantiles(r, n=4)
    print(f"\nshared, {f} wide/committed: {len(r)} pairs, median {q[1]:.4f}, IQR {q[0]:.4f} - {q[2]:.4f}, "
          f"range {min(r):.4f} - {max(r):.4f}")
PY

# COMPARE.md's sections (fitness with every strategy, permuted seed 1, the hard shape), cached.
$evo ablate $D --write-cache >"$OUT/write-cache.txt"
# The same fitness table uncached (all baselines; seeds 1001-1040, budgets 25/50/100/200).
$evo ablate $D >"$OUT/fitness.md"
# The permuted-landscape controls the rule names (1..3).
for s in 1 2 3; do
  $evo ablate $D --strategies builtin,screened,random --permute $s >"$OUT/permute-$s.md"
done
# A prior (reported beside the rule, not in place of it): bf16-d128's dataset.
$evo ablate $D --strategies builtin,screened --prior $P >"$OUT/prior.md"
$evo ablate $D --strategies builtin,screened --prior $P --permute 1 >"$OUT/prior-permute-1.md"
# The budgets around where builtin and screened separate, for the real-run check (item 4).
$evo ablate $D --strategies builtin,screened --budgets 10,15,20,25,30,40 >"$OUT/item4-budgets.md"
for s in 1001 1002 1003; do  # one seed at a time: its own GPU-s to 2 %
  $evo ablate $D --strategies builtin,screened --seeds $s --budgets 30 >"$OUT/item4-seed-$s.md"
done
grep -h "GPU-s to 2 %" "$OUT"/*.md
