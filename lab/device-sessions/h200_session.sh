#!/usr/bin/env bash
# The recorded H200 session, in phases that each fit one device call (≤ 10 min). Everything
# that must come back is written under $OUT (at most 8 files per call).
#   lab/device-sessions/h200_session.sh calibrate   # SDPA error -> tolerances; SDPA peers
#   lab/device-sessions/h200_session.sh stages-a    # build, ctest -L gpu, stages 0-2
#   lab/device-sessions/h200_session.sh stages-b    # stages 3-5, timing spread, gate, ncu
#   lab/device-sessions/h200_session.sh sanitize    # build, ctest -L gpu, every stage's kernel under --sanitize
#   lab/device-sessions/h200_session.sh resanitize  # ctest -L gpu -V (figures), stages 3 and 5 again with --sanitize
#   lab/device-sessions/h200_session.sh stage6      # stage 6 (wgmma) on every task with --sanitize, ncu
#   lab/device-sessions/h200_session.sh stage7      # stage 7 (TMA + warp specialization): smoke, every task --sanitize, peers
#   lab/device-sessions/h200_session.sh final       # ctest -L gpu -V; a gate baseline of the stage-6 elites, gated
#   lab/device-sessions/h200_session.sh merged      # after merging: gpu tests but adversarial, stage 7 sampled, evolve stage 7
#   lab/device-sessions/h200_session.sh final-gpu   # the whole `ctest -L gpu -V` on merged main (every GPU test, timed)
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache}
TASKS=fp16-d64,fp16-d128,bf16-d128,fp16-d64-causal
evo=build/harness/evo

build() {
  [ -x "$evo" ] && return 0
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  if ! cmake --build build -j 16 >"$OUT/build.log" 2>&1; then
    grep -E "error" -A3 "$OUT/build.log" | head -30
    exit 1
  fi
}

