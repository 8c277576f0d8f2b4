#!/usr/bin/env bash
# Issue 26 items 3-6 on a GPU (helper "generators"): the typed evolve loop through the GPU gates.
#   1. an exec generator (written below) on stage 5 / fp16-d64 with --quick, 3 generations of 1:
#      gen 0 the stage's kernel re-spelt (an unused #define, the BLOCK_N #ifndef default edited) run with
#      the committed elite's params through "params"; gen 1 the same code spelt once more (must be
#      a `duplicate` by code, no GPU time); gen 2 another configuration (evaluated);
#   2. --resume of that run for a 4th generation spelling gen 0's code a third way: still a
#      duplicate (the records keep compile.code_sha256), and the request's history has gens 0-2;
#   3. the builtin generator, 2 generations of 2 with a 20 GPU-s budget (parents, admission).
# Writes $OUT/summary.txt (what to check), the two logs and the traces. Run from the repo root.
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder that comes back}"
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache} PYTHONUNBUFFERED=1
cmake --preset release >/dev/null && cmake --build --preset release --target evo >"$OUT/build.log" 2>&1 ||
  { tail -30 "$OUT/build.log"; exit 1; }
rm -f "$OUT/build.log"
evo=$PWD/build/harness/evo
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$OUT/summary.txt"
W=/tmp/gen26 && rm -rf $W && mkdir -p $W/requests
cp -r results $W/results && cp -r populations $W/populations
cat >$W/gen.py <<'EOF'
import json, sys
req = json.load(sys.stdin)
gen = req["run"]["generation"]
json.dump(req, open(f"/tmp/gen26/requests/{gen}.json", "w"))
src = open("variants/5-swizzle/swizzle.cu").read()
elites = req.get("i2", {}).get("elites", [])
params = dict(elites[0]["params"]) if elites else {"BLOCK_M": 64, "BLOCK_N": 64, "NWARPS": 4}
def spelt(n):  # the same kernel, another text: an unused #define and the BLOCK_N default flipped
    s = src.replace("#ifndef BLOCK_N\n#define BLOCK_N 64", "#ifndef BLOCK_N\n#define BLOCK_N 32")
    return s.replace('#include "evo_attn.cuh"', f"#define EVO_SPELLING {n}\n" + '#include "evo_attn.cuh"', 1)
if gen in (0, 1, 3):
    cands = [{"source": spelt(gen + 1), "params": params, "rationale": f"the elite, spelt {gen + 1}"}]
else:
    other = {"BLOCK_M": 128, "BLOCK_N": 64, "NWARPS": 8}
    other = other if other != params else {"BLOCK_M": 64, "BLOCK_N": 64, "NWARPS": 4}
    cands = [{"source": spelt(1), "params": other, "rationale": "another configuration"}]
json.dump({"candidates": cands}, sys.stdout)
EOF
common=(--stage 5 --task fp16-d64 --quick --results-dir $W/results --populations-dir $W/populations)
timeout 150 $evo evolve "${common[@]}" --generator "exec:python3 $W/gen.py" --generations 3 --population 1 \
  >"$OUT/exec.log" 2>&1
echo "exec run: exit $?" >>"$OUT/summary.txt"
run=$(grep -o 'evo evolve ev-[^:]*' "$OUT/exec.log" | head -1 | cut -d' ' -f3)
timeout 90 $evo evolve "${common[@]}" --generator "exec:python3 $W/gen.py" --generations 4 --population 1 \
  --resume "$run" >>"$OUT/exec.log" 2>&1
echo "exec resume: exit $?" >>"$OUT/summary.txt"
timeout 150 $evo evolve "${common[@]}" --generator builtin --rng-seed 3 --generations 2 --population 2 \
  --budget-gpu-s 20 >"$OUT/builtin.log" 2>&1
echo "builtin run: exit $?" >>"$OUT/summary.txt"
python3 - "$W" "$run" >>"$OUT/summary.txt" 2>&1 <<'EOF'
import glob, json, sys
w, run = sys.argv[1], sys.argv[2]
for t in sorted(glob.glob(f"{w}/results/evolve/*.trace.jsonl")):
    for line in open(t):
        j = json.loads(line)
        for v in j.get("verdicts", []):
            print(j["run"], "gen", j["generation"], v.get("params"), v.get("outcome"), v.get("same_code_as", ""),
                  v.get("fitness_us", v.get("screen_us")), v.get("reason", "")[:100])
req = json.load(open(f"{w}/requests/3.json"))
print("request 3: schema", req["schema_version"], "run", req["run"], "history",
      [(h["generation"], h["outcome"]) for h in req["history"]], "elite sources in 'sources':",
      all(e["source_sha256"] in req["sources"] for e in req["i2"]["elites"]))
recs = [json.loads(l) for f in glob.glob(f"{w}/results/*.jsonl") for l in open(f) if '"evolve"' in l]
mine = [r for r in recs if r.get("evolve", {}).get("run", "").startswith("ev-") and r.get("origin") == "evolve"]
print(len(mine), "evolve records;", sum("code_sha256" in (r.get("compile") or {}) for r in mine), "with code_sha256;",
      sorted({(r["evolve"].get("phase"), r["evolve"].get("admission", "-"), r["outcome"]) for r in mine}))
EOF
cp $W/results/evolve/*.trace.jsonl "$OUT"/ 2>/dev/null
cat "$OUT/summary.txt"
