#!/usr/bin/env bash
# Unannounced verification (issue 29, items 1-2, 5; docs/safety.md §3f) in one device call of at
# most 360 s: build every target, `ctest -L gpu --output-on-failure` with the adversarial suite's
# verdicts printed (its four new tricks included), then a stage-6 `evo run` of two candidates
# whose per-candidate GPU-seconds are the new gate's cost. Each step gets what is left of the
# call's budget (WALL_S, default 340 s); the adversarial suite runs first, the other gpu tests
# after it. Everything that comes back is under $OUT (8 files at most).
#   OUT=... bash lab/device-sessions/gate.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=/tmp/evo-cache PYTHONUNBUFFERED=1
start=$(date +%s)
left() { echo $(( ${WALL_S:-340} - ($(date +%s) - start) )); }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
# evo and the gpu tests first; every other target at the end, with the rest of ctest -L gpu.
(cmake --preset release >/dev/null && cmake --build build -j 16 --target evo evo_tests_gpu) >"$OUT/build.log" 2>&1
echo "build exit $? warnings $(grep -c 'warning:' "$OUT/build.log") ($(( $(date +%s) - start )) s)"
grep -E "error" -A3 "$OUT/build.log" | head -20

# The adversarial suite first, verbose: each trick's verdict and reason.
timeout $(( $(left) - 70 )) build/tests/evo_tests_gpu --gtest_filter='Adversarial.*' >"$OUT/adversarial.log" 2>&1
echo "adversarial exit $? ($(( $(date +%s) - start )) s)"
grep -E "adversarial candidates|, got |reason must|failed (fixed|sampled) case|entered the population|\[  (PASSED|FAILED|  OK) \]" \
  "$OUT/adversarial.log" | head -40
grep -E "^verdict: " "$OUT/adversarial.log" | tee "$OUT/verdicts.txt"

# The stage-6 cost: two candidates of fp16-d64 on the default benchmark.
work=/tmp/evo-gate-stage6 && rm -rf "$work" && mkdir -p "$work"
timeout $(( $(left) - 25 )) build/harness/evo run --stage 6 --task fp16-d64 --budget 2 \
  --results-dir "$work/results" --populations-dir "$work/populations" >"$OUT/stage6.log" 2>&1
echo "stage 6 exit $? ($(( $(date +%s) - start )) s)"
tail -6 "$OUT/stage6.log"
python3 - "$work" <<'PY' | tee "$OUT/stage6-cost.txt"
import glob, json, sys
recs = [json.loads(l) for f in glob.glob(f"{sys.argv[1]}/results/*.jsonl") for l in open(f)]
for r in recs:
    d = (r.get("phases") or {}).get("detail") or {}
    ph = "  ".join(f"{k} {v:.2f}" for k, v in sorted(d.items()) if isinstance(v, (int, float)))
    print(f"{r['variant']} {json.dumps(r.get('params'))}: {r['outcome']} gpu_s {r.get('gpu_seconds', 0):.2f}  {ph}")
    print(f"  {str(r.get('reason', ''))[:200]}")
if recs:
    print(f"per candidate: {sum(r.get('gpu_seconds', 0) for r in recs) / len(recs):.2f} GPU-s over {len(recs)}")
PY

# Every target, then the other gpu tests with what is left (the adversarial suite already ran).
timeout $(( $(left) - 10 )) cmake --build build -j 16 >>"$OUT/build.log" 2>&1
echo "build (every target) exit $? warnings $(grep -c 'warning:' "$OUT/build.log") ($(( $(date +%s) - start )) s)"
if [ "$(left)" -gt 20 ]; then
  timeout $(( $(left) - 5 )) ctest --test-dir build -L gpu -E 'Adversarial' --output-on-failure >"$OUT/ctest-gpu.log" 2>&1
  echo "ctest -L gpu (without Adversarial) exit $? ($(( $(date +%s) - start )) s)"
  grep -E "tests passed|Passed|Failed|\*\*\*|Not Run" "$OUT/ctest-gpu.log" | tail -14
fi
ls -la "$OUT"
