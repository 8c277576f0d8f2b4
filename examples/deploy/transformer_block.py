#!/usr/bin/env python3
"""A small transformer block whose attention is PyTorch SDPA, swapped for evo's exported op.

The block (pre-norm, packed QKV projection, grouped-query attention, rotary-free, an MLP) calls
torch.nn.functional.scaled_dot_product_attention as models do. evo_attn.sdpa_swapped() replaces
that function for the duration of a `with` block, so the same module runs evo's kernels; calls the
package cannot run (another head dim, a mask) fall back to SDPA with a warning. The script runs a
causal prefill and a decode step with a KV cache both ways, eagerly and under torch.compile, and
checks the outputs against SDPA's within the gate's tolerances for the dtype (gates/gates.json).

Usage: PYTHONPATH=<export>/python python3 examples/deploy/transformer_block.py [--dtype fp16] [--head-dim 64]
Needs an export with <dtype>-d<head dim> and its -causal task (docs/deploy.md), and the GPU it was
exported for.
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import evo_attn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Block(nn.Module):
    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, (heads + 2 * kv_heads) * self.head_dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, cache=None):
        """x [B, S, dim]; cache (k, v) [B, Hkv, T, D] of earlier tokens, or None (a causal prefill)."""
        b, s, _ = x.shape
        qkv = self.qkv(self.norm1(x)).view(b, s, self.heads + 2 * self.kv_heads, self.head_dim)
        q, k, v = qkv.split([self.heads, self.kv_heads, self.kv_heads], dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # BSHD views, as models have them
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None, enable_gqa=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, -1))
        return x + self.mlp(self.norm2(x)), (k, v)


def tolerance(dtype):
    with open(os.path.join(ROOT, "gates", "gates.json")) as f:
        t = json.load(f)["tolerances"][dtype]
    return t["atol"], t["rtol"]


def check(name, got, want, dtype):
    atol, rtol = tolerance(dtype)
    # The block adds the residual stream, so compare the attention's contribution's scale too.
    err = (got.float() - want.float()).abs()
    bound = (atol + rtol * want.float().abs()) * 4  # two attention-dependent matmuls after the attention
    ok = bool((err <= bound).all())
    print("%-34s max |evo - sdpa| %.3g (bound %.3g..%.3g)  %s" % (name, float(err.max()), float(bound.min()),
                                                               float(bound.max()), "ok" if ok else "FAIL"))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtype", default="fp16", choices=["fp16", "bf16"])
    ap.add_argument("--head-dim", type=int, default=64)
    args = ap.parse_args()
    torch.manual_seed(0)
    dtype = torch.float16 if args.dtype == "fp16" else torch.bfloat16
    heads = 16
    block = Block(heads * args.head_dim, heads, 4).to("cuda", dtype).eval()
    x = torch.randn(2, 700, heads * args.head_dim, device="cuda", dtype=dtype)
    step = torch.randn(2, 1, heads * args.head_dim, device="cuda", dtype=dtype)
    print("evo_attn package for %s, tasks %s" % (evo_attn.manifest()["gpu"], ", ".join(
        t["task"] for t in evo_attn.manifest()["tasks"])))
    ok = True
    with torch.no_grad():
        want, cache = block(x)
        want_step, _ = block(step, cache)
        with evo_attn.sdpa_swapped():
            got, cache2 = block(x)
            got_step, _ = block(step, cache2)
            compiled = torch.compile(block)
            got_c, cache3 = compiled(x)
            got_c_step, _ = compiled(step, cache3)
        ok &= check("prefill (causal, 700 tokens)", got, want, args.dtype)
        ok &= check("decode step (KV cache of 700)", got_step, want_step, args.dtype)
        ok &= check("prefill under torch.compile", got_c, want, args.dtype)
        ok &= check("decode step under torch.compile", got_c_step, want_step, args.dtype)
        q = torch.randn(2, heads, 700, args.head_dim, device="cuda", dtype=dtype)
        k = torch.randn(2, 4, 700, args.head_dim, device="cuda", dtype=dtype)
        print("kernels: prefill %s, decode %s" % (
            evo_attn.kernel_for(q, k, k, True)["label"], evo_attn.kernel_for(q[:, :, :1], k, k, False)["label"]))
    print("example: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
