// Shape regimes: the classes of attention calls whose fastest kernel differs (docs/deploy.md).
// A population keeps one elite per regime (store/regimes.h) and the runtime `evo export` writes
// dispatches each call to its regime's kernel. The rule and its bounds are the ABI floor's
// (variants/common/evo_regime.h), compiled by both, so a package never disagrees with the table
// it came from; this is evo's typed face of it.
#pragma once
#include <array>
#include <optional>
#include <string>

#include "common/evo_regime.h"

namespace evo {

enum class Regime {
  decode = EVO_REGIME_DECODE,
  short_seq = EVO_REGIME_SHORT,
  batched_short = EVO_REGIME_BATCHED_SHORT,
  long_seq = EVO_REGIME_LONG
};
inline constexpr int kRegimes = EVO_REGIMES;
inline constexpr std::array<Regime, kRegimes> kAllRegimes{Regime::decode, Regime::short_seq, Regime::batched_short,
                                                          Regime::long_seq};

// The rule's bounds (decode_max_seq_q 16, short_max_seq_q 1024, batched_min_batch_heads 128
// unless a population says otherwise): evo_regime.h gives the reasons.
using RegimeRule = EvoRegimeRule;

const char* regime_name(Regime r);                         // "decode", "short", "batched-short", "long"
std::optional<Regime> parse_regime(const std::string& s);  // the names above
Regime regime_of(const RegimeRule& rule, long long batch, long long heads_q, long long seq_q);
// "Sq <= 16", "Sq <= 1024, B*Hq < 128", ...: the rule of one regime in words, for tables.
std::string regime_condition(const RegimeRule& rule, Regime r);

}  // namespace evo
