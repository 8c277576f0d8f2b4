#!/usr/bin/env python3
"""Calibrate gates.json tolerances against PyTorch SDPA's own error.

For each dtype, over the correctness-gate shapes (small, mission, ragged; D = 64 and 128;
causal and not; normal and large-logit inputs), run PyTorch SDPA with each backend (flash,
cuDNN, efficient) and measure its error against a float64 reference on the same
low-precision inputs: max abs error, relative L2, and the smallest `tol` for which
|out - ref| <= tol + tol·|ref| holds everywhere. evo's tolerance is a fixed multiple
(--factor, default 4) of the worst backend, so a kernel as accurate as the libraries people
already trust passes with margin, and one that is several times worse (e.g. FP16
accumulation) fails.

  python3 scripts/calibrate_tolerances.py --out results/calibration/nvidia-h200.json
"""
import argparse, json, math, re

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = ["1x2x2x64x64xD", "1x2x1x17x33xD", "2x4x2x128x200xD", "1x8x8x512x512xD", "2x8x2x1000x777xD"]
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--factor", type=float, default=4.0)
    a = ap.parse_args()
    torch.manual_seed(0)
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "factor": a.factor,
              "method": __doc__.strip().splitlines()[0], "dtypes": {}}
    for dname, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        worst = {"max_abs": 0.0, "rel_l2": 0.0, "tol": 0.0}
        rows = []
        for D in (64, 128):
            for causal in (False, True):
                for std in (1.0, 3.0):
                    for shp in SHAPES:
                        B, Hq, Hkv, Sq, Skv, _ = [int(x) if x != "D" else D for x in shp.split("x")]
                        q = (torch.randn(B, Hq, Sq, D, device="cuda") * std).to(dtype)
                        k = (torch.randn(B, Hkv, Skv, D, device="cuda") * std).to(dtype)
                        v = torch.randn(B, Hkv, Skv, D, device="cuda").to(dtype)
                        kr, vr = k.repeat_interleave(Hq // Hkv, 1), v.repeat_interleave(Hq // Hkv, 1)
                        s = (q.double() @ kr.double().transpose(-1, -2)) / math.sqrt(D)
                        if causal:
                            s.masked_fill_(torch.ones(Sq, Skv, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
                        ref = torch.softmax(s, -1) @ vr.double()
                        for bname, backend in BACKENDS.items():
                            try:
                                with sdpa_kernel(backend):
                                    out = torch.nn.functional.scaled_dot_product_attention(
                                        q, kr, vr, is_causal=causal).double()
                            except RuntimeError:
                                continue  # backend refuses this shape/dtype
                            err = (out - ref).abs()
                            row = {"backend": bname, "shape": shp.replace("D", str(D)), "causal": causal, "qk_std": std,
                                   "max_abs": err.max().item(),
                                   "rel_l2": ((out - ref).norm() / ref.norm()).item(),
                                   "tol": (err / (1 + ref.abs())).max().item()}
                            rows.append(row)
                            for k_ in worst:
                                worst[k_] = max(worst[k_], row[k_])
        def up(x):  # round up to one significant digit
            e = math.floor(math.log10(x))
            return math.ceil(x / 10 ** e) * 10 ** e
        result["dtypes"][dname] = {
            "sdpa_worst": worst,
            "tolerance": {"atol": up(a.factor * worst["tol"]), "rtol": up(a.factor * worst["tol"]),
                          "rel_l2": up(a.factor * worst["rel_l2"])},
            "cases": rows}
        print(dname, json.dumps(result["dtypes"][dname]["sdpa_worst"]), "->",
              json.dumps(result["dtypes"][dname]["tolerance"]))
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
