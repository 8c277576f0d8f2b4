#!/usr/bin/env python3
"""The exported PyTorch op in a real PyTorch process on the GPU (lab/device-sessions/export.sh).

Against torch.nn.functional.scaled_dot_product_attention, within the gate's tolerances
(gates/gates.json "tolerances", the "normal" inputs' row; the reference is SDPA in float32 on the
same inputs, dequantized for fp8, as evo's own FP32 reference): every benchmark shape of every
exported task (gates.json benchmark sets and the `regimes` set) and --random realistic shapes
(GQA/MQA, BSHD and packed QKV, causal, ragged and decode lengths, seeded). Then torch.compile
(fullgraph) and a CUDA graph (replayed on new inputs) against the eager op, bitwise; opcheck of
the fake implementation; the refusals and the SDPA fallback. Then timing, as evo times (L2 flushed
before each sample, a GPU spin queued first so the events time the kernel and not the host,
samples to gates.json's rse target): the op against SDPA (cuDNN, flash) in this process, and
against evo's own record of the same kernel (manifest.json), by CUDA-graph time for launch-bound
shapes. Writes correctness.md, timing.md and export_check.json to --out. Exit 0 when every check
passed, 3 when one failed (the tables say which).
"""
import argparse
import json
import math
import os
import random
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import peers_sdpa  # noqa: E402  (evo's timing rules for peers: Timer, parse_shape, summarize)

DTYPE_TOL = {"fp16": "fp16", "bf16": "bf16", "fp8": "fp8"}
HEADS = [(32, 8), (32, 32), (16, 16), (8, 1), (40, 8), (12, 2), (64, 8), (28, 4), (16, 2), (24, 24)]
MAX_ELEMENTS = 1 << 25  # per tensor, for the random shapes


def parse_task(name):
    parts = name.split("-")
    return {"name": name, "dtype": parts[0], "head_dim": int(parts[1][1:]), "causal": len(parts) > 2}


class Env:
    def __init__(self, args):
        import torch
        import torch.nn.functional as F
        sys.path.insert(0, os.path.join(args.package, "python"))
        import evo_attn
        import evo_attn._op
        self.torch, self.F, self.evo_attn, self.evo_attn_op = torch, F, evo_attn, evo_attn._op
        self.sets = [x for x in getattr(args, "sets", "").split(",") if x]
        self.dev = torch.device("cuda", 0)
        self.manifest = evo_attn.manifest()
        with open(os.path.join(ROOT, "gates", "gates.json")) as f:
            self.gates = json.load(f)
        self.kernels = {k["name"]: k for k in self.manifest["kernels"]}
        self.deadline = time.time() + args.budget_s

    def torch_dtype(self, dtype):
        t = self.torch
        return {"fp16": t.float16, "bf16": t.bfloat16, "fp8": t.float8_e4m3fn}[dtype]

    def tolerance(self, dtype):
        tol = self.gates["tolerances"][DTYPE_TOL[dtype]]
        return tol["atol"], tol["rtol"], tol["rel_l2"]


# ------------------------------------------------------------------------------------------------
# Inputs

def make_qkv(env, task, shape, layout, gen):
    """q, k, v in the layout, fp8 quantized per tensor (amax / 448) with their descales."""
    torch = env.torch
    b, hq, hkv, sq, skv, d = shape
    f32 = dict(dtype=torch.float32, device=env.dev)

    def one(h, s):
        if layout == "bshd":
            return torch.randn(b, s, h, d, generator=gen, **f32).transpose(1, 2)
        return torch.randn(b, h, s, d, generator=gen, **f32)

    if layout == "packed":
        qkv = torch.randn(b, sq, 3, hq, d, generator=gen, **f32)
        parts, descales = quantize(env, task, [qkv])
        q, k, v = (t.transpose(1, 2) for t in parts[0].unbind(2))
        return (q, k, v), descales * 3
    tensors, descales = quantize(env, task, [one(hq, sq), one(hkv, skv), one(hkv, skv)])
    return tuple(tensors), descales


