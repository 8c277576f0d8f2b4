#!/usr/bin/env bash
# Issue 24 on the H200 (PyTorch 2.11, CUDA 13.0), one device call per phase; everything that must
# come back is under $OUT (at most 8 files).
#
#   lab/device-sessions/export.sh            (<= 6 min) build evo; derive the populations (with their
#       per-regime elites) from the committed records; `evo export` every task of
#       populations/nvidia-h200 to /tmp/evo-export; build the package with CMake; then in one
#       PyTorch process (tests/deploy/check_torch_op.py) check torch.ops.evo.attention against
#       SDPA (float32 reference, gates.json tolerances) on every benchmark and `regimes` shape of
#       every task and 24 seeded random shapes (GQA/MQA, BSHD, packed QKV, causal, ragged, decode),
#       under torch.compile and in a CUDA graph, opcheck, refusals and fallback; time the op
#       against SDPA cuDNN and flash and against evo's records of the same kernels; run
#       examples/deploy/transformer_block.py. Files: gpu.txt, export.log, correctness.md,
#       timing.md, export_check.json, example.txt, manifest.json.
#   lab/device-sessions/export.sh regimes    (<= 8 min) gate and time the elites of stages 8, 7, 6, 5 (top 1)
#       of every task again, from their recorded sources, on gates.json's `regimes` shapes (decode
#       Sq 1 and 16, GQA 32/8, BSHD): `evo population remeasure --bench regimes`. Its records
#       come back as regimes.jsonl (commit it under results/, then `evo population rebuild && evo
#       compare && evo docs`): the decode regime gets measured kernels, the others GQA shapes.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
source lab/device-sessions/device_steps.sh
device_env
PHASE=${1:-export}
log="$OUT/export.log"
evo=build/harness/evo
TASKS=$(ls populations/nvidia-h200 | grep -v @ | sed 's/\.json$//' | paste -sd, -)

gpu_info
build_evo evo || exit 1
echo "built evo at ${SECONDS}s; tasks $TASKS" | tee "$log"

if [ "$PHASE" = regimes ]; then
  timeout 330 $evo population remeasure --bench regimes --stages 8,7,6,5 --top 1 --task "$TASKS" \
    >> "$log" 2>&1
  echo "remeasure exit $? at ${SECONDS}s" | tee -a "$log"
  cat results/*-remeasure.jsonl > "$OUT/regimes.jsonl" 2>/dev/null
  tail -20 "$log"
  exit 0
fi

$evo population rebuild >> "$log" 2>&1
$evo export --task "$TASKS" --out /tmp/evo-export >> "$log" 2>&1 || { tail -20 "$log"; exit 1; }
echo "exported at ${SECONDS}s" | tee -a "$log"
cp /tmp/evo-export/manifest.json "$OUT/"
if ! (cmake -S /tmp/evo-export -B /tmp/evo-export/build -G Ninja -DCMAKE_BUILD_TYPE=Release &&
      cmake --build /tmp/evo-export/build -j 16) >> "$log" 2>&1; then
  tail -30 "$log"
  exit 1
fi
echo "package built at ${SECONDS}s" | tee -a "$log"
export PYTHONPATH=/tmp/evo-export/python
timeout 90 python3 examples/deploy/transformer_block.py > "$OUT/example.txt" 2>&1
echo "example exit $? at ${SECONDS}s" | tee -a "$log"
# The checks first, then timing until the budget: the whole call stays under 6 minutes.
left=$((345 - SECONDS))
[ "$left" -lt 40 ] && left=40
timeout "$left" python3 tests/deploy/check_torch_op.py --package /tmp/evo-export --out "$OUT" \
  --budget-s $((left - 20)) >> "$log" 2>&1
echo "check_torch_op exit $? at ${SECONDS}s" | tee -a "$log"
tail -4 "$log"
tail -2 "$OUT/correctness.md" "$OUT/timing.md" "$OUT/example.txt" 2>/dev/null
