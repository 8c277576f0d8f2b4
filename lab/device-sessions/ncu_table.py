#!/usr/bin/env python3
"""Nsight Compute's CSV of lab/device-sessions/ncu_op.sh as a markdown table: per shape of
scripts/ncu_op_shapes.py the exported op's kernels and SDPA cuDNN's side by side.

Per kernel: duration (gpu__time_duration), DRAM % of peak (dram__throughput) and GB/s (bytes read
and written over the duration; in brackets its share of HBM_TBPS, 4.8 TB/s on the H200), the bytes against the shape's minimum (Q, K, V read and O written
once, peers_sdpa.min_bytes), tensor-pipe % (the gmma pipe's active cycles, else hmma's for
mma.sync kernels), achieved TFLOPS against the dense ceiling (peers_sdpa.CEILINGS), warps active,
L2 hit rate and the three largest warp stall reasons (% of active warps' cycles).

Kernels are attributed to a profiled call by their NVTX range (the report exported with
--print-nvtx-rename kernel, joined by ID) or, where no range name came back, by launch order: the
plan lists the calls in the order they ran, and evo's kernels are named evo_attn_fwd, cuDNN's not.

Usage: ncu_table.py --plan PLAN.json --raw RAW.csv [--nvtx RENAMED.csv] [--ncu-version TEXT]
       ncu_table.py --metrics [--query QUERY.txt]   the --metrics list for ncu (below)
       ncu_table.py --self-test                     the parser on lab/device-sessions/ncu_sample/
Reads both CSV layouts ncu prints: --page raw (a column per metric, a units row) and --page
details (a row per metric). Exit codes: 0 table written; 1 a missing or unreadable input;
3 no profiled kernel in the CSV (the table says so).
"""
import argparse
import csv
import io
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import peers_sdpa  # noqa: E402  (flops, min_bytes, CEILINGS, parse_shape, gpu_key)

SAMPLE = os.path.join(ROOT, "lab", "device-sessions", "ncu_sample")
STALL = "smsp__warp_issue_stalled_%s_per_warp_active.pct"
# Read on this H200 before (lab/ncu/*.txt), so kept even when `ncu --query-metrics` cannot be read.
CONFIRMED = ["gpu__time_duration.sum", "dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
             "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__inst_executed_pipe_tensor_op_gmma.sum",
             "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
             "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] + [
    STALL % r for r in ("barrier", "long_scoreboard", "short_scoreboard", "wait", "math_pipe_throttle",
                        "dispatch_stall", "membar", "sleeping")]
# Documented names not read here yet: kept only when the GPU's `ncu --query-metrics` lists them, as
# one unknown name would fail the whole profile. The gmma cycle counter and sm__cycles_elapsed give
# the tensor-pipe share where the .pct_of_peak form reads n/a (it did under --clock-control none).
EXTRA = ["dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct",
         "launch__grid_size", "sm__pipe_tensor_op_gmma_cycles_active.avg", "sm__cycles_elapsed.avg"] + [
    STALL % r for r in ("mio_throttle", "lg_throttle", "no_instruction", "not_selected", "branch_resolving", "drain",
                        "imc_miss", "tex_throttle", "misc")]
TIME_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
BYTES = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12}
RANGE = re.compile(r"(evo|cudnn|fa4):([A-Za-z0-9_.-]+)")
SIDES = ("evo", "cudnn", "fa4")
HBM_TBPS = {"nvidia-h200": 4.8}  # the GB/s column's share, as decode_table.py counts it


# ------------------------------------------------------------------------------------------------
# Metrics to ask for

def metric_list(query_text):
    """CONFIRMED, and the EXTRA names whose base the query lists; (list, dropped)."""
    bases = set(re.findall(r"^\s*([a-z0-9]+__[A-Za-z0-9_]+)\b", query_text or "", re.M))
    if not bases:  # the query failed or printed nothing readable: only names read here before
        return list(CONFIRMED), list(EXTRA)
    keep = [m for m in EXTRA if m.split(".")[0] in bases]
    return CONFIRMED + keep, [m for m in EXTRA if m not in keep]