def quantize(env, task, tensors):
    if task["dtype"] != "fp8":
        return [t.to(env.torch_dtype(task["dtype"])) for t in tensors], [1.0] * len(tensors)
    out, scales = [], []
    for t in tensors:
        s = max(float(t.abs().max()) / 448.0, 1e-12)
        out.append((t / s).to(env.torch.float8_e4m3fn))
        scales.append(s)
    return out, scales


def reference(env, q, k, v, causal, scale, descales):
    """SDPA in float32 on the (dequantized) inputs: evo's FP32 reference, through PyTorch."""
    torch, F = env.torch, env.F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    qf, kf, vf = (t.float() * d for t, d in zip((q, k, v), descales))
    if qf.size(1) != kf.size(1):
        r = qf.size(1) // kf.size(1)
        kf, vf = kf.repeat_interleave(r, dim=1), vf.repeat_interleave(r, dim=1)
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        return F.scaled_dot_product_attention(qf, kf, vf, is_causal=causal, scale=scale)


def compare(env, out, ref, dtype):
    """The gate's rules (harness/gates/correctness.cpp): no element beyond atol + rtol|ref|, rel L2."""
    torch = env.torch
    atol, rtol, rel_tol = env.tolerance(dtype)
    o = out.float()
    diff = (o - ref).abs()
    nonfinite = int((~torch.isfinite(o)).sum())
    bad = int((diff > atol + rtol * ref.abs()).sum())
    rel = math.sqrt(float(((o - ref) ** 2).sum()) / max(float((ref ** 2).sum()), 1e-30))
    return {"max_abs": float(diff.max()), "rel_l2": rel, "bad": bad, "nonfinite": nonfinite,
            "tol": "%g/%g/%g" % (atol, rtol, rel_tol), "pass": nonfinite == 0 and bad == 0 and rel <= rel_tol}


# ------------------------------------------------------------------------------------------------
# Correctness

def run_case(env, task, shape, layout, gen, origin):
    torch, evo_attn = env.torch, env.evo_attn
    (q, k, v), descales = make_qkv(env, task, shape, layout, gen)
    d = shape[5]
    scale = 1.0 / math.sqrt(d)
    info = evo_attn.kernel_for(q, k, v, task["causal"], None, *descales)
    out = torch.ops.evo.attention(q, k, v, task["causal"], None, *descales)
    ref = reference(env, q, k, v, task["causal"], scale, descales)
    row = {"origin": origin, "task": task["name"], "shape": "x".join(map(str, shape)), "layout": layout,
           "regime": info["regime"], "kernel": info["kernel"]}
    row.update(compare(env, out, ref, task["dtype"]))
    if task["dtype"] != "fp8":  # SDPA's own error on the same inputs, for scale
        sd = env.F.scaled_dot_product_attention(q, k, v, is_causal=task["causal"], enable_gqa=shape[1] != shape[2])
        row["sdpa_rel_l2"] = compare(env, sd, ref, task["dtype"])["rel_l2"]
    return row


def benchmark_shapes(env, task):
    sets = env.sets or env.gates["defaults"]["benchmark_sets"] + ["regimes"]
    out = []
    for s in peers_sdpa.benchmark_shapes(env.gates, {"head_dim": task["head_dim"], "causal": task["causal"]}, sets):
        out.append(((s["b"], s["hq"], s["hkv"], s["sq"], s["skv"], s["d"]), s["layout"], s["set"]))
    return out


def random_shapes(rng, tasks, n):
    out = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        hq, hkv = rng.choice(HEADS)
        kind = rng.choice(["decode", "prefill", "chunk", "ragged"])
        if kind == "decode":
            sq, skv = rng.randint(1, 16), rng.randint(17, 8192)
        elif kind == "prefill":
            sq = skv = rng.randint(17, 4096)
        elif kind == "chunk":
            sq = rng.randint(17, 1024)
            skv = sq + rng.randint(0, 4096)
        else:
            sq, skv = rng.randint(1, 3000), rng.randint(1, 3000)
        d = task["head_dim"]
        b = rng.randint(1, 8)
        while b > 1 and b * hq * max(sq, skv) * d > MAX_ELEMENTS:
            b //= 2
        layouts = ["bhsd", "bshd"] + (["packed"] if hq == hkv and sq == skv else [])
        out.append((task, (b, hq, hkv, sq, skv, d), rng.choice(layouts), kind))
    return out


