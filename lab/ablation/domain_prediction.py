"""Issue 31: how dense in near-optimal configurations a measured domain is, per benchmark shape and
per subset of shapes (CPU only, the committed datasets). Figures and reading:
lab/notes/domain-prediction-20261130.md. Run from the repository root: python3 lab/ablation/domain_prediction.py
"""

import glob
import itertools
import json
import math
import statistics as st

SETS = "results/datasets/"


def ok(c, f):
    e = c.get(f)
    return e if e and e.get("outcome") == "ok" else None


def landscape(d):
    """Per ok configuration, per shape: the full evaluation's µs where measured, else the screen's
    times the shape's median full/screen ratio (SimDomain::full_value, per shape)."""
    cs = [c for c in d["configs"] if ok(c, "screen") or ok(c, "full")]
    ratio = {}
    for s in d["shapes"]:
        r = [ok(c, "full")["shapes_us"][s] / ok(c, "screen")["shapes_us"][s] for c in cs
             if ok(c, "full") and ok(c, "screen") and s in ok(c, "full")["shapes_us"] and s in ok(c, "screen")["shapes_us"]]
        ratio[s] = st.median(r) if r else 1.0
    out = {}
    for c in cs:
        full, screen = (ok(c, f) or {"shapes_us": {}} for f in ("full", "screen"))
        per = {s: full["shapes_us"][s] if s in full["shapes_us"] else screen["shapes_us"].get(s, 0) * ratio[s] for s in d["shapes"]}
        if min(per.values()) <= 0:
            continue
        out[(c["variant"].split("/")[-1],) + tuple(sorted(c["params"].items()))] = per
    return out


def within(land, shapes, tol=0.02):
    """Configurations within tol of the optimum of the geomean over shapes (the fitness)."""
    v = {k: math.exp(sum(math.log(p[s]) for s in shapes) / len(shapes)) for k, p in land.items()}
    best = min(v.values())
    return sum(x <= best * (1 + tol) for x in v.values())


def main():
    lands = {}
    for path in sorted(glob.glob(SETS + "*.json")):
        d = json.load(open(path))
        land, shapes = landscape(d), d["shapes"]
        lands[path] = (land, shapes)
        g = within(land, shapes)
        print(f"{path}: N {len(land)}, within 2 % {g} ({100 * g / len(land):.2f} %)")
        for s in shapes:
            print(f"  {s}: {within(land, [s])}")
        by_k = {}
        for k in range(1, len(shapes) + 1):
            by_k[k] = [within(land, [shapes[i] for i in sub]) for sub in itertools.combinations(range(len(shapes)), k)]
        print("  subsets of k shapes, within 2 % median [min-max]: " +
              ", ".join(f"k={k} {st.median(v)} [{min(v)}-{max(v)}]" for k, v in by_k.items()))
    # The same 161 configurations measured twice (narrow and wide stage-9 fp16-d64 runs).
    wide, shapes = lands[SETS + "nvidia-h200-stage9-fp16-d64-wide.json"]
    narrow, _ = lands[SETS + "nvidia-h200-stage9-fp16-d64.json"]
    common = set(wide) & set(narrow)
    print(f"\nstage-9 fp16-d64: {len(common)} configurations in both runs; within 2 % per shape subset:"
          " narrow run, wide run on the same configurations, wide run on all 592")
    for k in range(1, len(shapes) + 1):
        for sub in itertools.combinations(range(len(shapes)), k):
            sh = [shapes[i] for i in sub]
            print(f"  {sub}: {within({c: narrow[c] for c in common}, sh)} "
                  f"{within({c: wide[c] for c in common}, sh)} {within(wide, sh)}")


if __name__ == "__main__":
    main()
