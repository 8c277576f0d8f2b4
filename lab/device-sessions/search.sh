#!/usr/bin/env bash
# A search dataset (issue 26) in one device call of at most 8 minutes on the H200: a whole
# search space measured as `evo evolve --generator exhaustive` does it, then `evo dataset`.
#   1. build evo (the binary only);
#   2. compile every configuration (NVRTC on all cores; cached, so the run below only loads);
#   3. screen what the EVO_CONSTRAINT rules allow (the small gate, every benchmark shape timed with
#      fewer samples; ~0.35 GPU-s each, a hang killed after 2 s), in a seeded random order;
#   4. the best screens in full (the whole gate and timing; ~5 GPU-s each), best first, one per
#      generation, as many as the time left allows;
#   5. `evo dataset` turns the run's records into the dataset.
# A call that runs out of time leaves a uniform sample unscreened; the next call resumes the same
# run from the records the previous one brought back (RECORDS). By default the stage-7
# fp16-d128 search resumes from lab/logs/search-20261126/search-records.tgz (the second call:
# 279 of 331 screened, 17 of them hangs of 10 s each under the old watchdog, 34 in full; the
# first call's records are lab/logs/release-20261126/search-records.tgz).
# Everything comes back under $OUT:
#   nvidia-h200-stage<N>-<task>.json  the dataset (commit it as results/datasets/<same name>)
#   records.tgz                       the run's records and trace (keep them under lab/: the
#                                     dataset derives from them; RECORDS for a next call)
#   search.log                        what each step took, and the summary lines of the run
#   screen.log, full.log, build.log, compile.log, gpu.txt
# Stage 9 is screened and timed on its own `decode` set (stage.json bench_sets), as `evo evolve` does by default.
# Settings: STAGE, TASK (7, fp16-d128); RECORDS (a records.tgz to resume, "" for a new run);
# WALL_S (465: what the steps may take); EVO=path skips the build (a dry run without a GPU stops
# after the screen's compile phase); DEEP_GATE (off: the deep tier, ~30 GPU-s per would-be elite,
# is a price of the run's top 3 that the dataset keeps apart and the simulation leaves out, so
# the measuring run skips it; on: as gates.json says); SEARCH_JSON (a widening of the stage's
# stage.json "search" for this call only, e.g. '{"split_kv_tma": {"KV_SPLITS": [8, 32]}}'; the
# dataset keeps the tunables it was measured with), with SPACE naming the widened domain (the
# dataset's file name ends -$SPACE.json). Both are restored at exit. BENCH (benchmark sets or
# dims, e.g. 'decode,32x12x12x1x1024x64:bshd') times screens and full evaluations on those shapes
# instead of the stage's own (`evo evolve --bench`); it needs SPACE too, and a second call must
# pass the same BENCH (lab/notes/domain-prediction-20261130.md). FULL_S (150): the seconds the
# screen step leaves for step 4; SCREEN_RATE (0.6): the GPU-s per wall-second the screen step's
# budget assumes (fp8 screens ran at 0.74: a lower rate ends the screens before their time);
# FULL_RATE (0.75): the same for step 4 (fp8's full evaluations ran at 1.23); SEARCH_DIR
# (/tmp/evo-search): the run's scratch, emptied first.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
T0=$(date +%s)
DEADLINE=$((T0 + ${WALL_S:-465}))
left() { echo $((DEADLINE - $(date +%s))); }
log() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$OUT/search.log"; }
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-search-cache}
STAGE=${STAGE:-7} TASK=${TASK:-fp16-d128}
# A widened domain is another dataset: SPACE names it (nvidia-h200-stage9-fp16-d64-wide.json).
[ -n "${SEARCH_JSON:-}${BENCH:-}" ] && [ -z "${SPACE:-}" ] && { echo "SEARCH_JSON and BENCH need SPACE (the dataset's suffix)"; exit 1; }
NAME=nvidia-h200-stage$STAGE-$TASK${SPACE:+-$SPACE}.json
DEFAULT_RECORDS=lab/logs/search-20261126/search-records.tgz
if [ -z "${RECORDS+set}" ]; then
  RECORDS=""
  [ "$STAGE-$TASK" = 7-fp16-d128 ] && [ -f "$DEFAULT_RECORDS" ] && RECORDS=$DEFAULT_RECORDS
