#!/usr/bin/env bash
# The FP8 two-level O sum on the H200 (lab/notes/h200-20261130-tenth-session.md), one device call
# per phase, each within WALL_S (default 560) seconds:
#   fp8_osum.sh run     build evo; `evo run --stage 7` of three configurations of the fixed
#                       tma_ws_fp8 on fp8-d128 (each would enter the top 3, so each runs the deep
#                       tier and its long-key v_offset cases), then the same budget on fp8-d64;
#                       the v_offset cases' errors by key count and the fitness of each
#   fp8_osum.sh regate  `evo population remeasure --shipped` of the four fp8 tasks: the committed
#                       (older) fp8 kernels through today's gate and deep tier; a source that fails
#                       goes into results/revoked.json afterwards (by hand, with this call's note)
# The new records come back under $OUT (records.tgz), with the logs. TASKS (default
# "fp8-d128 fp8-d64") names the tasks `run` runs, e.g. TASKS="fp8-d128-causal fp8-d64-causal".
#   OUT=... bash lab/device-sessions/fp8_osum.sh run
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
source lab/device-sessions/device_steps.sh
device_env
evo=build/harness/evo
start=$(date +%s)
left() { echo $((${WALL_S:-560} - ($(date +%s) - start))); }
stamp=$(mktemp) && touch "$stamp"

# The v_offset checks of the records written in this call: case, keys, relative L2, pass.
errors() {
  find results -name '*.jsonl' -newer "$stamp" -print0 | xargs -0 -r cat | python3 -c '
import json, re, sys
for line in sys.stdin:
    r = json.loads(line)
    checks = [c for part in ("correctness", "deep") for c in ((r.get("gates") or {}).get(part) or {}).get("checks") or []]
    bad = [c for c in checks if "v_offset" in c["case"]]
    print(r["task"], r["outcome"], round((r.get("fitness") or {}).get("geomean_median_us") or 0, 1),
          ",".join(f"{k}={v}" for k, v in sorted(r.get("params", {}).items())), (r.get("reason") or "")[:160])
    for c in bad:
        dims = re.search(r"(\d+)x(\d+)x(\d+)x(\d+)x(\d+)x(\d+)", c["case"])
        print("   ", "Skv", dims.group(5) if dims else "?", "rel_l2", round(c.get("rel_l2", -1), 5), "pass", c.get("pass"), c["case"][:90])
'
}

bring_back() {
  find results -name '*.jsonl' -newer "$stamp" -print0 | tar czf "$OUT/records.tgz" --null -T - 2>/dev/null
  echo "records: $(tar tzf "$OUT/records.tgz" | wc -l) files"
}

gpu_info
build_evo evo || exit 1
echo "built ($(($(date +%s) - start)) s)"

# The old optimum's cell where the new rules allow it (CONS_REGS 240 with Q_REGS; L_BY_MMA=0 with
# PERSISTENT and Q_REGS), both PROMOTE values, and one L_BY_MMA=1 configuration without Q_REGS.
configs=(
  "tma_ws_fp8:NCONS=2,CONS_REGS=240,PROD_REGS=24,Q_REGS=1,PERSISTENT=1,PINGPONG=0,L_BY_MMA=0,RESCALE_SKIP=1,STAGES=3,PROMOTE=1"
  "tma_ws_fp8:NCONS=2,CONS_REGS=240,PROD_REGS=24,Q_REGS=1,PERSISTENT=1,PINGPONG=0,L_BY_MMA=0,RESCALE_SKIP=1,STAGES=3,PROMOTE=2"
  "tma_ws_fp8:NCONS=2,CONS_REGS=240,PROD_REGS=24,Q_REGS=0,PERSISTENT=1,PINGPONG=0,L_BY_MMA=1,RESCALE_SKIP=1,STAGES=3,PROMOTE=1"
)
only=()
for c in "${configs[@]}"; do only+=(--only "$c"); done

case "${1:-}" in
  run)
    for task in ${TASKS:-fp8-d128 fp8-d64}; do
      timeout $(($(left) - 40)) "$evo" run --stage 7 --task "$task" --budget 3 "${only[@]}" >"$OUT/run-$task.log" 2>&1
      echo "evo run $task: exit $? ($(($(date +%s) - start)) s)"
      tail -6 "$OUT/run-$task.log"
    done
    ;;
  regate)
    timeout $(($(left) - 40)) "$evo" population remeasure --task fp8-d128 fp8-d64 fp8-d128-causal fp8-d64-causal \
      --shipped --bench mission >"$OUT/remeasure.log" 2>&1
    echo "remeasure: exit $? ($(($(date +%s) - start)) s)"
    tail -20 "$OUT/remeasure.log"
    ;;
  *)
    echo "usage: fp8_osum.sh run|regate" >&2
    exit 2
    ;;
esac
errors | tee "$OUT/errors.txt"
bring_back
