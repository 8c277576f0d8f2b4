// screened: random sampling with the builtin's screens and promotion rule, and no model. Each
// generation the promotion the builtin would make (search/promotion.h), then uniform draws
// without repetition from what the parsed EVO_CONSTRAINT rules allow, screened. The baseline that
// tells what the builtin's Gaussian-process model adds to its cheap screens (docs/evolve.md).
#include "search/promotion.h"
#include "search/strategy.h"

namespace evo {

namespace {

class ScreenedStrategy : public Strategy {
 public:
  std::vector<Proposal> ask(const SearchState& s, size_t count, std::mt19937_64& rng) const override {
    PromotionRound round = promotion_round(s, count);
    std::vector<Proposal> out = std::move(round.promoted);
    auto screens =
        uniform_draws(round.open, count - out.size(), Fidelity::screen, "uniform draw from the domain: screened", rng);
    out.insert(out.end(), screens.begin(), screens.end());
    return out;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_screened_strategy() { return std::make_unique<ScreenedStrategy>(); }

}  // namespace evo
