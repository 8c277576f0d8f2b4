#!/usr/bin/env python3
"""Hacker round 3 (issue 29 item 5): each trick's flaw replayed on the CPU, in the kernel's own
arithmetic, on an input the gate draws (right) and on one the exported op accepts (wrong).
Stdlib only (fp16 through struct's 'e'); prints one line per trick and exits 1 if a flaw does not
show. Shapes are scaled down where only the arithmetic matters; the index tricks use the real
indices."""
import math
import random
import struct
import sys

def f16(x):
    """x rounded to fp16 as __float2half_rn does (overflow -> inf)."""
    try:
        return struct.unpack('e', struct.pack('e', x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)

def f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]

def attend(q, keys, vals, scale):
    """One row of softmax(q.k * scale) v in double: the reference."""
    s = [scale * sum(a * b for a, b in zip(q, k)) for k in keys]
    m = max(s)
    p = [math.exp(x - m) for x in s]
    l = sum(p)
    return [sum(pj * v[d] for pj, v in zip(p, vals)) / l for d in range(len(vals[0]))], p, l

rng = random.Random(29)
ok = True

def report(name, gate_err, op_err, note):
    global ok
    shows = not (op_err < 1e-2) and gate_err < 1e-2
    ok &= shows
    print(f"{name:28s} gate-like input: err {gate_err:.2e}   op input: err {op_err}   {'flaw shows' if shows else 'FLAW DOES NOT SHOW'} ({note})")

# merges_stale_o: O = O_old * exp2(-inf * scale) + new.
keep = 2.0 ** (-math.inf * 0.125)
new = 0.37
gate = abs(f16(rng.gauss(0, 1)) * keep + new - new)
op = f16(math.inf) * keep + new  # torch.empty: stale bits that are Inf
report("merges_stale_o", gate, op, "O_old finite vs Inf")

# fp16_unnormalized_o: fp16(sum p v) / l. Gate-like: large_v (zero-mean, std 100), near-uniform
# scores at a small scale, 4096 keys; op: V = 64 + N(0, 1), near-uniform, 4096 keys.
def unnorm(vmean, vstd, n, qk_std):
    D = 8
    q = [rng.gauss(0, qk_std) for _ in range(D)]
    keys = [[rng.gauss(0, qk_std) for _ in range(D)] for _ in range(n)]
    vals = [[vmean + rng.gauss(0, vstd) for _ in range(D)] for _ in range(n)]
    ref, p, l = attend(q, keys, vals, 1 / math.sqrt(D))
    m = max(p)
    acc = [sum(pj / m * v[d] for pj, v in zip(p, vals)) for d in range(D)]
    out = [f16(f16(a) * (m / l)) for a in acc]
    return max(abs(o - r) / max(1.0, abs(r)) for o, r in zip(out, ref))
report("fp16_unnormalized_o", unnorm(0, 100, 4096, 0.3), unnorm(256, 1, 1024, 0.05), "zero-mean V vs V mean 256 (gates.json v_offset)")

# bh_index_18bits: (b * Hq + h) & (2^18 - 1) must be b * Hq + h.
def bh_wrong(B, Hq):
    return sum(1 for b in (B - 1,) for h in range(Hq) if ((b * Hq + h) & (2**18 - 1)) != b * Hq + h)
report("bh_index_18bits", bh_wrong(8129, 32), bh_wrong(65535, 256), "huge 8129x32 vs decode 65535x256: heads of the last batch mapped elsewhere")

# row_offset_int32: int(unsigned(j) * unsigned(stride)) vs j * stride.
def wraps(j, stride):
    x = (j * stride) & 0xFFFFFFFF
    return 0 if (x - (1 << 32) if x >= 1 << 31 else x) == j * stride else 1
report("row_offset_int32", wraps(16383, (256 + 2 * 256) * 64) + wraps(131071, 64),
       wraps(131071, 16384 + 2048), "cheap/deep row offsets vs a packed QKV of 128 + 2x8 heads of 128 (Llama-3 405B) at Skv 131072")

# max_over_masked_keys: m over 32 lanes incl. masked junk rows, then the mask.
def masked_max(junk):
    D = 64
    q = [rng.gauss(0, 1) for _ in range(D)]
    keys = [[rng.gauss(0, 1) for _ in range(D)] for _ in range(5)]  # Skv 5: lanes 5..31 read past
    vals = [[rng.gauss(0, 1)] for _ in range(5)]
    ref, _, _ = attend(q, keys, vals, 1 / math.sqrt(D))
    sl2 = 1 / math.sqrt(D) * 1.4426950408889634
    s = [f32(sl2 * sum(a * b for a, b in zip(q, k))) for k in keys]
    sj = [f32(sl2 * sum(a * f16(junk()) for a in q)) for _ in range(27)]
    m = max(s + [x for x in sj if not math.isnan(x)])  # fmaxf drops NaN
    p = [f32(2.0 ** (x - m)) if x - m > -149 else 0.0 for x in s]
    l = sum(p)
    out = sum(pj * v[0] for pj, v in zip(p, vals)) / l if l > 0 else math.nan
    return abs(out - ref[0])
gate = max(masked_max(lambda: rng.gauss(0, 1)), masked_max(lambda: math.nan), masked_max(lambda: -0.0226))
report("max_over_masked_keys", gate, masked_max(lambda: rng.choice([1, -1]) * 60000.0),
       "junk normal/NaN/0xA5 vs stale fp16 keys of magnitude 6e4")

# split_skips_empty_partial: the combine over (m, l) slots, the empty split's slot unwritten.
def combine(slots):
    M = max(m for m, _ in slots if not math.isnan(m))
    w = [2.0 ** (m - M) * l for m, l in slots]
    return sum(w)
real = [(3.2, 1.0)]  # split 0: the row's one visible key (weight 1 at its max)
gate = abs(combine(real + [(0.0, 0.0)] * 3) - combine(real + [(-math.inf, 0.0)] * 3))
op = abs(combine(real + [(9.5, 40.0)] * 3) - combine(real + [(-math.inf, 0.0)] * 3))
report("split_skips_empty_partial", gate, op, "fresh zeroed slot vs a slot of an earlier call")

sys.exit(0 if ok else 1)
