// random: uniform draws, without repetition, from the configurations the parsed EVO_CONSTRAINT
// rules allow, each evaluated at the loop's fidelity (full; with --quick screened first). The
// baseline the ablation compares against (Kernel Tuner's random_sample).
#include "search/strategy.h"

namespace evo {

namespace {

class RandomStrategy : public Strategy {
 public:
  std::vector<Proposal> ask(const SearchState& s, size_t count, std::mt19937_64& rng) const override {
    const auto seen = evaluated(s);
    std::vector<Config> open = unevaluated(s, seen);
    return uniform_draws(open, count, Fidelity::unset, "uniform draw from the domain", rng);
  }
};

}  // namespace

std::unique_ptr<Strategy> make_random_strategy() { return std::make_unique<RandomStrategy>(); }

}  // namespace evo
