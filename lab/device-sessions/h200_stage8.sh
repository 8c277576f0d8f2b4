#!/usr/bin/env bash
# Stage 8 (clusters, TMA multicast, persistent scheduler) on the H200 in one device call, each
# step inside the call's time (SECONDS limits), the deliverables first:
#   build; a smoke of the cluster + persistent launch (gate on small and ragged shapes, one
#   long shape; the call stops there if it fails); stage 8 on every task with --sanitize;
#   stage 7 on fp16-d128-causal; SDPA peers (flash, cudnn) for every task; then, with the time
#   left, the ablation of the stage-8 switches and one Nsight Compute reading.
#   `lab/device-sessions/h200_stage8.sh ablation`: only the build and the ablation (a later call).
# Everything that must come back is under $OUT (at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache}
TASKS=fp16-d64,fp16-d128,bf16-d128,fp16-d64-causal,fp16-d128-causal
evo=build/harness/evo
log="$OUT/stage8.log"
mkdir -p /tmp/logs

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > /tmp/logs/gpu.txt 2>&1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
if ! cmake --build build -j 16 > /tmp/logs/build.log 2>&1; then
  grep -E "error" -A3 /tmp/logs/build.log | head -30
  exit 1
fi
echo "built at ${SECONDS}s" | tee "$log"
touch /tmp/evo-start
PHASE=${1:-all}
[ "$PHASE" = ablation ] && ABL_UNTIL_S=100000 NCU_UNTIL_S=0
if [ "$PHASE" = all ]; then

timeout 120 $evo run --stage 8 --task fp16-d128,fp16-d64-causal --budget 1 --shapes small,ragged --seeds 0 \
  --bench long-smoke --results-dir /tmp/smoke/results --populations-dir /tmp/smoke/populations >> "$log" 2>&1
echo "smoke exit $? at ${SECONDS}s" >> "$log"
tail -8 "$log"
cat /tmp/smoke/results/*.jsonl > "$OUT/smoke.jsonl" 2>/dev/null
if ! grep -q "smoke exit 0" "$log" || ! grep -q '"outcome":"ok"' "$OUT/smoke.jsonl"; then
  cp /tmp/logs/*.txt "$OUT/" 2>/dev/null
  exit 0
fi

timeout "${STAGE8_S:-270}" $evo run --stage 8 --task "$TASKS" --budget "${BUDGET:-2}" --sanitize 2>&1 | tee -a "$log" | tail -14
echo "stage 8 done at ${SECONDS}s" >> "$log"
timeout 80 $evo run --stage 7 --task fp16-d128-causal --budget "${BUDGET7:-2}" --rng-seed "${RNG7:-1}" --sanitize 2>&1 |
  tee -a "$log" | tail -5
echo "stage 7 done at ${SECONDS}s" >> "$log"
PYTHONUNBUFFERED=1 timeout 110 python3 scripts/peers_sdpa.py --tasks "$TASKS" --backends flash,cudnn > /tmp/logs/peers.log 2>&1
echo "peers exit $? at ${SECONDS}s" >> "$log"; tail -2 /tmp/logs/peers.log
fi

# Ablation: the stage-8 kernel with each switch pinned (a scratch repo; its stage asks no SASS,
# so CLUSTER=1 is allowed there), in one run, on the long D=128 shapes where they should matter.
if [ "$SECONDS" -lt "${ABL_UNTIL_S:-440}" ]; then
  PHASE=$PHASE python3 - <<'PY'
import json, os, re
src = open("variants/8-cluster/cluster.cu").read()
root = "/tmp/abl"
os.makedirs(f"{root}/variants/8-abl", exist_ok=True)
os.system(f"cp -r gates {root}/ && cp -r variants/common {root}/variants/")
open(f"{root}/variants/8-abl/stage.json", "w").write('{"stage": 8, "slug": "abl"}\n')
variants = [("a_c1p0rs0", 1, 0, 0), ("b_c1p0rs1", 1, 0, 1), ("c_c1p1rs1", 1, 1, 1), ("d_c2p0rs1", 2, 0, 1), ("e_c2p1rs1", 2, 1, 1)]
if os.environ.get("PHASE") == "ablation":
    variants = [("a_c1p0", 1, 0, 0), ("c_c1p1", 1, 1, 0), ("e_c2p1", 2, 1, 0)]
g = json.load(open(f"{root}/gates/gates.json"))
g["shape_sets"]["abl"] = ["32xHxHx512x512xD", "8xHxHx2048x2048xD"]
json.dump(g, open(f"{root}/gates/gates.json", "w"), indent=1)
for name, c, pers, rs in variants:
    s = src
    for key, val in (("CLUSTER", c), ("PERSISTENT", pers), ("RESCALE_SKIP", rs)):
        s = re.sub(r'"%s": \[[0-9, ]*\]' % key, f'"{key}": [{val}]', s)
    open(f"{root}/variants/8-abl/{name}.cu", "w").write(s)
PY
  EVO_ROOT=/tmp/abl timeout $((${ABL_END_S:-560} - SECONDS)) $evo run --stage 8 --task fp16-d128,fp16-d128-causal${ABL_EXTRA_TASKS:-} --budget 5 --shapes small \
    --seeds 0 --bench abl --results-dir /tmp/abl/results \
    --populations-dir /tmp/abl/populations > /tmp/logs/ablation.log 2>&1
  echo "ablation exit $? at ${SECONDS}s" >> "$log"; tail -13 /tmp/logs/ablation.log
  cat /tmp/abl/results/*.jsonl > "$OUT/ablation.jsonl" 2>/dev/null
fi
if [ "$SECONDS" -lt "${NCU_UNTIL_S:-500}" ]; then
  # A scratch repo with only the stage-8 default and one sampled gate case, so launch 21 of
  # evo_attn_fwd is a warm-up launch of the benchmark shape.
  python3 - <<'PY'
import json, os
root = "/tmp/ncu8"
os.makedirs(f"{root}/variants/8-cluster", exist_ok=True)
os.system(f"cp -r gates {root}/ && cp -r variants/common {root}/variants/ && cp variants/8-cluster/* {root}/variants/8-cluster/")
g = json.load(open(f"{root}/gates/gates.json"))
g["sampled"]["cases"] = 1
json.dump(g, open(f"{root}/gates/gates.json", "w"), indent=1)
PY
  echo "ncu: the stage-8 default config, fp16-d128, 4x16x16x2048x2048x128" > /tmp/logs/ncu-stage8.txt
  EVO_ROOT=/tmp/ncu8 timeout $((575 - SECONDS)) ncu --clock-control none --target-processes all --kernel-name evo_attn_fwd --launch-skip 20 --launch-count 1 \
    --metrics gpu__time_duration.sum,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    $evo run --stage 8 --task fp16-d128 --budget 1 --shapes 1x2x2x64x64x128 --bench 4x16x16x2048x2048x128 --seeds 0 \
    --results-dir /tmp/ncu8/results --populations-dir /tmp/ncu8/populations >> /tmp/logs/ncu-stage8.txt 2>&1
  grep -E "duration|pct|sum" /tmp/logs/ncu-stage8.txt | tail -10
fi
echo "end at ${SECONDS}s" >> "$log"
find results -newer /tmp/evo-start -type f \( -name '*.jsonl' -o -name '*.json' \) | tar czf "$OUT/new-results.tar.gz" -T - populations
tar czf "$OUT/logs.tgz" -C /tmp logs
