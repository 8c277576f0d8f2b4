#!/usr/bin/env bash
# Issue 29 item 6: what the gate costs per candidate before the gate work and now, in one device
# call (about 5 minutes), the two builds' runs interleaved. "Before" is main at 57eda32 (the
# merge before branch `gate`, 2026-11-27, when the issue measured 3.7 GPU-s per candidate).
#   here:      bash lab/device-sessions/gate_cost.sh pack     (writes .whl/gate-cost/before.tar.gz)
#   on the GPU: run(carry: [".whl/gate-cost"], command: "OUT=$OUT bash lab/device-sessions/gate_cost.sh")
# Each side runs `evo run --stage 6 --task fp16-d64 --budget 3` on the default gate and benchmark,
# twice (rng seeds 1 and 2: the same candidates on both sides), against a copy of its own
# committed populations, so most candidates are not would-be elites; the deep tier, which only a
# would-be elite pays (`phases.deep_gate_s`), is reported apart. Back under $OUT: cost.md, logs.
# SIDES (default "before after rowwise"): "rowwise" is this tree with gates.json
# limits.reference_kernel "rowwise" (the reference before 2026-12-03; "tiled", the default since,
# gives the same output bit for bit), from a copy of gates/, variants/ and populations/ under /tmp
# (results/ linked). On 2026-12-03 (rowwise then the default, "tiled" the side): 4.54 GPU-s per
# candidate rowwise, 4.32 tiled; deep tier 41.6 s per would-be elite rowwise, 23.7 tiled.
set -uo pipefail
cd "$(dirname "$0")/../.."
BEFORE=${BEFORE:-57eda32}
if [ "${1:-run}" = pack ]; then
  mkdir -p .whl/gate-cost && git archive --format=tar.gz -o .whl/gate-cost/before.tar.gz "$BEFORE" &&
    ls -la .whl/gate-cost
  exit
fi
: "${OUT:?set OUT to the folder that comes back}"
source lab/device-sessions/device_steps.sh
device_env
gpu_info
SIDES=${SIDES:-before after rowwise}
before=/tmp/evo-before && rm -rf "$before" && mkdir -p "$before"
if [[ " $SIDES " == *" before "* ]]; then
  tar -C "$before" -xzf .whl/gate-cost/before.tar.gz || { echo "no .whl/gate-cost/before.tar.gz: run pack, carry it"; exit 1; }
  (cmake -S "$before" -B "$before/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$before/build" -j 16 --target evo) >"$OUT/build-before.log" 2>&1 || { tail -20 "$OUT/build-before.log"; exit 1; }
fi
rowwise=/tmp/evo-rowwise-root && rm -rf "$rowwise" && mkdir -p "$rowwise" && cp -r gates variants populations "$rowwise/" &&
  ln -s "$PWD/results" "$rowwise/results"  # the elites' stored sources
python3 -c 'import json, sys; g = json.load(open(sys.argv[1])); g["limits"]["reference_kernel"] = "rowwise"; open(sys.argv[1], "w").write(json.dumps(g, indent=2) + "\n")' \
  "$rowwise/gates/gates.json"
build_evo evo || exit 1
echo "built at ${SECONDS}s"
for seed in 1 2; do
  for side in $SIDES; do
    root=$PWD evo=$PWD/build/harness/evo
    [ "$side" = before ] && root=$before evo=$before/build/harness/evo
    [ "$side" = rowwise ] && root=$rowwise
    w=/tmp/evo-cost-$side-$seed && rm -rf "$w" && mkdir -p "$w"
    cp -r "$root/populations" "$w/populations"
    (cd "$root" && EVO_ROOT="$root" XDG_CACHE_HOME="/tmp/evo-cache-$side" timeout 200 "$evo" run \
      --stage 6 --task fp16-d64 --budget 3 --rng-seed "$seed" --results-dir "$w/results" \
      --populations-dir "$w/populations") >"$OUT/$side-$seed.log" 2>&1
    echo "$side seed $seed: exit $? at ${SECONDS}s; $(grep -E 'candidates, .* GPU-seconds' "$OUT/$side-$seed.log")"
  done
done
python3 - "$OUT/cost.md" <<'EOF'
import glob, json, statistics, sys
rows, per = [], {"before": [], "after": [], "rowwise": []}
for side in ("before", "after", "rowwise"):
    for f in sorted(glob.glob(f"/tmp/evo-cost-{side}-*/results/*.jsonl")):
        for line in open(f):
            r = json.loads(line)
            ph = r.get("phases") or {}
            deep = ph.get("deep_gate_s") or 0.0
            gpu = r.get("gpu_seconds") or 0.0
            per[side].append(gpu - deep)
            gate = (ph.get("detail") or {}).get("worker_gate_s", 0.0)
            rows.append(f"| {side} | {r['variant']} | {r['outcome']} | {gpu:.2f} | {deep:.2f} | {gpu - deep:.2f} | {gate:.2f} |")
with open(sys.argv[1], "w") as out:
    out.write("| side | variant | outcome | GPU-s | deep tier s | GPU-s without the deep tier | worker gate s |\n|---|---|---|---:|---:|---:|---:|\n")
    out.write("\n".join(rows) + "\n\n")
    for side, v in per.items():
        if v:
            out.write(f"{side}: {len(v)} candidates, mean {statistics.mean(v):.2f}, median {statistics.median(v):.2f} GPU-s per candidate without the deep tier\n")
print(open(sys.argv[1]).read())
EOF
# Where the after side's cheap gate goes, case kind by kind (the records' per-case seconds), and
# the after side's records themselves, for a closer look here.
for side in after rowwise; do
  ls /tmp/evo-cost-$side-*/results/*.jsonl >/dev/null 2>&1 || continue
  python3 lab/device-sessions/gate_case_cost.py /tmp/evo-cost-$side-*/results/*.jsonl | tee "$OUT/gate-cases-$side.md"
done
tar -C /tmp -czf "$OUT/after-records.tgz" $(cd /tmp && ls -d evo-cost-after-*/results evo-cost-rowwise-*/results 2>/dev/null)
