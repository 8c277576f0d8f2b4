#!/usr/bin/env python3
"""Would a finer dispatch than one kernel per regime pay? For every task and regime, over the
shapes of that regime timed by at least three deep-gated kernels in results/: the geomean of the
best single kernel timed on all of them (what a regime ships) against the geomean of each shape's
own fastest kernel (an oracle dispatch per shape). A ratio near 1 says the regime's kernel is what
is in the way, not the dispatch.

  python3 lab/regimes/oracle_dispatch.py      # a few seconds, from the committed records
"""
import glob
import gzip
import json
import math
from collections import defaultdict


def regime(shape):  # variants/common/evo_regime.h's default rule
    b, hq, _, sq = (int(x) for x in shape.split(":")[0].split("x")[:4])
    if sq <= 16:
        return "decode"
    if sq <= 1024:
        return "short" if b * hq < 128 else "batched-short"
    return "long"


def deep_gated(r):
    deep = (r.get("gates") or {}).get("deep")
    return isinstance(deep, dict) and deep.get("checks") and all(c.get("pass", False) for c in deep["checks"])


times = defaultdict(dict)  # task -> kernel -> shape -> median µs (the latest record wins)
for f in sorted(glob.glob("results/*.jsonl.gz")):
    for line in gzip.open(f, "rt"):
        r = json.loads(line)
        if r.get("outcome") != "ok" or not deep_gated(r):
            continue
        kernel = r["variant"] + " " + json.dumps(r.get("params"), sort_keys=True)
        for t in r.get("timing") or []:
            if "median_us" in t:
                times[r["task"]].setdefault(kernel, {})[t["shape"]] = t["median_us"]

print("task, regime, shapes, kernels on all of them, one kernel µs, per-shape oracle µs, ratio")
for task in sorted(times):
    for reg in ("decode", "short", "batched-short", "long"):
        count = defaultdict(int)
        for by_shape in times[task].values():
            for s in by_shape:
                count[s] += regime(s) == reg
        shapes = [s for s, n in count.items() if n >= 3]
        full = [k for k, v in times[task].items() if shapes and all(s in v for s in shapes)]
        if not full:
            continue
        geo = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
        one = min(geo([times[task][k][s] for s in shapes]) for k in full)
        oracle = geo([min(v[s] for v in times[task].values() if s in v) for s in shapes])
        print(f"{task:18s} {reg:14s} {len(shapes):2d} {len(full):3d} {one:9.1f} {oracle:9.1f} {one / oracle:6.3f}")
