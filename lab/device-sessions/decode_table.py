#!/usr/bin/env python3
"""The decode table of lab/device-sessions/decode.sh: per task and decode shape, the fastest
stage-9 candidate that passed (outcome ok) against SDPA cuDNN and flash timed in the same call.

Bytes moved are Q, K, V read once and O written once (K and V per KV head, as gates.json's
roofline floor counts them); GB/s = bytes / evo's median; the fraction is of 4.8 TB/s (H200 HBM3e).

Usage: decode_table.py --peers PEERS.json RESULTS.jsonl...
"""
import argparse
import json
import sys

PEAK_TBPS = 4.8


def shape_bytes(dims, elem=2):
    b, hq, hkv, sq, skv, d = (int(x) for x in dims.split(":")[0].split("x"))
    return elem * (2 * b * hq * sq * d + 2 * b * hkv * skv * d)


def fastest_evo(paths):
    best = {}  # (task, shape) -> (median us, candidate id, params)
    for path in paths:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("stage") != 9 or r.get("outcome") != "ok":
                    continue
                for t in r.get("timing") or []:
                    us = t.get("median_us")
                    key = (r["task"], t["shape"])
                    if us and (key not in best or us < best[key][0]):
                        best[key] = (us, r.get("candidate_id", ""), r.get("params", {}))
    return best


def peer_times(path):
    out = {}
    with open(path) as f:
        for r in json.load(f):
            if r.get("outcome") != "ok":
                continue
            backend = r["variant"].split("-")[-1]  # peer/pytorch-sdpa-cudnn -> cudnn
            for t in r.get("timing") or []:
                out[(backend, r["task"], t["shape"])] = t["median_us"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peers", required=True)
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()
    evo = fastest_evo(a.results)
    peers = peer_times(a.peers)
    if not evo:
        print("decode_table: no stage-9 record passed (outcome ok) in " + ", ".join(a.results), file=sys.stderr)
    print("| task | shape | MB moved | evo µs | cuDNN µs | flash µs | evo × cuDNN | evo GB/s | of 4.8 TB/s | params |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for (task, shape), (us, _cid, params) in sorted(evo.items()):
        mb = shape_bytes(shape) / 1e6
        cudnn, flash = peers.get(("cudnn", task, shape)), peers.get(("flash", task, shape))
        ratio = f"{cudnn / us:.2f}×" if cudnn else "-"
        gbps = mb * 1e6 / (us * 1e-6) / 1e9
        p = ",".join(f"{k}={v}" for k, v in params.items())
        print(f"| {task} | {shape} | {mb:.1f} | {us:.1f} | {cudnn and f'{cudnn:.1f}' or '-'} | "
              f"{flash and f'{flash:.1f}' or '-'} | {ratio} | {gbps:.0f} | {gbps / (PEAK_TBPS * 1e3):.0%} | {p} |")


if __name__ == "__main__":
    main()
