#!/usr/bin/env python3
"""Peer baselines: PyTorch SDPA with each backend forced, timed the way evo times its kernels.

For every task (default: fp16-d64, fp16-d128, bf16-d128, fp16-d64-causal) and every benchmark
shape of gates/gates.json (defaults.benchmark_sets), each backend (FLASH_ATTENTION,
CUDNN_ATTENTION, EFFICIENT_ATTENTION) is forced with torch.nn.attention.sdpa_kernel and timed:

  * L2 flushed before every sample (a buffer of at least twice the L2 is zeroed), outside the
    timed window; CUDA events around each single call, queued behind a short GPU spin so the
    events time the kernel and not PyTorch's host-side dispatch;
  * warm-up by time (>= 25 ms); samples until the relative standard error of the mean is
    <= 0.5 % (gates.json timing.target_rse), with >= 10 samples and a per-shape budget;
  * median, p10, p90 (linear interpolation, as evo's core/stats.cpp), mean, stdev, n, rse;
    TFLOPS from 4*B*Hq*Sq*Skv*D, causal counting the visible (query, key) pairs exactly
    (top-left, as evo's Shape::flops and PyTorch's is_causal);
  * SM clock before/after each shape (nvidia-smi), back-to-back time for launch-bound shapes.

A backend that refuses a shape gets an outcome "unsupported" record with PyTorch's reason.
Records (kind "peer", docs/records.md, one per backend x task x shape) are merged into
results/peers/<gpu_key>.json: records of the same (backend, task, shape) are replaced, others
kept (--replace starts from an empty list). `evo compare` reads them.

Usage: python3 scripts/peers_sdpa.py [--tasks fp16-d64,bf16-d128] [--out FILE] [--backends flash,cudnn]
"""
import argparse
import datetime
import hashlib
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_TASKS = ["fp16-d64", "fp16-d128", "bf16-d128", "fp16-d64-causal"]
BACKENDS = {  # name in the record -> SDPBackend member
    "flash": "FLASH_ATTENTION",
    "cudnn": "CUDNN_ATTENTION",
    "efficient": "EFFICIENT_ATTENTION",
}
# Dense GEMM ceilings (TFLOPS) measured per GPU; harness/report/compare.cpp keeps the same table.
CEILINGS = {"nvidia-h200": {"fp16": 791.0, "bf16": 785.0}}


def fail(msg):
    # Named after the script run (peers_sdpa, peers_fa4, ...), whose functions these are.
    prog = os.path.splitext(os.path.basename(sys.argv[0] or ""))[0] or "peers_sdpa"
    print(prog + ": " + msg, file=sys.stderr)
    sys.exit(1)


# ------------------------------------------------------------------------------------------------
# Tasks and shapes (the same rules as harness/core/task.cpp and shape.cpp)

def parse_task(name):
    m = re.fullmatch(r"(fp16|bf16)-d(64|128)(-causal)?", name)
    if not m:
        fail("unknown task '%s': use <fp16|bf16>-d<64|128>[-causal], e.g. fp16-d64" % name)
    return {"name": name, "dtype": m.group(1), "head_dim": int(m.group(2)), "causal": bool(m.group(3))}


def parse_shape(text, head_dim):
    m = re.fullmatch(r"\s*(\w+)x(\w+)x(\w+)x(\w+)x(\w+)x(\w+)(?::(bhsd|bshd))?\s*", text)
    if not m:
        fail("bad shape '%s': use BxHqxHkvxSqxSkvxD, optionally :bshd" % text)

    def value(tok):
        if tok == "D":
            return head_dim
        if tok == "H":
            return 2048 // head_dim
        if not tok.isdigit() or int(tok) <= 0:
            fail("bad shape '%s': '%s' is not a positive integer" % (text, tok))
        return int(tok)

    b, hq, hkv, sq, skv, d = (value(m.group(i)) for i in range(1, 7))
    if hq % hkv:
        fail("shape %s: Hkv must divide Hq" % text)
    if d != head_dim:
        fail("shape %s: head dim %d does not match the task's %d" % (text, d, head_dim))
    layout = m.group(7) or "bhsd"
    dims = "%dx%dx%dx%dx%dx%d%s" % (b, hq, hkv, sq, skv, d, ":bshd" if layout == "bshd" else "")
    return {"b": b, "hq": hq, "hkv": hkv, "sq": sq, "skv": skv, "d": d, "layout": layout, "dims": dims}


