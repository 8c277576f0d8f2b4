#!/usr/bin/env python3
"""Were the fp16 biases on record past 16 384 keys the old reference's? The gate's reference summed
each row's weights and P·V in one FP32 running sum (before 2026-12-01, fp32_sums.py). This models
that reference on the three deep cases whose fp16 records (results/20261130T17*, T20*, old
reference) would fail the bound with bias_keys 65 536 (gates.json, fp16 normal, large_logits,
outlier_rows, large_v), with the same keys, head dim, softmax scale and input spread, and prints
the bias an exact kernel shows against it. The kernels' P rounding is left out: it is unbiased.

  python3 lab/reference-sums/long_rows.py     # about 7 s
"""
import numpy as np


def fp32_reference_bias(name, keys, d, scale, qk_std, rows, outlier_every=0, outlier_scale=1.0, seed=5):
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((rows, d)) * qk_std).astype(np.float16).astype(np.float32)
    k = (rng.standard_normal((keys, d)) * qk_std).astype(np.float16).astype(np.float32)
    v = rng.standard_normal((keys, d)).astype(np.float16).astype(np.float32)
    if outlier_every:  # outlier_rows: every n-th query row scaled (gates.json inputs)
        q[::outlier_every] *= outlier_scale
    s = (q @ k.T).astype(np.float32) * np.float32(scale)
    p = np.exp(s - s.max(1, keepdims=True)).astype(np.float32)
    l32 = np.zeros((rows, 1), np.float32)
    acc32 = np.zeros((rows, d), np.float32)
    for j in range(keys):  # the old reference: key after key, one FP32 sum each
        l32 = (l32 + p[:, j:j + 1]).astype(np.float32)
        acc32 = (acc32 + p[:, j:j + 1] * v[j]).astype(np.float32)
    pd = np.exp(s.astype(np.float64) - s.max(1, keepdims=True))
    exact = (pd @ v.astype(np.float64)) / pd.sum(1, keepdims=True)
    ref = acc32 / l32
    bias = np.sum((exact - ref) * np.sign(ref)) / np.sum(np.abs(ref))
    print(f"{name}: {keys} keys, D {d}, scale {scale:.3g}, qk_std {qk_std}: an exact kernel against "
          f"the FP32 reference: bias {bias:+.2e}")


# deep/159 (fp16-d128, gate seed of 2026-11-30): 4x256x1x1x90704x128, scale 1.07707e-5, large_logits;
# the records read -3.58e-4 (tma_ws, cluster) and -2.69e-4 (split_kv_tma).
fp32_reference_bias("deep/159 large_logits", 90704, 128, 1.07707e-5, 3.0, 16)
# deep/90 (fp16-d128): 77x18x2x8x49152x128, scale 1/D, outlier_rows; records -1.02e-4, -6.5e-5.
fp32_reference_bias("deep/90 outlier_rows", 49152, 128, 1 / 128, 1.0, 17, outlier_every=17, outlier_scale=48.0)
# deep/237 (fp16-d64): 5x32x1x144x49024x64, scale 0.5/sqrt(D), large_logits; records -1.04e-4, -6.8e-5.
fp32_reference_bias("deep/237 large_logits", 49024, 64, 0.5 / 8, 3.0, 16)
