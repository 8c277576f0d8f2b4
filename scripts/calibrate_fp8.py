#!/usr/bin/env python3
"""Calibrate the fp8 tolerances of gates.json against cuDNN FP8 SDPA's own error.

The sibling of scripts/calibrate_tolerances.py for the fp8 tasks. For every input distribution
of gates.json ("inputs"), over the correctness-gate shapes (those of calibrate_tolerances.py,
GQA included), D = 64 and 128, causal and not, softmax scale 1/sqrt(D) and 1: draw Q, K, V in
float32 as that script does, quantize each per tensor as evo's worker does (scale = 448/amax,
e4m3, descale = 1/scale: scripts/cudnn_fp8.py), run cuDNN FP8 SDPA (cuDNN frontend
`sdpa_fp8`) on the e4m3 tensors, and measure its error against float64 attention on the SAME
dequantized values (e4m3 code * descale): max abs error, relative L2, and the smallest `tol`
with |out - ref| <= tol + tol*|ref| everywhere. Quantizing the inputs is not an error of the
kernel (the reference sees the quantized values); what is measured is the kernel's own: P in
e4m3, FP32 accumulation, the output's rounding.

The fp8 tolerance (gates.json tolerances.fp8) is --factor times cuDNN's worst error over the
normal and large-logit inputs; a distribution whose calibrated tolerance is larger (outlier rows,
large |V|) gets it as an override (tolerances.fp8.inputs), as for fp16 and bf16. The factor is 2,
not fp16/bf16's 4: on Hopper cuDNN 9.19 writes O only in e4m3 (it refuses a bf16 O; the result
says which it used), so its error includes rounding O to e4m3 (up to 2^-4 relative), while evo's
fp8 O is bf16 (2^-9): 2x cuDNN's total error is already several times the error of a bf16-output
kernel as precise inside as cuDNN, and 4x would pass kernels off by 20 % in relative L2.

  python3 scripts/calibrate_fp8.py --gates gates/gates.json --out lab/calibration/nvidia-h200-fp8.json
  python3 scripts/calibrate_fp8.py --recompute RECORDED.json --factor 2 --out FILE   # no GPU: new factor, same errors

A probe instead of a calibration: --shapes (explicit D, e.g. a sampled case's 5x32x1x538x92x128),
--inputs and --draws measure cuDNN's error where a kernel failed, against the gate's tolerance
for that input (gates.json), without changing gates.json:
  python3 scripts/calibrate_fp8.py --shapes 5x32x1x538x92x128 --inputs outlier_rows --draws 8 --out FILE
"""
import argparse, json, math, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cudnn_fp8  # noqa: E402

BASE_INPUTS = ("normal", "large_logits")
# Inputs whose absolute error scales with |V| (std 100): atol = factor x cuDNN's max abs error,
# rtol and relative L2 the base's (as gates.json does for fp16 and bf16).
ABS_INPUTS = ("large_v",)


def up(x):  # round up to one significant digit (as calibrate_tolerances.py)
    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x))
    return float("%.6g" % (math.ceil(x / 10 ** e) * 10 ** e))


