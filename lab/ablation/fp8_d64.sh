#!/usr/bin/env bash
# Issue 31, the stage-7 fp8-d64 domain (lab/ablation/hard-domain-plan.md): the pre-registered
# ablation and decision rule, CPU only, once lab/device-sessions/hard_domain.sh has brought back
# results/datasets/nvidia-h200-stage7-fp8-d64.json. Run from the repository root after
# `cmake --preset ci && ninja -C build evo`; OUT (default /tmp/ablation-fp8-d64) gets one file per
# command. Seeds 1001-1040 throughout (no constant was tuned on them). About 20-40 minutes on a
# shared 2-core machine (the builtin's model over 1 008 configurations dominates).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/ablation-fp8-d64}
mkdir -p "$OUT"
evo=build/harness/evo
D=${D:-results/datasets/nvidia-h200-stage7-fp8-d64.json}
P=results/datasets/nvidia-h200-stage7-fp8-d128.json  # the same variant at the other head dim: the prior
[ -f "$D" ] || { echo "no $D yet: lab/device-sessions/hard_domain.sh measures it"; exit 1; }

# The landscape, against the prediction (lab/ablation/fp8_d64_prediction.py: g median 16, 10-90 %
# 5-35 when calibrated on fp8-d128): g within 1/2/5/10 % and what the near-optimal set varies in.
python3 - "$D" "$P" >"$OUT/landscape.txt" <<'PY'
import json, statistics as st, sys
def fit(c, f): return (c.get(f) or {}).get("fitness_us")
for path in sys.argv[1:]:
    d = json.load(open(path))
    cs = [c for c in d["configs"] if c["outcome"] == "ok"]
    m = st.median(fit(c, "full") / fit(c, "screen") for c in cs if fit(c, "full") and fit(c, "screen"))
    value = {json.dumps(c["params"], sort_keys=True): fit(c, "full") or fit(c, "screen") * m for c in cs if fit(c, "full") or fit(c, "screen")}
    best = min(value.values())
    gpu = {f: [c[f]["gpu_s"] for c in cs if c.get(f)] for f in ("screen", "full")}
    print(f"{path}: {len(d['configs'])} configurations, {len(gpu['screen'])} screened ({sum(gpu['screen']):.1f} GPU-s, "
          f"median {st.median(gpu['screen']):.3f}), {len(gpu['full'])} in full ({sum(gpu['full']):.1f} GPU-s, median "
          f"{st.median(gpu['full']):.2f}); optimum {best:.2f} us; full/screen median {m:.4f}")
    print("  within 1/2/5/10 %: " + " / ".join(str(sum(v <= best * (1 + t / 100) for v in value.values())) for t in (1, 2, 5, 10)))
    for k, v in sorted(value.items(), key=lambda kv: kv[1]):
        if v > best * 1.03:
            break
        print(f"    {(v / best - 1) * 100:+.2f} % {v:.2f} {k}")
PY

# Every strategy on the fitness (builtin, screened, random, random --quick, exhaustive, genetic),
# cached for COMPARE.md, and the same uncached with the model-free spacefill beside them.
$evo ablate $D --write-cache >"$OUT/write-cache.txt"
$evo ablate $D >"$OUT/fitness.md"
$evo ablate $D --strategies builtin screened spacefill >"$OUT/spacefill.md"
# The permuted-landscape controls the rule names (1..3).
for s in 1 2 3; do
  $evo ablate $D --strategies builtin screened random --permute $s >"$OUT/permute-$s.md"
done
# A prior, reported beside the rule, never in place of it: fp8-d128 (same variant, other head dim).
$evo ablate $D --strategies builtin screened --prior $P >"$OUT/prior.md"
$evo ablate $D --strategies builtin screened --prior $P --permute 1 >"$OUT/prior-permute-1.md"
# Where builtin and screened separate, for the real runs (item 4): BUDGET for search_check.sh.
$evo ablate $D --strategies builtin screened --budgets 25,50,75,100,150,200 >"$OUT/item4-budgets.md"
for s in 1001 1002 1003; do  # one seed at a time: its own GPU-s to 2 %, to set beside the real run
  $evo ablate $D --strategies builtin screened --seeds $s --budgets 100 >"$OUT/item4-seed-$s.md"
done

# The rule (lab/notes/hard-domain-plan.md, "The decision"): hard if screened's median GPU-s to 2 %
# is above 100; the model pays if the builtin needs at most half of it and its ratio is below its
# ratio on each of the three permuted landscapes.
python3 - "$OUT" >"$OUT/rule.txt" <<'PY'
import re, sys
def medians(path):
    line = next(l for l in open(path) if l.startswith("| GPU-s to 2 %"))
    return [float(x) for x in re.findall(r"\| ([\d.]+) \[", line)]
out = sys.argv[1]
b, s = medians(f"{out}/spacefill.md")[:2]
perm = [medians(f"{out}/permute-{k}.md")[:2] for k in (1, 2, 3)]
print(f"screened {s:.1f} GPU-s to 2 %: {'HARD' if s > 100 else 'not hard'} (bar: above 100)")
print(f"builtin {b:.1f}: {b / s:.2f}x of screened (bar: at most 0.50x); permuted 1-3: "
      + ", ".join(f"{pb / ps:.2f}x" for pb, ps in perm))
pays = s > 100 and b / s <= 0.5 and all(b / s < pb / ps for pb, ps in perm)
print("the model pays" if pays else "the model does not pay by the rule" if s > 100 else "the rule judges only a hard domain")
PY
cat "$OUT/landscape.txt" "$OUT/rule.txt"
grep -h "GPU-s to 2 %" "$OUT"/*.md
