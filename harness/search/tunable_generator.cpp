#include <set>

#include "search/strategy.h"
#include "search/transfer.h"
#include "search/tunable_generator.h"

namespace evo {

TunableGenerator::TunableGenerator(std::vector<SearchVariant> space, const std::string& strategy, uint64_t seed,
                                   const TransferPrior* prior)
    : space_(std::move(space)), feasible_(feasible_configs(space_)), strategy_(make_strategy(strategy)), seed_(seed) {
  if (prior) transfer_ = prior->means(space_, feasible_);
}

TunableGenerator::~TunableGenerator() = default;

size_t TunableGenerator::domain_size() const {
  size_t n = 0;
  for (const auto& sv : space_) n += sv.configs();
  return n;
}

size_t TunableGenerator::feasible_size() const { return feasible_.size(); }

std::vector<Proposal> TunableGenerator::propose(SearchState state, size_t count) const {
  state.space = &space_;
  state.feasible = &feasible_;
  state.transfer = transfer_ ? &*transfer_ : nullptr;
  // One stream per seed and generation: a resumed run draws what the first one would have.
  std::mt19937_64 rng(seed_ * 1000003u + uint64_t(state.generation));
  const auto seen = evaluated(state);
  std::set<std::string> taken;
  std::vector<Proposal> out;
  for (auto& p : strategy_->ask(state, count, rng)) {
    if (!p.variant || out.size() >= count) continue;
    const std::string key = config_key(*p.variant, p.params);
    auto it = seen.find(key);
    if (p.fidelity == Fidelity::promote) {
      // Only the full evaluation of a configuration this run screened, once.
      if (it == seen.end() || !it->second.screened || it->second.full || it->second.failed) continue;
    } else if (it != seen.end() || (state.known && state.known(*p.variant, p.params))) {
      continue;
    }
    if (taken.insert(key).second) out.push_back(std::move(p));
  }
  return out;
}

}  // namespace evo
