#!/usr/bin/env bash
# The cluster test (CTest label `cluster`): a real Slurm on localhost (slurm_start.sh), a job
# array of 3 shards of a GPU-free evo workload (`evo compile --json`, which takes its shard from
# SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT), then examples/slurm/evo-merge.sbatch chained with
# --dependency=afterok. Asserts: every shard ran exactly once, each shard's records carry its
# shard, the shards are disjoint and their union is the unsharded list, and the merged records
# are that union: nothing lost, nothing twice.
# Usage: slurm_array_test.sh EVO_BINARY SOURCE_ROOT
set -euo pipefail
evo=$1
root=$2
SLURM_TEST_DIR=$(mktemp -d /tmp/evo-cluster-test.XXXXXX)
export SLURM_TEST_DIR
shards=3
workload=(compile --stage 3 --task fp16-d64 --json)

fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=tests/cluster/slurm_start.sh
source "$root/tests/cluster/slurm_start.sh"
cleanup_all() { slurm_stop; rm -rf "$SLURM_TEST_DIR"; }
trap cleanup_all EXIT

export EVO_ROOT=$root EVO_REPO=$root EVO=$evo XDG_CACHE_HOME="$SLURM_TEST_DIR/cache"
export SHARDS_DIR="$SLURM_TEST_DIR/shards"
export MERGE_RESULTS_DIR="$SLURM_TEST_DIR/merged" MERGE_POPULATIONS_DIR="$SLURM_TEST_DIR/populations"
mkdir -p "$SHARDS_DIR"
start=$(date +%s)
array=$(sbatch --parsable --array=0-$((shards - 1)) --output="$SLURM_TEST_DIR/log/array-%a.out" --wrap "
  set -e
  echo \"\$SLURM_ARRAY_JOB_ID \$SLURM_ARRAY_TASK_ID \$SLURM_JOB_ID\" >> '$SLURM_TEST_DIR/ran.log'
  out='$SHARDS_DIR'/task-\$SLURM_ARRAY_TASK_ID/results
  mkdir -p \"\$out\"
  '$evo' ${workload[*]} > \"\$out/compile.jsonl\"")
merge=$(sbatch --parsable --dependency=afterok:"$array" --output="$SLURM_TEST_DIR/log/merge.out" \
  "$root/examples/slurm/evo-merge.sbatch")
echo "slurm: array job $array ($shards tasks: evo ${workload[*]}), merge job $merge (afterok)"
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$array,$merge" -o %i 2>/dev/null)" ] && break
  sleep 0.5
done
elapsed=$(($(date +%s) - start))
[ -z "$(squeue -h -j "$array,$merge" -o %i 2>/dev/null)" ] || fail "jobs still queued after ${elapsed} s: $(squeue -h)"
for f in "$SLURM_TEST_DIR"/log/array-*.out "$SLURM_TEST_DIR"/log/merge.out; do
  [ -f "$f" ] && sed "s|^|  $(basename "$f"): |" "$f" | grep -v '^\s*$' | tail -3
done

# Every shard ran exactly once.
[ -f "$SLURM_TEST_DIR/ran.log" ] || fail "no array task ran"
ran=$(awk '{print $2}' "$SLURM_TEST_DIR/ran.log" | sort -n | tr '\n' ' ')
[ "$ran" = "$(seq -s ' ' 0 $((shards - 1))) " ] || fail "array tasks that ran: '$ran', expected each of 0..$((shards - 1)) once"

ids() { grep -o '"candidate_id":"[^"]*"' "$@" | sed 's/.*:"//; s/"$//' | sort; }
total=0
for i in $(seq 0 $((shards - 1))); do
  file="$SHARDS_DIR/task-$i/results/compile.jsonl"
  n=$(grep -c . "$file" || true)
  [ "$n" -gt 0 ] || fail "shard $i wrote no records"
  tagged=$(grep -c "\"shard\":\"$i/$shards\"" "$file" || true)
  [ "$tagged" -eq "$n" ] || fail "shard $i: $tagged of $n records carry shard $i/$shards"
  echo "shard $i/$shards: $n records"
  total=$((total + n))
