#include "core/regime.h"

#include <fmt/format.h>

namespace evo {

const char* regime_name(Regime r) {
  const char* name = evo_regime_name(int(r));
  return name ? name : "?";
}

std::optional<Regime> parse_regime(const std::string& s) {
  for (Regime r : kAllRegimes)
    if (s == regime_name(r)) return r;
  return std::nullopt;
}

Regime regime_of(const RegimeRule& rule, long long batch, long long heads_q, long long seq_q) {
  return Regime(evo_regime_of(rule, batch, heads_q, seq_q));
}

std::string regime_condition(const RegimeRule& rule, Regime r) {
  switch (r) {
    case Regime::decode: return fmt::format("Sq <= {}", rule.decode_max_seq_q);
    case Regime::short_seq:
      return fmt::format("{} < Sq <= {}, B*Hq < {}", rule.decode_max_seq_q, rule.short_max_seq_q,
                         rule.batched_min_batch_heads);
    case Regime::batched_short:
      return fmt::format("{} < Sq <= {}, B*Hq >= {}", rule.decode_max_seq_q, rule.short_max_seq_q,
                         rule.batched_min_batch_heads);
    case Regime::long_seq: return fmt::format("Sq > {}", rule.short_max_seq_q);
  }
  return "";
}

}  // namespace evo
