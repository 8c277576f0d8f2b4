#!/usr/bin/env bash
# Issue 31 item 4, the real-run check, in one device call of at most 9 minutes on the H200: real
# `evo evolve` runs of the strategies the simulation separates, on the seeds the simulation used,
# then each run's "GPU-s to 2 %" and best-at-budget against the dataset's optimum beside what
# `evo ablate` says of the same seed (docs/evolve.md, lab/notes/ablation-20261128-stage9.md).
#   OUT=... bash lab/device-sessions/search_check.sh
# Settings: TASK, STAGE (fp16-d64, 9: the dataset results/datasets/nvidia-h200-stage<STAGE>-<TASK>.json);
# STRATEGIES ("builtin screened"); SEEDS ("1001 1002 1003"); BUDGET (30 GPU-s per run: where
# the simulation separates builtin from screened on fp16-d64); PRIOR (a dataset: one more run,
# "builtin --prior", on the first seed); WALL_S (540). The simulation leaves out the deep tier
# (docs/evolve.md), so these runs do too (gates.json deep_gate.enabled off for the call, restored
# after); their records go to a scratch folder and never reach results/. SEARCH_JSON: the same
# widening of stage.json "search" the dataset was measured with, and SPACE its name (the
# dataset results/datasets/nvidia-h200-stage<STAGE>-<TASK>-<SPACE>.json; lab/notes/hard-domain-plan.md).
# Back under $OUT: check.md (the table), check-records.tgz (records and traces), gpu.txt, logs.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
source lab/device-sessions/device_steps.sh
device_env
T0=$(date +%s)
left() { echo $((${WALL_S:-540} - ($(date +%s) - T0))); }
TASK=${TASK:-fp16-d64} STAGE=${STAGE:-9} BUDGET=${BUDGET:-30}
STRATEGIES=${STRATEGIES:-builtin screened} SEEDS=${SEEDS:-1001 1002 1003}
DATASET=results/datasets/nvidia-h200-stage$STAGE-$TASK${SPACE:+-$SPACE}.json
[ -f "$DATASET" ] || { echo "no dataset $DATASET"; exit 1; }
gpu_info
build_evo evo || exit 1
evo=build/harness/evo
W=/tmp/evo-check && rm -rf "$W" && mkdir -p "$W"
DEEP_GATE=off search_for_call "$STAGE" "$W" || exit 1

runs=()
for seed in $SEEDS; do for g in $STRATEGIES; do runs+=("$g $seed"); done; done
[ -n "${PRIOR:-}" ] && runs+=("builtin ${SEEDS%% *} $PRIOR")
for r in "${runs[@]}"; do
  set -- $r
  g=$1 seed=$2 prior=${3:-}
  name=$g-$seed${prior:+-prior}
  # A run of BUDGET GPU-s takes about 1.5 BUDGET wall-s with its compiles; keep 30 s for the rest.
  [ "$(left)" -lt $((BUDGET * 3 / 2 + 30)) ] && { echo "$name not started: $(left) s left"; continue; }
  mkdir -p "$W/$name/results" "$W/$name/populations"
  timeout $(($(left) - 20)) $evo evolve --task "$TASK" --stage "$STAGE" --generator "$g" --rng-seed "$seed" \
    --population 4 --generations 1000 --budget-gpu-s "$BUDGET" ${prior:+--prior "$prior"} \
    --results-dir "$W/$name/results" --populations-dir "$W/$name/populations" >"$OUT/$name.log" 2>&1
  echo "$name: exit $? at $(($(date +%s) - T0)) s; $(tail -1 "$OUT/$name.log" | cut -c1-160)"
done

# Each run: GPU-s (its records' gpu_seconds in time order) until its best full evaluation came
# within 2 % of the dataset's optimum, and its best at the budget.
python3 - "$W" "$DATASET" "$BUDGET" >"$OUT/check.md" <<'EOF'
import glob, json, os, sys
w, dataset, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
d = json.load(open(dataset))
fits = [(c.get("full") or {}).get("fitness_us") for c in d["configs"]]
opt = min(f for f in fits if f)
print(f"dataset {dataset}: optimum {opt:.2f} us; budget {budget:g} GPU-s per run\n")
print("| run | evaluations | GPU-s | GPU-s to 2 % | best us | best / optimum |")
print("|---|---:|---:|---:|---:|---:|")
for run in sorted(os.listdir(w)):
    recs = []
    for f in glob.glob(f"{w}/{run}/results/*.jsonl"):
        for line in open(f):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("kind") == "run":
                recs.append(r)
    if not recs:
        continue
    recs.sort(key=lambda r: (r.get("time") or "", r.get("run_id") or ""))
    spent, best, to2 = 0.0, None, None
    for r in recs:
        spent += r.get("gpu_seconds") or 0.0
        fit = (r.get("fitness") or {}).get("geomean_median_us")
        full = r.get("outcome") == "ok" and fit and not str(r.get("benchmark", "")).startswith("screen")
        if full and (best is None or fit < best):
            best = fit
        if to2 is None and best is not None and best <= opt * 1.02:
            to2 = spent
    to2_text = f"{to2:.1f}" if to2 is not None else f"> {spent:.1f}"
    best_text = f"{best:.2f} | {best / opt:.3f}" if best else "- | -"
    print(f"| {run} | {len(recs)} | {spent:.1f} | {to2_text} | {best_text} |")
EOF
cat "$OUT/check.md"
# The simulation of the same seeds, for the table beside it (CPU only).
$evo ablate "$DATASET" --strategies $STRATEGIES --seeds $SEEDS --budgets "$BUDGET" >"$OUT/simulated.md" 2>&1
tar -C "$W" -czf "$OUT/check-records.tgz" --exclude=gates.json.orig --exclude=stage.json.orig .