def correctness(env, tasks, args):
    gen = env.torch.Generator(device=env.dev)
    gen.manual_seed(args.seed)
    rows = []
    for task in tasks:
        for shape, layout, origin in benchmark_shapes(env, task):
            rows.append(run_case(env, task, shape, layout, gen, "bench:" + origin))
    for task, shape, layout, kind in random_shapes(random.Random(args.seed), tasks, args.random):
        rows.append(run_case(env, task, shape, layout, gen, "random:" + kind))
    return rows


# ------------------------------------------------------------------------------------------------
# torch.compile, CUDA graphs, opcheck, refusals, fallback

def feature(rows, name, fn):
    try:
        ok, detail = fn()
    except Exception as e:  # a feature that raises is a failed check with the reason
        ok, detail = False, "%s: %s" % (type(e).__name__, " ".join(str(e).split())[:300])
    rows.append({"check": name, "pass": bool(ok), "detail": detail})


def features(env, tasks):
    torch, evo_attn = env.torch, env.evo_attn
    gen = torch.Generator(device=env.dev)
    gen.manual_seed(7)
    rows = []
    for task in tasks[:2]:
        shape = (2, 32, 8, 333, 777, task["head_dim"])
        (q, k, v), ds = make_qkv(env, task, shape, "bshd", gen)
        c = task["causal"]

        def f(q, k, v):
            return evo_attn.scaled_dot_product_attention(q, k, v, is_causal=c, q_descale=ds[0], k_descale=ds[1],
                                                         v_descale=ds[2])

        feature(rows, "torch.compile fullgraph, %s" % task["name"],
                lambda: compiled_equal(env, f, q, k, v))
        feature(rows, "CUDA graph replay on new inputs, %s" % task["name"],
                lambda: graph_equal(env, task, f, shape, gen))
        # A decode step over a long cache runs a split-KV kernel, whose workspace the first launch
        # on a stream allocates: torch.cuda.graph captures on a stream of its own, where the
        # allocation happens inside the capture (it failed there until 2026-11-29). Not under a
        # causal task: its top-left mask gives a decode step one key, which no kernel splits.
        if not c:
            decode = (1, 32, 8, 1, 8192, task["head_dim"])
            feature(rows, "CUDA graph of a split-KV decode step, %s" % task["name"],
                    lambda: graph_equal(env, task, f, decode, gen))
            feature(rows, "CUDA graph of several split calls between eager calls on its stream, %s" % task["name"],
                    lambda: graph_of_calls_equal(env, task, f, gen))
        feature(rows, "opcheck (schema, fake tensor), %s" % task["name"],
                lambda: (torch.library.opcheck(torch.ops.evo.attention.default, (q, k, v, c, None, *ds, False),
                                               test_utils=("test_schema", "test_faketensor")) is not None, "ok"))
    refusals(env, tasks, rows)
    return rows


def compiled_equal(env, f, q, k, v):
    torch = env.torch
    eager = f(q, k, v)
    out = torch.compile(f, fullgraph=True)(q, k, v)
    return torch.equal(out, eager), "compiled output %s the eager op's" % (
        "equals" if torch.equal(out, eager) else "differs from")


def graph_equal(env, task, f, shape, gen):
    torch = env.torch
    (q, k, v), _ = make_qkv(env, task, shape, "bshd", gen)
    env.evo_attn.load(0)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        f(q, k, v)  # warm-up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = f(q, k, v)
    (q2, k2, v2), _ = make_qkv(env, task, shape, "bshd", gen)
    q.copy_(q2)
    k.copy_(k2)
    v.copy_(v2)
    graph.replay()
    torch.cuda.synchronize()
    same = torch.equal(out, f(q, k, v))
    return same, "replayed output %s the eager op's on the new inputs" % ("equals" if same else "differs from")


