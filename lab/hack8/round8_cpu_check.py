#!/usr/bin/env python3
"""Hacker round 8 (issue 29 item 5): each try's flaw replayed on the CPU, in the kernel's own
address arithmetic, on the placements the gate on main gives (right), on one the exported op
accepts (wrong), and on round 8's drawn placements (gpu/case_layout.cpp buffer_pool, ported
below: wrong in some cases of every run). Stdlib only; one line per try, exit 1 if a flaw does not
show where predicted. Addresses are byte addresses, strides element strides (fp16)."""
import sys

ok = True
E = 2  # bytes per element (fp16)
B, H, HKV, SQ, SKV, D = 2, 4, 2, 8, 12, 64
GUARD = 64 * 1024


def report(name, gate_bad, op_bad, drawn_bad, note):
    global ok
    shows = op_bad and not gate_bad and drawn_bad > 0
    ok &= shows
    print(f"{name:28s} main's placement wrong: {gate_bad!s:5s}  op input wrong: {op_bad!s:5s}  "
          f"round 8 draws wrong: {drawn_bad:3d} of 240  {'flaw shows' if shows else 'NOT AS PREDICTED'} ({note})")


# The views (batch, head, row strides; elements): Q BHSD, K a head-major cache with room for 37
# more keys, V seq-major [Skv, B, Hkv, D], O token-major (kv_cache's and mixed's kinds).
Q = (H * SQ * D, SQ * D, D)
K = (HKV * (SKV + 37) * D, (SKV + 37) * D, D)
V = (HKV * D, D, B * HKV * D)
O = (SQ * H * D, D, H * D)
STRIDES = {'q': Q, 'k': K, 'v': V, 'o': O}
HEADS = {'q': H, 'k': HKV, 'v': HKV, 'o': H}
ROWS = {'q': SQ, 'k': SKV, 'v': SKV, 'o': SQ}


def span(t):  # bytes from a view's first element to past its last (the tries' one-sided tests)
    s = STRIDES[t]
    return E * ((B - 1) * s[0] + (HEADS[t] - 1) * s[1] + (ROWS[t] - 1) * s[2] + D)


def buffer_bytes(t):
    s = STRIDES[t]
    return E * max((B - 1) * s[0] + (HEADS[t] - 1) * s[1] + (ROWS[t] - 1) * s[2] + D, s[0] * B)


def elems(t):
    return [(b, h, j) for b in range(B) for h in range(HEADS[t]) for j in range(ROWS[t])]


def at(base, st, b, h, j):
    return base + E * (b * st[0] + h * st[1] + j * st[2])


# --- Placements. Main: Q, K, V, O allocated in that order, rising, 2 MiB apart (cuMemAlloc's
# granularity) after each guarded buffer. The op: a server's V and K caches allocated at start-up
# (V first), an output buffer preallocated, then each step's Q (a per-step activation). Round 8:
# one pool in a drawn order at drawn gaps (buffer_pool).
def main_placement():
    p, a = {}, 1 << 32
    for t in 'qkvo':
        p[t] = a + GUARD
        a += ((buffer_bytes(t) + 2 * GUARD) + (2 << 20) - 1) // (2 << 20) * (2 << 20)
    return p


OP = {'v': 1 << 32, 'k': (1 << 32) + (256 << 20), 'o': (1 << 32) + (512 << 20), 'q': (1 << 32) + (1 << 30)}
M64 = (1 << 64) - 1


def buffer_pool(draw):
    region = {t: (buffer_bytes(t) + 2 * GUARD + 255) // 256 * 256 for t in 'qkvo'}
    h = (draw + 0x9E3779B97F4A7C15) & M64
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & M64
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & M64
    h ^= h >> 31
    left, n, order, f = list('qkvo'), h % 24, [], 6
    for i in range(4):
        pick = n // f if f else 0
        order.append(left.pop(pick))
        if f:
            n %= f
        f = f // (3 - i) if i < 2 else 0
    p, a = {}, 1 << 32
    for i, t in enumerate(order):
        a += 256 * ((h >> (8 + 6 * i)) & 63)
        p[t] = a + GUARD
        a += region[t]
    return p


DRAWS = [buffer_pool((n * 0x9E3779B9) & 0xFFFFFFFF) for n in range(1, 241)]
assert len({tuple(sorted(p, key=p.get)) for p in DRAWS}) == 24, "every order drawn"


# --- The flaws: where each reads (or writes) element (b, h, j) of one tensor, against where it lies.
def one_sided(t, owner):  # t below owner's end (or anywhere below it) takes owner's strides
    def addr(p, b, h, j):
        d = p[t] - p[owner]
        return at(p[t], STRIDES[owner] if d != 0 and d < span(owner) else STRIDES[t], b, h, j)
    return t, addr


def lower_is_k(p, b, h, j):  # K read from the lower of K and V
    base, st = (p['v'], V) if p['v'] < p['k'] else (p['k'], K)
    return at(base, st, b, h, j)


def uint32_from(t, owner):  # t's base as owner + (t - owner) elements held in 32 unsigned bits
    def addr(p, b, h, j):
        return at(p[owner] + E * (((p[t] - p[owner]) // E) % (1 << 32)), STRIDES[t], b, h, j)
    return t, addr


TRIES = {
    'k_below_q_takes_q_strides': (one_sided('k', 'q'), "round 7's open hole: K below Q read with Q's strides"),
    'v_below_k_takes_k_strides': (one_sided('v', 'k'), "V below K read with K's strides"),
    'o_below_q_takes_q_strides': (one_sided('o', 'q'), "O below Q written with Q's strides"),
    'kv_lower_pointer_is_k': (('k', lower_is_k), "V below K: keys and values swapped"),
    'k_from_q_uint32_distance': (uint32_from('k', 'q'), "K below Q: read 2^32 elements past Q"),
    'v_from_k_uint32_distance': (uint32_from('v', 'k'), "V below K: read 2^32 elements past K"),
    'o_from_q_uint32_distance': (uint32_from('o', 'q'), "O below Q: written 2^32 elements past Q"),
    'v_below_q_takes_q_strides': (one_sided('v', 'q'), "V below Q read with Q's strides"),
}


def wrong(p, t, addr):
    return any(addr(p, *e) != at(p[t], STRIDES[t], *e) for e in elems(t))


for name, ((t, addr), note) in TRIES.items():
    report(name, wrong(main_placement(), t, addr), wrong(OP, t, addr), sum(wrong(p, t, addr) for p in DRAWS), note)

sys.exit(0 if ok else 1)
