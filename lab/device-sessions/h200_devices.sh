#!/usr/bin/env bash
# The --devices measurement on a host with two H200s: one device call that records the host
# (CPU threads per core, what /tmp is) and two micro-measurements of the suspects (fsync'ed 64 MB
# writes and a CPU-bound hash, one at a time and two at once), builds evo, warms the compile
# cache, then runs the same candidate list on one GPU (--devices 0) and on both (--devices all),
# each record with its per-phase times, and shows the bad --devices/--shard/--island inputs.
#   OUT=… BENCH=long-smoke STAGE=3 BUDGET=8 \
#     TASKS=fp16-d64,fp16-d128,bf16-d64,bf16-d128,fp16-d64-causal,fp16-d128-causal,bf16-d64-causal,bf16-d128-causal \
#     lab/device-sessions/h200_devices.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache}
evo=build/harness/evo
work=${WORK:-/tmp/evo-devices}
rm -rf "$work" && mkdir -p "$work"
nvidia-smi --query-gpu=index,name,uuid,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpus.txt"
seconds() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }
at_once() {  # n, command...: n copies at once; prints the wall seconds of all of them
  local n=$1 t0
  shift
  t0=$(date +%s.%N)
  for k in $(seq "$n"); do "$@" "$k" & done
  wait
  seconds "$t0"
}
write_fsync() { dd if=/dev/zero of="$work/dd$1" bs=1M count=64 conv=fsync status=none; }
hash_file() { sha256sum "$work/blob" >/dev/null; }
{
  lscpu | grep -E "^(Model name|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|CPU\(s\)):"
  echo "/tmp: $(findmnt -n -o FSTYPE,SOURCE -T /tmp 2>/dev/null) $(df -h --output=size,avail /tmp | tail -1)"
  head -c 268435456 /dev/urandom >"$work/blob"
  for n in 1 2; do echo "fsync'ed 64 MB writes (as the worker wrote outputs), $n at once: $(at_once $n write_fsync) s"; done
  for n in 1 2; do echo "sha256sum of 256 MB (CPU-bound, cached file), $n at once: $(at_once $n hash_file) s"; done
  rm -f "$work"/dd* "$work/blob"
} 2>&1 | tee "$OUT/host.txt"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! cmake --build build --target evo -j 32 >"$work/build.log" 2>&1; then
  grep -E "error" -A3 "$work/build.log" | head -30
  exit 1
fi
# One gate seed for both runs: the sampled gate cases (up to 17M elements each) are then the same.
args=(--stage "${STAGE:-3}" --task "${TASKS:-fp16-d64,fp16-d128}" --budget "${BUDGET:-12}" --shapes small --bench "${BENCH:-mission}"
  --gate-seed "${GATE_SEED:-1}")
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
run one-gpu --devices 0 | tee "$OUT/one-gpu.log" | tail -5
run two-gpus --devices all | tee "$OUT/two-gpus.log" | tail -5
{
  echo "\$ evo run --stage 3 --task fp16-d64 --devices 7"
  $evo run --stage 3 --task fp16-d64 --devices 7 --results-dir "$work/bad" --populations-dir "$work/bad"; echo "exit $?"
  echo "\$ evo run --stage 3 --task fp16-d64 --shard 3/2"
  $evo run --stage 3 --task fp16-d64 --shard 3/2 --results-dir "$work/bad" --populations-dir "$work/bad"; echo "exit $?"
  echo "\$ evo gate --baseline tests/fixtures/gate/baseline.json --devices 7"
  $evo gate --baseline tests/fixtures/gate/baseline.json --devices 7 --record "$work/bad/gate.jsonl"; echo "exit $?"
  echo "\$ evo evolve --stage 3 --task fp16-d64 --devices 7"
  $evo evolve --stage 3 --task fp16-d64 --devices 7 --results-dir "$work/bad" --populations-dir "$work/bad"; echo "exit $?"
  echo "\$ evo evolve --stage 3 --task fp16-d64 --island 3/2"
  $evo evolve --stage 3 --task fp16-d64 --island 3/2 --results-dir "$work/bad" --populations-dir "$work/bad"; echo "exit $?"
} 2>&1 | tee "$OUT/bad-input.log"
tar -C "$work" -czf "$OUT/records.tar.gz" one-gpu two-gpus warm.log build.log