def graph_of_calls_equal(env, task, f, gen):
    """A graph of split decode calls (one shape three times, as a model's layers, and a larger
    tile count between), captured on a stream the test then also runs eager calls of other shapes
    on: the package clears the split counters at the graph's first launch and where the graph's own
    order dirtied them, and each replay must equal the eager op bitwise."""
    torch = env.torch
    d = task["head_dim"]
    # The larger call has 40 tiles of the split kernels' 16 rows: still split (a call with a tile
    # for a third of the SMs runs unsplit, evo_launch.h).
    shapes = [(1, 32, 8, 1, 8192, d), (1, 32, 8, 1, 8192, d), (5, 32, 8, 1, 4096, d), (1, 32, 8, 1, 8192, d)]
    inputs = [make_qkv(env, task, s, "bshd", gen)[0] for s in shapes]
    env.evo_attn.load(0)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        outs = [f(*x) for x in inputs]
    same = True
    with torch.cuda.stream(stream):
        for eager in [(2, 32, 8, 1, 2048, d), (16, 32, 8, 1, 1024, d), (1, 32, 8, 1, 8192, d)]:
            for x, s in zip(inputs, shapes):
                for t, n in zip(x, make_qkv(env, task, s, "bshd", gen)[0]):
                    t.copy_(n)
            f(*make_qkv(env, task, eager, "bshd", gen)[0])  # dirties the stream's workspace
            graph.replay()
            refs = [f(*x) for x in inputs]
            torch.cuda.synchronize()
            same = same and all(torch.equal(o, r) for o, r in zip(outs, refs))
    return same, "replays %s the eager op's outputs" % ("equal" if same else "differ from")


def expect_refusal(env, rows, name, needle, fn):
    def check():
        try:
            fn()
        except env.evo_attn.Unsupported as e:
            return needle in str(e), str(e)
        return False, "no exception"
    feature(rows, "refuses " + name, check)


def refusals(env, tasks, rows):
    torch, evo_attn = env.torch, env.evo_attn
    t = tasks[0]
    dt = env.torch_dtype(t["dtype"]) if t["dtype"] != "fp8" else torch.float16
    d = t["head_dim"]

    def x(*shape, dtype=dt, device=env.dev):
        return torch.randn(*shape, device=device).to(dtype)

    q = x(1, 8, 64, d)
    op = evo_attn.scaled_dot_product_attention
    expect_refusal(env, rows, "head dim 96", "head_dim", lambda: op(x(1, 8, 64, 96), x(1, 8, 64, 96), x(1, 8, 64, 96)))
    expect_refusal(env, rows, "float32", "dtype", lambda: op(q.float(), q.float(), q.float()))
    expect_refusal(env, rows, "a CPU tensor", "device", lambda: op(q.cpu(), q.cpu(), q.cpu()))
    qt = x(1, 8, d, 64).transpose(2, 3)
    expect_refusal(env, rows, "a strided head dim", "q.stride(3)", lambda: op(qt, q, q))
    expect_refusal(env, rows, "attn_mask", "attn_mask", lambda: op(q, q, q, attn_mask=torch.ones(64, 64, device=env.dev)))
    flat = x(8 * 64 * d + 1)
    qm = flat[1:].view(1, 8, 64, d)
    expect_refusal(env, rows, "a misaligned tensor", "data_ptr", lambda: op(qm, q, q))

    def fallback():
        bad = x(1, 8, 64, 96)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = op(bad, bad, bad, fallback=True)
        ref = env.F.scaled_dot_product_attention(bad, bad, bad)
        same, warned = torch.equal(out, ref), any("falling back" in str(w.message) for w in caught)
        return same and warned, "%s SDPA's output, %s Python warning" % ("equals" if same else "differs from",
                                                                      "with a" if warned else "without a")
    feature(rows, "fallback=True runs SDPA for head dim 96", fallback)


# ------------------------------------------------------------------------------------------------
# Timing

def make_timer(env):
    torch = env.torch
    timer = peers_sdpa.Timer(torch, env.dev, env.gates["timing"])
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is not None:  # ~200 us of GPU spin: longer than the op's host path through Python
        timer.hold = lambda: sleep(400000)
    return timer


def time_one(env, timer, fn):
    """Median µs of single calls with the L2 flushed, and the CUDA-graph µs per call (20 calls)."""
    try:
        timer.warm_up(fn)
        stats = peers_sdpa.summarize(timer.sample(fn))
    except Exception as e:  # a backend that refuses the shape
        return {"error": " ".join(str(e).split())[:160]}
    out = {"median_us": stats["median_us"], "rse": stats["rse"], "n": stats["n"]}
    if stats["median_us"] < env.gates["timing"]["launch_bound_us"]:
        out["graph_us"] = timer.graph_us(fn)
        out["back_to_back_us"] = timer.back_to_back_us(fn)
    return out


