#!/usr/bin/env bash
# The ground truth of issue 26 in one device call (at most 8 minutes on the H200): the whole
# stage-7 fp16-d128 search space measured once, as `evo evolve --generator exhaustive` does it:
#   1. build evo (the binary only);
#   2. compile every configuration (NVRTC on all cores; cached, so the run below only loads);
#   3. screen every configuration the EVO_CONSTRAINT rules allow (356: the small gate, every
#      benchmark shape timed with fewer samples, no post-timing check; ~0.5 GPU-s each);
#   4. the best screens in full (the whole gate, timing, post-timing check), best first, as many
#      as the time left allows (at most 24; ~3-5 GPU-s each);
#   5. `evo dataset` turns the run's records into the dataset.
# Everything comes back under $OUT:
#   nvidia-h200-stage7-fp16-d128.json  the dataset (commit it as results/datasets/<same name>)
#   records.tgz                        the run's records and trace (the dataset derives from them)
#   search.log                         what each step took, and the summary lines of the run
#   screen.log, full.log, build.log, compile.log, gpu.txt
# WALL_S (default 465) is the time the steps may take; the full evaluations use what is left.
# STAGE and TASK (default 7, fp16-d128) choose another space; EVO=path skips the build (a dry run
# of the steps on a machine without a GPU stops after the screen's compile phase).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
T0=$(date +%s)
DEADLINE=$((T0 + ${WALL_S:-465}))
left() { echo $((DEADLINE - $(date +%s))); }
log() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$OUT/search.log"; }
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-search-cache}
STAGE=${STAGE:-7} TASK=${TASK:-fp16-d128}
NAME=nvidia-h200-stage$STAGE-$TASK.json
W=/tmp/evo-search
R=$W/results P=$W/populations
rm -rf "$W" && mkdir -p "$R" "$P"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1

# 1. build
evo=${EVO:-build/harness/evo}
if [ -z "${EVO:-}" ] &&
  ! { cmake --preset release && cmake --build --preset release --target evo -j "$(nproc)"; } >"$OUT/build.log" 2>&1; then
  log "build failed"; grep -E "error" -A3 "$OUT/build.log" | head -30; exit 1
fi
log "built"

# 2. compile (what the screen would otherwise compile first, at the same speed)
$evo compile --stage $STAGE --task $TASK --arch sm_90a --jobs "$(nproc)" >"$OUT/compile.log" 2>&1
log "compiled: exit $? ($(grep -c ' ok ' "$OUT/compile.log") ok lines)"

# 3. the screen: generation 0 proposes every allowed configuration. The budget is a safety net
#    only (GPU-seconds never exceed wall seconds): the full evaluations below need ~80 s.
common=(--stage $STAGE --task $TASK --generator exhaustive --rng-seed 26 --results-dir "$R" --populations-dir "$P")
$evo evolve "${common[@]}" --population 400 --generations 1 --budget-gpu-s "$(($(left) - 80))" >"$OUT/screen.log" 2>&1
log "screen: exit $?; $(tail -1 "$OUT/screen.log" | cut -c1-200)"
RUN=$(grep -o 'evo evolve ev-[^:]*' "$OUT/screen.log" | head -1 | cut -d' ' -f3)
[ -n "$RUN" ] || { log "no run id in screen.log"; tail -20 "$OUT/screen.log"; exit 1; }

# 4. the best screens in full: generation 1 promotes them best first; the GPU-second budget (the
#    run's total, screens included) ends it in time. A full evaluation takes ~4-6 s of wall time.
spent=$(grep -o '[0-9.]* GPU-s (' "$OUT/screen.log" | tail -1 | cut -d' ' -f1)
budget=$(python3 -c "print(int(${spent:-0} + max(0, $(left) - 25) * 0.7))")
$evo evolve "${common[@]}" --resume "$RUN" --population 24 --generations 2 --budget-gpu-s "$budget" \
  >"$OUT/full.log" 2>&1
log "full: exit $? (budget $budget GPU-s in all); $(tail -1 "$OUT/full.log" | cut -c1-200)"

# 5. the dataset, from the records
$evo dataset --run "$RUN" --results-dir "$R" --out "$OUT/$NAME" 2>&1 | tee -a "$OUT/search.log"
tar czf "$OUT/records.tgz" -C "$W" results
log "done: $(ls "$OUT" | wc -l) files; $(du -sh "$OUT/records.tgz" | cut -f1) of records"
