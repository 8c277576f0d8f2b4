// A search strategy (search/strategy.h) over a stage's search space, as `evo evolve` and the
// simulation (ablate/simulate.h) drive it: one random stream per seed and generation, and the
// proposals that would repeat an evaluation dropped.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/proposal.h"
#include "search/search_space.h"

namespace evo {

class Strategy;
struct SearchState;
class TransferPrior;

// Deterministic for a seed, a generation and what the run has evaluated.
class TunableGenerator {
 public:
  // `strategy`: one of strategy_names() (a usage error otherwise). `prior`: another domain's
  // measurements (search/transfer.h), read once into SearchState::transfer; none: no transfer.
  TunableGenerator(std::vector<SearchVariant> space, const std::string& strategy, uint64_t seed,
                   const TransferPrior* prior = nullptr);
  ~TunableGenerator();
  // Up to `count` proposals, none repeating an evaluation of the run or one `state.known` names
  // (a promotion is the full evaluation of a configuration the run screened: not a repeat).
  // `state.space` is set to this generator's space.
  std::vector<Proposal> propose(SearchState state, size_t count) const;
  const std::vector<SearchVariant>& space() const { return space_; }
  size_t domain_size() const;    // every combination of the tunables
  size_t feasible_size() const;  // those the parsed EVO_CONSTRAINT rules allow

 private:
  std::vector<SearchVariant> space_;
  std::vector<Config> feasible_;                           // into space_, read once
  std::optional<std::map<std::string, double>> transfer_;  // the prior's word per feasible config_key
  std::unique_ptr<const Strategy> strategy_;
  uint64_t seed_;
};

}  // namespace evo
