#!/usr/bin/env python3
"""The decode rows of an op timing report (results/op/*.json) as a fraction of HBM bandwidth.

Bytes are K and V of the cache plus Q and O at 2 bytes an element (what a decode step reads and
writes once); times are the op's and cuDNN's medians per call. Usage: decode_bandwidth.py FILE [TB/s]
"""
import json
import sys

report = json.load(open(sys.argv[1]))
peak = float(sys.argv[2]) if len(sys.argv) > 2 else 4.8  # H200 HBM3e, nominal
print(f"| task | shape | KV+Q+O MB | op µs | op % of {peak:g} TB/s | cuDNN µs | cuDNN % | × cuDNN |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for t in report["timing"]:
    if t["regime"] != "decode":
        continue
    b, hq, hkv, sq, skv, d = map(int, t["shape"].split(":")[0].split("x"))
    nbytes = 2 * b * hkv * skv * d * 2 + 2 * b * hq * sq * d * 2
    op, cudnn = t["op"]["median_us"], t["cudnn"]["median_us"]
    share = lambda us: nbytes / us / 1e6 / peak * 100  # bytes per µs / 1e6 = TB/s
    print(f"| {t['task']} | {t['shape']} | {nbytes / 1e6:.0f} | {op:.1f} | {share(op):.0f} % | {cudnn:.1f} |"
          f" {share(cudnn):.0f} % | {cudnn / op:.2f}× |")
