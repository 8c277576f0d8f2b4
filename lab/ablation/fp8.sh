#!/usr/bin/env bash
# Issue 31, the stage-7 fp8-d128 domain (lab/notes/hard-domain-plan.md, "If it is not hard"): the
# pre-registered ablation and decision rule, CPU only. Figures and reading:
# lab/notes/ablation-20261130-fp8.md. Run from the repository root after
# `cmake --preset ci && ninja -C build evo`; OUT (default /tmp/ablation-fp8) gets one file per
# command.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/ablation-fp8}
mkdir -p "$OUT"
evo=build/harness/evo
D=results/datasets/nvidia-h200-stage7-fp8-d128.json
P=results/datasets/nvidia-h200-stage7-fp16-d128.json  # the same stage, another dtype: the prior

# The landscape: full fitness where measured, else the screen x the median full/screen ratio
# (SimDomain::full_value), and how the near-optimal configurations differ.
python3 - "$D" >"$OUT/landscape.txt" <<'PY'
import json, statistics as st, sys
d = json.load(open(sys.argv[1]))
def fit(c, f): return (c.get(f) or {}).get("fitness_us")
cs = [c for c in d["configs"] if c["outcome"] == "ok"]
m = st.median(fit(c, "full") / fit(c, "screen") for c in cs if fit(c, "full") and fit(c, "screen"))
value = {json.dumps(c["params"], sort_keys=True): fit(c, "full") or fit(c, "screen") * m for c in cs}
best = min(value.values())
print(f"{len(d['configs'])} configurations, {len(cs)} ok, {sum(1 for c in cs if fit(c, 'full'))} in full; "
      f"full/screen median {m:.4f}; optimum {best:.2f} us")
for t in (1, 2, 5, 10):
    print(f"within {t} %: {sum(v <= best * (1 + t / 100) for v in value.values())}")
print("\nwithin 5 % (gap, us, params):")
for k, v in sorted(value.items(), key=lambda kv: kv[1]):
    if v > best * 1.05:
        break
    print(f"  {(v / best - 1) * 100:+.2f} % {v:.2f} {k}")
s = d["summary"]
print(f"\nGPU-s: screens {s['screen_gpu_s']:.1f}, full {s['full_gpu_s']:.1f}")
PY

# Every strategy on the fitness (seeds 1001-1040, budgets 25/50/100/200), cached for COMPARE.md.
$evo ablate $D --write-cache >"$OUT/write-cache.txt"
$evo ablate $D >"$OUT/fitness.md"
# The permuted-landscape controls the rule names (1..3).
for s in 1 2 3; do
  $evo ablate $D --strategies builtin,screened,random --permute $s >"$OUT/permute-$s.md"
done
# A prior, reported beside the rule: stage 7's fp16-d128 dataset (another variant of the stage).
$evo ablate $D --strategies builtin,screened --prior $P >"$OUT/prior.md" || echo "prior: exit $?" >>"$OUT/prior.md"
grep -h "GPU-s to 2 %" "$OUT"/*.md
