#!/usr/bin/env bash
# One recorded evo evolve session on the H200 (what lab/logs/evolve-*.log came from):
#   1. builtin evolution and 2. random sampling on $STAGE (default 5, its search space widened in
#      stage.json) for $TASK (default fp16-d64), each from a copy of the same committed records and populations,
#      the same --rng-seed and GPU-second budget, --quick screening;
#   3. the example LLM generator against the mock chat server, through the GPU gates.
# Everything new under results/ and populations/ comes back as $OUT/evolve-results.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache}
BUDGET=${BUDGET:-45}
STAGE=${STAGE:-5}
TASK=${TASK:-fp16-d64}
MOCK=${MOCK:-1}  # 0: skip the mock LLM generator run
evo=build/harness/evo
if [ ! -x "$evo" ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j 16 --target evo >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$OUT/gpu.txt" 2>&1
touch /tmp/evolve-start
for gen in builtin random; do
  rm -rf "/tmp/abl-$gen" && mkdir -p "/tmp/abl-$gen"
  cp -r results "/tmp/abl-$gen/results" && cp -r populations "/tmp/abl-$gen/populations"
  $evo evolve --stage "$STAGE" --task "$TASK" --generator $gen --quick --rng-seed 1 --budget-gpu-s "$BUDGET" \
      --generations 40 --population 4 --results-dir "/tmp/abl-$gen/results" \
      --populations-dir "/tmp/abl-$gen/populations" >"$OUT/evolve-$gen.log" 2>&1
  echo "$gen: exit $?"; tail -2 "$OUT/evolve-$gen.log"
done
# Resume the builtin run from its records for two more generations (budget + 6 GPU-s).
run=$(grep -o 'evo evolve ev-[^:]*' "$OUT/evolve-builtin.log" | head -1 | cut -d' ' -f3)
$evo evolve --stage "$STAGE" --task "$TASK" --generator builtin --quick --rng-seed 1 --resume "$run" \
    --budget-gpu-s "$((BUDGET + 6))" --generations 60 --population 4 --results-dir /tmp/abl-builtin/results \
    --populations-dir /tmp/abl-builtin/populations >"$OUT/evolve-builtin-resume.log" 2>&1
echo "resume $run: exit $?"; tail -2 "$OUT/evolve-builtin-resume.log"
[ "$MOCK" = 1 ] && python3 tests/fixtures/evolve/mock_llm_server.py --good variants/5-swizzle/swizzle.cu \
    --cheat tests/adversarial/cache_by_content.cu --log "$OUT/mock-requests.jsonl" -- \
    $evo evolve --stage 5 --task fp16-d64 --generator "exec:python3 scripts/generators/llm_openai.py" \
    --generations 5 --population 1 --quick >"$OUT/evolve-mock.log" 2>&1
[ "$MOCK" = 1 ] && { echo "mock: exit $?"; tail -3 "$OUT/evolve-mock.log"; }
mkdir -p /tmp/back/results/evolve /tmp/back/results/sources
for d in results /tmp/abl-builtin/results /tmp/abl-random/results; do
  find "$d" -maxdepth 1 -name '*.jsonl' -newer /tmp/evolve-start -exec cp {} /tmp/back/results/ \;
  cp "$d"/evolve/*.jsonl /tmp/back/results/evolve/ 2>/dev/null
  cp "$d"/sources/*.cu /tmp/back/results/sources/ 2>/dev/null
done
tar czf "$OUT/evolve-results.tgz" -C /tmp/back results
ls -la /tmp/back/results | tail -8
