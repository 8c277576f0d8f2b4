#!/usr/bin/env python3
"""Kernel-author screen on a GPU machine: time chosen configurations of one variant side by side.

`evo run --budget N` draws configurations from a variant's domain; when you want to compare a
handful you name (an A/B of one tunable, or a variant file against its previous version), this
script puts each configuration in its own scratch evo root (gates/, variants/common, the stage's
stage.json and the variant file with every tunable pinned to one value) and runs
`evo run --budget 1` on it. Every configuration still goes through evo's gates and timing (the
fixed gate shapes you name, one sampled case); records land in --results-dir, and the script
prints one row per configuration with its median µs per benchmark shape.

  python3 scripts/screen_configs.py --task fp8-d128 --stage 7 \
      --bench 8x16x16x2048x2048x128,1x16x16x16384x16384x128 \
      variants/7-tma-ws/tma_ws_fp8.cu:Q_REGS=1,RESCALE_SKIP=1 \
      variants/7-tma-ws/tma_ws_fp8.cu:Q_REGS=0,RESCALE_SKIP=0 \
      old=/tmp/tma_ws_fp8_head.cu

A configuration is [label=]FILE[:NAME=VALUE,...]; tunables not named keep their first value.
It is a screen, not a result: record the winner with `evo run` (peers in the same call).
Exit codes: 0 when every configuration left a record; otherwise the first failing `evo run`'s
exit code (2 without a GPU: the configurations were still compiled and their roots written);
1 for bad input (a file without front matter, a tunable the variant lacks).
"""
import argparse, json, os, re, shutil, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FRONT = re.compile(r"/\*evo\s*(\{.*?\})\s*\*/", re.S)


def pinned_source(path, overrides):
    src = open(path).read()
    m = FRONT.search(src)
    if not m:
        sys.exit(f"screen_configs: {path} has no /*evo {{...}} */ front matter")
    meta = json.loads(m.group(1))
    params = meta.get("params", {})
    for name in overrides:
        if name not in params:
            sys.exit(f"screen_configs: {path} has no tunable {name} (it has {', '.join(params) or 'none'})")
    meta["params"] = {k: [int(overrides[k]) if k in overrides else v[0]] for k, v in params.items()}
    chosen = {k: v[0] for k, v in meta["params"].items()}
    return src[: m.start(1)] + json.dumps(meta, indent=1, ensure_ascii=False) + src[m.end(1):], chosen


def make_root(scratch, stage_dir, name, source, sampled_cases):
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(os.path.join(scratch, "variants", stage_dir))
    shutil.copytree(os.path.join(ROOT, "gates"), os.path.join(scratch, "gates"))
    shutil.copytree(os.path.join(ROOT, "variants", "common"), os.path.join(scratch, "variants", "common"))
    shutil.copy(os.path.join(ROOT, "variants", stage_dir, "stage.json"), os.path.join(scratch, "variants", stage_dir))
    open(os.path.join(scratch, "variants", stage_dir, name), "w").write(source)
    gates_path = os.path.join(scratch, "gates", "gates.json")
    gates = json.load(open(gates_path))
    gates["sampled"]["cases"] = sampled_cases  # a screen: one sampled case keeps the gate honest and cheap
    json.dump(gates, open(gates_path, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="+", help="[label=]FILE[:NAME=VALUE,...]")
    ap.add_argument("--task", required=True)
    ap.add_argument("--stage", type=int, required=True)
    ap.add_argument("--bench", required=True, help="benchmark shapes or sets, comma-separated")
    ap.add_argument("--shapes", default="small", help="gate shape sets or shapes (default: small)")
    ap.add_argument("--sampled-cases", type=int, default=1)
    ap.add_argument("--gate-seed", type=int, help="one gate seed for every configuration: the same sampled cases")
    ap.add_argument("--evo", default=os.path.join(ROOT, "build", "harness", "evo"))
    ap.add_argument("--scratch", default="/tmp/evo-screen")
    ap.add_argument("--results-dir", default="/tmp/evo-screen/results")
    a = ap.parse_args()
    stage_dirs = [d for d in os.listdir(os.path.join(ROOT, "variants")) if d.startswith(f"{a.stage}-")]
    if len(stage_dirs) != 1:
        sys.exit(f"screen_configs: no single variants/{a.stage}-* folder (found {stage_dirs})")
    rows, exit_code = [], 0
    for i, spec in enumerate(a.configs):
        label, rest = spec.split("=", 1) if "=" in spec.split(":")[0] else ("", spec)
        path, _, ov = rest.partition(":")
        overrides = dict(kv.split("=", 1) for kv in ov.split(",") if kv)
        source, chosen = pinned_source(path, overrides)
        # A labelled file is its own variant (e.g. a previous version beside the current one).
        name = re.sub(r"\W", "_", label) + ".cu" if label else os.path.basename(path)
        label = label or f"{os.path.basename(path)}:{ov}"
        scratch = os.path.join(a.scratch, f"c{i}")
        make_root(scratch, stage_dirs[0], name, source, a.sampled_cases)
        before = set(os.listdir(a.results_dir)) if os.path.isdir(a.results_dir) else set()
        cmd = [a.evo, "run", "--stage", str(a.stage), "--task", a.task, "--budget", "1", "--shapes", a.shapes,
               "--bench", a.bench, "--results-dir", a.results_dir, "--populations-dir", os.path.join(scratch, "pop")]
        if a.gate_seed is not None:
            cmd += ["--gate-seed", str(a.gate_seed)]
        r = subprocess.run(cmd, env=dict(os.environ, EVO_ROOT=scratch), capture_output=True, text=True)
        new = sorted(set(os.listdir(a.results_dir)) - before) if os.path.isdir(a.results_dir) else []
        recs = [json.loads(l) for f in new for l in open(os.path.join(a.results_dir, f)) if l.strip()]
        rec = recs[-1] if recs else {}
        times = {t["shape"]: t["median_us"] for t in rec.get("timing") or []}
        rows.append((label, rec.get("outcome", f"no record (exit {r.returncode})"), chosen, times, rec.get("reason", "")))
        print(f"[{i + 1}/{len(a.configs)}] {label}: {rows[-1][1]} {' '.join(f'{v:.1f}' for v in times.values())}"
              f" {rows[-1][4][:160]}", flush=True)
        if not recs:
            print(r.stdout[-1500:], r.stderr[-1500:], sep="\n")
            exit_code = exit_code or r.returncode or 1
    shapes = sorted({s for row in rows for s in row[3]}, key=lambda s: [int(x) for x in s.split(":")[0].split("x")])
    print("\n| configuration | outcome | " + " | ".join(f"{s} µs" for s in shapes) + " | tunables |")
    print("|---|---|" + "---:|" * len(shapes) + "---|")
    for label, outcome, chosen, times, _ in rows:
        cells = " | ".join(f"{times[s]:.1f}" if s in times else "-" for s in shapes)
        print(f"| {label} | {outcome} | {cells} | {' '.join(f'{k}={v}' for k, v in chosen.items())} |")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