def reference(torch, qd, kd, vd, causal, scale):
    """float64 softmax(Q Kᵀ * scale) V on dequantized [B, H, S, D] tensors (GQA: K/V heads repeated)."""
    g = qd.shape[1] // kd.shape[1]
    kr, vr = kd.repeat_interleave(g, 1), vd.repeat_interleave(g, 1)
    s = (qd @ kr.transpose(-1, -2)) * scale
    if causal:
        sq, skv = s.shape[-2], s.shape[-1]
        s.masked_fill_(torch.ones(sq, skv, device=s.device, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ vr


def errors(out, ref):
    err = (out - ref).abs()
    return {"max_abs": err.max().item(), "rel_l2": ((out - ref).norm() / ref.norm()).item(),
            "tol": (err / (1 + ref.abs())).max().item()}


def tolerances(per, factor):
    """Per distribution: factor x cuDNN's worst, rounded up to one significant digit; the fp8
    tolerance from the base inputs, overrides where a distribution needs more."""
    for p in per.values():
        w = p["cudnn_worst"]
        p["calibrated"] = {"atol": up(factor * w["tol"]), "rtol": up(factor * w["tol"]), "rel_l2": up(factor * w["rel_l2"])}
    base = {k_: max(per[n]["calibrated"][k_] for n in BASE_INPUTS if n in per) for k_ in ("atol", "rtol", "rel_l2")}
    for n in ABS_INPUTS:
        if n in per:
            per[n]["calibrated"] = dict(base, atol=up(factor * per[n]["cudnn_worst"]["max_abs"]))
    overrides = {n: {k_: max(p["calibrated"][k_], base[k_]) for k_ in base} for n, p in per.items()
                 if any(p["calibrated"][k_] > base[k_] for k_ in base)}
    return dict(base, inputs=overrides)


def recompute(a):
    result = json.load(open(a.recompute))
    result["factor"] = a.factor
    result["tolerance"] = tolerances(result["inputs"], a.factor)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print("tolerances.fp8 =", json.dumps(result["tolerance"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gates", default="gates/gates.json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--factor", type=float, default=2.0)
    ap.add_argument("--recompute", help="a calibration written by this script: apply --factor to its errors")
    ap.add_argument("--shapes", help="comma-separated BxHqxHkvxSqxSkvxD (D may be the letter D: 64 and 128); "
                    "default: the correctness-gate shapes")
    ap.add_argument("--inputs", help="comma-separated input distributions of gates.json (default: all)")
    ap.add_argument("--draws", type=int, default=1, help="random draws of Q, K, V per shape (default 1)")
    a = ap.parse_args()
    if a.recompute:
        return recompute(a)
    import torch
    import cudnn
    from calibrate_tolerances import SHAPES, make_inputs
    gates = json.load(open(a.gates))
    shapes = a.shapes.split(",") if a.shapes else SHAPES
    names = a.inputs.split(",") if a.inputs else [n for n, d in gates["inputs"].items() if "fp8" in d.get("dtypes", ["fp8"])]
    for n in names:
        if n not in gates["inputs"]:
            sys.exit("calibrate_fp8: --inputs %s is not an input distribution of %s (%s)" % (n, a.gates, ", ".join(gates["inputs"])))
    probe = bool(a.shapes or a.inputs)
    fp8 = gates["tolerances"]["fp8"]
    gate_tol = {n: dict(fp8, **fp8.get("inputs", {}).get(n, {})) for n in names}  # what the gate applies today
    torch.manual_seed(0)
    graphs, refusals, out_dtypes = {}, {}, set()
    per, cases = {}, []
    for name in names:
        dist = gates["inputs"][name]
        worst = {"max_abs": 0.0, "rel_l2": 0.0, "tol": 0.0}
        for D in (64, 128):
            for causal in (False, True):
                for shp in [s_ for s_ in shapes for _ in range(a.draws) if s_.split("x")[-1] in ("D", str(D))]:
                    B, Hq, Hkv, Sq, Skv, _ = [int(x) if x != "D" else D for x in shp.split("x")]
                    qf, kf, vf = make_inputs(dist, B, Hq, Hkv, Sq, Skv, D, torch.float32)
                    (q, dq), (k, dk), (v, dv) = (cudnn_fp8.quantize(torch, x) for x in (qf, kf, vf))
                    qd, kd, vd = (cudnn_fp8.dequantize(torch, x, d) for x, d in ((q, dq), (k, dk), (v, dv)))
                    for scale in (1 / math.sqrt(D), 1.0):
                        key = (shp, D, causal, scale)
                        if key not in graphs:
                            graphs[key], why = cudnn_fp8.build(torch, cudnn, q, k, v, causal, scale, vd.abs().max().item())
                            if why:
                                refusals["%s D=%d causal=%s scale=%g" % key] = why
                        sdpa = graphs[key]
                        if sdpa is None:
                            continue
                        sdpa.o_scale = cudnn_fp8.E4M3_MAX / vd.abs().max().item() if sdpa.out_dtype == "e4m3" else 1.0
                        sdpa.bind(q, k, v, (dq, dk, dv))
                        sdpa()
                        torch.cuda.synchronize()
                        out_dtypes.add(sdpa.out_dtype)
                        out, ref = sdpa.output(), reference(torch, qd, kd, vd, causal, scale)
                        row = errors(out, ref)
                        row.update({"inputs": name, "shape": shp.replace("D", str(D)), "causal": causal, "scale": scale,
                                    "descales": [dq, dk, dv], "o": sdpa.out_dtype})
                        if probe:  # elements beyond the gate's own test for this input
                            t = gate_tol[name]
                            row["beyond"] = int(((out - ref).abs() > t["atol"] + t["rtol"] * ref.abs()).sum().item())
                        cases.append(row)
                        for k_ in worst:
                            worst[k_] = max(worst[k_], row[k_])
        per[name] = {"cudnn_worst": worst}
        print(name, json.dumps(worst), flush=True)
    if not cases:
        sys.exit("calibrate_fp8: cuDNN refused every graph: " + json.dumps(refusals)[:2000])
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cudnn_backend": cudnn.backend_version(),
              "cudnn_frontend": getattr(cudnn, "__version__", "?"), "factor": a.factor,
              "method": __doc__.strip().splitlines()[0], "o_dtypes": sorted(out_dtypes), "p_scale": cudnn_fp8.P_SCALE,
              "refused": refusals, "inputs": per,
              # A probe without the base inputs measures errors only; a calibration derives the tolerance.
              "tolerance": tolerances(per, a.factor) if all(n in per for n in BASE_INPUTS) else None,
              "cases": cases}
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print("tolerances.fp8 =", json.dumps(result["tolerance"]), "; cuDNN O dtype:", sorted(out_dtypes))
    if probe:
        for c in cases:
            print("%-13s %-20s causal=%d scale=%-7.4g max_abs %.3f tol %.3f rel_l2 %.4f  gate atol %g rtol %g: %s" % (
                c["inputs"], c["shape"], c["causal"], c["scale"], c["max_abs"], c["tol"], c["rel_l2"],
                gate_tol[c["inputs"]]["atol"], gate_tol[c["inputs"]]["rtol"],
                "%d BEYOND" % c["beyond"] if c["beyond"] else "within"))

if __name__ == "__main__":
    main()
