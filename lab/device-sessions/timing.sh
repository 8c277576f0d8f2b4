#!/usr/bin/env bash
# Timing integrity (issue 25, items 1, 4, 6) in one device call: build evo, run the timing family
# of the adversarial suite with its controls (tests/gpu/adversarial_test.cpp, filtered), then
# `evo run --stage 0 --task fp16-d128` on the default benchmark, printing its phases. Everything
# that comes back is under $OUT (at most 8 files).
#   OUT=... lab/device-sessions/timing.sh [all|adversarial|stage0|cost]
#
# `cost`: per-candidate GPU-seconds before and after on the same GPU in the same call. It needs
# the old tree (main at 2ce758f) in $EVO_OLD, e.g. made on the build machine with
#   git -C /work/main archive --prefix=evo-old/ 2ce758f | tar -x -C shared/   (shared/ travels)
# then on the GPU host: EVO_OLD=$PWD/shared/evo-old OUT=... lab/device-sessions/timing.sh cost
# Both binaries evaluate the same four stage-0 candidates of fp16-d128 (--budget 4 --rng-seed 1)
# on the same sampled cases (--gate-seed 12345), old then new (ROUNDS=2: old, new, old, new); the
# means per candidate of gpu_seconds and of every phase come out as a table (cost.txt).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache}
evo=$PWD/build/harness/evo
work=/tmp/evo-timing
mkdir -p "$work"

# build TREE TARGET...: the release preset, only the targets named.
build() {
  local dir=$1 targets=() t
  shift
  for t in "$@"; do targets+=(--target "$t"); done
  (cd "$dir" && cmake --preset release >/dev/null && cmake --build --preset release -j 16 "${targets[@]}") \
    >"$OUT/build.log" 2>&1 || {
    grep -E "error" -A3 "$OUT/build.log" | head -30
    exit 1
  }
  rm -f "$OUT/build.log"
}

gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv | tee "$OUT/gpu.txt"
}

# The timing family, cache_by_content/pointer and the other tricks the old post-timing check
# caught, with the controls (the real stage-0 kernel always runs).
adversarial() {
  EVO_ADVERSARIAL_FILES='timing_|control_|cache_by_|correct_first|wrong_on_long|spin_delayed' \
    timeout 330 build/tests/evo_tests_gpu --gtest_filter='Adversarial.*' >"$OUT/adversarial.log" 2>&1
  echo "adversarial exit $?"
  grep -E "timing family|adversarial candidates|expected verdict|entered the population|\[  (PASSED|FAILED|  OK) \]" \
    "$OUT/adversarial.log" | head -40
}

# Prints per candidate: outcome, GPU-seconds, the phases, and each shape's integrity summary.
summarize() {
  python3 - "$@" <<'EOF'
import json, sys
for path in sys.argv[1:]:
    for line in open(path):
        r = json.loads(line)
        d = (r.get("phases") or {}).get("detail") or {}
        print(f"{r['variant']} {json.dumps(r['params'])}: {r['outcome']} {r.get('reason','')[:160]}")
        print(f"  gpu_s {r.get('gpu_seconds', 0):.2f}  " +
              "  ".join(f"{k[:-2]} {v:.2f}" for k, v in sorted(d.items()) if isinstance(v, (int, float))))
        for t in r.get("timing") or []:
            i = t.get("integrity") or {}
            print(f"  {t.get('shape')}: median {t.get('median_us')} us n {t.get('n')}  integrity "
                  + json.dumps({k: i.get(k) for k in ('fresh_inputs', 'samples_verified', 'rows_checked', 'rows_rel_l2',
                                                      'full_checks', 'repeat_probes', 'floor_us', 'pass',
                                                      'failure')})[:700])
EOF
}

stage0() {
  rm -rf "$work/stage0" && mkdir -p "$work/stage0"
  timeout 240 "$evo" run --stage 0 --task fp16-d128 --results-dir "$work/stage0/results" \
    --populations-dir "$work/stage0/populations" >"$OUT/stage0.log" 2>&1
  echo "evo run exit $?"
  tail -12 "$OUT/stage0.log"
  cat "$work"/stage0/results/*.jsonl >"$OUT/stage0-records.jsonl"
  summarize "$OUT/stage0-records.jsonl" | tee "$OUT/stage0-summary.txt"
}

# One binary's stage-0 run for the cost table: $1 label, $2 tree.
cost_run() {
  local label=$1 tree=$2 dir="$work/cost-$1-$3"
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$tree" && timeout 150 build/harness/evo run --stage 0 --task fp16-d128 --budget 4 --rng-seed 1 \
    --gate-seed 12345 --results-dir "$dir/results" --populations-dir "$dir/populations" \
    --cache-dir "$work/cache-$label") >"$dir/log" 2>&1
  echo "$label run $3: exit $? ($(grep -h 'per candidate' "$dir/log" | head -1))"
}

cost() {
  : "${EVO_OLD:?set EVO_OLD to a tree of main at 2ce758f}"
  build "$EVO_OLD" evo
  for round in $(seq 1 "${ROUNDS:-1}"); do
    cost_run old "$EVO_OLD" "$round"
    cost_run new "$PWD" "$round"
  done
  python3 - "$work" <<'EOF' | tee "$OUT/cost.txt"
import glob, json, sys
work = sys.argv[1]
for label in ("old", "new"):
    recs = [json.loads(l) for f in glob.glob(f"{work}/cost-{label}-*/results/*.jsonl") for l in open(f)]
    n = len(recs)
    if not n:
        print(label, "no records"); continue
    phases = {}
    for r in recs:
        for k, v in ((r.get("phases") or {}).get("detail") or {}).items():
            if isinstance(v, (int, float)): phases[k] = phases.get(k, 0) + v
    gpu = sum(r.get("gpu_seconds", 0) for r in recs) / n
    outcomes = sorted({r["outcome"] for r in recs})
    print(f"{label}: {n} candidates, outcomes {outcomes}, gpu_seconds per candidate {gpu:.2f}")
    print("  " + "  ".join(f"{k} {v / n:.2f}" for k, v in sorted(phases.items())))
EOF
  tar -C "$work" -czf "$OUT/cost-records.tgz" $(cd "$work" && ls -d cost-*/results)
}

if [ "${1:-all}" = cost ]; then build "$PWD" evo; else build "$PWD" evo evo_tests_gpu; fi
gpu_info
case "${1:-all}" in
  adversarial) adversarial ;;
  stage0) stage0 ;;
  cost) cost ;;
  all) adversarial; stage0 ;;
esac
