#!/usr/bin/env python3
"""Hacker round 6 (issue 29 item 5): each try's flaw replayed on the CPU, in the kernel's own
arithmetic, on inputs the gate of round 5 draws (right) and on one the exported op accepts
(wrong). Stdlib only (fp16 through struct's 'e'); one line per try, exit 1 if a flaw does not
show where predicted. Addresses and strides are real byte addresses and element strides (fp16);
attention is scaled down where only the arithmetic matters."""
import math
import random
import struct
import sys

rng = random.Random(2030)
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
    print(f"{name:30s} gate-like input wrong: {gate_bad!s:5s}  op input wrong: {op_bad!s:5s}  "
          f"{'flaw shows' if shows else 'FLAW DOES NOT SHOW'} ({note})")


# --- Q's alignment. Round 5's rule (gpu/case_layout.cpp tensor_alignment): Q sits at the case's
# alignment A mod 256 (A in 256, 16, 48, 208); fixed cases use fresh buffers (256-byte aligned).
BASE = 0x7f0000000000
gate_q = [BASE + 0x100000 + a % 256 for a in (256, 16, 48, 208)] + [BASE]


def q_read_from(q):  # the trick's base: its 32-byte path starts at the 64-byte line below Q
    return q & ~63 if q % 64 == 32 else q


op_q = BASE + 0x100000 + 16 * 2   # Q a view 16 fp16 elements into a fused buffer
report("q_align_32_path", any(q_read_from(q) != q for q in gate_q), q_read_from(op_q) != op_q,
       "Q 32 bytes into its buffer: read 16 elements early")


# --- Two calls in flight. The trick scales its Q row in place by 2^e, reads it back, and restores
# the bits after the row, unless Q is K's or V's memory (the gate's shared=qk case, where other rows
# would read Q's memory as keys). A second call over the same Q (cascade attention) reads the
# scaled row.
D, N = 16, 64
scale_log2 = 0.125 * 1.4426950408889634 * 1.3   # a drawn scale of the range
e = round(math.log2(scale_log2))
q = [f16(rng.gauss(0, 1)) for _ in range(D)]
keys = [[f16(rng.gauss(0, 1)) for _ in range(D)] for _ in range(N)]
vals = [f16(rng.gauss(0, 1)) for _ in range(N)]


def attend(qrow):
    s = [sum(a * b for a, b in zip([f16(x * 2 ** e) for x in qrow], k)) * (scale_log2 / 2 ** e) for k in keys]
    m = max(s)
    w = [2 ** (x - m) for x in s]
    return sum(a * b for a, b in zip(w, vals)) / sum(w)


truth = attend(q)
alone = attend(q)                                # each problem of a gate case has its own Q
in_flight = attend([f16(x * 2 ** e) for x in q])  # the other call reads the row while it is scaled
report("q_prescaled_in_place", not math.isclose(alone, truth, rel_tol=1e-3),
       not math.isclose(in_flight, truth, rel_tol=1e-3), f"a second call reads Q while it is scaled by 2^{e}")


# --- Seq-major views. Every view of round 5's gate but mixed's K has batch stride >= S rows:
# (batch, head, row) strides in elements, B 2, H 2, S 5, D 64 (case_layout.cpp's layouts).
B, H, S, Dm = 2, 2, 5, 64
views = {
    'bhsd': (H * S * Dm, S * Dm, Dm), 'bshd': (S * H * Dm, Dm, H * Dm),
    'packed_qkv': (S * 3 * H * Dm, Dm, 3 * H * Dm), 'mixed token-major': ((S + 3) * H * Dm, Dm, H * Dm),
    'mixed bhsd O': (H * S * Dm, S * Dm, Dm), 'kv_cache': (H * (S + 37) * Dm, (S + 37) * Dm, Dm),
    'strided': ((Dm + 8) * ((S + 5) * H + 3), (S + 5) * (Dm + 8), Dm + 8),
    'strided O': ((H + 1) * Dm * S + 2 * Dm, Dm, (H + 1) * Dm),
}
seq_major = (H * Dm, Dm, B * H * Dm)   # Megatron's [S, B, H, D]


def batch_at_least_seq_wrong(stride):
    return any(b * max(stride[0], S * stride[2]) != b * stride[0] for b in range(B))


gate_bad = any(batch_at_least_seq_wrong(v) for v in views.values())
op_bad = batch_at_least_seq_wrong(seq_major)
for name, tensor in (("q_batch_stride_at_least_seq", "Q"), ("v_batch_stride_at_least_seq", "V"),
                     ("o_batch_stride_at_least_seq", "O")):
    report(name, gate_bad, op_bad, f"a seq-major {tensor} [S, B, H, D]: batch 1 addressed past its sequence")


# --- Launch-count bomb. A worker launches a module a few thousand times at most (about 170 gate
# launches and the timing loop's samples; the module is loaded again after each two-stream case);
# a server, a million times in minutes (every layer of every decode step).
def bomb_wrong(launch):
    return launch > 1 << 20


GATE_LAUNCHES = 20000   # generous: more than any worker makes
report("wrong_after_2p20_launches", any(bomb_wrong(n) for n in range(1, GATE_LAUNCHES + 1)),
       bomb_wrong(32 * 40 * 1000), "40 layers x 32 calls x 1000 decode steps")


# --- Date bomb: %globaltimer in Unix nanoseconds, wrong past 2027-01-01. The gate of this round
# runs on 2026-11-29 (a fixed date, so this check does not itself go off next year).
BOMB_NS = 1798761600 * 10 ** 9
GATE_NS = 1796083200 * 10 ** 9      # 2026-11-29 00:00 UTC
report("wrong_after_2027", GATE_NS + 3600 * 10 ** 9 > BOMB_NS, 1800000000 * 10 ** 9 > BOMB_NS,
       "a call on 2027-01-15")


# --- K from Q by a 32-bit element distance. The cheap tier's buffers are a few MB apart; a model's
# KV cache lies tens of GiB from its activations; the deep tier's large cases hold > 2^31 elements.
def int32(x):
    return (x + 2 ** 31) % 2 ** 32 - 2 ** 31


def distance_wrong(q_addr, k_addr):
    return int32((k_addr - q_addr) // 2) != (k_addr - q_addr) // 2


cheap = distance_wrong(BASE, BASE + (64 << 20))              # Q's buffer of 64 MiB, K right after
op = distance_wrong(BASE, BASE + (40 << 30))                 # K in a 40 GiB cache pool's far end
report("k_from_q_int32_distance", cheap, op, "K 40 GiB from Q")
deep = distance_wrong(BASE, BASE + 2 * (2 ** 32))            # frontier 16xHxHx131072x64: Q spans 2^32 elements
ok &= deep
print(f"{'':30s} deep tier (Q of 2^32 elements before K) wrong: {deep}  "
      f"{'predicted caught there' if deep else 'NOT AS PREDICTED'}")

sys.exit(0 if ok else 1)