done
"$evo" "${workload[@]}" --shard 0/1 > "$SLURM_TEST_DIR/unsharded.jsonl"
ids "$SLURM_TEST_DIR/unsharded.jsonl" > "$SLURM_TEST_DIR/unsharded.ids"
cat "$SHARDS_DIR"/task-*/results/compile.jsonl | ids > "$SLURM_TEST_DIR/shards.ids"
[ -z "$(uniq -d "$SLURM_TEST_DIR/shards.ids")" ] || fail "a candidate is in two shards: $(uniq -d "$SLURM_TEST_DIR/shards.ids" | head -3)"
cmp -s "$SLURM_TEST_DIR/shards.ids" "$SLURM_TEST_DIR/unsharded.ids" ||
  fail "the shards' union differs from the unsharded list ($(wc -l < "$SLURM_TEST_DIR/shards.ids") vs $(wc -l < "$SLURM_TEST_DIR/unsharded.ids"))"

# The merge job ran after the array and holds the union: nothing lost, nothing twice.
merged="$MERGE_RESULTS_DIR/merged.jsonl"
[ -f "$merged" ] || fail "the merge job wrote no $merged: $(tail -3 "$SLURM_TEST_DIR/log/merge.out" 2>/dev/null)"
ids "$merged" > "$SLURM_TEST_DIR/merged.ids"
cmp -s "$SLURM_TEST_DIR/merged.ids" "$SLURM_TEST_DIR/unsharded.ids" ||
  fail "merged records ($(wc -l < "$SLURM_TEST_DIR/merged.ids")) are not the union of the shards ($total)"
grep -q "^merged $total records" "$SLURM_TEST_DIR/log/merge.out" || fail "merge job log lacks 'merged $total records'"
grep -q "nothing to compare" "$SLURM_TEST_DIR/log/merge.out" || fail "the merge job did not reach its compare step"
echo "cluster: $shards shards ran once each, $total records, merged $(wc -l < "$SLURM_TEST_DIR/merged.ids") = union of the shards = unsharded list; array + merge done in ${elapsed} s"

# An island array: `evo evolve` in each task takes island i/N and the group name from the Slurm
# variables; both islands write traces into one shared results folder, and at generation 1 each
# waits for the other's generation 0 (no GPU: compile phase only, nothing to import, exit 2).
islands=2
if [ "$(nproc)" -lt "$islands" ]; then  # one CPU: the array tasks would run one after the other
  echo "cluster: island array skipped: $(nproc) CPU, the $islands islands must run at once"
  exit 0
fi
isl_results="$SLURM_TEST_DIR/islands/results"
mkdir -p "$isl_results"
start=$(date +%s)
isl=$(sbatch --parsable --array=0-$((islands - 1)) --output="$SLURM_TEST_DIR/log/island-%a.out" --wrap "
  '$evo' evolve --stage 3 --task fp16-d64 --generations 2 --population 1 --migrate-every 1 --migrate-wait 60 \
    --results-dir '$isl_results' --populations-dir '$SLURM_TEST_DIR/islands/pops-'\$SLURM_ARRAY_TASK_ID
  echo \"island exit \$?\"")
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$isl" -o %i 2>/dev/null)" ] && break
  sleep 0.5
done
for i in $(seq 0 $((islands - 1))); do
  log="$SLURM_TEST_DIR/log/island-$i.out"
  trace="$isl_results/evolve/ev-slurm$isl-island${i}of$islands.trace.jsonl"
  [ -f "$trace" ] || fail "island $i wrote no trace $trace: $(tail -3 "$log" 2>/dev/null)"
  grep -q "island $i/$islands (from SLURM_ARRAY_TASK_ID) of search 'slurm$isl'" "$log" || fail "island $i: $(head -3 "$log")"
  grep -q '"finished":true' "$trace" || fail "island $i never finished: $(tail -3 "$log")"
  grep -q '"generation":1.*"migration":{.*"late":\[\]' "$trace" ||
    grep -q '"migration":{.*"late":\[\].*"generation":1' "$trace" || fail "island $i: no on-time migration at generation 1: $(cat "$trace")"
  grep -q "island exit 2" "$log" || fail "island $i: expected exit 2 (no GPU): $(tail -3 "$log")"
done
echo "cluster: island array $isl: $islands islands (group slurm$isl) evolved 2 generations each, migration at generation 1 on time, done in $(($(date +%s) - start)) s"
