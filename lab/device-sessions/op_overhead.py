#!/usr/bin/env python3
"""Where the exported op's per-call host time goes (issue 30 item 5), in one PyTorch process.

The op report (results/op/*.json) shows back-to-back eager calls of the C++ op at launch-bound
shapes taking ~17 µs a call where the kernel's CUDA-graph replay takes ~7 µs: the host, not the
GPU, sets the pace there. This times, per call and on the host only (perf_counter over N calls
issued back to back, the GPU synchronized before and after), each layer a call goes through, so the
difference between two rows is one layer's cost:
  empty_like            at::empty through the dispatcher from Python (the floor of any op)
  sdpa cudnn / flash    PyTorch's own attention, for scale
  torch.ops.evo         the C++ op from Python (dispatcher, schema parsing, at::empty, evo_attn_forward)
  evo_attn.attention    the package's Python wrapper over it
  ctypes forward        evo_attn_forward through ctypes (the no-torch path), output preallocated
  ctypes plan           evo_attn_plan_call alone (the checks and the regime choice, no launch)
and the kernel's CUDA-graph time per call, the GPU's side of the same call. A row whose host time
is under the graph time is GPU-bound there (its host cost is hidden); the shapes are chosen small.
Writes overhead.md and overhead.json to --out.
  python3 op_overhead.py --package /tmp/evo-export --out $OUT
"""
import argparse
import json
import math
import os
import sys
import time

SHAPES = [  # (task, B, Hq, Hkv, Sq, Skv, layout): launch-bound shapes of the op report's regimes
    ("fp16-d64", 1, 8, 8, 512, 512, "bhsd"),
    ("fp16-d64-causal", 1, 8, 8, 512, 512, "bhsd"),
    ("fp16-d128", 1, 32, 8, 1, 8192, "bshd"),
    ("fp16-d64", 1, 1, 1, 1, 64, "bhsd"),
]


def tensors(torch, task, b, hq, hkv, sq, skv, layout, dev):
    d = int(task.split("-")[1][1:])
    gen = torch.Generator(device=dev).manual_seed(0)

    def make(h, s):
        if layout == "bshd":
            return torch.randn(b, s, h, d, device=dev, dtype=torch.float16, generator=gen).transpose(1, 2)
        return torch.randn(b, h, s, d, device=dev, dtype=torch.float16, generator=gen)

    return make(hq, sq), make(hkv, skv), make(hkv, skv)


def host_us(torch, fn, n):
    """Host µs per call of n back-to-back calls (the GPU drained before and after)."""
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e6 / n, (time.perf_counter() - t0) * 1e6 / n


def graph_us(torch, fn, calls=20, reps=20):
    """GPU µs per call: a CUDA graph of `calls` calls, replayed `reps` times."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / (calls * reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", required=True, help="an evo export folder, built (python/ inside)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the median is kept")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    sys.path.insert(0, os.path.join(args.package, "python"))
    import evo_attn
    from evo_attn import _native, _op

    dev = torch.device("cuda", 0)
    evo_attn.load(0)
    lib = _native.library()
    rows = []
    for task, b, hq, hkv, sq, skv, layout in SHAPES:
        causal = task.endswith("-causal")
        q, k, v = tensors(torch, task, b, hq, hkv, sq, skv, layout, dev)
        try:
            kernel = evo_attn.kernel_for(q, k, v, is_causal=causal)
        except evo_attn.Unsupported as e:  # a task the package was not exported with
            print("skipped %s: %s" % (task, e), flush=True)
            continue
        out = torch.empty_like(q)
        scale = 1.0 / math.sqrt(q.size(-1))
        call = _native.call(_op._desc(q), _op._desc(k), _op._desc(v), _op._desc(out), _op._CODES[q.dtype], causal,
                            scale, 0, (1.0, 1.0, 1.0))
        stream = torch.cuda.current_stream(dev).cuda_stream
        gqa = hq != hkv
        paths = {
            "empty_like": lambda: torch.empty_like(q),
            "torch.ops.evo": lambda: torch.ops.evo.attention(q, k, v, causal, None, 1.0, 1.0, 1.0, False),
            "evo_attn.attention": lambda: evo_attn.attention(q, k, v, is_causal=causal),
            "ctypes forward": lambda: lib.forward(call, stream),
            "ctypes plan": lambda: lib.plan(call),
        }

        def sdpa(backend):
            def run():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
            return run
        paths["sdpa cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
        paths["sdpa flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
        samples = {name: [] for name in paths}
        for _ in range(args.rounds):  # interleaved, so drift hits every path alike
            for name, fn in paths.items():
                if isinstance(samples[name], str):
                    continue
                try:
                    samples[name].append(host_us(torch, fn, args.calls))
                except Exception as e:  # a path this shape cannot take (e.g. flash on GQA): say so
                    samples[name] = str(e).splitlines()[0][:120]
        row = {"task": task, "shape": f"{b}x{hq}x{hkv}x{sq}x{skv}:{layout}", "kernel": kernel["label"],
               "graph_us": graph_us(torch, paths["torch.ops.evo"]), "host_us": {}, "total_us": {}}
        for name, s in samples.items():
            if isinstance(s, str):
                row["host_us"][name] = s
                continue
            row["host_us"][name] = sorted(x[0] for x in s)[len(s) // 2]
            row["total_us"][name] = sorted(x[1] for x in s)[len(s) // 2]
        rows.append(row)
        print(json.dumps(row), flush=True)

    names = ["empty_like", "ctypes plan", "ctypes forward", "torch.ops.evo", "evo_attn.attention", "sdpa cudnn",
             "sdpa flash"]
    lines = ["# Host µs per call of the exported op's layers (back to back, median of %d rounds of %d calls)"
             % (args.rounds, args.calls), "",
             "%s, PyTorch %s. graph: the op's kernel per call in a CUDA-graph replay (the GPU's side)."
             % (torch.cuda.get_device_name(0), torch.__version__), "",
             "| task | shape | kernel | graph | " + " | ".join(names) + " |",
             "|---|---|---|---:|" + "---:|" * len(names)]
    for r in rows:
        cells = [("%.1f" % r["host_us"][n]) if isinstance(r["host_us"].get(n), float) else "-" for n in names]
        lines.append("| %s | %s | %s | %.1f | %s |" % (r["task"], r["shape"], r["kernel"], r["graph_us"],
                                                       " | ".join(cells)))
    with open(os.path.join(args.out, "overhead.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "overhead.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
