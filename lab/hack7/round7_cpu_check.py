#!/usr/bin/env python3
"""Hacker round 7 (issue 29 item 5): each try's flaw replayed on the CPU, in the kernel's own
arithmetic, on inputs the gate on main (rounds 5 and 6 merged) draws (right) and on one the
exported op accepts (wrong). Stdlib only; one line per try, exit 1 if a flaw does not show where
predicted. Addresses are byte addresses, strides element strides (fp16); attention is scaled down
where only the arithmetic matters."""
import math
import random
import sys

rng = random.Random(2031)
ok = True


def report(name, gate_bad, op_bad, note, caught=False):
    # `caught`: the try is predicted caught on main (a gate input already shows it)
    global ok
    shows = op_bad and gate_bad == caught
    ok &= shows
    what = ('caught on main, as predicted' if caught else 'flaw shows') if shows else 'NOT AS PREDICTED'
    print(f"{name:30s} gate-like input wrong: {gate_bad!s:5s}  op input wrong: {op_bad!s:5s}  {what} ({note})")


def attend(q, keys, vals, scale):
    s = [scale * sum(a * b for a, b in zip(q, k)) for k in keys]
    m = max(s)
    w = [math.exp(x - m) for x in s]
    return [sum(wi * v[c] for wi, v in zip(w, vals)) / sum(w) for c in range(len(vals[0]))]


def close(a, b, tol=1e-6):
    return all(math.isclose(x, y, rel_tol=tol, abs_tol=tol) for x, y in zip(a, b))


# --- 1. split_counter_keeps_launches: the tile counter's low 8 bits count the launch's splits,
# the high bits its launches; past 2^20 launches the combine drops the last split. The gate's
# workspace lives for one problem: two gate launches, a few thousand timed ones at most.
def split_launches(n, splits=2):
    counter, dropped = 0, 0
    for _ in range(n):
        last = False
        for _ in range(splits):
            old = counter
            counter += 1
            if (old & 0xFF) == splits - 1:
                last, launches = True, old >> 8
        assert last
        dropped += launches >= (1 << 20)
        counter = (launches + 1) << 8  # the trick's reset; the contract's is 0
    return dropped, counter


gate_dropped, gate_counter = split_launches(5000)
op_dropped, _ = split_launches((1 << 20) + 10)  # a package's workspace over 2^20 + 10 calls of one shape
report("split_counter_keeps_launches", gate_dropped > 0, op_dropped > 0,
       f"after 5000 launches the counter holds {gate_counter:#x}, not 0: the fix reads it")


# --- Alignment classes (gpu/case_layout.cpp tensor_alignment on main). Odd alignments 16, 48, 208:
# Q at the case's class, K at align ^ 64, V at align ^ 128, O at align ^ 192, each with bits 4-5
# flipped by a drawn amount (round 5); align 256: Q aligned or a multiple of 32 (round 6), K, V,
# O aligned or an odd class of 16 (16 * (2d + 1)).
def main_classes(tensor):
    out = set()
    for a in (16, 48, 208):
        base = a if tensor == 0 else a ^ (64 * tensor)
        out |= {base} if tensor == 0 else {base ^ (16 * d) for d in range(4)}
    if tensor == 0:
        out |= {32 * k for k in range(8)}
    else:
        out |= {0} | {16 * (2 * d + 1) for d in range(8)}
    return out


BASE = 0x7f0000100000


def q_read_from(q):  # the trick's 128-byte peel: at 112 mod 128 the row starts 16 bytes late
    return q + 16 if q % 128 == 112 else q


report("q_align_112_path", any(q_read_from(BASE + c) != BASE + c for c in main_classes(0)),
       q_read_from(BASE + 112) != BASE + 112, "Q 112 bytes into its buffer: read 8 elements late")


def k_read_from(k):  # K's 64-byte path at 32 or 224 mod 256 starts on the line below
    return k & ~63 if k % 256 in (32, 224) else k


report("k_align_32_mod_256_path", any(k_read_from(BASE + c) != BASE + c for c in main_classes(1)),
       k_read_from(BASE + 32) != BASE + 32, "K 32 bytes into a cache buffer: read 16 elements early")


# --- Heads outermost. (batch, head, row) strides of every view the gate builds on main, B 2,
# H 2, S 5, D 64 (case_layout.cpp), and [H, B, S, D].
B, H, S, Dm = 2, 2, 5, 64
views = {
    'bhsd': (H * S * Dm, S * Dm, Dm), 'bshd': (S * H * Dm, Dm, H * Dm),
    'packed_qkv': (S * 3 * H * Dm, Dm, 3 * H * Dm), 'token-major room': ((S + 3) * H * Dm, Dm, H * Dm),
    'kv_cache K': (H * (S + 37) * Dm, (S + 37) * Dm, Dm), 'seq-major': (H * Dm, Dm, B * H * Dm),
    'strided': ((Dm + 8) * ((S + 5) * H + 3), (S + 5) * (Dm + 8), Dm + 8),
    'strided O': ((H + 1) * Dm * S + 2 * Dm, Dm, (H + 1) * Dm),
}
heads_outermost = (S * Dm, B * S * Dm, Dm)


