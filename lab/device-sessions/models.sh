#!/usr/bin/env bash
# Issue 30 on the H200: the kernels a model gets, on the shapes models run (gates.json
# model_shapes, the `models` set). Two device calls, chained within 30 s so the build stays:
#   models.sh measure   (<= 9 min) build evo; re-gate and time the rank-1 elites of stages 9, 8, 7
#                       of every fp16/bf16 task on the `models` set (and the causal tasks on
#                       `regimes` again, after the causal roofline fix); SDPA cuDNN and flash on
#                       the same shapes in the same call. $OUT/models-measure.tgz: records, peers, logs.
#   models.sh op        (<= 8 min) rebuild the populations from the records, `evo export` every
#                       fp16/bf16 task, build the package (with the C++ op: PyTorch is there), then
#                       tests/deploy/check_torch_op.py: correctness, torch.compile, graphs, opcheck,
#                       refusals; the op (C++) against cuDNN and flash on the `models` set and the
#                       benchmark sets, with the Python path's graph and back-to-back times;
#                       then op_overhead.py: the host µs per call of each layer (overhead.md),
#                       and host_launch_bench.cpp: the C API's driver calls (host_launch.md).
#   models.sh host      (<= 3 min) only the export, the package and those two host-time steps.
#                       $OUT/models-op.tgz; its results/op/*.json goes to results/op/ (COMPARE.md's
#                       "exported op" section).
#   models.sh decode    (<= 9 min) stage 9 (split-KV decode) on the regime and model shapes: the
#                       rank-1 of its custom-bench populations (`--elites-of`) for fp16-d128,
#                       bf16-d128, fp16-d64; bf16-d64 first gets a stage-9 population (`evo run
#                       --stage 9 --bench decode`); SDPA peers on the decode set. $OUT/models-decode.tgz.
#   models.sh tma       (<= 9 min) the TMA decode kernel (split_kv_tma, the best of the stage-9 search
#                       datasets) on the regime and model shapes: fp16-d128 and bf16-d64 first get it
#                       into their decode populations (`evo run --stage 9 --bench decode`), then the
#                       rank-1 of every d128/d64 task's decode population is re-timed with
#                       `remeasure --elites-of` so the regime table can pick it. $OUT/models-tma.tgz.
#   models.sh m64       (<= 8 min) the 64-row stage-7 kernel (tma_ws_m64) on every regime and model
#                       shape of the D=64 tasks and the `long` set (`remeasure --elites-of` its
#                       custom-bench populations), so it competes for batched-short, where the
#                       cluster kernel ships at 0.80x cuDNN: a regime ranks only kernels timed on
#                       every one of its shapes, and 32xHxHx512x512 is in `long`. $OUT/models-m64.tgz.
#   models.sh fenced    (<= 9 min) the fenced split_kv_tma (9b50034) where a revoked source shipped
#                       (results/revoked.json): `evo run --only` the former decode elites' exact
#                       configurations of fp16-d128, bf16-d128, fp16-d64 on the decode set, then the
#                       rank-1 of every d128/d64 decode population re-timed on `regimes,models`, then
#                       tma_ws_m64 on the causal tasks' regime, model and `long` shapes (D=64 and
#                       D=128: batched-short causal ships the cluster kernel at 0.79-0.86x cuDNN).
#                       $OUT/models-fenced.tgz.
#   models.sh m64d128   (<= 9 min) tma_ws_m64 on fp16-d128 and bf16-d128 (non-causal) through the gate
#                       and deep tier on the regime and model shapes, then its rank 1 re-timed on
#                       `regimes,models,long` so the short regimes can pick it. $OUT/models-m64d128.tgz.
#   models.sh blockn    (<= 9 min) split_kv_tma's BLOCK_N 128 and STAGES 4 cells on fp16-d128 and
#                       bf16-d128 through the gate on the decode set, then the top 3 of their decode
#                       populations re-timed on `regimes,models` (then `models.sh op`). $OUT/models-blockn.tgz.
#   models.sh stages    (<= 4 min) evo run --stage 0..6 --budget 1 on the bf16 tasks that started at
#                       stage 7 (bf16-d128-causal, bf16-d64, bf16-d64-causal): every stage that
#                       supports them has a population. $OUT/models-stages.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT}"
source lab/device-sessions/device_steps.sh
device_env
final=$OUT
PHASE=${1:?measure|op|host|decode|tma|m64|m64d128|fenced|stages|blockn}
OUT=/tmp/evo-models-$PHASE && rm -rf "$OUT" && mkdir -p "$OUT"
evo=build/harness/evo
TASKS=fp16-d64,fp16-d64-causal,fp16-d128,fp16-d128-causal,bf16-d128,bf16-d128-causal,bf16-d64,bf16-d64-causal
CAUSAL=fp16-d64-causal,fp16-d128-causal,bf16-d128-causal,bf16-d64-causal
gpu_info
build_evo evo || { cp -r "$OUT"/* "$final"/; exit 1; }
echo "built at ${SECONDS}s"
pack() { mkdir -p "$OUT/results"; find results -maxdepth 1 -name '*.jsonl' -newer "$mark" -exec cp {} "$OUT/results/" \;
  cp results/peers/nvidia-h200.json "$OUT/results/peers-nvidia-h200.json" 2>/dev/null
  cp -r results/sources "$OUT/results/sources" 2>/dev/null
  tar -C "$OUT" -czf "$final/models-$PHASE.tgz" . ; ls -la "$OUT" "$OUT/results" | head -30; }
# Where the eager op's host time per call goes (the package in /tmp/evo-export): layer by layer
# from Python (op_overhead.py, ~20 s: overhead.md), then the C API split into the driver calls
# it makes (host_launch_bench.cpp, ~10 s: host_launch.md).
host_overhead() {
  timeout 90 python3 lab/device-sessions/op_overhead.py --package /tmp/evo-export --out "$OUT" >"$OUT/overhead.log" 2>&1
  echo "op_overhead exit $? at ${SECONDS}s"; tail -7 "$OUT/overhead.md" 2>/dev/null
  local cuda=/usr/local/cuda
  g++ -O2 -std=c++17 lab/device-sessions/host_launch_bench.cpp -I/tmp/evo-export/include -I/tmp/evo-export/kernels \
    -I$cuda/include -L/tmp/evo-export/build -levo_attn -L$cuda/lib64/stubs -lcuda -Wl,-rpath,/tmp/evo-export/build \
    -o /tmp/host_launch_bench >"$OUT/host_launch.log" 2>&1 &&
    timeout 60 /tmp/host_launch_bench >"$OUT/host_launch.md" 2>>"$OUT/host_launch.log"
  echo "host_launch_bench exit $? at ${SECONDS}s"; cat "$OUT/host_launch.md" 2>/dev/null
}
mark=$(mktemp); touch "$mark"
case "$PHASE" in
  measure)
    $evo population rebuild >"$OUT/rebuild.log" 2>&1
    timeout 150 $evo population remeasure --bench regimes --stages 8,7 --top 1 --task "$CAUSAL" >"$OUT/regimes.log" 2>&1
    echo "regimes (causal) exit $? at ${SECONDS}s"; tail -2 "$OUT/regimes.log"
    timeout 220 $evo population remeasure --bench models --stages 9,8,7 --top 1 --task "$TASKS" >"$OUT/models.log" 2>&1
    echo "models exit $? at ${SECONDS}s"; tail -3 "$OUT/models.log"
    left=$((520 - SECONDS)); [ "$left" -lt 60 ] && left=60
    timeout "$left" python3 scripts/peers_sdpa.py --tasks "$TASKS" --sets models --backends cudnn,flash \
      >"$OUT/peers.log" 2>&1
    echo "peers exit $? at ${SECONDS}s"; tail -2 "$OUT/peers.log"
    pack ;;
  decode)
    $evo population rebuild >"$OUT/rebuild.log" 2>&1
    timeout 170 $evo population remeasure --task fp16-d128,bf16-d128 --elites-of custom-b86019aa --stages 9 --top 1 \
      --bench regimes,models >"$OUT/decode-d128.log" 2>&1
    echo "d128 exit $? at ${SECONDS}s"; tail -3 "$OUT/decode-d128.log"
    timeout 100 $evo population remeasure --task fp16-d64 --elites-of custom-d10f22fa --stages 9 --top 1 \
      --bench regimes,models >"$OUT/decode-d64.log" 2>&1
    echo "fp16-d64 exit $? at ${SECONDS}s"; tail -3 "$OUT/decode-d64.log"
    timeout 110 $evo run --stage 9 --task bf16-d64 --budget 2 --bench decode >"$OUT/decode-bf16-d64-run.log" 2>&1
    echo "bf16-d64 stage 9 run exit $? at ${SECONDS}s"; tail -3 "$OUT/decode-bf16-d64-run.log"
    left=$((470 - SECONDS)); [ "$left" -lt 30 ] && left=30
    timeout "$left" $evo population remeasure --task bf16-d64 --elites-of custom-d10f22fa --stages 9 --top 1 \
      --bench regimes,models >"$OUT/decode-bf16-d64.log" 2>&1
    echo "bf16-d64 exit $? at ${SECONDS}s"; tail -3 "$OUT/decode-bf16-d64.log"
    left=$((530 - SECONDS)); [ "$left" -lt 30 ] && left=30
    timeout "$left" python3 scripts/peers_sdpa.py --tasks bf16-d64 --sets decode --backends cudnn,flash \
      >"$OUT/peers.log" 2>&1
    echo "peers exit $? at ${SECONDS}s"; tail -2 "$OUT/peers.log"
    pack ;;
  tma)
    $evo population rebuild >"$OUT/rebuild.log" 2>&1
    timeout 200 $evo run --stage 9 --task fp16-d128,bf16-d64 --budget 3 --bench decode >"$OUT/tma-run.log" 2>&1
    echo "stage 9 run (fp16-d128, bf16-d64) exit $? at ${SECONDS}s"; tail -3 "$OUT/tma-run.log"
    timeout 150 $evo population remeasure --task fp16-d128,bf16-d128 --elites-of custom-b86019aa --stages 9 --top 1 \
      --bench regimes,models >"$OUT/tma-d128.log" 2>&1
    echo "d128 exit $? at ${SECONDS}s"; tail -3 "$OUT/tma-d128.log"
    left=$((520 - SECONDS)); [ "$left" -lt 30 ] && left=30
    timeout "$left" $evo population remeasure --task fp16-d64,bf16-d64 --elites-of custom-d10f22fa --stages 9 --top 1 \
      --bench regimes,models >"$OUT/tma-d64.log" 2>&1
    echo "d64 exit $? at ${SECONDS}s"; tail -3 "$OUT/tma-d64.log"
    pack ;;
  m64)
    $evo population rebuild >"$OUT/rebuild.log" 2>&1
    timeout 220 $evo population remeasure --task fp16-d64,bf16-d64 --elites-of custom-be632539 --stages 7 --top 1 \
      --bench regimes,models,long >"$OUT/m64.log" 2>&1
    echo "m64 exit $? at ${SECONDS}s"; tail -3 "$OUT/m64.log"
    left=$((460 - SECONDS)); [ "$left" -lt 30 ] && left=30
    timeout "$left" $evo population remeasure --task fp16-d64-causal,bf16-d64-causal --elites-of custom-c8661eb9 \
      --stages 7 --top 1 --bench regimes,models,long >"$OUT/m64-causal.log" 2>&1
    echo "m64 causal exit $? at ${SECONDS}s"; tail -3 "$OUT/m64-causal.log"
    pack ;;
  fenced)
    $evo population rebuild >"$OUT/rebuild.log" 2>&1
    only() { timeout 90 $evo run --stage 9 --bench decode --budget 1 --task "$1" \
      --only "split_kv_tma:BLOCK_M=16,BLOCK_N=$2,KV_SPLITS=$3,NWARPS=4,STAGES=3" >"$OUT/only-$1.log" 2>&1
      echo "$1 split_kv_tma BLOCK_N=$2 KV_SPLITS=$3: exit $? at ${SECONDS}s"; tail -2 "$OUT/only-$1.log" | cut -c1-200; }
    only fp16-d128 64 64; only bf16-d128 64 16; only fp16-d64 128 16
    timeout 150 $evo population remeasure --task fp16-d128,bf16-d128 --elites-of custom-b86019aa --stages 9 --top 1 \
      --bench regimes,models >"$OUT/fenced-d128.log" 2>&1
    echo "d128 exit $? at ${SECONDS}s"; tail -3 "$OUT/fenced-d128.log"
    timeout 100 $evo population remeasure --task fp16-d64 --elites-of custom-d10f22fa --stages 9 --top 1 \
      --bench regimes,models >"$OUT/fenced-d64.log" 2>&1
    echo "fp16-d64 exit $? at ${SECONDS}s"; tail -3 "$OUT/fenced-d64.log"
    left=$((530 - SECONDS)); [ "$left" -lt 30 ] && left=30
    timeout "$left" $evo population remeasure --task fp16-d64-causal,bf16-d64-causal --elites-of custom-c8661eb9 \
      --stages 7 --top 1 --bench regimes,models,long >"$OUT/m64-causal.log" 2>&1
    echo "m64 causal exit $? at ${SECONDS}s"; tail -3 "$OUT/m64-causal.log"
    left=$((560 - SECONDS)); [ "$left" -lt 30 ] && left=30
    timeout "$left" $evo population remeasure --task fp16-d128-causal,bf16-d128-causal --elites-of custom-aa009305 \
      --stages 7 --top 1 --bench regimes,models,long >"$OUT/m64-causal-d128.log" 2>&1
    echo "m64 causal d128 exit $? at ${SECONDS}s"; tail -3 "$OUT/m64-causal-d128.log"
    pack ;;
  blockn)
    # Issue 30's decode regime at 0.92-0.97x cuDNN on caches of 269 MB and more
    # (lab/notes/decode-bandwidth-20261202.md): the stage-9 bf16-d128 dataset (before the split rule)
    # has split_kv_tma cells with BLOCK_N 128 (NWARPS 8 or 4) and with STAGES 4 that read
    # 16x64x8x1x4096x128 in 76.2-77.0 us against the shipped BLOCK_N 64 STAGES 3 cell's 80.6, and
    # 32x32x32x1x2048x128 in 263.2-264.3 against 271.5 (predicted: 3-5 % on the large caches, where
    # the split rule runs them unsplit and a longer ring keeps more loads in flight), but
    # 8x32x8x16x8192x128 in 98.7-100.8 against 88.3. Each through the gate and the deep tier on the
    # decode set, then the top 3 of each d128 decode population re-timed on `regimes,models`.
    for t in fp16-d128 bf16-d128; do
      timeout 150 $evo run --stage 9 --bench decode --budget 3 --task $t \
        --only "split_kv_tma:BLOCK_M=16,BLOCK_N=128,KV_SPLITS=16,NWARPS=8,STAGES=3" \
        --only "split_kv_tma:BLOCK_M=16,BLOCK_N=128,KV_SPLITS=16,NWARPS=4,STAGES=3" \
        --only "split_kv_tma:BLOCK_M=16,BLOCK_N=64,KV_SPLITS=16,NWARPS=4,STAGES=4" >"$OUT/blockn-$t.log" 2>&1
      echo "$t: exit $? at ${SECONDS}s"; grep -E "candidates, .* GPU-seconds" "$OUT/blockn-$t.log"
    done
    $evo population rebuild >"$OUT/rebuild.log" 2>&1
    left=$((540 - SECONDS)); [ "$left" -lt 30 ] && left=30
    timeout "$left" $evo population remeasure --task fp16-d128,bf16-d128 --elites-of custom-b86019aa --stages 9 --top 3 \
      --bench regimes,models >"$OUT/blockn-remeasure.log" 2>&1
    echo "remeasure exit $? at ${SECONDS}s"; tail -3 "$OUT/blockn-remeasure.log"
    pack ;;
  m64d128)
    # The non-causal D=128 tasks never ran tma_ws_m64 through the deep tier (one record each), so
    # their short and batched-short regimes (0.90-0.92x cuDNN) only ever compared 128-row kernels.
    # Predicted (lab/notes/h200-20261130-twelfth-session.md): 1x8x8x512x512x128 from 64 CTAs of
    # one warpgroup instead of 32 of two, 0.7-0.9x the 128-row kernel's time.
    timeout 260 $evo run --stage 7 --task fp16-d128,bf16-d128 --bench regimes,models --only tma_ws_m64 --budget 4 \
      >"$OUT/m64d128-run.log" 2>&1
    echo "m64 d128 run exit $? at ${SECONDS}s"; grep -E "candidates, .* GPU-seconds" "$OUT/m64d128-run.log"
    $evo population rebuild >"$OUT/rebuild.log" 2>&1
    for t in fp16-d128 bf16-d128; do
      # the custom-bench population the run above wrote (population writes leave unchanged files alone)
      pop=$(find populations/nvidia-h200 -name "$t@custom-*.json" -newer "$mark" | head -1)
      [ -n "$pop" ] || { echo "$t: the run wrote no custom population"; continue; }
      bench=${pop##*@}; bench=${bench%.json}
      left=$((540 - SECONDS)); [ "$left" -lt 30 ] && left=30; [ "$t" = fp16-d128 ] && left=$((left / 2))
      timeout "$left" $evo population remeasure --task $t --elites-of "$bench" --stages 7 --top 1 \
        --bench regimes,models,long >"$OUT/m64d128-$t.log" 2>&1
      echo "$t remeasure ($bench) exit $? at ${SECONDS}s"; tail -3 "$OUT/m64d128-$t.log"
    done
    pack ;;
  stages)
    for n in 0 1 2 3 4 5 6; do
      timeout 60 $evo run --stage $n --task bf16-d128-causal,bf16-d64,bf16-d64-causal --budget 1 >>"$OUT/stages.log" 2>&1
      echo "stage $n exit $? at ${SECONDS}s"
    done
    grep -E "candidates, .* GPU-seconds" "$OUT/stages.log"
    pack ;;
  host)
    export_package /tmp/evo-export "$TASKS" || exit 1
    echo "package built at ${SECONDS}s"
    export PYTHONPATH=/tmp/evo-export/python
    host_overhead
    pack ;;
  op)
    $evo population rebuild >"$OUT/rebuild.log" 2>&1
    export_package /tmp/evo-export "$TASKS" || exit 1
    cp /tmp/evo-export/manifest.json "$OUT/"
    echo "package built at ${SECONDS}s"
    export PYTHONPATH=/tmp/evo-export/python
    timeout 60 python3 examples/deploy/transformer_block.py >"$OUT/example.txt" 2>&1; echo "example exit $?"
    left=$((480 - SECONDS)); [ "$left" -lt 60 ] && left=60
    timeout "$left" python3 tests/deploy/check_torch_op.py --package /tmp/evo-export --out "$OUT" --random 8 \
      --sets models,mission --budget-s $((left - 40)) >"$OUT/check.log" 2>&1
    echo "check_torch_op exit $? at ${SECONDS}s"; tail -3 "$OUT/check.log"
    host_overhead
    # The report COMPARE.md's "exported op" section reads: results/op/<gpu key>-<time>.json.
    gpu_key=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-')
    mkdir -p "$OUT/results/op" && cp "$OUT/export_check.json" "$OUT/results/op/$gpu_key-$(date -u +%Y%m%dT%H%M%SZ).json"
    pack ;;
esac
