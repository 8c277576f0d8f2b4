#!/usr/bin/env python3
"""Peer baseline: FlashAttention-4's forward (flash_attn.cute.flash_attn_func, the CuTe DSL
kernels of the flash-attn-4 wheel; on sm_90 its Hopper path), timed the way evo times its kernels.

For every task (fp16/bf16, D 64/128, causal or not) and every shape of the sets asked for, the
same shapes, the same timer and the same record schema as scripts/peers_sdpa.py, whose functions
this script calls (shape selection, Timer, time_call, peer_record, merge_write):

  * inputs: peers_sdpa's tensors (seed 0, N(0, 1)), handed to FA4 as BSHD views of the same
    storage. A `:bshd` shape is contiguous BSHD; a BHSD shape is a transposed view of BHSD
    storage, which FA4 reads in place (it copies only a view whose last stride is not 1 or whose
    other strides are not 16-byte multiples; a view that would be copied is made contiguous
    before timing and the record says so). GQA: K and V carry Hkv heads; causal: causal=True
    (top-left, as evo and PyTorch); softmax_scale = 1/sqrt(D);
  * the first call compiles FA4's kernel for the configuration (CuTe DSL JIT) and is not timed;
    FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=1 with FLASH_ATTENTION_CUTE_DSL_CACHE_DIR keeps the
    compiled kernels for later runs;
  * the GPU spin ahead of each timed call is ~200 us, not SDPA's ~50 us: FA4's Python dispatch is
    longer. Its host time per call is measured and a record whose dispatch comes near the spin
    gets a warning (its events may then include host time).

A shape FA4 refuses (any error on the first call: its assertions on head dims, arch and layouts,
a CuTe DSL compile error) gets an "unsupported" record with the error's type and text. Records (kind "peer", variant peer/flash-attn-4) are
merged into results/peers/<gpu_key>.json after each task, like peers_sdpa.py's; `evo compare`
shows them as "FlashAttention-4". The env of each record names flash-attn-4's and the CuTe DSL's
versions and how the inputs were laid out (`fa4_inputs`).

Exit codes: 0 records written; 1 bad arguments, gates.json or peer list (one line naming what to
fix); 2 PyTorch, flash-attn-4 or a CUDA device missing (one line).

Usage: python3 scripts/peers_fa4.py [--site /tmp/fa4-site] [--tasks fp16-d64,bf16-d128]
       [--sets mission,models,regimes] [--out FILE] [--budget-ms MS]
"""
import argparse
import datetime
import math
import os
import site
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers_sdpa as ps  # noqa: E402

VARIANT = "peer/flash-attn-4"
DEFAULT_TASKS = ["fp16-d64", "fp16-d64-causal", "fp16-d128", "fp16-d128-causal",
                 "bf16-d128", "bf16-d128-causal", "bf16-d64", "bf16-d64-causal"]
HOLD_CYCLES = 400000  # ~200 us at 2 GHz
HOLD_US = 200.0
INPUTS_NOTE = ("BSHD views of peers_sdpa's tensors: :bshd shapes contiguous BSHD, BHSD shapes a "
               "transposed view of BHSD storage read in place")


def fail_missing(what):
    print("peers_fa4: %s" % what, file=sys.stderr)
    sys.exit(2)


def read_in_place(t):
    """True when FA4 takes the view as it is (flash_attn/cute/cute_dsl_utils.py maybe_contiguous):
    last stride 1, other strides and the pointer 16-byte aligned."""
    step = max(1, 16 // t.element_size())
    return (t.stride(-1) == 1 and t.data_ptr() % 16 == 0
            and all(st == 0 or st % step == 0 for st in t.stride()[:-1]))


def bshd_inputs(torch, s, dtype, device):
    """(q, k, v) as BSHD views of peers_sdpa's inputs, and whether one had to be made contiguous."""
    views = [t.transpose(1, 2) for t in ps.make_inputs(torch, s, dtype, device)]
    copied = not all(read_in_place(t) for t in views)
    if copied:
        views = [t.contiguous() for t in views]
    return views, copied


def host_dispatch_us(call, calls=8):
    """Median host time of one call (no synchronization): what the GPU spin must cover."""
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e6)
    return ps.quantile(sorted(times), 0.5)


