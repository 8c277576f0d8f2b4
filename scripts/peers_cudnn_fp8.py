#!/usr/bin/env python3
"""Peer baseline for the fp8 tasks: cuDNN FP8 SDPA (cuDNN frontend `sdpa_fp8`), timed the way evo
times its kernels.

For every fp8 task (default: fp8-d64, fp8-d128, fp8-d64-causal, fp8-d128-causal) and every
benchmark shape of gates/gates.json (defaults.benchmark_sets): Q, K, V drawn N(0, 1), quantized
per tensor to e4m3 as evo's worker does (scripts/cudnn_fp8.py), one cuDNN graph built, then timed
by scripts/peers_sdpa.py's Timer: L2 flush before every sample outside the timed window, a GPU
spin ahead of each call so the events time the kernel, warm-up by time, samples until the rse
target or the per-shape budget, median/p10/p90/mean/stdev/n, SM clocks, back-to-back and graph
times for launch-bound shapes. O is bf16 where cuDNN offers it on the GPU, else e4m3 (the
record's env says which: `cudnn_fp8_o`).

Records (kind "peer", variant peer/cudnn-fp8-sdpa) are merged into results/peers/<gpu_key>.json
like peers_sdpa.py's; `evo compare` shows them as "cuDNN FP8".

Usage: python3 scripts/peers_cudnn_fp8.py [--tasks fp8-d64,fp8-d128] [--sets mission,long] [--out FILE]
"""
import argparse, datetime, hashlib, math, os, re, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cudnn_fp8  # noqa: E402
import peers_sdpa as ps  # noqa: E402

DEFAULT_TASKS = ["fp8-d64", "fp8-d128", "fp8-d64-causal", "fp8-d128-causal"]
VARIANT = "peer/cudnn-fp8-sdpa"


def parse_task(name):
    m = re.fullmatch(r"fp8-d(64|128)(-causal)?", name)
    if not m:
        ps.fail("unknown fp8 task '%s': use fp8-d<64|128>[-causal], e.g. fp8-d128" % name)
    return {"name": name, "dtype": "fp8", "head_dim": int(m.group(1)), "causal": bool(m.group(2))}


def fp8_inputs(torch, s, device):
    """e4m3 Q, K, V laid out as the shape says, and their descales."""
    def tensor(heads, seq):
        if s["layout"] == "bshd":
            x = torch.randn(s["b"], seq, heads, s["d"], device=device).transpose(1, 2)
        else:
            x = torch.randn(s["b"], heads, seq, s["d"], device=device)
        return cudnn_fp8.quantize(torch, x)

    (q, dq), (k, dk), (v, dv) = tensor(s["hq"], s["sq"]), tensor(s["hkv"], s["skv"]), tensor(s["hkv"], s["skv"])
    return (q, k, v), (dq, dk, dv)


