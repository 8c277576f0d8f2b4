#!/usr/bin/env bash
# The --devices measurement on a host with two H200s: one device call that builds evo, warms the
# compile cache, then runs the same candidate list on both GPUs (--devices all) and on one
# (--devices 0), and shows the bad --devices/--shard inputs.
#   OUT=… BENCH=long-smoke STAGE=3 BUDGET=8 \
#     TASKS=fp16-d64,fp16-d128,bf16-d64,bf16-d128,fp16-d64-causal,fp16-d128-causal,bf16-d64-causal,bf16-d128-causal \
#     scripts/h200_devices.sh
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache}
evo=build/harness/evo
work=${WORK:-/tmp/evo-devices}
rm -rf "$work" && mkdir -p "$work"
nvidia-smi --query-gpu=index,name,uuid,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpus.txt"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! cmake --build build --target evo -j 32 >"$work/build.log" 2>&1; then
  grep -E "error" -A3 "$work/build.log" | head -30
  exit 1
fi
args=(--stage "${STAGE:-3}" --task "${TASKS:-fp16-d64,fp16-d128}" --budget "${BUDGET:-12}" --shapes small --bench "${BENCH:-mission}")
run() {  # name, extra flags...: one run into its own results and populations folders
  local name=$1
  shift
  local start end
  start=$(date +%s.%N)
  $evo run "${args[@]}" "$@" --results-dir "$work/$name/results" --populations-dir "$work/$name/populations" 2>&1
  echo "exit $?"
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "command wall %.1f s\n", b - a }'
}
# Not compared: fills the compile cache both runs read. The reference outputs are computed by
# the first run (both GPUs), before its timed window and inside its command wall time.
$evo compile --stage "${STAGE:-3}" --task "${TASKS:-fp16-d64,fp16-d128}" >"$work/warm.log" 2>&1
tail -1 "$work/warm.log"
run two-gpus --devices all | tee "$OUT/two-gpus.log" | tail -4
run one-gpu --devices 0 | tee "$OUT/one-gpu.log" | tail -4
{
  echo "\$ evo run --stage 3 --task fp16-d64 --devices 7"
  $evo run --stage 3 --task fp16-d64 --devices 7 --results-dir "$work/bad" --populations-dir "$work/bad"; echo "exit $?"
  echo "\$ evo run --stage 3 --task fp16-d64 --shard 3/2"
  $evo run --stage 3 --task fp16-d64 --shard 3/2 --results-dir "$work/bad" --populations-dir "$work/bad"; echo "exit $?"
  echo "\$ evo gate --baseline tests/fixtures/gate/baseline.json --devices 7"
  $evo gate --baseline tests/fixtures/gate/baseline.json --devices 7 --record "$work/bad/gate.jsonl"; echo "exit $?"
} 2>&1 | tee "$OUT/bad-input.log"
tar -C "$work" -czf "$OUT/records.tar.gz" one-gpu two-gpus warm.log build.log
