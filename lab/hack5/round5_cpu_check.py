#!/usr/bin/env python3
"""Hacker round 5 (issue 29 item 5): each try's flaw replayed on the CPU, in the kernel's own
arithmetic, on inputs the gate of round 4 (with round 4's open hole closed) draws (right) and on
one the exported op accepts (wrong). Stdlib only (fp16 through struct's 'e'); one line per try,
exit 1 if a flaw does not show, or if o_slack_nan.cu (predicted caught) is not seen by the gate.
The address tricks use real byte addresses and strides (D 64, fp16); the rest scale shapes down
where only the arithmetic matters."""
import math
import random
import struct
import sys

rng = random.Random(2029)
ok = True


def f16(x):
    try:
        return struct.unpack('e', struct.pack('e', x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def f16_bits(bits):
    return struct.unpack('e', struct.pack('H', bits))[0]


def report(name, gate_bad, op_bad, note):
    global ok
    shows = op_bad and not gate_bad
    ok &= shows
    print(f"{name:36s} gate-like input wrong: {gate_bad!s:5s}  op input wrong: {op_bad!s:5s}  "
          f"{'flaw shows' if shows else 'FLAW DOES NOT SHOW'} ({note})")


# --- Alignment. Round 4's rule (gpu/case_layout.cpp tensor_alignment): Q at the case's alignment A,
# K at A ^ 64, V at A ^ 128, O at A ^ 192; A = 256 puts all four on a 256-byte boundary.
def r4_class(align, tensor):
    return align if align % 256 == 0 else align ^ (64 * tensor)


BASE = 0x7f0000000000
gate_cases = [(BASE + 0x100000 + r4_class(a, 0) % 256, BASE + 0x200000 + r4_class(a, 1) % 256)
              for a in (256, 16, 48, 208)]
gate_cases.append((BASE, BASE + 0x400000))  # fixed cases: fresh buffers
op_cases = [(BASE + 0x100000 + 16, BASE + 0x200000 + 37 * 128 * 8),   # Q a fused slice, K a fresh cache at token 37
            (BASE + 0x100000, BASE + 0x200000 + 37 * 128)]             # Q fresh, K a D = 64 cache slice at token 37


def mod64_from_q(q, k):
    return (k & ~63) + (q & 63) != k


report("k_align_mod64_from_q", any(mod64_from_q(*c) for c in gate_cases), any(mod64_from_q(*c) for c in op_cases),
       "Q 16 mod 64, K a cache slice at 0 mod 64")


def aligned_when_q(q, k):
    return (k & ~255 if q % 256 == 0 else k) != k


report("k_aligned_when_q_aligned", any(aligned_when_q(*c) for c in gate_cases),
       any(aligned_when_q(*c) for c in op_cases), "Q fresh, K at token 37 of a cache: 128 mod 256")


# --- Stale O. Each gate pre-fill holds one kind of value in every element (gpu/launch_draws.h):
# normal values of spread 0.1..2, +0.0, normal x 3e38 (+-Inf in fp16), NaN everywhere; CUDA's
# __float2half_rn(NaN) gives the canonical 0x7FFF in every element.
D = 64
CANON_NAN = 0x7FFF


def gate_prefills():
    s = rng.uniform(0.1, 2.0)
    yield [f16(rng.gauss(0, s)) for _ in range(D)], None
    yield [0.0] * D, None
    yield [f16(rng.gauss(0, 1) * 3e38) for _ in range(D)], None
    yield [f16_bits(CANON_NAN)] * D, [CANON_NAN] * D


def stale_bits_row():
    """torch.empty's stale fp16 bits: random patterns, NaN (of any payload) one element in 32."""
    bits = [rng.getrandbits(16) for _ in range(D)]
    bits[0] = 0x3C00                                  # a finite first element
    bits[17] = 0x7E01                                 # a NaN of another payload further on
    return [f16_bits(b) for b in bits], bits


new = [f16(rng.gauss(0, 0.3)) for _ in range(D)]


def merged(row, guard):
    out = [f16(((0.0 if guard(i) else row[i]) * 0.0) + new[i]) for i in range(D)]
    return any(not (o == n) for o, n in zip(out, new))  # NaN != anything


def first_element_wrong(row, _bits):
    stale = not math.isfinite(row[0])
    return merged(row, lambda i: stale)


report("merges_stale_o_first_element", any(first_element_wrong(*p) for p in gate_prefills()),
       first_element_wrong(*stale_bits_row()), "a stale row with a finite first element and a NaN at 17")


def canonical_nan_wrong(row, bits):
    bits = bits or [struct.unpack('H', struct.pack('e', x))[0] for x in row]
    return merged(row, lambda i: math.isinf(row[i]) or bits[i] == CANON_NAN)


report("merges_stale_o_canonical_nan", any(canonical_nan_wrong(*p) for p in gate_prefills()),
       canonical_nan_wrong(*stale_bits_row()), "stale fp16 NaN bits 0x7E01")


# --- V offsets. The gate: one mean (+-256, the sign by the Skv class) on every column of V.
# Near-uniform rows over n keys: p_j ~ 1, so the unnormalised sum of a column is ~ n * its mean.
def col_sums(means, n=1024):
    return [sum(m + rng.gauss(0, 1) for _ in range(n)) for m in means], n


def wrong_cols(sums, n, wide):
    out = [f16(a / n) if wide(c, a) else f16(f16(a) / n) for c, a in enumerate(sums)]
    ref = [a / n for a in sums]
    return any(not abs(o - r) <= 0.01 * abs(r) + 1e-3 for o, r in zip(out, ref))


def column0_wrong(means):
    sums, n = col_sums(means)
    big = abs(sums[0]) > 65504
    return wrong_cols(sums, n, lambda c, a: big)


def sign_of_v0_wrong(means):
    sums, n = col_sums(means)
    negative = means[0] + rng.gauss(0, 1) < 0          # V's first element: the mean plus its spread
    return wrong_cols(sums, n, lambda c, a: a < -65504 if negative else a > 65504)


NCOL = 8
gate_means = [[256.0] * NCOL, [-256.0] * NCOL]
channel_bias = [0.0, 0.0, 256.0, 256.0, 0.0, 0.0, 0.0, 0.0]       # massive activations in two channels
both_signs = [256.0, 256.0, 0.0, 0.0, -256.0, -256.0, 0.0, 0.0]
report("fp16_overflow_guard_column0", any(column0_wrong(m) for m in gate_means), column0_wrong(channel_bias),
       "a V mean of 256 on columns 2-3 only")
report("fp16_overflow_guard_sign_of_v0", any(sign_of_v0_wrong(m) for m in gate_means), sign_of_v0_wrong(both_signs),
       "V means +256 and -256 on different columns")


# --- Stride order. Every K/V view the gate builds (gpu/case_layout.cpp), elements, D 64, B 3.
B, H, S = 3, 8, 1000
views = {
    "bhsd": (H * S * D, S * D, D),
    "bshd": (S * H * D, D, H * D),
    "packed_qkv": (S * 3 * H * D, D, 3 * H * D),
    "mixed V (room 37)": ((S + 37) * H * D, D, H * D),
    "kv_cache": ((S + 37) * D * H, (S + 37) * D, D),
    "strided": ((H * (S + 19) + 7) * (D + 8), (S + 19) * (D + 8), D + 8),
}
seq_major = (H * D, D, B * H * D)                   # Megatron's [S, B, H, D]


def batch_at_least_seq_wrong(stride):
    return any(b * max(stride[0], S * stride[2]) != b * stride[0] for b in range(B))


report("kv_batch_stride_at_least_seq", any(batch_at_least_seq_wrong(v) for v in views.values()),
       batch_at_least_seq_wrong(seq_major), "a seq-major [S, B, H, D] K/V")


# --- Split workspace. Partials (m, l, o) of four splits of one row, split 2 empty (writes o = 0,
# skips (m, l)); the combine skips a slot whose two words hold the same bits.
def f32_bits(x):
    return struct.unpack('I', struct.pack('f', x))[0]


def combine(slots):
    live = [(m, l, o) for m, l, o in slots if f32_bits(m) != f32_bits(l)]
    M = max(m for m, _, _ in live)
    L = sum(2 ** (m - M) * l for m, l, _ in live)
    return sum(2 ** (m - M) * o for m, _, o in live) / L


real = [(3.1, 20.5, 4.2), (2.7, 31.0, -6.6), None, (3.4, 12.25, 1.9)]
truth = sum(2 ** (m - 3.4) * o for m, _, o in (r for r in real if r)) / sum(2 ** (m - 3.4) * l for m, l, _ in (r for r in real if r))


def with_stale(m, l):
    return [r if r else (m, l, 0.0) for r in real]


gate_stale = [(math.nan, math.nan)] + [(float(x), float(x)) for x in (1, 7, 64)]   # one 32-bit pattern
nan_bits = struct.unpack('f', struct.pack('I', 0xFFFFFFFF))[0]
gate_stale[0] = (nan_bits, nan_bits)
gate = any(not math.isclose(combine(with_stale(m, l)), truth, rel_tol=1e-6) for m, l in gate_stale)
op = not math.isclose(combine(with_stale(5.0, 17.0)), truth, rel_tol=1e-6)   # an earlier call's (max, sum)
report("split_combine_skips_uniform_slot", gate, op, "the slot holds an earlier call's (5.0, 17.0)")


# --- O's slack (predicted caught): the gate compares O's bytes outside its elements before and
# after each launch; the trick writes 0xFFFF there. Non-finite junk is 0xFF bytes (the same bits),
# finite junk varied values: every run has a strided case with each.
Hq = 4
slack_nonfinite = [0xFFFF] * D
slack_finite = [struct.unpack('H', struct.pack('e', f16(rng.gauss(0, 1))))[0] for _ in range(D)]
after = [0xFFFF] * D
seen_nonfinite = after != slack_nonfinite
seen_finite = after != slack_finite
caught = seen_finite and not seen_nonfinite
ok &= caught
print(f"{'o_slack_nan':36s} gap check sees it: finite junk {seen_finite!s:5s} non-finite junk {seen_nonfinite!s:5s}  "
      f"{'caught (finite-junk strided cases)' if caught else 'NOT AS PREDICTED'}")

sys.exit(0 if ok else 1)
