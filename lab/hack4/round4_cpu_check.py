#!/usr/bin/env python3
"""Hacker round 4 (issue 29 item 5): each try's flaw replayed on the CPU, in the kernel's own
arithmetic, on an input the gate draws today (right) and on one the exported op accepts (wrong).
Stdlib only (fp16 through struct's 'e'); one line per try, exit 1 if a flaw does not show. The
address tricks use real byte addresses and strides (D 64, fp16); the rest scale shapes down
where only the arithmetic matters."""
import math
import random
import struct
import sys

rng = random.Random(29)
ok = True


def f16(x):
    try:
        return struct.unpack('e', struct.pack('e', x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def report(name, gate_bad, op_bad, note):
    global ok
    shows = op_bad and not gate_bad
    ok &= shows
    print(f"{name:34s} gate-like input wrong: {gate_bad!s:5s}  op input wrong: {op_bad!s:5s}  "
          f"{'flaw shows' if shows else 'FLAW DOES NOT SHOW'} ({note})")


def realigned(ptr, other):
    """The base a kernel rebuilds: ptr rounded down to 256 bytes plus other's misalignment."""
    return (ptr & ~255) + (other & 255)


# Alignment tries: gate-like = every tensor at the case's one class (offset_view); op = a K that is
# a KV cache slice at token 37 of a [B, H, 4096, 64] fp16 cache, an O slice 3 heads into a fused
# buffer, a V packed 64 elements after K (MQA, D 64).
BASE = 0x7f0000000000
for name, mine, other, note in [
    ("k_align_from_q", (BASE + 0x100000 + 48, BASE + 0x200000 + 37 * 128), (BASE + 48, BASE + 0x300000), "K at token 37 of a cache: 128 bytes off Q's class"),
    ("o_align_from_q", (BASE + 0x100000 + 208, BASE + 0x400000 + 3 * 128), (BASE + 208, BASE + 0x500000), "O 3 heads into a fused buffer"),
    ("v_align_from_k", (BASE + 0x100000 + 16, BASE + 0x600000 + 256 + 128), (BASE + 16, BASE + 0x600000 + 256), "packed MQA: V 64 elements after K"),
]:
    gate = realigned(mine[0], other[0]) != mine[0]
    op = realigned(mine[1], other[1]) != mine[1]
    report(name, gate, op, note)


# Token-major batch offsets (elements): the kernel's b * S * row stride against b * batch stride.
def batch_offset_trick(stride, b, seq):
    return b * seq * stride[2] if stride[1] < stride[2] else b * stride[0]


B, H, S, D = 3, 8, 1000, 64
dense_bshd = (S * H * D, D, H * D)                  # bshd, packed-like: what the gate builds
cache_bshd = (4096 * H * D, D, H * D)               # flash_attn_with_kvcache's [B, S_cache, H, D]
seq_major = (H * D, D, B * H * D)                   # Megatron's [S, B, H, D]
gate = any(batch_offset_trick(dense_bshd, b, S) != b * dense_bshd[0] for b in range(B))
op = any(batch_offset_trick(s, b, S) != b * s[0] for s in (cache_bshd, seq_major) for b in range(B))
report("kv_token_major_batch_from_rows", gate, op, "K/V [B, 4096, H, D] cache with Skv 1000; [S, B, H, D]")
q_padded = (2048 * H * D, D, H * D)                 # Q a slice of a padded [B, S_max, H, D] projection
op = any(batch_offset_trick(s, b, S) != b * s[0] for s in (q_padded, seq_major) for b in range(B))
report("q_token_major_batch_from_rows", gate, op, "Q [B, 2048, H, D] slice with Sq 1000; [S, B, H, D]")

# O's slack: the gate compares O's logical elements only; the op's caller owns the gap.
Hq = 4
row = [rng.gauss(0, 1) for _ in range((Hq + 1) * D)]   # [attention | MLP head] of one token
after = row[:Hq * D] + [0.0] * D                       # the trick's last head zeroes the slack
gate = after[:Hq * D] != row[:Hq * D]                 # what the gate reads back: unchanged
op = after != row                                       # the neighbour's head is gone
report("o_zeroes_row_slack", gate, op, "a fused [attention | MLP] row; the gate never reads the gap")


# Stale O with an Inf guard: old -> 0 if isinf, then old * 0 + new.
def merge(old, new):
    return f16((0.0 if math.isinf(old) else old) * 0.0 + new)


new = 0.37
gate_olds = [f16(rng.gauss(0, 1.0)), 0.0, f16(rng.gauss(0, 1) * 3e38), f16(-3e38)]  # normal, zero, stale +-Inf
op_old = struct.unpack('e', struct.pack('H', 0x7E01))[0]                            # a stale NaN bit pattern
gate = any(merge(o, new) != f16(new) for o in gate_olds)
op = math.isnan(merge(op_old, new))
report("merges_stale_o_inf_guard", gate, op, "stale fp16 bits 0x7E01 (NaN)")


# One-sided overflow guard: fp16(acc) / l unless acc > 65504. Near-uniform rows over 1024 keys.
def guarded(vmean, n=1024):
    vals = [vmean + rng.gauss(0, 1) for _ in range(n)]
    acc, l = sum(vals), float(n)                   # near-uniform: p_j ~ 1 relative to the max
    out = f16(acc / l) if acc > 65504 else f16(f16(acc) / l)
    ref = sum(vals) / n
    return not abs(out - ref) <= 0.01 * abs(ref) + 1e-3


report("fp16_overflow_guard_positive", guarded(256.0), guarded(-256.0), "v_offset +256 vs -256")

sys.exit(0 if ok else 1)