def benchmark_shapes(gates, task, sets):
    sets = sets or gates["defaults"]["benchmark_sets"]
    out, seen = [], set()
    for name in sets:
        entries = gates["shape_sets"].get(name)
        if name == "models":  # gates.json model_shapes: the task's head dim and mask (harness/policy/model_shapes.h)
            entries = [m["dims"] for m in gates.get("model_shapes", {}).get("shapes", [])
                       if m["causal"] == task["causal"] and int(m["dims"].split(":")[0].split("x")[5]) == task["head_dim"]]
            set_name = name
        elif entries is None:
            entries, set_name = [name], ""  # an explicit BxHqxHkvxSqxSkvxD
        else:
            set_name = name
        for e in entries:
            s = parse_shape(e, task["head_dim"])
            if s["dims"] not in seen:
                seen.add(s["dims"])
                s["set"] = set_name
                out.append(s)
    return out


def flops(s, causal):
    full = 4.0 * s["b"] * s["hq"] * s["sq"] * s["skv"] * s["d"]
    if not causal:
        return full
    # Row i sees min(i + 1, Skv) keys: the sum in closed form.
    sq, skv = s["sq"], s["skv"]
    if sq <= skv:
        visible = sq * (sq + 1) / 2.0
    else:
        visible = skv * (skv + 1) / 2.0 + (sq - skv) * float(skv)
    return full * visible / (float(sq) * skv)


def min_bytes(s, elem_size):
    return float(elem_size) * s["d"] * s["b"] * (2.0 * s["hq"] * s["sq"] + 2.0 * s["hkv"] * s["skv"])


# ------------------------------------------------------------------------------------------------
# Statistics (the same definitions as harness/core/stats.cpp)

def quantile(sorted_values, q):
    if not sorted_values:
        return 0.0
    pos = q * (len(sorted_values) - 1)
    lo, hi = int(math.floor(pos)), int(math.ceil(pos))
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(samples):
    v = sorted(samples)
    n = len(v)
    mean = sum(v) / n
    stdev = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    rse = stdev / math.sqrt(n) / mean if n > 1 and mean > 0 else None
    return {"median_us": quantile(v, 0.5), "p10_us": quantile(v, 0.1), "p90_us": quantile(v, 0.9),
            "mean_us": mean, "stdev_us": stdev, "min_us": v[0], "max_us": v[-1], "n": n, "rse": rse}


def rse_of(samples):
    n = len(samples)
    if n < 2:
        return float("inf")
    mean = sum(samples) / n
    stdev = math.sqrt(sum((x - mean) ** 2 for x in samples) / (n - 1))
    return stdev / math.sqrt(n) / mean if mean > 0 else float("inf")


# ------------------------------------------------------------------------------------------------
# Device facts

def gpu_key(name):
    key = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return key or "unknown-gpu"


