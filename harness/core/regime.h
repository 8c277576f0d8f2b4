// Shape regimes: the classes of attention calls whose fastest kernel differs (docs/deploy.md).
// A population keeps one elite per regime (store/regimes.h) and the runtime `evo export` writes
// dispatches each call to its regime's kernel: both classify shapes with this one rule, and the
// population and the exported package carry its bounds, so a package never disagrees with the
// table it came from.
#pragma once
#include <array>
#include <optional>
#include <string>

namespace evo {

enum class Regime { decode, short_seq, batched_short, long_seq };
inline constexpr int kRegimes = 4;
inline constexpr std::array<Regime, kRegimes> kAllRegimes{Regime::decode, Regime::short_seq, Regime::batched_short,
                                                          Regime::long_seq};

// The bounds of the rule. decode: a few query rows per (batch, head) reading a long KV cache
// (one token, or a speculative block of up to 16). short: a prompt of up to 1024 tokens, where
// a CTA per 64-128-row query tile leaves most of the GPU idle unless batch x heads fills it;
// batched-short is the same lengths with batch x query heads >= 128 (about one CTA per SM of an
// H100/H200, 132 SMs, from the (batch, head) grid alone). long: more than 1024 query rows.
// A causal task is a task of its own (the mask changes the work per tile), so "causal" is the
// task's column of the dispatch, with these four regimes inside it.
struct RegimeRule {
  int decode_max_seq_q = 16;
  int short_max_seq_q = 1024;
  long long batched_min_batch_heads = 128;
};

const char* regime_name(Regime r);                         // "decode", "short", "batched-short", "long"
std::optional<Regime> parse_regime(const std::string& s);  // the names above
Regime regime_of(const RegimeRule& rule, long long batch, long long heads_q, long long seq_q);
// "Sq <= 16", "Sq <= 1024, B*Hq < 128", ...: the rule of one regime in words, for tables.
std::string regime_condition(const RegimeRule& rule, Regime r);

}  // namespace evo
