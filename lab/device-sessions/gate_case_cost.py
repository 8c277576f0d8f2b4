#!/usr/bin/env python3
"""Where a candidate's cheap gate spends its time: the worker's seconds per gate case (a check's
"s", recorded since 2026-12-03; a device-checked case also has device_check.seconds), summed per
kind of case over the records given and divided by the candidates, largest first.

  python3 lab/device-sessions/gate_case_cost.py /tmp/evo-cost-after-*/results/*.jsonl

A kind is a sampled case's model call (`/model=<name>`), else its layout when it
is a model layout, else "drawn"; a fixed case's shape set (the id's first part); deep cases are
not here (they are the record's gates.deep: only a would-be elite pays them, phases.deep_gate_s)."""
import collections
import gzip
import json
import re
import sys


def kind(case_id):
    parts = case_id.split("/")
    if parts[0] != "sampled":
        return "fixed " + parts[0]
    model = re.search(r"/model=([a-z_0-9]+)", case_id)
    if model:
        return "model " + model.group(1)
    layout = re.search(r"/layout=(pow2_cache|neox_v|fused_v)/", case_id)
    return "layout " + layout.group(1) if layout else "drawn"


def records(paths):
    for path in paths:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def main(paths):
    seconds, cases, flat = collections.Counter(), collections.Counter(), 0
    candidates = 0
    for r in records(paths):
        gates = r.get("gates") or {}
        checks = (gates.get("correctness") or {}).get("checks") or []  # the fixed and the sampled cases
        timed = [c for c in checks if "s" in c]
        if not timed:
            continue
        candidates += 1
        for c in timed:
            k = kind(c.get("case", ""))
            seconds[k] += c["s"]
            cases[k] += 1
            flat += c["s"]
    if not candidates:
        print("no record with per-case gate seconds")
        return 1
    print(f"{candidates} candidates, {flat / candidates:.3f} s of cheap gate cases per candidate")
    print("| kind | cases per candidate | s per candidate | share |\n|---|---:|---:|---:|")
    for k, s in seconds.most_common():
        print(f"| {k} | {cases[k] / candidates:.1f} | {s / candidates:.3f} | {100 * s / flat:.1f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
