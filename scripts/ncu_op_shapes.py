#!/usr/bin/env python3
"""The exported op and SDPA cuDNN, one call each per shape inside NVTX ranges, for Nsight Compute.

Run under `ncu --nvtx --nvtx-include evo:<name>/ --nvtx-include cudnn:<name>/ ...`
(lab/device-sessions/ncu_op.sh does, and turns the report into a table with
lab/device-sessions/ncu_table.py). For each shape named: the inputs as the op report makes them
(tests/deploy/check_torch_op.py's make_qkv; `:bshd` shapes are BSHD storage seen as BHSD views,
the KV caches of the decode steps), --warmup calls of each side outside any range, then exactly
one call of torch.ops.evo.attention inside the push/pop range "evo:<name>" and one of
F.scaled_dot_product_attention with the cuDNN backend forced inside "cudnn:<name>"; with
--fa4-site, one of FlashAttention-4's flash_attn_func (BSHD views of the same tensors, made
contiguous before the warm-up where FA4 would copy them) inside "fa4:<name>". Each profiled
call is also bracketed by cudaProfilerStart/Stop, so `ncu --profile-from-start off` selects the
same calls where NVTX filtering is not available. The shapes are representative ones of the op
report (results/COMPARE.md, "The exported op through PyTorch"), named by model as gates.json's
model_shapes name them.

Writes --plan (JSON): per shape its model, task, dims, the package kernel and regime the op
dispatches to (with its stage, variant and evo's recorded median from manifest.json), and the
profiled calls in launch order, which ncu_table.py joins with ncu's CSV.

Usage: ncu_op_shapes.py --package DIR --shapes NAME... --plan FILE [--warmup N] [--fa4-site DIR]
       ncu_op_shapes.py --list | --tasks     (no PyTorch needed)
Exit codes: 0 done; 1 an unknown shape name or bad arguments; 2 PyTorch, the package or a GPU
missing.
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "deploy"))
import check_torch_op  # noqa: E402  (the op report's inputs: Env, make_qkv, parse_task, recorded)

# name -> (task, dims): the dims are gates.json model_shapes entries, which give the model's name.
SHAPES = {
    "llama3-70b-decode-b16": ("bf16-d128", "16x64x8x1x4096x128:bshd"),
    "llama3-8b-decode-b64": ("bf16-d128", "64x32x8x1x2048x128:bshd"),
    "llama3-8b-decode-b1": ("bf16-d128", "1x32x8x1x8192x128:bshd"),
    "bert-base-b32": ("fp16-d64", "32x12x12x384x384x64:bshd"),
    "llama3-8b-prefill-b16": ("fp16-d128-causal", "16x32x8x512x512x128:bshd"),
    # the causal shape furthest below tma_ws_m64's prediction (lab/notes/short-causal.md, "Measured")
    "gpt2-b32-256-causal": ("fp16-d64-causal", "32x12x12x256x256x64:bshd"),
    "long-encoder-16k": ("fp16-d128", "1x16x16x16384x16384x128"),
    # where FlashAttention-4 leads most (results/COMPARE.md, x FlashAttention-4: causal long
    # 0.80-0.89x, bf16 16k 0.99x): what its kernel does that evo's does not
    "long-16k-causal": ("fp16-d128-causal", "1x16x16x16384x16384x128"),
    "long-encoder-16k-bf16": ("bf16-d128", "1x16x16x16384x16384x128"),
    "mistral-7b-prefill-8k": ("bf16-d128-causal", "1x32x8x8192x8192x128:bshd"),
}


def fail(msg, code=1):
    print("ncu_op_shapes: " + msg, file=sys.stderr)
    sys.exit(code)


def model_names():
    with open(os.path.join(ROOT, "gates", "gates.json")) as f:
        entries = json.load(f).get("model_shapes", {}).get("shapes", [])
    return {(e["dims"], bool(e.get("causal"))): e["model"] for e in entries}


def shape_of(dims):
    values, _, layout = dims.partition(":")
    return tuple(int(x) for x in values.split("x")), layout or "bhsd"


def run_range(torch, name, fn):
    """One call inside NVTX range `name` and cudaProfilerStart/Stop."""
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    torch.cuda.nvtx.range_push(name)
    fn()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def fa4_side(fa4, q, k, v, causal):
    """FA4's call on BSHD views of the op's BHSD views, copied once here where FA4 would copy them
    inside the profiled call (peers_fa4.read_in_place)."""
    import peers_fa4
    views = [t.transpose(1, 2) for t in (q, k, v)]
    views = [t if peers_fa4.read_in_place(t) else t.contiguous() for t in views]
    return lambda: fa4(*views, causal=causal)


def profile_shape(env, name, warmup, models, fa4=None):
    torch, F = env.torch, env.F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    task_name, dims = SHAPES[name]
    task = check_torch_op.parse_task(task_name)
    shape, layout = shape_of(dims)
    gen = torch.Generator(device=env.dev)
    gen.manual_seed(1)
    (q, k, v), _ = check_torch_op.make_qkv(env, task, shape, layout, gen)
    c = task["causal"]
    info = env.evo_attn.kernel_for(q, k, v, c)
    kernel = env.kernels.get(info["kernel"], {})
    record = check_torch_op.recorded(env, info["kernel"], dims) if kernel else None
    entry = {"name": name, "model": models.get((dims, c), ""), "task": task_name, "dims": dims, "causal": c,
             "kernel": info["kernel"], "label": info.get("label", ""), "regime": info["regime"],
             "stage": kernel.get("stage"), "variant": kernel.get("variant"), "params": kernel.get("params"),
             "record_median_us": (record or {}).get("median_us"), "calls": []}

    def evo():
        return torch.ops.evo.attention(q, k, v, c, None)

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=c, enable_gqa=shape[1] != shape[2])

    sides = [("evo", evo), ("cudnn", cudnn)]
    if fa4 is not None:
        sides.append(("fa4", fa4_side(fa4, q, k, v, c)))
    for side, fn in sides:
        try:
            for _ in range(warmup):
                fn()
            torch.cuda.synchronize()
        except Exception as e:  # cuDNN refusing a shape: recorded, the other side still runs
            entry["calls"].append({"side": side, "range": "%s:%s" % (side, name),
                                   "error": " ".join(str(e).split())[:200]})
            continue
        run_range(torch, "%s:%s" % (side, name), fn)
        entry["calls"].append({"side": side, "range": "%s:%s" % (side, name)})
    return entry


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="Exit codes: 0 done; 1 bad arguments; 2 PyTorch, package or GPU missing.")
    ap.add_argument("--package", help="an `evo export` folder with the PyTorch op built")
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), help="names from --list (default: all)")
    ap.add_argument("--plan", help="the JSON written for ncu_table.py")
    ap.add_argument("--warmup", type=int, default=3, help="calls of each side before the profiled one")
    ap.add_argument("--fa4-site", help="a folder FlashAttention-4 is installed in (lab/device-sessions/fa4.sh install): "
                    "profile its forward too")
    ap.add_argument("--list", action="store_true", help="print the shape names and exit")
    ap.add_argument("--tasks", action="store_true", help="print the tasks the shapes need (comma list) and exit")
    args = ap.parse_args()
    unknown = [s for s in args.shapes if s not in SHAPES]
    if unknown:
        fail("unknown shape %s: use one of %s" % (", ".join(unknown), ", ".join(SHAPES)))
    if args.list:
        print("\n".join(args.shapes))
        return 0
    if args.tasks:
        print(",".join(sorted({SHAPES[s][0] for s in args.shapes})))
        return 0
    if not args.package or not args.plan:
        fail("--package DIR and --plan FILE are needed (or --list / --tasks)")
    if args.warmup < 0:
        fail("--warmup must be 0 or more")
    try:
        import torch
        import torch.cuda.nvtx  # noqa: F401  (range_push/pop)
        import torch.cuda.profiler  # noqa: F401  (cudaProfilerStart/Stop)
    except ImportError:
        fail("PyTorch is needed", 2)
    if not torch.cuda.is_available():
        fail("no CUDA device visible to PyTorch", 2)
    fa4 = None
    if args.fa4_site:
        import site
        site.addsitedir(args.fa4_site)
        try:
            from flash_attn.cute import flash_attn_func as fa4
        except ImportError as e:
            fail("--fa4-site %s: flash_attn.cute does not import (%s)" % (args.fa4_site, " ".join(str(e).split())), 2)
    env = check_torch_op.Env(argparse.Namespace(package=args.package, budget_s=0.0, sets=""))
    models = model_names()
    plan = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "warmup": args.warmup,
            "cudnn": torch.backends.cudnn.version(), "shapes": []}
    for name in args.shapes:
        plan["shapes"].append(profile_shape(env, name, args.warmup, models, fa4))
        with open(args.plan, "w") as f:  # after every shape, should a timeout come first
            json.dump(plan, f, indent=1)
        print("%s: %s" % (name, ", ".join(c["side"] + (" refused" if "error" in c else "")
                                          for c in plan["shapes"][-1]["calls"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
