// Shape regimes: the classes of attention calls whose fastest kernel differs (docs/deploy.md).
// The one copy of the rule: evo compiles it (harness/core/regime.h: a population keeps one elite
// per regime) and so does the package `evo export` writes (deploy/src/plan.cpp dispatches each
// call to its regime's kernel, built against the copy in the package's kernels/). The population
// and the package carry the rule's bounds, so a package never disagrees with the table it came
// from. Plain C++, no header: host code only (no kernel needs it), safe under NVRTC all the same.
#pragma once

// The regimes in dispatch-table order (evo_attn_plan.regime, evo's Regime).
enum EvoRegime { EVO_REGIME_DECODE = 0, EVO_REGIME_SHORT = 1, EVO_REGIME_BATCHED_SHORT = 2, EVO_REGIME_LONG = 3 };
#define EVO_REGIMES 4

// The bounds of the rule. decode: a few query rows per (batch, head) reading a long KV cache
// (one token, or a speculative block of up to 16). short: a prompt of up to 1024 tokens, where
// a CTA per 64-128-row query tile leaves most of the GPU idle unless batch x heads fills it;
// batched-short is the same lengths with batch x query heads >= 128 (about one CTA per SM of an
// H100/H200, 132 SMs, from the (batch, head) grid alone). long: more than 1024 query rows.
// A causal task is a task of its own (the mask changes the work per tile), so "causal" is the
// task's column of the dispatch, with these four regimes inside it.
struct EvoRegimeRule {
  int decode_max_seq_q = 16;
  int short_max_seq_q = 1024;
  long long batched_min_batch_heads = 128;
};

// The regime (EvoRegime) of a call with these query sizes.
inline int evo_regime_of(const EvoRegimeRule& rule, long long batch, long long heads_q, long long seq_q) {
  if (seq_q <= rule.decode_max_seq_q) return EVO_REGIME_DECODE;
  if (seq_q > rule.short_max_seq_q) return EVO_REGIME_LONG;
  return batch * heads_q >= rule.batched_min_batch_heads ? EVO_REGIME_BATCHED_SHORT : EVO_REGIME_SHORT;
}

// "decode", "short", "batched-short", "long"; null for a number that is no regime.
inline const char* evo_regime_name(int regime) {
  switch (regime) {
    case EVO_REGIME_DECODE: return "decode";
    case EVO_REGIME_SHORT: return "short";
    case EVO_REGIME_BATCHED_SHORT: return "batched-short";
    case EVO_REGIME_LONG: return "long";
  }
  return nullptr;
}
