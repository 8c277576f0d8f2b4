#!/usr/bin/env bash
# Issue 30 item 3 on the H200, one call (<= 7 min): the split-KV, pack-GQA decode stage.
#   1. build evo; the GPU's name and clocks
#   2. evo run --stage 9 on fp16-d128, bf16-d128, fp16-d64 with the `decode` set (gates.json:
#      the models of docs/stages.md's stage-9 table), budget $BUDGET configurations per task
#   3. PyTorch SDPA cuDNN and flash on the same decode shapes, in the same call
#   4. the table: evo µs, cuDNN µs, evo x cuDNN, GB/s and fraction of 4.8 TB/s
#      (lab/device-sessions/decode_table.py)
# Comes back: $OUT/decode-table.md, $OUT/decode.tgz (records, peers, logs), $OUT/gpu.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT}"
source lab/device-sessions/device_steps.sh
device_env
final=$OUT
OUT=/tmp/evo-decode-out && rm -rf "$OUT" && mkdir -p "$OUT"
evo=build/harness/evo
TASKS=fp16-d128,bf16-d128,fp16-d64
BUDGET=${BUDGET:-2}
gpu_info
cp "$OUT/gpu.txt" "$final/"
build_evo evo || { cp -r "$OUT"/* "$final"/; exit 1; }
echo "built at ${SECONDS}s"
mark=$(mktemp); touch "$mark"
timeout 230 $evo run --stage 9 --task "$TASKS" --budget "$BUDGET" --bench decode >"$OUT/stage9.log" 2>&1
echo "stage 9 exit $? at ${SECONDS}s"; tail -30 "$OUT/stage9.log"
left=$((390 - SECONDS)); [ "$left" -lt 30 ] && left=30
timeout "$left" python3 scripts/peers_sdpa.py --tasks "$TASKS" --sets decode --backends cudnn,flash \
  --out "$OUT/peers-decode.json" --replace >"$OUT/peers.log" 2>&1
echo "peers exit $? at ${SECONDS}s"; tail -3 "$OUT/peers.log"
mkdir -p "$OUT/results"
find results -maxdepth 1 -name '*.jsonl' -newer "$mark" -exec cp {} "$OUT/results/" \;
cp -r results/sources "$OUT/results/sources" 2>/dev/null
python3 lab/device-sessions/decode_table.py --peers "$OUT/peers-decode.json" "$OUT"/results/*.jsonl \
  | tee "$final/decode-table.md"
tar -C "$OUT" -czf "$final/decode.tgz" . && ls -la "$OUT" "$OUT/results"