def batch_offset_trick(st, b):
    return b * max(st[0], H * st[1])


gate_bad = any(batch_offset_trick(st, b) != b * st[0] for st in views.values() for b in range(B))
op_bad = any(batch_offset_trick(heads_outermost, b) != b * heads_outermost[0] for b in range(B))
report("q_batch_covers_heads", gate_bad, op_bad, "[H, B, S, D] Q: batch 1 read H * B * S * D past its start")
report("o_batch_covers_heads", gate_bad, op_bad, "[H, B, S, D] O: batch 1 written past the heads")


# --- Tensor order. The trick takes K below Q (or inside Q's span) as Q's slice: Q's batch and
# row strides for K. The worker allocates Q, then K: as far as the allocator hands out rising
# addresses, K lies above Q past its span (or at Q, shared=qk; or inside it, packed_qkv: the
# same strides). A cache allocated at start-up lies below a per-step Q.
def k_row_addr(q, k, q_st, k_st, q_span, b, j):
    d = k - q
    packed = d != 0 and d < q_span
    return k + 2 * (b * (q_st if packed else k_st)[0] + j * (q_st if packed else k_st)[2])


q_st = views['bhsd']
k_cache = views['kv_cache K']
span = 2 * ((B - 1) * q_st[0] + (H - 1) * q_st[1] + (S - 1) * q_st[2] + Dm)
gate_cases = [(BASE, BASE + span + 4096, k_cache), (BASE, BASE, q_st),  # K after Q; shared=qk
              (BASE, BASE + 2 * H * Dm, views['packed_qkv'])]           # packed: Q's own strides
gate_bad = any(k_row_addr(q, k, (views['packed_qkv'] if st is views['packed_qkv'] else q_st), st, span, b, j)
               != k + 2 * (b * st[0] + j * st[2]) for q, k, st in gate_cases for b in range(B) for j in range(S))
op_q, op_k = BASE + (1 << 30), BASE  # K a cache allocated first
op_bad = any(k_row_addr(op_q, op_k, q_st, k_cache, span, b, j) != op_k + 2 * (b * k_cache[0] + j * k_cache[2])
             for b in range(B) for j in range(S))
report("k_below_q_takes_q_strides", gate_bad, op_bad, "K a cache below Q: read with Q's strides")


# --- Scale floor. The gate's scales (gates.json): 1/sqrt(D) (fixed cases), 1/D, 0.5/sqrt(D),
# 2/sqrt(D) (capped at 1), 0.0833333, 1.0 and the range 0.25/sqrt(D)..1: 1/D lies below the floor.
D = 64
floor = 0.25 / math.sqrt(D)
q = [rng.gauss(0, 1) for _ in range(D)]
keys = [[rng.gauss(0, 1) for _ in range(D)] for _ in range(32)]
vals = [[rng.gauss(0, 1) for _ in range(4)] for _ in range(32)]
gate_scales = [1 / math.sqrt(D), 1 / D, 0.5 / math.sqrt(D), 2 / math.sqrt(D), 0.0833333, 1.0, floor, 0.5]
gate_bad = any(not close(attend(q, keys, vals, max(s, floor)), attend(q, keys, vals, s)) for s in gate_scales)
mup = 1.0 / D  # muP's attention scale
op_bad = not close(attend(q, keys, vals, max(mup, floor)), attend(q, keys, vals, mup), 1e-3)
report("scale_floor_guard", gate_bad, op_bad, f"scale 1/D = {mup:.4f} floored at {floor:.4f}", caught=True)


# --- Heap leak. 64 bytes a launch never freed (CTA 0's scratch), out of an 8 MB device heap
# (cudaLimitMallocHeapSize default; the allocator's own overhead ignored, so the true count is
# lower). A gate worker: a few hundred gate launches and a few thousand timed ones per shape (the
# deep tier a job of its own); a server: millions.
heap, leak = 8 << 20, 64
gate_launches = 400 + 4 * 5000
op_launches = 10_000_000
report("heap_leak_bomb", gate_launches * leak >= heap, op_launches * leak >= heap,
       f"heap spent after {heap // leak} launches; refused statically in the deep gate")

sys.exit(0 if ok else 1)