def sm_clock_mhz(index):
    """The current SM clock from nvidia-smi, or None where it is not available."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "-i", str(index), "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10)
        return int(out.stdout.strip().splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def driver_version():
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return None


# ------------------------------------------------------------------------------------------------
# Timing

class Timer:
    def __init__(self, torch, device, timing, hold_cycles=100000):
        self.torch = torch
        self.device = device
        self.warmup_ms = timing["warmup_ms"]
        self.min_samples = timing["min_samples"]
        self.max_samples = timing["max_samples"]
        self.target_rse = timing["target_rse"]
        self.budget_s = timing["shape_budget_ms"] / 1000.0
        self.launch_bound_us = timing["launch_bound_us"]
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 0) or (64 << 20)
        # Writing twice the L2 evicts whatever the previous call left there.
        self.flush_buffer = torch.empty(2 * l2 // 4, dtype=torch.float32, device=device)
        self.hold_cycles = hold_cycles
        self.hold = self._gpu_hold()

    def _gpu_hold(self):
        """A ~50 us spin kernel (hold_cycles at ~2 GHz) queued before each timed call. PyTorch's
        dispatch takes ~20 us of CPU per SDPA call; without it the GPU would drain the queue and
        the start event would time that host gap too, not just the kernel. A caller whose dispatch
        is longer passes more cycles. None when torch lacks torch.cuda._sleep."""
        sleep = getattr(self.torch.cuda, "_sleep", None)
        if sleep is None:
            return None
        try:
            sleep(1000)
            self.torch.cuda.synchronize(self.device)
        except Exception:
            return None
        cycles = self.hold_cycles
        return lambda: sleep(cycles)  # 100000 cycles: ~50 us at 2 GHz

    def flush(self):
        self.flush_buffer.zero_()

    def warm_up(self, fn):
        torch = self.torch
        fn()
        torch.cuda.synchronize(self.device)
        start, calls = time.perf_counter(), 0
        while (time.perf_counter() - start) * 1000 < self.warmup_ms or calls < 3:
            fn()
            calls += 1
            if calls % 8 == 0:
                torch.cuda.synchronize(self.device)
        torch.cuda.synchronize(self.device)

    def sample(self, fn):
        """Event-timed single calls, each after an L2 flush, until the rse target or the budget."""
        torch = self.torch
        samples = []
        deadline = time.perf_counter() + self.budget_s
        batch = self.min_samples
        while True:
            events = []
            for _ in range(batch):
                self.flush()
                if self.hold:
                    self.hold()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                events.append((start, end))
            torch.cuda.synchronize(self.device)
            samples.extend(s.elapsed_time(e) * 1000.0 for s, e in events)  # ms -> µs
            if len(samples) >= self.max_samples or rse_of(samples) <= self.target_rse:
                break
            if time.perf_counter() >= deadline and len(samples) >= self.min_samples:
                break
            batch = min(max(4, len(samples) // 2), self.max_samples - len(samples))
        return samples

    def back_to_back_us(self, fn, calls=50):
        torch = self.torch
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize(self.device)
        return start.elapsed_time(end) * 1000.0 / calls

    def graph_us(self, fn, calls=20):
        """Per-call time of a CUDA graph replaying `calls` calls, or None if capture fails."""
        torch = self.torch
        try:
            stream = torch.cuda.Stream(self.device)
            stream.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(stream):
                fn()
            torch.cuda.current_stream(self.device).wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(calls):
                    fn()
            graph.replay()
            torch.cuda.synchronize(self.device)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            end.record()
            torch.cuda.synchronize(self.device)
            return start.elapsed_time(end) * 1000.0 / calls
        except Exception:  # capture is optional: some backends allocate or sync inside
            return None


# ------------------------------------------------------------------------------------------------
# One measurement

def make_inputs(torch, s, dtype, device):
    def tensor(heads, seq):
        if s["layout"] == "bshd":
            return torch.randn(s["b"], seq, heads, s["d"], dtype=dtype, device=device).transpose(1, 2)
        return torch.randn(s["b"], heads, seq, s["d"], dtype=dtype, device=device)

    return tensor(s["hq"], s["sq"]), tensor(s["hkv"], s["skv"]), tensor(s["hkv"], s["skv"])


def refusal_reason(exc, caught):
    # PyTorch explains why each backend was skipped in UserWarnings, then raises "No available kernel".
    lines = []
    for w in caught:
        text = " ".join(str(w.message).split())
        if text and text not in lines:
            lines.append(text)
    lines.append(" ".join(str(exc).split()))
    reason = "; ".join(lines)
    return reason[:400]


def time_call(timer, call, task, s, device):
    """The timing entry of one accepted call on shape `s`: warm-up, samples, the summary, TFLOPS
    and GB/s, back-to-back and graph times for launch-bound shapes, SM clocks around it all."""
    clock_before = sm_clock_mhz(device.index or 0)
    timer.warm_up(call)
    samples = timer.sample(call)
    stats = summarize(samples)
    back_to_back = graph = None
    if stats["median_us"] < timer.launch_bound_us:
        back_to_back = timer.back_to_back_us(call)
        graph = timer.graph_us(call)
    clock_after = sm_clock_mhz(device.index or 0)
    seconds = stats["median_us"] * 1e-6
    tflops = flops(s, task["causal"]) / seconds / 1e12
    ceiling = CEILINGS.get(timer.gpu_key, {}).get(task["dtype"])
    entry = {"shape": s["dims"], "set": s["set"]}
    entry.update(stats)
    entry.update({"tflops": tflops, "ceiling_share": tflops / ceiling if ceiling else None,
                  "gbps": min_bytes(s, 2) / seconds / 1e9, "back_to_back_us": back_to_back, "graph_us": graph,
                  "sm_clock_before_mhz": clock_before, "sm_clock_after_mhz": clock_after})
    return entry


def measure(torch, F, sdpa_kernel, backend_enum, timer, task, s, device):
    """Returns (outcome, reason, timing entry or None)."""
    dtype = torch.float16 if task["dtype"] == "fp16" else torch.bfloat16
    torch.manual_seed(0)
    q, k, v = make_inputs(torch, s, dtype, device)
    kwargs = {"is_causal": task["causal"], "scale": 1.0 / math.sqrt(s["d"])}
    if s["hq"] != s["hkv"]:
        kwargs["enable_gqa"] = True

    def call():
        return F.scaled_dot_product_attention(q, k, v, **kwargs)

    with sdpa_kernel([backend_enum]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                call()
                torch.cuda.synchronize(device)
            except (RuntimeError, NotImplementedError, ValueError) as exc:
                return "unsupported", refusal_reason(exc, caught), None
        entry = time_call(timer, call, task, s, device)
    del q, k, v
    return "ok", "", entry


def guarded(torch, measure_once):
    """measure_once() -> (outcome, reason, entry), with out-of-memory read as a refusal and any
    other RuntimeError (the shape was accepted, then failed while being timed) as "runtime"."""
    try:
        return measure_once()
    except torch.cuda.OutOfMemoryError as e:
        torch.cuda.empty_cache()
        return "unsupported", "out of memory: " + " ".join(str(e).split())[:300], None
    except RuntimeError as e:
        return "runtime", " ".join(str(e).split())[:400], None


def entry_warnings(entry, timing, dims):
    """The record's warnings: an rse above the target, an SM clock that fell during the shape."""
    out = []
    if entry:
        if entry["rse"] is not None and entry["rse"] > timing["target_rse"]:
            out.append("rse %.2f %% above the %.2f %% target: the budget ran out"
                       % (entry["rse"] * 100, timing["target_rse"] * 100))
        cb, ca = entry["sm_clock_before_mhz"], entry["sm_clock_after_mhz"]
        if cb and ca and ca < cb:
            out.append("SM clock fell from %d to %d MHz during %s" % (cb, ca, dims))
    return out


