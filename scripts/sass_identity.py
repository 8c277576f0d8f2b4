#!/usr/bin/env python3
"""Prove that a refactoring of variant sources leaves the machine code unchanged.

Compiles the same configurations of a stage in two trees (the checkout before the change and
the one after: each a folder with gates/ and variants/, as EVO_ROOT takes it) with
`evo compile --json`, disassembles every cubin with `cuobjdump -sass` and compares, per
(variant, task, params, arch), the SHA-256 of the SASS text (instructions and their encodings;
without -g nvdisasm prints no file name or line), evo's code_sha256 of the cubin without
its debug sections (the line table moves with the source lines), the ptxas resources and the
exported launch. Exit 0 when every configuration compiled on both
sides has the same SASS hash, 1 when one differs or the two sides compiled different sets,
2 on a usage or tool error. Needs no GPU: NVRTC and nvdisasm only (on PATH, or from the
`nvidia` Python wheels, where evo finds it too).

  scripts/sass_identity.py --before /tmp/before --after . --stage 9 --arch sm_90a,sm_80 --sample 12

Make the before tree with `git archive <rev> variants gates | tar -x -C /tmp/before`.
"""
import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile


def compile_side(evo, root, stage, arch, sample, tasks, cache):
    cmd = [evo, "compile", "--stage", str(stage), "--arch", arch, "--json", "--cache-dir", cache]
    if sample:
        cmd += ["--sample", str(sample)]
    if tasks:
        cmd += ["--task", tasks]
    env = dict(os.environ, EVO_ROOT=os.path.abspath(root))
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"sass_identity: {' '.join(cmd)} (EVO_ROOT={root}) exited {out.returncode}: {out.stderr.strip()[:400]}",
              file=sys.stderr)
        sys.exit(2)
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def find_nvdisasm():
    found = shutil.which("nvdisasm")
    if found:
        return found
    spec = importlib.util.find_spec("nvidia")
    for site in (spec.submodule_search_locations if spec else []) or []:
        for cu in ("cu13", "cu12"):
            path = os.path.join(site, cu, "bin", "nvdisasm")
            if os.access(path, os.X_OK):
                return path
    print("sass_identity: nvdisasm not found (CUDA toolkit bin/ or the nvidia-cuda-nvdisasm wheel)", file=sys.stderr)
    sys.exit(2)


def sass_sha(nvdisasm, cache, key):
    cubin = os.path.join(cache, "nvrtc", key[:2], key + ".cubin")
    if not os.path.isfile(cubin):
        print(f"sass_identity: no cubin {cubin} for compile key {key}", file=sys.stderr)
        sys.exit(2)
    text = subprocess.run([nvdisasm, "-c", "-hex", cubin], capture_output=True, text=True, check=True).stdout
    return hashlib.sha256(text.encode()).hexdigest()


def summarize(nvdisasm, records, cache):
    """(variant, task, params, arch) -> (outcome, sass sha256 or None, resources)."""
    out = {}
    for r in records:
        key = (r["variant"], r["task"], json.dumps(r.get("params", {}), sort_keys=True), r.get("arch", ""))
        comp = r.get("compile") or {}
        ck = comp.get("cache_key")
        ok = r.get("outcome") in ("ok", "resources", "technique") and ck
        # evo's own code_sha256 (the cubin less its debug sections) must agree too, as must what
        # ptxas reported and the launch the cubin exports.
        res = {k: comp.get(k) for k in ("resources", "launch", "code_sha256")}
        out[key] = (r.get("outcome"), sass_sha(nvdisasm, cache, ck) if ok else None, json.dumps(res, sort_keys=True))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="tree before the change (gates/ and variants/)")
    ap.add_argument("--after", required=True, help="tree after the change")
    ap.add_argument("--stage", required=True, type=int)
    ap.add_argument("--arch", default="sm_90a", help="comma-separated: sm_90a,sm_80")
    ap.add_argument("--sample", type=int, default=0, help="configs per variant and task (0: all)")
    ap.add_argument("--task", default="", help="comma-separated tasks (default: all of the stage)")
    ap.add_argument("--evo", default=shutil.which("evo") or "build/evo")
    a = ap.parse_args()
    nvdisasm = find_nvdisasm()
    same = differ = only_one = not_compiled = 0
    with tempfile.TemporaryDirectory(prefix="sass-identity-") as tmp:
        for arch in a.arch.split(","):
            sides = []
            for name, root in (("before", a.before), ("after", a.after)):
                cache = os.path.join(tmp, f"{name}-{arch}")
                sides.append(summarize(nvdisasm, compile_side(a.evo, root, a.stage, arch, a.sample, a.task, cache), cache))
            before, after = sides
            for key in sorted(set(before) | set(after)):
                if key not in before or key not in after:
                    only_one += 1
                    print(f"ONLY ONE SIDE {arch} {key}")
                    continue
                (ob, sb, rb), (oa, sa, ra) = before[key], after[key]
                if sb is None and sa is None and ob == oa:
                    not_compiled += 1  # e.g. constraints, or min_sm above the arch: no cubin to compare
                elif sb == sa and rb == ra and ob == oa:
                    same += 1
                else:
                    differ += 1
                    print(f"DIFFERS {arch} {key}: outcome {ob}->{oa}, sass {sb}->{sa}, resources {rb}->{ra}")
    print(f"stage {a.stage} arch {a.arch} sample {a.sample or 'all'}: {same} cubins with identical SASS, "
          f"{differ} differ, {only_one} on one side only, {not_compiled} with no cubin on either side "
          "(the same constraints or unsupported verdict)")
    return 0 if differ == 0 and only_one == 0 and same > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
