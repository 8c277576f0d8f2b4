#!/usr/bin/env python3
"""The gate's reference kernel summed a row's weights and P·V in FP32, key after key
(harness/support/support_kernels.cu, before 2026-12-01). This models that sum on the deep case
an exact fp16 kernel failed (deep/136: 33 088 keys, D 128, softmax scale 1.18e-5, normal Q/K/V)
and prints the bias it puts on the reference, against the same sums in double, and what a kernel
that rounds P to fp16 (honestly) shows against the exact reference.

  python3 lab/reference-sums/fp32_sums.py            # about 1 s
Expected (seed 3): FP32 sums +2.5e-4 (the H200 read +2.28e-4 on the kernel), P rounding ~1e-5.
"""
import numpy as np

rng = np.random.default_rng(3)
D, N, ROWS = 128, 33088, 64
scale = np.float32(1.18e-5)
k = rng.standard_normal((N, D)).astype(np.float16).astype(np.float32)
v = rng.standard_normal((N, D)).astype(np.float16).astype(np.float32)
q = rng.standard_normal((ROWS, D)).astype(np.float16).astype(np.float32)

s = (q @ k.T).astype(np.float32) * scale
m = s.max(1, keepdims=True)
p = np.exp(s - m).astype(np.float32)

l32 = np.zeros((ROWS, 1), np.float32)  # the old reference: one running FP32 sum per row
acc32 = np.zeros((ROWS, D), np.float32)
for j in range(N):
    l32 = (l32 + p[:, j:j + 1]).astype(np.float32)
    acc32 = (acc32 + p[:, j:j + 1] * v[j]).astype(np.float32)
o32 = acc32 / l32

pd = np.exp(s.astype(np.float64) - m)
exact = (pd @ v.astype(np.float64)) / pd.sum(1, keepdims=True)
p16 = p.astype(np.float16).astype(np.float64)  # an honest kernel: P rounded to fp16 for P·V
kernel = (p16 @ v.astype(np.float64)) / pd.sum(1, keepdims=True)


def bias(out, ref):
    return np.sum((out - ref) * np.sign(ref)) / np.sum(np.abs(ref))


print(f"weights: 1 - {np.mean(1 - pd):.2g} on average")
print(f"FP32 reference's row sum, relative error: {np.mean(l32[:, 0] / pd.sum(1) - 1):+.3g}")
print(f"an exact kernel against the FP32 reference: bias {bias(exact, o32):+.3g}")
print(f"an fp16-P kernel against the exact reference: bias {bias(kernel, exact):+.3g}")