def peer_record(run, variant, task, s, version, outcome, reason, entry, gpu_s, warnings_list):
    """One kind "peer" record (docs/records.md). `run` holds what every record of one script run
    shares: run_id, now, source_path, source_sha256, arch, env; `version` enters the candidate id."""
    return {
        "schema_version": "1.0", "kind": "peer", "run_id": run["run_id"],
        "time": run["now"].strftime("%Y-%m-%dT%H:%M:%SZ"),
        "candidate_id": hashlib.sha256(("%s|%s|%s|%s" % (variant, task["name"], s["dims"],
                                                          version)).encode()).hexdigest()[:16],
        "variant": variant, "stage": -1, "parent": None, "source_path": run["source_path"],
        "source_sha256": run["source_sha256"], "params": {}, "task": task["name"], "shape": s["dims"],
        "arch": run["arch"], "origin": "peer", "env": run["env"],
        "outcome": outcome, "reason": reason, "timing": [entry] if entry else [],
        "gpu_seconds": round(gpu_s, 3), "warnings": warnings_list,
    }


# ------------------------------------------------------------------------------------------------
# Output

def gates_sets_timing(args):
    """gates.json, the shape sets asked for and the timing policy (--budget-ms overriding the
    per-shape budget) from the arguments every peer script takes: --gates, --sets, --budget-ms."""
    try:
        with open(args.gates) as f:
            gates = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: %s" % (args.gates, e))
    sets = [x.strip() for x in args.sets.split(",") if x.strip()]
    timing = dict(gates["timing"])
    if args.budget_ms is not None:
        timing["shape_budget_ms"] = args.budget_ms
    return gates, sets, timing


def load_existing(path):
    if not os.path.exists(path):
        return []
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: cannot read the existing peer list (%s); fix it or pass --replace" % (path, e))
    if not isinstance(data, list):
        fail("%s: not a JSON list of peer records; fix it or pass --replace" % path)
    return data


def write_atomic(path, records):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".peers.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(records, f, indent=1, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def merge_write(out_path, records, replace=False):
    """Merges `records` into the peer list at out_path: records of the same (variant, task,
    shape) are replaced, others kept (all dropped with `replace`); sorted; written atomically."""
    merged = [] if replace else load_existing(out_path)
    fresh = {(r["variant"], r["task"], r["shape"]) for r in records}
    merged = [r for r in merged
              if not (isinstance(r, dict) and (r.get("variant"), r.get("task"), r.get("shape")) in fresh)]
    merged.extend(records)
    merged.sort(key=lambda r: (str(r.get("task")), str(r.get("variant")), str(r.get("shape"))))
    write_atomic(out_path, merged)
    print("wrote %s: %d records (%d new)" % (out_path, len(merged), len(records)))


