#!/usr/bin/env bash
# Issue 30 on the H200: Nsight Compute on the exported op's kernels and SDPA cuDNN's, one call each
# on seven representative shapes of the op report (scripts/ncu_op_shapes.py --list: three decode
# steps, BERT, two batched causal prefills, the 16k encoder), in one device call:
#   run(command: "OUT=$OUT bash lab/device-sessions/ncu_op.sh")          (kind nvidia-h200)
# Expected: about 4-6 min on a fresh machine (evo build ~2 min, export and package build ~1 min,
# ncu ~1-2 min); every step is bounded so the call ends by ~7.5 min.
# Steps: build evo; `evo population rebuild`; export the tasks the shapes need and build the
# package with its C++ op (device_steps.sh export_package, as `models.sh op`); `ncu
# --query-metrics` to drop any metric name this ncu does not know (ncu_table.py --metrics); then
# ncu --clock-control none (clocks are never changed) --nvtx with one --nvtx-include per profiled
# range ("evo:<shape>/", "cudnn:<shape>/") over scripts/ncu_op_shapes.py, the report exported as
# CSV twice (plain, and with --print-nvtx-rename kernel to attribute kernels by range), and
# ncu_table.py's markdown. Should the NVTX filter select nothing, ncu runs once more with
# --profile-from-start off instead (ncu_op_shapes.py brackets each profiled call with
# cudaProfilerStart/Stop), and the table attributes kernels by launch order.
# What comes back under $OUT: ncu_op.md (the table to commit), ncu_plan.json (shapes, kernels,
# calls), ncu_raw.csv and ncu_nvtx.csv (ncu's CSV), ncu_op.ncu-rep (the report, for the GUI),
# ncu.log (ncu's and the script's output), gpu.txt, export.log.
# FA4=1 profiles FlashAttention-4's forward too (range "fa4:<name>", the table's FA4 columns):
# after the three `fa4.sh stash` calls of the same warm machine (fa4.sh's head says how); SHAPES
# (names of scripts/ncu_op_shapes.py --list, comma-separated) narrows the shapes, e.g. to the
# long ones where FA4 leads: SHAPES=long-encoder-16k,long-16k-causal,long-encoder-16k-bf16,mistral-7b-prefill-8k
# Exit: 0 table written; 1 build, export, package or FA4 install failed; 2 no ncu; 3 ncu profiled no kernel.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
: "${OUT:?set OUT to the folder that comes back}"
source lab/device-sessions/device_steps.sh
device_env
NCU=/usr/local/cuda/bin/ncu
[ -x "$NCU" ] || NCU=$(command -v ncu) || {
  echo "ncu_op: Nsight Compute (ncu) is neither at /usr/local/cuda/bin/ncu nor on PATH: install the" \
    "CUDA toolkit's nsight-compute package" | tee "$OUT/ncu.log" >&2
  exit 2
}
"$NCU" --version | tail -1 | tee "$OUT/ncu-version.txt"
gpu_info
build_evo evo || exit 1
echo "built at ${SECONDS}s"
build/harness/evo population rebuild >/dev/null 2>&1
shapes=(${SHAPES:+--shapes ${SHAPES//,/ }})
fa4=()
if [ "${FA4:-0}" = 1 ]; then
  OUT=$OUT bash lab/device-sessions/fa4.sh install || exit 1
  export FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=1 FLASH_ATTENTION_CUTE_DSL_CACHE_DIR=/tmp/fa4-cache \
    TVM_FFI_CACHE_DIR=/tmp/fa4-cache/tvm-ffi
  fa4=(--fa4-site /tmp/fa4-site)
fi
export_package /tmp/evo-export "$(python3 scripts/ncu_op_shapes.py --tasks "${shapes[@]}")" || exit 1
echo "package built at ${SECONDS}s"
export PYTHONPATH=/tmp/evo-export/python

"$NCU" --query-metrics >/tmp/ncu-query.txt 2>&1
METRICS=$(python3 lab/device-sessions/ncu_table.py --metrics --query /tmp/ncu-query.txt)
includes=()
for name in $(python3 scripts/ncu_op_shapes.py --list "${shapes[@]}"); do
  includes+=(--nvtx-include "evo:$name/" --nvtx-include "cudnn:$name/")
  [ ${#fa4[@]} -gt 0 ] && includes+=(--nvtx-include "fa4:$name/")
done
profile() {  # ncu options that pick the calls; the report goes to /tmp/ncu-op.ncu-rep
  local left=$((460 - SECONDS))
  if [ "$left" -lt 45 ]; then echo "no time left to profile at ${SECONDS}s" >&2; echo 0; return; fi
  rm -f /tmp/ncu-op.ncu-rep "$OUT/ncu_plan.json"  # nothing of an earlier call is read as this one's
  timeout "$left" "$NCU" --clock-control none --target-processes all --nvtx "$@" --metrics "$METRICS" \
    -f -o /tmp/ncu-op python3 scripts/ncu_op_shapes.py --package /tmp/evo-export "${shapes[@]}" "${fa4[@]}" \
    --plan "$OUT/ncu_plan.json" >>"$OUT/ncu.log" 2>&1
  echo "ncu exit $? at ${SECONDS}s" >&2
  "$NCU" --import /tmp/ncu-op.ncu-rep --csv --page raw --print-units base >"$OUT/ncu_raw.csv" 2>>"$OUT/ncu.log"
  "$NCU" --import /tmp/ncu-op.ncu-rep --csv --page raw --print-units base --print-nvtx-rename kernel \
    >"$OUT/ncu_nvtx.csv" 2>>"$OUT/ncu.log"
  grep -c '^"[0-9]' "$OUT/ncu_raw.csv"  # the kernels profiled: the only line on stdout
}
kernels=$(profile "${includes[@]}")
echo "NVTX filter: ${kernels:-0} kernels"
if [ "${kernels:-0}" -eq 0 ] && [ "$SECONDS" -lt 370 ]; then
  echo "== no kernel under the NVTX filter: --profile-from-start off" >>"$OUT/ncu.log"
  kernels=$(profile --profile-from-start off)
  echo "cudaProfilerStart/Stop: ${kernels:-0} kernels"
fi
cp /tmp/ncu-op.ncu-rep "$OUT/ncu_op.ncu-rep" 2>/dev/null
python3 lab/device-sessions/ncu_table.py --plan "$OUT/ncu_plan.json" --raw "$OUT/ncu_raw.csv" \
  --nvtx "$OUT/ncu_nvtx.csv" --ncu-version "$(cat "$OUT/ncu-version.txt")" >"$OUT/ncu_op.md"
rc=$?
head -12 "$OUT/ncu_op.md"
echo "end at ${SECONDS}s"
exit $rc
