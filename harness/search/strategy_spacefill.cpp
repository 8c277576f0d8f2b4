// spacefill: the builtin without its model. Each generation the promotion the builtin would make
// (search/promotion.h), then screens chosen as the builtin's start chooses them, for the whole
// run: the configuration farthest from everything measured or picked (greedy maximin,
// strategy.h). The baseline that separates what the builtin's Gaussian-process model adds from
// what its way of spreading screens over the domain adds (issue 31; docs/evolve.md).
#include "search/promotion.h"
#include "search/strategy.h"

namespace evo {

namespace {

class SpaceFillStrategy : public Strategy {
 public:
  std::vector<Proposal> ask(const SearchState& s, size_t count, std::mt19937_64& rng) const override {
    PromotionRound round = promotion_round(s, count);
    std::vector<Proposal> out = std::move(round.promoted);
    if (out.size() >= count || round.open.empty()) return out;
    std::vector<GpPoint> measured;
    for (const auto& m : round.standing.measured) {
      const SearchVariant& sv = *space_of(*s.space, m.observation->variant);
      measured.push_back(rank_point(*s.space, sv, aligned(sv, m.observation->params)));
    }
    auto screens = maximin_screens(s, std::move(measured), round.open, count - out.size(),
                                   "farthest from everything measured: screened", rng);
    out.insert(out.end(), screens.begin(), screens.end());
    return out;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_spacefill_strategy() { return std::make_unique<SpaceFillStrategy>(); }

}  // namespace evo