def measure(torch, fa4, timer, task, s, device):
    """(outcome, reason, timing entry or None, warnings)."""
    dtype = torch.float16 if task["dtype"] == "fp16" else torch.bfloat16
    torch.manual_seed(0)
    (q, k, v), copied = bshd_inputs(torch, s, dtype, device)
    scale = 1.0 / math.sqrt(s["d"])

    def call():
        return fa4(q, k, v, softmax_scale=scale, causal=task["causal"])

    try:
        call()  # compiles the configuration; not timed
        torch.cuda.synchronize(device)
    except torch.cuda.OutOfMemoryError:
        raise
    except Exception as exc:  # FA4 refuses by assertion; the CuTe DSL's errors derive from Exception
        reason = ("%s: %s" % (type(exc).__name__, " ".join(str(exc).split())))[:400]
        return "unsupported", reason, None, []
    notes = []
    if copied:
        notes.append("FA4 would copy these strided inputs: timed on contiguous BSHD copies instead")
    dispatch = host_dispatch_us(call)
    torch.cuda.synchronize(device)
    if dispatch > 0.75 * HOLD_US:
        notes.append("host dispatch %.0f us is near the ~%.0f us GPU spin: the events may include host time"
                     % (dispatch, HOLD_US))
    entry = ps.time_call(timer, call, task, s, device)
    del q, k, v
    return "ok", "", entry, notes


def dist_version(name):
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Exit codes: 0 written; 1 bad arguments or input files; "
                                        "2 PyTorch, flash-attn-4 or a CUDA device missing.")
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated fp16/bf16 tasks")
    ap.add_argument("--sets", default="", help="shape sets or explicit shapes (default: gates.json benchmark_sets)")
    ap.add_argument("--gates", default=os.path.join(ps.ROOT, "gates", "gates.json"))
    ap.add_argument("--out", default="", help="output file (default: results/peers/<gpu_key>.json)")
    ap.add_argument("--replace", action="store_true", help="do not merge into an existing output file")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--budget-ms", type=float, default=None, help="per-shape sampling budget (default: gates.json)")
    ap.add_argument("--site", action="append", default=[],
                    help="a folder the wheels were installed into (pip --target): added with "
                         "site.addsitedir so its .pth files run (nvidia-cutlass-dsl needs its own)")
    return ap.parse_args()


def main():
    args = parse_args()
    tasks = [ps.parse_task(t.strip()) for t in args.tasks.split(",") if t.strip()]
    gates, sets, timing = ps.gates_sets_timing(args)
    for d in args.site:
        if not os.path.isdir(d):
            ps.fail("--site %s: no such folder (install the wheels there first: lab/device-sessions/fa4.sh)" % d)
        site.addsitedir(os.path.abspath(d))
    try:
        import torch
    except ImportError as e:
        fail_missing("PyTorch is needed (%s)" % e)
    try:
        from flash_attn.cute import flash_attn_func
    except ImportError as e:
        fail_missing("flash-attn-4 (flash_attn.cute) and the CuTe DSL are needed: pip install flash-attn-4, "
                     "or pass --site DIR of lab/device-sessions/fa4.sh (%s)" % " ".join(str(e).split()))
    device, props, name, key, timer = ps.open_device(torch, args.device, timing, "peers_fa4", HOLD_CYCLES)
    now = datetime.datetime.now(datetime.timezone.utc)
    env = dict(ps.peer_env(torch, props, name, key), flash_attn_4=dist_version("flash-attn-4"),
               cutlass_dsl=dist_version("nvidia-cutlass-dsl"), fa4_inputs=INPUTS_NOTE)
    run = {"run_id": now.strftime("%Y%m%dT%H%M%SZ") + "-peers-fa4", "now": now,
           "source_path": "scripts/peers_fa4.py", "source_sha256": ps.file_sha256(__file__),
           "arch": "sm_%d%d" % (props.major, props.minor), "env": env}
    out_path = args.out or os.path.join(ps.ROOT, "results", "peers", key + ".json")
    print("%s (%s), torch %s, flash-attn-4 %s, CuTe DSL %s, target rse %.2f %%, budget %.0f ms per shape"
          % (name, key, torch.__version__, env["flash_attn_4"], env["cutlass_dsl"], timing["target_rse"] * 100,
             timing["shape_budget_ms"]), flush=True)

    records = []
    for task in tasks:
        for s in ps.benchmark_shapes(gates, task, sets):
            t0 = time.perf_counter()
            notes = []

            def once():
                outcome, reason, entry, found = measure(torch, flash_attn_func, timer, task, s, device)
                notes.extend(found)
                return outcome, reason, entry

            outcome, reason, entry = ps.guarded(torch, once)
            records.append(ps.peer_record(run, VARIANT, task, s, env["flash_attn_4"], outcome, reason, entry,
                                          time.perf_counter() - t0, notes + ps.entry_warnings(entry, timing, s["dims"])))
            if entry:
                print("%-16s %-24s %10.2f us  %7.1f TFLOPS  rse %.2f %%  n %d"
                      % (task["name"], s["dims"], entry["median_us"], entry["tflops"], (entry["rse"] or 0) * 100,
                         entry["n"]), flush=True)
            else:
                print("%-16s %-24s %s: %s" % (task["name"], s["dims"], outcome, reason), flush=True)
        # After each task, so a call cut short by its time limit keeps what it measured.
        ps.merge_write(out_path, records, args.replace)


if __name__ == "__main__":
    main()
