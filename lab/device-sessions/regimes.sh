#!/usr/bin/env bash
# Issue 30 on the H200, first call of 2026-11-27 (<= 9 min): the tasks models use, and measured
# per-regime elites.
#   1. build evo; the GPU's name and clocks
#   2. evo run --stage 7 (budget 4) and --stage 8 (budget 2) on bf16-d128-causal, bf16-d64,
#      bf16-d64-causal: the populations bf16 prefill (Llama, Mistral, Qwen) needs
#   3. PyTorch SDPA peers (flash, cuDNN) on those tasks' benchmark shapes, in the same call
#   4. evo population remeasure --bench regimes --stages 8,7 --top 1 on every fp16/bf16 task:
#      the decode, short and batched-short regimes get measured kernels
# Everything comes back as one archive (records, peer file, logs): $OUT/regimes.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT}"
source lab/device-sessions/device_steps.sh
device_env
final=$OUT
OUT=/tmp/evo-regimes-out && rm -rf "$OUT" && mkdir -p "$OUT"
evo=build/harness/evo
NEW=bf16-d128-causal,bf16-d64,bf16-d64-causal
ALL=fp16-d64,fp16-d64-causal,fp16-d128,fp16-d128-causal,bf16-d128,$NEW
gpu_info
build_evo evo || { cp -r "$OUT"/* "$final"/; exit 1; }
echo "built at ${SECONDS}s"
mark=$(mktemp); touch "$mark"
timeout 200 $evo run --stage 7 --task "$NEW" --budget 4 >"$OUT/stage7.log" 2>&1
echo "stage 7 exit $? at ${SECONDS}s"; tail -8 "$OUT/stage7.log"
timeout 120 $evo run --stage 8 --task "$NEW" --budget 2 >"$OUT/stage8.log" 2>&1
echo "stage 8 exit $? at ${SECONDS}s"; tail -8 "$OUT/stage8.log"
cp results/peers/nvidia-h200.json "$OUT/peers-before.json" 2>/dev/null
timeout 90 python3 scripts/peers_sdpa.py --tasks "$NEW" --backends flash,cudnn >"$OUT/peers.log" 2>&1
echo "peers exit $? at ${SECONDS}s"; tail -3 "$OUT/peers.log"
left=$((500 - SECONDS)); [ "$left" -lt 60 ] && left=60
timeout "$left" $evo population remeasure --bench regimes --stages 8,7 --top 1 --task "$ALL" >"$OUT/remeasure.log" 2>&1
echo "remeasure exit $? at ${SECONDS}s"; tail -8 "$OUT/remeasure.log"
mkdir -p "$OUT/results"
find results -maxdepth 1 -name '*.jsonl' -newer "$mark" -exec cp {} "$OUT/results/" \;
cp results/peers/nvidia-h200.json "$OUT/results/peers-nvidia-h200.json" 2>/dev/null
cp -r results/sources "$OUT/results/sources" 2>/dev/null
tar -C "$OUT" -czf "$final/regimes.tgz" . && ls -la "$OUT" "$OUT/results"
