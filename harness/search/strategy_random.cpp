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
    std::vector<Config> open;
    for (const auto& c : *s.feasible)
      if (!seen.count(config_key(*c.sv->variant, c.params)) && !(s.known && s.known(*c.sv->variant, c.params)))
        open.push_back(c);
    std::vector<Proposal> out;
    while (out.size() < count && !open.empty()) {
      const size_t pick = draw(rng, open.size());
      Proposal p;
      p.variant = open[pick].sv->variant;
      p.params = open[pick].params;
      p.rationale = "uniform draw from the domain";
      out.push_back(std::move(p));
      open[pick] = std::move(open.back());
      open.pop_back();
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_random_strategy() { return std::make_unique<RandomStrategy>(); }

}  // namespace evo