def open_device(torch, index, timing, prog, hold_cycles=100000):
    """The CUDA device a peer script times on, as (device, props, name, gpu key, Timer); exit 2
    without one."""
    if not torch.cuda.is_available():
        print("%s: no CUDA device visible to PyTorch" % prog, file=sys.stderr)
        sys.exit(2)
    device = torch.device("cuda", index)
    torch.cuda.set_device(device)
    props = torch.cuda.get_device_properties(device)
    name = torch.cuda.get_device_name(device)
    timer = Timer(torch, device, timing, hold_cycles)
    timer.gpu_key = gpu_key(name)
    return device, props, name, timer.gpu_key, timer


def peer_env(torch, props, name, key):
    """The environment every peer record carries; each script adds its library versions."""
    return {"gpu": name, "gpu_key": key, "cc": props.major * 10 + props.minor, "sms": props.multi_processor_count,
            "nvidia_driver": driver_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "host": socket.gethostname()}


def file_sha256(path):
    with open(os.path.abspath(path), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated tasks")
    ap.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated: flash, cudnn, efficient")
    ap.add_argument("--sets", default="", help="shape sets or explicit shapes (default: gates.json benchmark_sets)")
    ap.add_argument("--gates", default=os.path.join(ROOT, "gates", "gates.json"))
    ap.add_argument("--out", default="", help="output file (default: results/peers/<gpu_key>.json)")
    ap.add_argument("--replace", action="store_true", help="do not merge into an existing output file")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--budget-ms", type=float, default=None, help="per-shape sampling budget (default: gates.json)")
    args = ap.parse_args()

    tasks = [parse_task(t.strip()) for t in args.tasks.split(",") if t.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in BACKENDS:
            fail("unknown backend '%s': use %s" % (b, ", ".join(BACKENDS)))
    gates, sets, timing = gates_sets_timing(args)

    try:
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError as e:
        print("peers_sdpa: PyTorch with torch.nn.attention is needed (%s)" % e, file=sys.stderr)
        sys.exit(2)
    device, props, name, key, timer = open_device(torch, args.device, timing, "peers_sdpa")
    source_sha = file_sha256(__file__)
    now = datetime.datetime.now(datetime.timezone.utc)
    run_id = now.strftime("%Y%m%dT%H%M%SZ") + "-peers"
    env = dict(peer_env(torch, props, name, key), cudnn=torch.backends.cudnn.version())
    run = {"run_id": run_id, "now": now, "source_path": "scripts/peers_sdpa.py", "source_sha256": source_sha,
           "arch": "sm_%d%d" % (props.major, props.minor), "env": env}
    out_path = args.out or os.path.join(ROOT, "results", "peers", key + ".json")
    print("%s (%s), torch %s, cuDNN %s, L2 flush buffer %d MiB, target rse %.2f %%, budget %.0f ms per shape"
          % (name, key, torch.__version__, env["cudnn"], timer.flush_buffer.numel() * 4 >> 20,
             timing["target_rse"] * 100, timing["shape_budget_ms"]), flush=True)

    records = []
    for task in tasks:
        for s in benchmark_shapes(gates, task, sets):
            for b in backends:
                variant = "peer/pytorch-sdpa-" + b
                t0 = time.perf_counter()
                outcome, reason, entry = guarded(torch, lambda: measure(
                    torch, F, sdpa_kernel, getattr(SDPBackend, BACKENDS[b]), timer, task, s, device))
                gpu_s = time.perf_counter() - t0
                records.append(peer_record(run, variant, task, s, torch.__version__, outcome, reason, entry, gpu_s,
                                           entry_warnings(entry, timing, s["dims"])))
                if entry:
                    print("%-16s %-24s %-10s %10.2f us  %7.1f TFLOPS  rse %.2f %%  n %d"
                          % (task["name"], s["dims"], b, entry["median_us"], entry["tflops"],
                             (entry["rse"] or 0) * 100, entry["n"]), flush=True)
                else:
                    print("%-16s %-24s %-10s %s: %s" % (task["name"], s["dims"], b, outcome, reason), flush=True)

    merge_write(out_path, records, args.replace)


if __name__ == "__main__":
    main()
