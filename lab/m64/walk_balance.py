#!/usr/bin/env python3
"""How evenly tma_ws_m64's persistent walk (PERSISTENT=1) spreads causal work, round-robin against
ZIGZAG=1, counted on the CPU (stdlib only): a row tile's work is its KV tiles (BLOCK_M = BLOCK_N =
64, top-left causal: tile t of a head reads t + 1), the walk is tile_at's LPT order (every head's
longest tile first), G = 132 SMs x CTAS_PER_SM (3) CTAs, and CTA c runs on SM c mod 132 as the
hardware hands a one-wave grid out. Prints, per shape, the busiest SM's work over the mean SM's
(what sets the kernel's end while the SM's CTAs share its tensor cores) and the busiest CTA's
over the mean CTA's (the tail one CTA runs alone), and checks the walk covers every tile once.
  python3 lab/m64/walk_balance.py
"""
SMS, CTAS_PER_SM, BLOCK_M = 132, 3, 64
SHAPES = [(32, 12, 256), (2, 32, 512), (32, 32, 512), (8, 12, 1024), (8, 32, 1024), (8, 32, 2048),
          (2, 32, 8192), (1, 32, 8192), (1, 32, 16384)]  # (batch, heads_q, seq): the measured causal shapes


def walk(n_items, g, c, zigzag):
    k = 0
    while True:
        w = k * g + (g - 1 - c if zigzag and k & 1 else c)
        if w >= n_items:
            return
        yield w
        k += 1


def balance(batch, heads, seq, zigzag):
    n_qt, hb = (seq + BLOCK_M - 1) // BLOCK_M, heads * batch
    work = [n_qt - w // hb for w in range(n_qt * hb)]  # tile_at's LPT order: query tile n_qt-1-w/hb
    g = SMS * CTAS_PER_SM
    cta = [0] * g
    seen = []
    for c in range(g):
        for w in walk(len(work), g, c, zigzag):
            cta[c] += work[w]
            seen.append(w)
    assert sorted(seen) == list(range(len(work))), "the walk must take every tile once"
    sm = [sum(cta[s::SMS]) for s in range(SMS)]
    return max(sm) / (sum(work) / SMS), max(cta) / (sum(work) / g)


print("| B x H x S causal | SM max/mean round-robin | SM max/mean zigzag | CTA max/mean round-robin | CTA max/mean zigzag |")
print("|---|---:|---:|---:|---:|")
for b, h, s in SHAPES:
    rr, zz = balance(b, h, s, False), balance(b, h, s, True)
    print(f"| {b}x{h}x{s} | {rr[0]:.3f} | {zz[0]:.3f} | {rr[1]:.3f} | {zz[1]:.3f} |")