fi
W=${SEARCH_DIR:-/tmp/evo-search}  # scratch: emptied first
R=$W/results P=$W/populations
rm -rf "$W" "$W-orig" && mkdir -p "$R" "$P" "$W-orig"
source lab/device-sessions/device_steps.sh
search_for_call "$STAGE" "$W-orig" || { echo "cannot set the call's gates.json and stage.json"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1

# 1. build
evo=${EVO:-build/harness/evo}
if [ -z "${EVO:-}" ] &&
  ! { cmake --preset release && cmake --build --preset release --target evo -j "$(nproc)"; } >"$OUT/build.log" 2>&1; then
  log "build failed"; grep -E "error" -A3 "$OUT/build.log" | head -30; exit 1
fi
log "built"

# The run to resume, and the GPU-seconds its records spent.
RUN=""
if [ -n "$RECORDS" ]; then
  tar xzf "$RECORDS" -C "$W" || { log "cannot read $RECORDS"; exit 1; }
  RUN=$(basename "$(ls "$R"/evolve/*.trace.jsonl | head -1)" .trace.jsonl)
  log "resuming $RUN from $RECORDS"
fi
spent() {
  python3 - "$R" "$RUN" <<'EOF'
import glob, json, sys
total = 0.0
for f in glob.glob(sys.argv[1] + "/*.jsonl"):
    for line in open(f):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if (r.get("evolve") or {}).get("run") == sys.argv[2]:
            total += r.get("gpu_seconds") or 0.0
print(f"{total:.1f}")
EOF
}

# 2. compile (what the generations would otherwise compile first, at the same speed)
$evo compile --stage "$STAGE" --task "$TASK" --arch sm_90a --jobs "$(nproc)" >"$OUT/compile.log" 2>&1
log "compiled: exit $?"

# 3. the screen, leaving FULL_S (~150 s) for the full evaluations (~0.6 GPU-s per wall-s)
common=(--stage "$STAGE" --task "$TASK" --generator exhaustive --rng-seed 26 --results-dir "$R" --populations-dir "$P")
[ -n "${BENCH:-}" ] && common+=(--bench "$BENCH")
resume=()
[ -n "$RUN" ] && resume=(--resume "$RUN")
FULL_S=${FULL_S:-150}
budget=$(python3 -c "print(int($(spent) + max(30, $(left) - $FULL_S) * ${SCREEN_RATE:-0.6}))")
# The budget is in GPU-s and a screen's wall time per GPU-s varies (0.6 when its checks dominated
# it, more once they were capped): `timeout` keeps the call's wall time; the records written so
# far stay and the next step resumes them.
timeout $(($(left) - FULL_S)) $evo evolve "${common[@]}" "${resume[@]}" --population 400 --generations 1000 \
  --budget-gpu-s "$budget" >"$OUT/screen.log" 2>&1
log "screen: exit $? (budget $budget GPU-s in all); $(tail -1 "$OUT/screen.log" | cut -c1-200)"
[ -n "$RUN" ] || RUN=$(grep -o 'evo evolve ev-[^:]*' "$OUT/screen.log" | head -1 | cut -d' ' -f3)
[ -n "$RUN" ] || { log "no run id in screen.log"; tail -20 "$OUT/screen.log"; exit 1; }

# 4. the best screens in full, one per generation, until the run's GPU-second budget (screens
#    included) is spent; a full evaluation takes ~6 s of wall time for ~5 GPU-s.
budget=$(python3 -c "print(int($(spent) + max(0, $(left) - 25) * ${FULL_RATE:-0.75}))")
timeout $(($(left) - 20)) $evo evolve "${common[@]}" --resume "$RUN" --population 1 --generations 1000 \
  --budget-gpu-s "$budget" >"$OUT/full.log" 2>&1
log "full: exit $? (budget $budget GPU-s in all); $(tail -1 "$OUT/full.log" | cut -c1-200)"

# 5. the dataset, from the records
$evo dataset --run "$RUN" --results-dir "$R" --out "$OUT/$NAME" 2>&1 | tee -a "$OUT/search.log"
tar czf "$OUT/records.tgz" -C "$W" results
log "done: $(ls "$OUT" | wc -l) files; $(du -sh "$OUT/records.tgz" | cut -f1) of records"