def measure(torch, cudnn, timer, task, s, device):
    """(outcome, reason, timing entry or None, O dtype)."""
    torch.manual_seed(0)
    (q, k, v), descales = fp8_inputs(torch, s, device)
    v_amax = 448.0 * descales[2]
    sdpa, why = cudnn_fp8.build(torch, cudnn, q, k, v, task["causal"], 1.0 / math.sqrt(s["d"]), v_amax)
    if sdpa is None:
        return "unsupported", why, None, None
    sdpa.bind(q, k, v, descales)
    sdpa()
    torch.cuda.synchronize(device)
    clock_before = ps.sm_clock_mhz(device.index or 0)
    timer.warm_up(sdpa)
    stats = ps.summarize(timer.sample(sdpa))
    back_to_back = graph = None
    if stats["median_us"] < timer.launch_bound_us:
        back_to_back = timer.back_to_back_us(sdpa)
        graph = timer.graph_us(sdpa)
    clock_after = ps.sm_clock_mhz(device.index or 0)
    seconds = stats["median_us"] * 1e-6
    # Bytes at least moved: Q, K, V one byte each, O two (bf16) or one (e4m3).
    o_bytes = 2 if sdpa.out_dtype == "bf16" else 1
    moved = s["d"] * s["b"] * (s["hq"] * s["sq"] * (1 + o_bytes) + 2.0 * s["hkv"] * s["skv"])
    entry = {"shape": s["dims"], "set": s["set"]}
    entry.update(stats)
    entry.update({"tflops": ps.flops(s, task["causal"]) / seconds / 1e12, "ceiling_share": None,
                  "gbps": moved / seconds / 1e9, "back_to_back_us": back_to_back, "graph_us": graph,
                  "sm_clock_before_mhz": clock_before, "sm_clock_after_mhz": clock_after})
    return "ok", "", entry, sdpa.out_dtype


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS))
    ap.add_argument("--sets", default="", help="shape sets or explicit shapes (default: gates.json benchmark_sets)")
    ap.add_argument("--gates", default=os.path.join(ps.ROOT, "gates", "gates.json"))
    ap.add_argument("--out", default="", help="output file (default: results/peers/<gpu_key>.json)")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--budget-ms", type=float, default=None, help="per-shape sampling budget (default: gates.json)")
    args = ap.parse_args()
    tasks = [parse_task(t.strip()) for t in args.tasks.split(",") if t.strip()]
    gates, sets, timing = ps.gates_sets_timing(args)
    try:
        import torch
        import cudnn
    except ImportError as e:
        print("peers_cudnn_fp8: PyTorch and the cuDNN frontend (nvidia-cudnn-frontend) are needed (%s)" % e,
              file=sys.stderr)
        sys.exit(2)
    device, props, name, key, timer = ps.open_device(torch, args.device, timing, "peers_cudnn_fp8")
    source_sha = ps.file_sha256(__file__)
    now = datetime.datetime.now(datetime.timezone.utc)
    run_id = now.strftime("%Y%m%dT%H%M%SZ") + "-peers-cudnn-fp8"
    env = dict(ps.peer_env(torch, props, name, key), cudnn=cudnn.backend_version(),
               cudnn_frontend=getattr(cudnn, "__version__", "?"))
    out_path = args.out or os.path.join(ps.ROOT, "results", "peers", key + ".json")
    print("%s (%s), cuDNN %s, frontend %s" % (name, key, env["cudnn"], env["cudnn_frontend"]), flush=True)
    records = []
    for task in tasks:
        for s in ps.benchmark_shapes(gates, task, sets):
            t0 = time.perf_counter()
            try:
                outcome, reason, entry, o_dtype = measure(torch, cudnn, timer, task, s, device)
            except torch.cuda.OutOfMemoryError as e:
                outcome, reason, entry, o_dtype = "unsupported", "out of memory: " + " ".join(str(e).split())[:300], None, None
                torch.cuda.empty_cache()
            except RuntimeError as e:
                outcome, reason, entry, o_dtype = "runtime", " ".join(str(e).split())[:400], None, None
            warnings_list = []
            if entry and entry["rse"] is not None and entry["rse"] > timing["target_rse"]:
                warnings_list.append("rse %.2f %% above the %.2f %% target: the budget ran out"
                                     % (entry["rse"] * 100, timing["target_rse"] * 100))
            records.append({
                "schema_version": "1.0", "kind": "peer", "run_id": run_id, "time": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "candidate_id": hashlib.sha256(("%s|%s|%s|%s" % (VARIANT, task["name"], s["dims"], env["cudnn"]))
                                               .encode()).hexdigest()[:16],
                "variant": VARIANT, "stage": -1, "parent": None, "source_path": "scripts/peers_cudnn_fp8.py",
                "source_sha256": source_sha, "params": {}, "task": task["name"], "shape": s["dims"],
                "arch": "sm_%d%d" % (props.major, props.minor), "origin": "peer", "env": dict(env, cudnn_fp8_o=o_dtype),
                "outcome": outcome, "reason": reason, "timing": [entry] if entry else [],
                "gpu_seconds": round(time.perf_counter() - t0, 3), "warnings": warnings_list,
            })
            if entry:
                print("%-16s %-24s %10.2f us  %7.1f TFLOPS  rse %.2f %%  n %d  O %s"
                      % (task["name"], s["dims"], entry["median_us"], entry["tflops"], (entry["rse"] or 0) * 100,
                         entry["n"], o_dtype), flush=True)
            else:
                print("%-16s %-24s %s: %s" % (task["name"], s["dims"], outcome, reason), flush=True)
    merged = ps.load_existing(out_path)
    fresh = {(r["variant"], r["task"], r["shape"]) for r in records}
    merged = [r for r in merged if not (isinstance(r, dict) and (r.get("variant"), r.get("task"), r.get("shape")) in fresh)]
    merged.extend(records)
    merged.sort(key=lambda r: (str(r.get("task")), str(r.get("variant")), str(r.get("shape"))))
    ps.write_atomic(out_path, merged)
    print("wrote %s: %d records (%d new)" % (out_path, len(merged), len(records)))


if __name__ == "__main__":
    main()
