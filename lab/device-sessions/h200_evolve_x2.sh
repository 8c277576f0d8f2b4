#!/usr/bin/env bash
# evo evolve on two H200s (nvidia-h200-x2) in one device call: one search with --devices all, then
# two islands (one per GPU) that exchange elites every generation. Records stay in a scratch
# results folder and come back as one archive (lab/experiments/evolve-x2/).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=/tmp/evo-cache
evo=build/harness/evo
mkdir -p /tmp/ev/logs
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j 32 --target evo > /tmp/ev/logs/build.log 2>&1 || { tail -20 /tmp/ev/logs/build.log; exit 1; }
echo "built at ${SECONDS}s"
common=(--stage 3 --task fp16-d64 --generations 2 --population 4 --quick)
timeout 120 $evo evolve "${common[@]}" --devices all --rng-seed 7 \
  --results-dir /tmp/ev/devices/results --populations-dir /tmp/ev/devices/populations > /tmp/ev/logs/devices-all.log 2>&1
echo "devices-all exit $? at ${SECONDS}s" | tee -a /tmp/ev/logs/devices-all.log; tail -6 /tmp/ev/logs/devices-all.log
for i in 0 1; do
  timeout 150 $evo evolve "${common[@]}" --device $i --island $i/2 --island-group x2 --migrate-every 1 --migrate-wait 120 \
    --rng-seed 11 --results-dir /tmp/ev/islands/results --populations-dir /tmp/ev/islands/populations \
    > /tmp/ev/logs/island-$i.log 2>&1 &
done
wait
for i in 0 1; do echo "island $i:"; grep -iE "migrat|import|best|stopped|generation" /tmp/ev/logs/island-$i.log | tail -6; done
echo "end at ${SECONDS}s"
tar czf "$OUT/evolve-x2.tgz" -C /tmp ev/logs ev/devices/results ev/islands/results
