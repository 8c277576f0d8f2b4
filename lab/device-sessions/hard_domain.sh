#!/usr/bin/env bash
# Issue 31 item 2, the next hard-domain attempt: stage 7 at fp8-d64 (tma_ws_fp8: 3 072
# configurations, 1 008 allowed by its rules), every allowed configuration screened and the best
# ~30 timed in full on the H200, in two calls of search.sh; the dataset comes back as
# nvidia-h200-stage7-fp8-d64.json. Why this domain, what it is predicted to be, and the commands
# that judge it: lab/ablation/hard-domain-plan.md.
#   CALL=1 (device): search.sh as a new run: build, NVRTC, then screens until FULL_S (40) s are
#          left (a few full evaluations of the best screens so far come with the exhaustive run);
#          ~400 screens cold, ~600 with a dry run's NVRTC cache (NVRTC_CACHE).
#   CALL=2 (device): RECORDS=<call 1's records.tgz> (required): the rest screened, then the best
#          screens in full, best first (the exhaustive run promotes them once all are screened,
#          and step 4 goes on in the last FULL_S (60) s): ~20-25 at ~4.1 GPU-s on a warm machine.
#          A call that runs out leaves the run resumable: CALL=2 again with its records.tgz.
#   DRY_RUN=1 (any machine, no GPU; EVO or build/harness/evo): the domain counted by evo's own
#          rules (`evo context`), SAMPLE (24; 0: all, ~2.5-4.5 CPU-s each) configurations compiled with
#          NVRTC for sm_90a and put through the resource gate into CACHE_DIR, the exhaustive run
#          started (it stops after its first compile phase without a GPU), the predicted GPU-s and
#          wall of both calls (from the fp8-d128 dataset's measured costs), and with SAMPLE=0
#          $OUT/nvrtc-cache.tgz for NVRTC_CACHE.
# NVRTC_CACHE (optional): a dry run's nvrtc-cache.tgz, unpacked into the call's compile cache
#   before step 2. Its keys hold the include path, so it hits only when the dry run ran in a
#   checkout at the device's path (the records say /work/main); a miss costs the ~150 s of
#   compiles it would have saved, nothing else (compile.log counts the hits).
# Settings passed on to search.sh: WALL_S (540), FULL_S, SCREEN_RATE (0.8: fp8 screens ran at
# 0.74 GPU-s per wall-second), FULL_RATE (1.2: its full evaluations at 1.23), EVO. Everything
# comes back under $OUT as search.sh says.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
: "${OUT:?set OUT to the folder that comes back}"
mkdir -p "$OUT"
export STAGE=7 TASK=fp8-d64 SCREEN_RATE=${SCREEN_RATE:-0.8} FULL_RATE=${FULL_RATE:-1.2} WALL_S=${WALL_S:-540}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-search-cache}
D128=results/datasets/nvidia-h200-stage7-fp8-d128.json

# The prediction of one call's cost from the fp8-d128 call (thirteenth session, 2026-11-30:
# 276 screens in 194 s for 143.4 GPU-s, 56 full in 186 s for 228.9 GPU-s, NVRTC 43 s for 3 072
# configurations of which 276 allowed, build 63 s cold).
predict() {
  python3 - "$D128" "$1" <<'EOF'
import json, statistics as st, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
scr = st.median(c["screen"]["gpu_s"] for c in d["configs"] if c.get("screen"))
full = st.median(c["full"]["gpu_s"] for c in d["configs"] if c.get("full"))
wall_scr, wall_full, nvrtc, build = 194 / 276, 186 / 56, 43 / 276, 63
print(f"predicted: {n} screens x {scr:.3f} GPU-s = {n * scr:.0f} GPU-s in ~{n * wall_scr:.0f} s; 30 full x {full:.2f} = "
      f"{30 * full:.0f} GPU-s in ~{30 * wall_full:.0f} s; NVRTC ~{n * nvrtc:.0f} s on 16 cores; build {build} s cold")
cold = build + n * nvrtc
print(f"  two calls: {n * wall_scr + 30 * wall_full + cold:.0f} s with call 2 warm (its build and NVRTC cached), "
      f"{n * wall_scr + 30 * wall_full + 2 * cold:.0f} s with both cold; with a hitting NVRTC_CACHE "
      f"{n * wall_scr + 30 * wall_full + 2 * build + 30:.0f} s cold")
EOF
}

