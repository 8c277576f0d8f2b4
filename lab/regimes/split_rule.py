"""Issue 30: when does a stage-9 decode kernel gain from splitting the KV cache? From the committed
stage-9 datasets (CPU only): per shape, over the configurations within 10 % of that shape's
optimum, the time of the unsplit twin (KV_SPLITS=1, the same other parameters) over the best
split one, with the shape's tile count (pack-GQA rows / BLOCK_M x KV heads x batch); then the
shipped cell (split_kv_tma BLOCK_M=16 BLOCK_N=128 NWARPS=4 STAGES=3) under the old rule and the
unsplit rule evo_launch.h now has (no split at tiles >= SMs / 3). Figures and reading:
lab/notes/decode-splits-20261201.md. Run from the repository root: python3 lab/regimes/split_rule.py
"""

import collections
import glob
import json
import math
import statistics as st

SMS = 132


def ok(c, f):
    e = c.get(f)
    return e if e and e.get("outcome") == "ok" else None


def dims(shape):
    b, hq, hkv, sq, skv, d = (int(x) for x in shape.split(":")[0].split("x"))
    return b, hq, hkv, sq, skv, d


def tiles(shape, block_m):
    b, hq, hkv, sq, _, _ = dims(shape)
    return math.ceil(hq // hkv * sq / block_m) * hkv * b


def cells(d):
    """(variant, params without KV_SPLITS) -> {KV_SPLITS: per-shape µs} (full where measured, else screen)."""
    out = collections.defaultdict(dict)
    for c in d["configs"]:
        e = ok(c, "full") or ok(c, "screen")
        if not e:
            continue
        p = dict(c["params"])
        k = p.pop("KV_SPLITS")
        out[(c["variant"].split("/")[-1], tuple(sorted(p.items())))][k] = e["shapes_us"]
    return out


def main():
    print("| dataset | shape | tiles (BLOCK_M 16) | top cells | unsplit / best split, median [range] |")
    print("|---|---|---:|---:|---|")
    for f in sorted(glob.glob("results/datasets/*stage9*.json")):
        d = json.load(open(f))
        name = f.split("stage9-")[1][:-5]
        cs = cells(d)
        for s in d["shapes"]:
            opt = min(v[s] for cell in cs.values() for v in cell.values() if s in v)
            r = []
            for byk in cs.values():
                split = [v[s] for k, v in byk.items() if k > 1 and s in v]
                if 1 not in byk or s not in byk[1] or not split or min(split + [byk[1][s]]) > opt * 1.10:
                    continue
                r.append(byk[1][s] / min(split))
            if r:
                print(f"| {name} | {s} | {tiles(s, 16)} | {len(r)} | {st.median(r):.3f} [{min(r):.2f} – {max(r):.2f}] |")
    print("\nThe shipped cell on the twelve decode shapes (fp16-d64 decode12): µs under the old rule (KV_SPLITS=16)")
    print("and under the unsplit rule (its KV_SPLITS=1 twin where tiles >= SMs / 3)")
    d = json.load(open("results/datasets/nvidia-h200-stage9-fp16-d64-decode12.json"))
    key = ("split_kv_tma", (("BLOCK_M", 16), ("BLOCK_N", 128), ("NWARPS", 4), ("STAGES", 3)))
    byk = cells(d)[key]
    ratios = []
    for s in d["shapes"]:
        t = tiles(s, 16)
        new = byk[1][s] if t * 3 >= SMS else byk[16][s]
        ratios.append(new / byk[16][s])
        print(f"  {s:28s} tiles {t:4d}  {byk[16][s]:7.1f} -> {new:7.1f}  ({new / byk[16][s] - 1:+.1%})")
    print(f"  geomean: {math.prod(ratios) ** (1 / len(ratios)) - 1:+.1%}")


if __name__ == "__main__":
    main()