def recorded(env, kernel, shape):
    for t in env.kernels[kernel].get("timing") or []:
        if t["shape"] == shape:
            return t
    return None


def timing_row(env, timer, task, shape, layout):
    torch, F = env.torch, env.F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    gen = torch.Generator(device=env.dev)
    gen.manual_seed(1)
    (q, k, v), ds = make_qkv(env, task, shape, layout, gen)
    c = task["causal"]
    info = env.evo_attn.kernel_for(q, k, v, c, None, *ds)
    dims = "x".join(map(str, shape)) + (":bshd" if layout == "bshd" else "")
    row = {"task": task["name"], "shape": dims, "regime": info["regime"], "kernel": info["kernel"],
           "record": recorded(env, info["kernel"], dims)}
    row["op"] = time_one(env, timer, lambda: torch.ops.evo.attention(q, k, v, c, None, *ds))
    row["op_impl"] = "C++" if getattr(env.evo_attn_op, "CPP_OP", False) else "Python"
    if row["op"].get("median_us", 1e9) < env.gates["timing"]["launch_bound_us"]:
        # The Python path of the op (checks, descriptors, ctypes) without custom-op dispatch, for
        # the per-call cost the C++ op removes: graph and back-to-back times show it.
        op_mod = env.evo_attn_op

        def python_path():
            op_mod._check(q, k, v)
            out = op_mod._empty_out(q)
            op_mod._native.library().forward(op_mod._call(q, k, v, out, c, None, ds),
                                             torch.cuda.current_stream(q.device).cuda_stream)
            return out
        row["op_python_path"] = time_one(env, timer, python_path)
    if task["dtype"] != "fp8":
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            def sdpa(backend=backend):
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=c, enable_gqa=shape[1] != shape[2])
            row[name] = time_one(env, timer, sdpa)
    judge(env, row)
    return row


def judge(env, row):
    """op / record on the median, or on the CUDA-graph time for launch-bound shapes (as evo records)."""
    rec, op = row["record"], row["op"]
    if not rec or "median_us" not in op:
        row["vs_record"], row["basis"] = None, "no record" if not rec else "op failed"
        return
    if "graph_us" in op and op["graph_us"] and rec.get("graph_us"):
        row["vs_record"], row["basis"] = op["graph_us"] / rec["graph_us"], "graph"
    else:
        row["vs_record"], row["basis"] = op["median_us"] / rec["median_us"], "median"
    row["within_3pct"] = abs(row["vs_record"] - 1) <= 0.03


def timing(env, tasks):
    """Every task's default benchmark shapes first (evo has records there), then the `regimes` set
    (or the --sets asked for, e.g. models)."""
    timer = make_timer(env)
    rows = []
    for regimes_set in (False, True):
        for task in tasks:
            for shape, layout, origin in benchmark_shapes(env, task):
                if (origin == "regimes") != regimes_set:
                    continue
                if time.time() > env.deadline:
                    rows.append({"task": task["name"], "shape": "x".join(map(str, shape)), "skipped": "time budget"})
                    continue
                rows.append(timing_row(env, timer, task, shape, layout))
    return rows


# ------------------------------------------------------------------------------------------------
# Reports

def us(x):
    return "-" if x is None else ("%.1f" % x if x < 1000 else "%.0f" % x)


def correctness_md(rows, feats):
    out = ["# evo_attn against SDPA (float32 reference), gates.json tolerances", "",
           "| origin | task | shape | layout | regime | kernel | max abs | rel L2 | bad | SDPA rel L2 | tol a/r/l2 | pass |",
           "|---|---|---|---|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        out.append("| %s | %s | %s | %s | %s | %s | %.3g | %.3g | %d | %s | %s | %s |" % (
            r["origin"], r["task"], r["shape"], r["layout"], r["regime"], r["kernel"], r["max_abs"], r["rel_l2"],
            r["bad"], "%.3g" % r["sdpa_rel_l2"] if "sdpa_rel_l2" in r else "-", r["tol"],
            "ok" if r["pass"] else "FAIL"))
    out += ["", "| check | pass | detail |", "|---|---|---|"]
    for f in feats:
        out.append("| %s | %s | %s |" % (f["check"], "ok" if f["pass"] else "FAIL", f["detail"].replace("|", "/")))
    passed = sum(r["pass"] for r in rows) + sum(f["pass"] for f in feats)
    out += ["", "%d of %d checks passed" % (passed, len(rows) + len(feats))]
    return "\n".join(out) + "\n"