evo=${EVO:-build/harness/evo}
if [ -n "${DRY_RUN:-}" ]; then
  [ -x "$evo" ] || { echo "DRY_RUN needs evo: build it or set EVO"; exit 1; }
  n=$($evo context --stage 7 --task fp8-d64 --json --operator free |
    python3 -c "import json, sys; print(sum(s['feasible_configs'] for s in json.load(sys.stdin)['i1']['search_space']))")
  echo "fp8-d64: $n configurations allowed by evo's rules (lab/ablation/fp8_d64_prediction.py writes them out: 1008)"
  # search.sh's step 2 (SAMPLE configurations evenly spread, 0 = all: ~1.5-3 CPU-s each), then
  # its step 3's run, which without a GPU stops after the compile phase of its first generation
  # (exit 2): the exhaustive generator takes the domain and the rules.
  cache=${CACHE_DIR:-/tmp/evo-fp8d64-cache}
  sample=()
  [ "${SAMPLE:-24}" != 0 ] && sample=(--sample "${SAMPLE:-24}")
  $evo compile --stage 7 --task fp8-d64 --arch sm_90a --jobs "$(nproc)" --cache-dir "$cache" "${sample[@]}" >"$OUT/compile.log" 2>&1
  echo "compile: exit $?; $(tail -1 "$OUT/compile.log")"
  python3 - "$OUT/compile.log" <<'EOF'
import collections, re, sys
outcomes = collections.Counter(next(w for w in l.split()[2:] if not re.match(r"[A-Z_]+=", w))
                               for l in open(sys.argv[1]) if l.startswith("7-tma-ws/tma_ws_fp8 "))
print("tma_ws_fp8 at fp8-d64, by outcome:", dict(outcomes))
EOF
  w=$(mktemp -d /tmp/evo-fp8d64-dry.XXXXXX)
  XDG_CACHE_HOME=$w/xdg $evo evolve --stage 7 --task fp8-d64 --generator exhaustive --rng-seed 26 --generations 1 \
    --population "${DRY_POPULATION:-4}" --results-dir "$w/results" --populations-dir "$w/populations" >"$OUT/evolve.log" 2>&1
  echo "evolve (exhaustive, no GPU): exit $? (2: stopped after the compile phase)"
  python3 - "$w"/results/evolve/*.trace.jsonl <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    req = json.loads(line).get("request") or {}
    print(f"trace: the run's domain {req.get('domain_configs')} configurations, {req.get('feasible_configs')} allowed")
EOF
  rm -rf "$w"
  [ "${SAMPLE:-24}" = 0 ] && tar czf "$OUT/nvrtc-cache.tgz" -C "$cache" nvrtc &&
    echo "NVRTC cache: $OUT/nvrtc-cache.tgz ($(du -h "$OUT/nvrtc-cache.tgz" | cut -f1); include path $PWD/variants/common)"
  predict "$n"
  exit 0
fi

case "${CALL:-}" in
  1) export RECORDS="" FULL_S=${FULL_S:-40} ;;
  2) [ -n "${RECORDS:-}" ] || { echo "CALL=2 needs RECORDS (call 1's records.tgz)"; exit 1; }
     export RECORDS FULL_S=${FULL_S:-60} ;;
  *) echo "set CALL=1 or 2 (or DRY_RUN=1)"; exit 1 ;;
esac
if [ -n "${NVRTC_CACHE:-}" ]; then
  mkdir -p "$XDG_CACHE_HOME/evo" && tar xzf "$NVRTC_CACHE" -C "$XDG_CACHE_HOME/evo" &&
    echo "NVRTC cache unpacked from $NVRTC_CACHE" >>"$OUT/search.log"
fi
predict 1008 >>"$OUT/search.log"
bash lab/device-sessions/search.sh
