#!/usr/bin/env python3
"""The worst relative L2 error (and |bias|) of honest kernels on record, per input distribution.

Reads every record in results/*.jsonl.gz (and *.jsonl) whose task starts with the given prefix
(default fp16) and whose outcome is ok, collects every `rel_l2` it holds (cheap, deep and
post-timing gate checks, timing integrity checks), and prints the largest per input, read from the
case id; likewise the largest |bias| of the checks that record one (since hacker round 19) over at
least 4096 elements, over every case and over cases of at most 16 384 keys (gates.json's fp16
bias_keys: the bound is flat up to there and grows with the keys past it), and over every case
scaled to 16 384 keys (the figures gates.json's calibration_fp16_bias and calibration_bf16_bias
quote). What gates.json's per-input rel_l2 and bias must stay above:
    python3 lab/calibration/honest_rel_l2.py [fp16|bf16|fp8]
"""
import collections
import glob
import gzip
import json
import sys

BIAS_KEYS = 16384
INPUTS = ("attention_sink", "v_offset", "near_uniform", "normal", "large_v", "large_logits",
          "outlier_rows", "huge_logits", "large_o", "huge_o", "huge_v", "tiny_v", "small_v")


def input_of(case_id):
    for part in reversed(case_id.split("/")):
        if part.split(":")[0] in INPUTS:
            return part.split(":")[0]
    return "?"


def keys_of(shape):
    """Skv of a check's shape, BxHqxHkvxSqxSkvxD[:layout]; 0 when the check names none."""
    dims = str(shape or "").split(":")[0].split("x")
    return int(dims[4]) if len(dims) == 6 and dims[4].isdigit() else 0


def checks(x, key="rel_l2"):
    if isinstance(x, dict):
        if isinstance(x.get(key), (int, float)) and (key == "rel_l2" or (x.get("n") or 0) >= 4096):
            yield x.get("case") or x.get("id") or x.get("name") or "", abs(x[key]), keys_of(x.get("shape"))
        for v in x.values():
            yield from checks(v, key)
    elif isinstance(x, list):
        for v in x:
            yield from checks(v, key)


def main():
    prefix = sys.argv[1] if len(sys.argv) > 1 else "fp16"
    worst = collections.defaultdict(lambda: (0.0, ""))
    bias = collections.defaultdict(lambda: (0.0, ""))
    bias_short = collections.defaultdict(lambda: (0.0, ""))  # cases of at most BIAS_KEYS keys
    # |bias| scaled to BIAS_KEYS keys (times BIAS_KEYS / keys past it): what a bound that grows in
    # proportion past bias_keys, as gates.json's does, must stay above
    bias_scaled = collections.defaultdict(lambda: (0.0, ""))
    records = 0
    for path in sorted(glob.glob("results/*.jsonl.gz") + glob.glob("results/*.jsonl")):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if not str(r.get("task", "")).startswith(prefix) or r.get("outcome") != "ok":
                    continue
                records += 1
                for tables, key in (((worst,), "rel_l2"), ((bias, bias_short, bias_scaled), "bias")):
                    for case, v, keys in checks(r, key):
                        k = input_of(case)
                        for table in tables:
                            if table is bias_short and not 0 < keys <= BIAS_KEYS:
                                continue
                            if table is bias_scaled:
                                if keys <= 0:
                                    continue
                                v = v * min(1.0, BIAS_KEYS / keys)
                            if v > table[k][0]:
                                table[k] = (v, f"{r.get('variant')} {case[:90]}")
    print(f"{records} ok {prefix} records")
    for title, table in (("relative L2", worst), ("|bias| (cases of >= 4096 elements)", bias),
                         (f"|bias| (cases of >= 4096 elements and <= {BIAS_KEYS} keys)", bias_short),
                         (f"|bias| scaled to {BIAS_KEYS} keys (cases of >= 4096 elements)", bias_scaled)):
        print(f"worst {title}:" if table else f"worst {title}: none recorded")
        for k, (v, where) in sorted(table.items(), key=lambda kv: -kv[1][0]):
            print(f"  {k:15s} {v:.3g}  {where}")


if __name__ == "__main__":
    main()