def timing_md(rows):
    out = ["# evo_attn timed from Python against SDPA and evo's records (µs, L2 flushed, median)", "",
           "| task | shape | regime | kernel | record | op | op/record | basis | cuDNN | flash | × cuDNN | × flash |"
           " op graph / b2b | Python path graph / b2b |",
           "|---|---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "skipped" in r:
            out.append("| %s | %s | skipped: %s |||||||||" % (r["task"], r["shape"], r["skipped"]))
            continue
        rec, op = r["record"] or {}, r["op"]
        graph = r.get("basis") == "graph"
        rec_t = rec.get("graph_us") if graph else rec.get("median_us")
        op_t = op.get("graph_us") if graph else op.get("median_us")
        cells = []
        for peer in ("cudnn", "flash"):
            p = r.get(peer) or {}
            cells.append(us(p.get("median_us")) if "median_us" in p else ("n/a" if peer not in r else "refused"))
        ratio = ["%.2f×" % (r[p]["median_us"] / op["median_us"]) if r.get(p, {}).get("median_us") and
                 op.get("median_us") else "-" for p in ("cudnn", "flash")]
        py = r.get("op_python_path") or {}
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |" % (
            r["task"], r["shape"], r["regime"], r["kernel"], us(rec_t), us(op_t),
            "%.3f%s" % (r["vs_record"], "" if r.get("within_3pct") else " (!)") if r.get("vs_record") else "-",
            r.get("basis"), cells[0], cells[1], ratio[0], ratio[1], us(op.get("graph_us")),
            us(op.get("back_to_back_us")), us(py.get("graph_us")), us(py.get("back_to_back_us"))))
    judged = [r for r in rows if r.get("vs_record")]
    within = sum(1 for r in judged if r["within_3pct"])
    out += ["", "op/record within 3 %%: %d of %d shapes with a record; × is SDPA's time / the op's (above 1: the op "
            "is faster); graph basis: CUDA-graph µs per call for launch-bound shapes; op implementation: %s" % (
                within, len(judged), ", ".join(sorted({r.get("op_impl", "?") for r in rows if "op" in r})) or "-")]
    return "\n".join(out) + "\n"


def write_json(env, args, rows, feats, trows):
    with open(os.path.join(args.out, "export_check.json"), "w") as f:
        json.dump({"correctness": rows, "features": feats, "timing": trows, "torch": env.torch.__version__,
                   "gpu": env.torch.cuda.get_device_name(0)}, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--package", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--random", type=int, default=24)
    ap.add_argument("--seed", type=int, default=24)
    ap.add_argument("--budget-s", type=float, default=200.0, help="stop timing new shapes after this")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--sets", default="", help="shape sets to time (default: benchmark sets, then regimes)")
    args = ap.parse_args()
    env = Env(args)
    names = [t["task"] for t in env.manifest["tasks"]]
    tasks = [parse_task(n) for n in sorted(names, key=lambda n: (n.startswith("fp8"), n))]
    rows = correctness(env, tasks, args)
    feats = features(env, tasks)
    with open(os.path.join(args.out, "correctness.md"), "w") as f:
        f.write(correctness_md(rows, feats))
    write_json(env, args, rows, feats, [])  # again with the timing below, should a timeout come first
    trows = [] if args.no_timing else timing(env, tasks)
    with open(os.path.join(args.out, "timing.md"), "w") as f:
        f.write(timing_md(trows))
    write_json(env, args, rows, feats, trows)
    failed = [r for r in rows if not r["pass"]] + [f for f in feats if not f["pass"]]
    print("correctness: %d/%d ok; features: %d/%d ok; timed %d shapes" % (
        sum(r["pass"] for r in rows), len(rows), sum(f["pass"] for f in feats), len(feats), len(trows)))
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
