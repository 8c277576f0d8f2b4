#!/usr/bin/env python3
"""Re-run each stage's elite (rank 0 of every task's population) under the current gate.

`evo run` draws candidates from a stage's whole domain, seeded by the previous stage's elites,
so no budget guarantees it re-runs exactly this stage's elite. This script copies the
repository to a scratch root, narrows the elite's variant file to the elite's parameters (its
front matter domain becomes one value per tunable), and runs `evo run --budget 1` there: one
candidate, the elite itself, gated by the current gates.json (sampled cases included) and
timed on --bench (default: mission only, so the sweep stays cheap; pass `default` for the full
benchmark; --shapes huge gates it on the huge set too). Records go to --results-dir.

  python3 scripts/rerun_elites.py --evo build/harness/evo --results-dir results/elites --stages 0-6
"""
import argparse, glob, json, os, shutil, subprocess, sys, tempfile


def narrow(path, params):
    text = open(path).read()
    start, end = text.index("/*evo") + 5, text.index("*/")
    fm = json.loads(text[start:end])
    for name, value in params.items():
        fm["params"][name] = [value]
    open(path, "w").write("/*evo\n" + json.dumps(fm, indent=2) + "\n" + text[end:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--evo", required=True)
    ap.add_argument("--results-dir", required=True)
    ap.add_argument("--stages", default="0-6")
    ap.add_argument("--bench", default="mission")
    ap.add_argument("--tasks", default="")
    ap.add_argument("--shapes", default="", help="gate sets for evo run --shapes (default: gates.json's), e.g. huge")
    a = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    lo, hi = (int(x) for x in a.stages.split("-"))
    evo = os.path.abspath(a.evo)
    results = os.path.abspath(a.results_dir)
    os.makedirs(results, exist_ok=True)
    failures = 0
    for pop_file in sorted(glob.glob(os.path.join(repo, "populations", "nvidia-h200", "*.json"))):
        pop = json.load(open(pop_file))
        task = pop["task"]
        if a.tasks and task not in a.tasks.split(","):
            continue
        for stage in range(lo, hi + 1):
            elites = pop["stages"].get(str(stage), [])
            if not elites:
                continue
            e = elites[0]
            root = tempfile.mkdtemp(prefix="evo-elite-")
            for d in ("gates", "variants"):
                shutil.copytree(os.path.join(repo, d), os.path.join(root, d))
            narrow(os.path.join(root, "variants", e["variant"].split("/")[0], e["variant"].split("/")[1] + ".cu"),
                   e["params"])
            cmd = [evo, "run", "--stage", str(stage), "--task", task, "--budget", "1",
                   "--results-dir", results, "--populations-dir", os.path.join(root, "populations")]
            if a.bench != "default":
                cmd += ["--bench", a.bench]
            if a.shapes:
                cmd += ["--shapes", a.shapes]
            p = subprocess.run(cmd, cwd=root, env=dict(os.environ, EVO_ROOT=root), capture_output=True, text=True)
            line = next((l for l in p.stdout.splitlines() if e["variant"].split("/")[1] in l and ("ok" in l or ":" in l)), "")
            print(f"stage {stage} {task} {e['variant']} {json.dumps(e['params'])} (elite {e['candidate_id'][:12]}): exit {p.returncode}")
            print("  " + "\n  ".join((p.stdout + p.stderr).strip().splitlines()[-4:]))
            failures += p.returncode != 0
            shutil.rmtree(root, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