# ------------------------------------------------------------------------------------------------
# ncu's CSV

def csv_rows(text):
    """The CSV part of ncu's output: from the header row ("ID", ...) on, tool messages dropped."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    body = [ln for ln in lines[start:] if ln.strip() and not ln.startswith("==")]
    return list(csv.reader(io.StringIO("\n".join(body))))


def number(text):
    t = (text or "").strip().replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None  # n/a, empty, a tuple like (132, 1, 1)


def parse_csv(text):
    """Kernels in ID order: {"id", "name", "grid", "metrics": {name: (value or None, unit)}}."""
    rows = csv_rows(text)
    if not rows:
        return []
    head = rows[0]
    col = {name: i for i, name in enumerate(head)}
    kernels = {}

    def kernel(row):
        kid = int(row[col["ID"]])
        name_col = col.get("Kernel Name", col.get("Name"))
        grid = row[col["Grid Size"]] if "Grid Size" in col else ""
        return kernels.setdefault(kid, {"id": kid, "name": row[name_col], "grid": grid, "metrics": {}})

    if "Metric Name" in col:  # --page details: one row per metric
        for row in rows[1:]:
            kernel(row)["metrics"][row[col["Metric Name"]]] = (number(row[col["Metric Value"]]),
                                                               row[col["Metric Unit"]])
        return [kernels[k] for k in sorted(kernels)]
    units = rows[1] if len(rows) > 1 and not rows[1][col["ID"]].strip() else [""] * len(head)
    metric_cols = [(i, name) for i, name in enumerate(head) if "__" in name]
    for row in rows[1:]:
        if not row[col["ID"]].strip():
            continue  # the units row
        k = kernel(row)
        for i, name in metric_cols:
            k["metrics"][name] = (number(row[i]), units[i] if i < len(units) else "")
    return [kernels[k] for k in sorted(kernels)]


def value(k, name, scale=None):
    v, unit = k["metrics"].get(name, (None, ""))
    if v is None or scale is None:
        return v
    return v * scale.get(unit, 1.0)


# ------------------------------------------------------------------------------------------------
# Kernels to calls

def calls_of(plan):
    return [(s["name"], c["side"]) for s in plan["shapes"] for c in s["calls"] if "error" not in c]


def by_range(kernels, renamed, plan):
    """{(shape, side): [kernels]} from the renamed export, or None when a kernel has no known range."""
    known = set(calls_of(plan))
    names = {k["id"]: k["name"] for k in renamed}
    out = {}
    for k in kernels:
        m = RANGE.search(names.get(k["id"], ""))
        if not m or (m.group(2), m.group(1)) not in known:
            return None
        out.setdefault((m.group(2), m.group(1)), []).append(k)
    return out


def of_side(name, side, with_fa4):
    """Whether a kernel of this name can belong to a call of `side` (launch-order attribution):
    evo's are evo_attn*; with FA4 calls in the plan, cuDNN's must say cudnn (its SDPA kernels are
    cudnn_generated_*), so an FA4 call after a cuDNN one keeps its kernels."""
    if name.startswith("evo_attn"):
        return side == "evo"
    if side == "cudnn" and with_fa4:
        return "cudnn" in name.lower()
    return side != "evo"


def by_order(kernels, plan):
    """{(shape, side): [kernels]} walking the calls in launch order; leftovers under (None, None)."""
    out, i = {}, 0
    with_fa4 = any(side == "fa4" for _, side in calls_of(plan))
    for shape, side in calls_of(plan):
        while i < len(kernels) and of_side(kernels[i]["name"], side, with_fa4):
            out.setdefault((shape, side), []).append(kernels[i])
            i += 1
    if i < len(kernels):
        out[(None, None)] = kernels[i:]
    return out


def attribute(kernels, renamed, plan):
    """(groups, method)."""
    groups = by_range(kernels, renamed, plan) if renamed else None
    return (groups, "NVTX range") if groups is not None else (by_order(kernels, plan), "launch order")


# ------------------------------------------------------------------------------------------------
# Figures

def fmt(x, spec="%.1f"):
    return "-" if x is None else spec % x


def tensor_pct(k):
    """(percent, pipe): gmma's .pct_of_peak, else its active cycles over elapsed, else hmma's."""
    gmma = value(k, "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active")
    if gmma is None:
        active, elapsed = value(k, "sm__pipe_tensor_op_gmma_cycles_active.avg"), value(k, "sm__cycles_elapsed.avg")
        gmma = 100.0 * active / elapsed if active is not None and elapsed else None
    if gmma:
        return gmma, "gmma"
    hmma = value(k, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active")
    if hmma:
        return hmma, "hmma"
    return (0.0, "gmma") if gmma == 0.0 else (None, "")


def top_stalls(k, n=3):
    found = []
    for name in k["metrics"]:
        m = re.fullmatch(STALL % r"(\w+?)", name)
        v = value(k, name)
        if m and m.group(1) != "selected" and v is not None:
            found.append((v, m.group(1)))
    return ", ".join("%s %.1f" % (r, v) for v, r in sorted(found, reverse=True)[:n]) or "-"


def moved_bytes(k):
    read, write = value(k, "dram__bytes_read.sum", BYTES), value(k, "dram__bytes_write.sum", BYTES)
    return None if read is None else read + (write or 0.0)


def kernel_row(shape, side, k, hbm_tbps):
    us = value(k, "gpu__time_duration.sum", TIME_US)
    moved = moved_bytes(k)
    gbs = moved / us / 1e3 if moved is not None and us else None  # bytes/µs = MB/s; /1e3: GB/s
    share = " (%.0f %%)" % (gbs / hbm_tbps / 10.0) if gbs is not None and hbm_tbps else ""
    pct, pipe = tensor_pct(k)
    grid = value(k, "launch__grid_size")
    return "| %s | %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        shape, side, k["name"].replace("|", "/"), fmt(grid, "%d") if grid is not None else (k["grid"] or "-"),
        fmt(us), fmt(value(k, "dram__throughput.avg.pct_of_peak_sustained_elapsed")), fmt(gbs, "%.0f") + share,
        "%s%s" % (fmt(pct), " " + pipe if pct is not None else ""),
        fmt(value(k, "sm__throughput.avg.pct_of_peak_sustained_elapsed")),
        fmt(value(k, "sm__warps_active.avg.pct_of_peak_sustained_active")),
        fmt(value(k, "lts__t_sector_hit_rate.pct")), top_stalls(k))


def call_figures(entry, kernels, gpu):
    """Per call: µs (its kernels' sum), TFLOPS and % of the dense ceiling, bytes moved × minimum."""
    if not kernels:
        return {}
    us_list = [value(k, "gpu__time_duration.sum", TIME_US) for k in kernels]
    if None in us_list:
        return {}
    us = sum(us_list)
    task = entry["task"].split("-")
    s = peers_sdpa.parse_shape(entry["dims"], int(task[1][1:]))
    tflops = peers_sdpa.flops(s, entry["causal"]) / us / 1e6
    ceiling = peers_sdpa.CEILINGS.get(peers_sdpa.gpu_key(gpu), {}).get(task[0])
    moved = [moved_bytes(k) for k in kernels]
    return {"us": us, "tflops": tflops, "ceiling_pct": 100.0 * tflops / ceiling if ceiling else None,
            "x_min": sum(moved) / peers_sdpa.min_bytes(s, 2) if None not in moved else None}


def summary_row(entry, evo, cudnn, fa4=None):
    def side(f):
        if not f:
            return "-", "-", "-"
        return fmt(f["us"]), "%s (%s %%)" % (fmt(f["tflops"], "%.0f"), fmt(f["ceiling_pct"], "%.0f")), \
            fmt(f["x_min"], "%.2f")
    e, c = side(evo), side(cudnn)
    ratio = "%.2f×" % (cudnn["us"] / evo["us"]) if evo and cudnn else "-"
    fa4_ratio = "%.2f×" % (fa4["us"] / evo["us"]) if evo and fa4 else "-"
    refused = [x["side"] + " refused: " + x["error"] for x in entry["calls"] if "error" in x]
    return "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |%s" % (
        entry["name"], entry["model"] or "-", entry["task"], entry["dims"],
        "%s (stage %s %s)" % (entry["kernel"], entry.get("stage"), entry.get("variant") or "?"),
        e[0], fmt(entry.get("record_median_us")), c[0], ratio, fmt(fa4["us"]) if fa4 else "-", fa4_ratio,
        e[1], c[1], e[2], c[2],
        (" " + "; ".join(refused).replace("|", "/")) if refused else "")


def table(plan, groups, method, ncu_version=""):
    gpu = plan.get("gpu", "")
    hbm = HBM_TBPS.get(peers_sdpa.gpu_key(gpu))
    out = ["# Nsight Compute: the exported op against SDPA cuDNN, one call each", "",
           "%s, PyTorch %s, cuDNN %s, %s; `--clock-control none` (clocks as the driver sets them), L2 flushed "
           "before each replay pass (ncu's default cache control), %s warm-up calls of each side first. Kernels "
           "attributed to calls by %s." % (gpu, plan.get("torch", "?"), plan.get("cudnn", "?"),
                                           ncu_version or "ncu", plan.get("warmup", "?"), method), "",
           "| shape | model | task | dims | evo kernel | evo µs | evo record µs | cuDNN µs | × cuDNN | FA4 µs | × FA4 "
           "| TFLOPS (% of ceiling) evo / cuDNN | DRAM bytes × minimum evo / cuDNN |",
           "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for entry in plan["shapes"]:
        figs = {side: call_figures(entry, groups.get((entry["name"], side), []), gpu) for side in SIDES}
        out.append(summary_row(entry, figs["evo"], figs["cudnn"], figs["fa4"]))
    out += ["", "× cuDNN (× FA4): cuDNN's (FlashAttention-4's, where profiled) µs over evo's (above 1: evo is "
            "faster); evo record: evo's own median for the "
            "kernel on the shape (manifest.json, CUDA events, L2 flushed); minimum bytes: Q, K, V read and O "
            "written once.", "",
            "| shape | side | kernel | grid | µs | DRAM % of peak | DRAM GB/s (of HBM) | tensor pipe % | SM % | warps active % "
            "| L2 hit % | top stalls (% of active warps) |",
            "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for entry in plan["shapes"]:
        for side in SIDES:
            for k in groups.get((entry["name"], side), []):
                out.append(kernel_row(entry["name"], side, k, hbm))
    for k in groups.get((None, None), []):
        out.append(kernel_row("(unattributed)", "?", k, hbm))
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------------------------------------
# Self-test and main

def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def check(ok, what):
    if not ok:
        raise AssertionError(what)


def self_test():
    """The parser on the synthetic sample (ncu_sample/: not a measurement); raises on a failure."""
    plan = json.loads(read(os.path.join(SAMPLE, "plan.json")))
    raw = parse_csv(read(os.path.join(SAMPLE, "raw.csv")))
    check([k["id"] for k in raw] == [0, 1, 2, 3, 4, 5], "kernels in ID order, the units row skipped")
    check(value(raw[0], "gpu__time_duration.sum", TIME_US) == 80.0, "ns to µs, thousands separators")
    check(value(raw[0], "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active") is None, "n/a")
    details = parse_csv(read(os.path.join(SAMPLE, "details.csv")))
    check(len(details) == 1 and value(details[0], "dram__bytes_read.sum", BYTES) == 256e6
          and value(details[0], "gpu__time_duration.sum", TIME_US) == 80.0, "the details layout, Mbyte and usecond")
    groups, method = attribute(raw, parse_csv(read(os.path.join(SAMPLE, "nvtx.csv"))), plan)
    check(method == "NVTX range", "attributed by range")
    check(attribute(raw, [], plan) == (groups, "launch order"), "launch order gives the same calls")
    check([k["id"] for k in groups[("bert-base-b32", "cudnn")]] == [3, 4], "a call of two kernels")
    check(tensor_pct(raw[2]) == (50.0, "gmma"), "gmma share from its cycles where the pct is n/a")
    check(tensor_pct(raw[0]) == (2.5, "hmma"), "hmma where no gmma runs")
    check(top_stalls(raw[0]) == "long_scoreboard 40.0, wait 12.0, barrier 3.0", "top stalls, selected left out")
    check(metric_list("") == (CONFIRMED, EXTRA), "no query: only the confirmed names")
    kept, dropped = metric_list("dram__throughput   # DRAM throughput\nlaunch__grid_size  # grid\n")
    check(kept == CONFIRMED + EXTRA[:1] + ["launch__grid_size"] and "dram__bytes_write.sum" in dropped, "filter")
    md = table(plan, groups, method)
    check("| llama3-70b-decode-b16 | Llama-3 70B decode, batch 16, 4k context | bf16-d128 |" in md, "summary row")
    check("| 80.0 | 81.5 | 76.0 | 0.95× |" in md, "evo µs, record, cuDNN µs, ratio")
    check("| 69.9 | 3355 (70 %) | 2.5 hmma |" in md and "| 76.0 | 73.0 | 3546 (74 %) |" in md, "GB/s from bytes read and written")
    check("cudnn refused: shape not supported" in md, "a refused call")
    check(by_order(raw + raw[1:2], plan)[(None, None)] == [raw[1]], "a kernel past the last call is unattributed")
    three = {"shapes": [{"name": "s", "calls": [{"side": "evo"}, {"side": "cudnn"}, {"side": "fa4"}]}]}
    ks = [{"name": n} for n in ("evo_attn_fwd", "cudnn_generated_fort_native_sdpa_sm90", "kernel_cutlass_fwd_sm90_0")]
    g = by_order(ks, three)
    check(g[("s", "cudnn")] == ks[1:2] and g[("s", "fa4")] == ks[2:], "FA4's kernels after cuDNN's stay FA4's")
    print("ncu_table self-test: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 epilog="Exit codes: 0 written; 1 missing input; 3 no profiled kernel.")
    ap.add_argument("--plan", help="ncu_op_shapes.py's plan")
    ap.add_argument("--raw", help="ncu --import REPORT --csv --page raw")
    ap.add_argument("--nvtx", help="the same with --print-nvtx-rename kernel (optional)")
    ap.add_argument("--ncu-version", default="")
    ap.add_argument("--metrics", action="store_true", help="print the metrics to ask for (comma list)")
    ap.add_argument("--query", help="with --metrics: the output of `ncu --query-metrics` on the GPU")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return 0
    if args.metrics:
        kept, dropped = metric_list(read(args.query) if args.query and os.path.exists(args.query) else "")
        if dropped:
            print("ncu_table: not asked (not in ncu --query-metrics): " + ", ".join(dropped), file=sys.stderr)
        print(",".join(kept))
        return 0
    if not args.plan or not args.raw:
        print("ncu_table: --plan and --raw are needed (or --metrics, --self-test)", file=sys.stderr)
        return 1
    try:
        plan = json.loads(read(args.plan))
        kernels = parse_csv(read(args.raw))
        renamed = parse_csv(read(args.nvtx)) if args.nvtx and os.path.exists(args.nvtx) else []
    except (OSError, ValueError, KeyError, IndexError) as e:
        print("ncu_table: cannot read the inputs: %s" % e, file=sys.stderr)
        return 1
    groups, method = attribute(kernels, renamed, plan)
    sys.stdout.write(table(plan, groups, method, args.ncu_version))
    if not kernels:
        print("\nNo kernel was profiled: see ncu.log (NVTX filter, permissions).")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