case "${1:-}" in
  calibrate)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
    python3 scripts/calibrate_tolerances.py --out "$OUT/calibration.json"
    PYTHONUNBUFFERED=1 python3 scripts/peers_sdpa.py --tasks "$TASKS" --out "$OUT/peers.json" 2>&1 | tail -30
    ;;
  stages-a)
    build
    $evo doctor | tee "$OUT/doctor.txt"
    ctest --test-dir build -L gpu --output-on-failure 2>&1 | tee "$OUT/ctest-gpu.log" | tail -40
    for n in 0 1 2; do
      $evo run --stage $n --task "$TASKS" --budget 2 2>&1 | tee -a "$OUT/stages-a.log" | tail -12
    done
    cp results/*.jsonl "$OUT/" 2>/dev/null
    ;;
  stages-b)
    build
    timeout 200 ctest --test-dir build -L gpu --output-on-failure > "$OUT/ctest-gpu.log" 2>&1
    tail -15 "$OUT/ctest-gpu.log"
    for n in 3 4 5; do
      $evo run --stage $n --task "$TASKS" --budget 2 2>&1 | tee -a "$OUT/stages-b.log" | tail -11
    done
    # The same candidate twice in one run: the timing spread.
    $evo run --stage 5 --task fp16-d128 --budget 1 --repeat 2 2>&1 | tee -a "$OUT/stages-b.log" | tail -6
    # The gate on the GPU: a fresh baseline, then SAME against it, then a baseline doctored 20 % faster.
    {
      $evo gate --write-baseline "$OUT/baseline.json" --task fp16-d128; echo "write-baseline exit $?"
      $evo gate --baseline "$OUT/baseline.json" --task fp16-d128; echo "gate vs fresh baseline exit $?"
      python3 - "$OUT/baseline.json" /tmp/fast.json <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
for e in b["entries"]:
    for k in ("median_us", "p10_us", "p90_us", "stdev_us"):
        if e.get(k) is not None: e[k] *= 0.8
json.dump(b, open(sys.argv[2], "w"), indent=1)
PY
      $evo gate --baseline /tmp/fast.json --task fp16-d128; echo "gate vs doctored baseline exit $?"
    } 2>&1 | tee "$OUT/gate.log" | tail -30
    # One Nsight Compute reading per stage (default config, fp16-d128, one launch).
    for v in variants/*/*.cu; do
      ncu --clock-control none --kernel-name evo_attn_fwd --launch-count 1 \
        --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_pipe_fma.sum,dram__bytes_read.sum \
        python3 scripts/devcheck.py "$v" --task fp16-d128 --shapes 4x16x16x2048x2048x128 >> "$OUT/ncu.txt" 2>&1
    done
    tail -5 "$OUT/ncu.txt"
    cd results && tar czf "$OUT/results-b.tar.gz" *.jsonl && cd ..
    ;;
  sanitize)
    build
    which compute-sanitizer > "$OUT/sanitize.log" 2>&1 || ls /usr/local/cuda*/bin/compute-sanitizer >> "$OUT/sanitize.log" 2>&1
    EVO_TEST_ARTIFACTS="$OUT" timeout 420 ctest --test-dir build -L gpu --output-on-failure > "$OUT/ctest-gpu.log" 2>&1
    echo "ctest exit $?" >> "$OUT/ctest-gpu.log"
    grep -E "tests passed|tests failed|figure|Failed|FAILED|adversarial candidates|--sanitize:" "$OUT/ctest-gpu.log" | head -30
    # One kernel per stage (its default config: no populations for this benchmark yet) under
    # --sanitize, in scratch dirs: the committed populations stay as they are.
    for n in 0 1 2 3 4 5; do
      [ "$SECONDS" -gt "${SWEEP_UNTIL_S:-480}" ] && { echo "stage $n: skipped, out of call time" | tee -a "$OUT/sanitize.log"; continue; }
      timeout 150 $evo run --stage $n --task "${SANITIZE_TASKS:-$TASKS}" --budget 1 --shapes small --bench mission \
        --seeds 0 --sanitize --results-dir /tmp/san/results --populations-dir /tmp/san/populations 2>&1 |
        tee -a "$OUT/sanitize.log" | tail -4
    done
    cat /tmp/san/results/*.jsonl > "$OUT/sanitize-stages.jsonl" 2>/dev/null
    ;;
  resanitize)
    build
    touch /tmp/evo-start
    EVO_TEST_ARTIFACTS="$OUT" timeout 240 ctest --test-dir build -L gpu -V > "$OUT/ctest-gpu.log" 2>&1
    echo "ctest exit $?" >> "$OUT/ctest-gpu.log"
    grep -E "tests passed|adversarial candidates tried|--sanitize:" "$OUT/ctest-gpu.log" | head
    # Stages 3 and 5 changed (an epilogue __syncwarp racecheck asked for): measure them again,
    # elites under compute-sanitizer, into the real results/ and populations/.
    for n in 3 5; do
      [ "$SECONDS" -gt 540 ] && { echo "stage $n: skipped, out of call time" | tee -a "$OUT/stages-sanitize.log"; continue; }
      timeout 240 $evo run --stage $n --task "$TASKS" --budget 2 --sanitize 2>&1 | tee -a "$OUT/stages-sanitize.log" | tail -10
    done
    find results -maxdepth 1 -name '*.jsonl' -newer /tmp/evo-start | tar czf "$OUT/new-results.tar.gz" -T - populations
    ;;
  stage6)
    build
    touch /tmp/evo-start
    timeout 420 $evo run --stage 6 --task "$TASKS" --budget 3 --sanitize 2>&1 | tee "$OUT/stage6.log" | tail -16
    # Nsight Compute: the stage-6 default next to stage 5's (fp16-d128, 4x16x16x2048x2048, one launch).
    for v in variants/5-swizzle/swizzle.cu variants/6-wgmma/wgmma.cu; do
      for m in gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,sm__warps_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum \
               sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active; do
        timeout 60 ncu --clock-control none --kernel-name evo_attn_fwd --launch-count 1 --metrics "$m" \
          python3 scripts/devcheck.py "$v" --task fp16-d128 --shapes 4x16x16x2048x2048x128 >> "$OUT/ncu-stage6.txt" 2>&1
      done
    done
    grep -E "evo_attn_fwd|duration|pct|sum" "$OUT/ncu-stage6.txt" | tail -24
    find results -maxdepth 1 -name '*.jsonl' -newer /tmp/evo-start | tar czf "$OUT/new-results.tar.gz" -T - populations
    ;;
  final)
    build
    EVO_TEST_ARTIFACTS="$OUT" timeout 240 ctest --test-dir build -L gpu -V > "$OUT/ctest-gpu.log" 2>&1
    echo "ctest exit $?" >> "$OUT/ctest-gpu.log"
    grep -E "tests passed|adversarial candidates tried|--sanitize:" "$OUT/ctest-gpu.log" | head
    {
      $evo gate --write-baseline "$OUT/nvidia-h200.json" --task fp16-d128; echo "write-baseline exit $?"
      $evo gate --baseline "$OUT/nvidia-h200.json" --task fp16-d128; echo "gate vs fresh baseline exit $?"
    } 2>&1 | tee "$OUT/gate.log" | tail -14
    find results -maxdepth 1 -name 'gate-*.jsonl' -newer "$OUT/ctest-gpu.log" | tar czf "$OUT/gate-results.tar.gz" -T -
    ;;
  stage7)
    # Stage 7 (TMA, warp specialization): a one-task smoke first (stop there if it fails), then
    # every task with --sanitize and the SDPA peers in the same call.
    build
    touch /tmp/evo-start
    which nvdisasm > "$OUT/stage7.log" 2>&1
    if [ "${SMOKE:-1}" = 1 ]; then
      timeout 120 $evo run --stage 7 --task fp16-d128 --budget 1 --results-dir /tmp/smoke/results \
        --populations-dir /tmp/smoke/populations >> "$OUT/stage7.log" 2>&1
      echo "smoke exit $?" >> "$OUT/stage7.log"
    else
      echo "smoke exit 0 (skipped)" >> "$OUT/stage7.log"
    fi
    tail -8 "$OUT/stage7.log"
    if grep -q "smoke exit 0" "$OUT/stage7.log"; then
      # Stage 6 on the mission task in the same run: the regression check at (1,8,512,64).
      [ "${STAGE6:-0}" = 1 ] && timeout 60 $evo run --stage 6 --task fp16-d64 --budget 1 2>&1 | tee -a "$OUT/stage7.log" | tail -4
      timeout "${STAGE7_S:-300}" $evo run --stage 7 --task "$TASKS" --budget "${BUDGET:-2}" --sanitize 2>&1 | tee -a "$OUT/stage7.log" | tail -16
      PYTHONUNBUFFERED=1 timeout 200 python3 scripts/peers_sdpa.py --tasks "$TASKS" --backends flash,cudnn > "$OUT/peers.log" 2>&1
      tail -3 "$OUT/peers.log"
      # Nsight Compute on the stage-7 default, one launch of the long D=128 shape inside the
      # worker (launch-skip passes the gate's small cases).
      if [ "$SECONDS" -lt "${NCU_UNTIL_S:-470}" ]; then
        echo "ncu: the stage-7 default config (first value of each tunable), fp16-d128, 4x16x16x2048x2048x128" > "$OUT/ncu-stage7.txt"
        timeout 90 ncu --clock-control none --target-processes all --kernel-name evo_attn_fwd --launch-skip 6 --launch-count 1 \
          --metrics gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct,smsp__warp_issue_stalled_membar_per_warp_active.pct,smsp__warp_issue_stalled_sleeping_per_warp_active.pct,smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct,dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed \
          $evo run --stage 7 --task fp16-d128 --budget 1 --shapes 1x2x2x64x64x128 --bench 4x16x16x2048x2048x128 --seeds 0 \
          --results-dir /tmp/ncu/results --populations-dir /tmp/ncu/populations >> "$OUT/ncu-stage7.txt" 2>&1
        grep -E "evo_attn_fwd|duration|pct|sum" "$OUT/ncu-stage7.txt" | tail -16
      fi
      if [ "${CTEST:-1}" = 1 ]; then
        EVO_TEST_ARTIFACTS="$OUT" timeout 100 ctest --test-dir build -L gpu > "$OUT/ctest-gpu.log" 2>&1
        echo "ctest exit $?" >> "$OUT/ctest-gpu.log"; tail -4 "$OUT/ctest-gpu.log"
      fi
    fi
    cat /tmp/smoke/results/*.jsonl > "$OUT/smoke.jsonl" 2>/dev/null
    find results -newer /tmp/evo-start -type f \( -name '*.jsonl' -o -name '*.json' \) | tar czf "$OUT/new-results.tar.gz" -T - populations
    ;;
  final-gpu)
    build
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/gpu.txt"
    start=$(date +%s)
    timeout "${CTEST_LIMIT:-480}" ctest --test-dir build -L gpu -V > "$OUT/ctest-gpu.log" 2>&1
    echo "ctest exit $? after $(( $(date +%s) - start )) s" >> "$OUT/ctest-gpu.log"
    grep -E "tests passed|tests failed|Test +#|adversarial candidates|--sanitize:|ctest exit" "$OUT/ctest-gpu.log" | tail -30
    ;;
  merged)
    # The merged branches on one GPU: the GPU tests except the adversarial suite (with the
    # sampled gate it runs longer than one call), the stage-7 elite under the sampled gate, then
    # builtin evolution vs random sampling of stage 7 at the same GPU-second budget.
    build
    touch /tmp/evo-start
    mkdir -p /tmp/logs
    EVO_TEST_ARTIFACTS=/tmp/logs timeout 150 ctest --test-dir build -L gpu -E Adversarial -V > /tmp/logs/ctest-gpu.log 2>&1
    echo "ctest exit $?" >> /tmp/logs/ctest-gpu.log; grep -E "tests passed|tests failed|--sanitize:" /tmp/logs/ctest-gpu.log
    timeout 120 $evo run --stage 7 --task fp16-d128 --budget 1 > /tmp/logs/stage7-sampled.log 2>&1
    echo "run exit $?" >> /tmp/logs/stage7-sampled.log; tail -5 /tmp/logs/stage7-sampled.log
    find results -newer /tmp/evo-start -type f -name '*.jsonl' | tar czf "$OUT/merged-results.tar.gz" -T - populations
    STAGE=7 TASK=fp16-d128 MOCK=0 BUDGET="${BUDGET:-40}" lab/device-sessions/evolve_h200.sh
    mv "$OUT"/*.log "$OUT"/gpu.txt /tmp/logs/ 2>/dev/null
    tar czf "$OUT/logs.tgz" -C /tmp logs
    ;;
  *) echo "usage: $0 calibrate|stages-a|stages-b|sanitize|resanitize|stage6|stage7|final|merged" >&2; exit 1 ;;
esac
