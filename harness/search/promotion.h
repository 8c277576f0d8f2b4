// The promotion rule the builtin and the screened strategy share (docs/evolve.md, "builtin"):
// the second rung of successive halving, promoted asynchronously as ASHA does. Once kScreensFirst
// configurations are measured, one promotion a generation: the best screened configuration when
// its screen, scaled by the measured full/screen ratio, beats the best full evaluation or ties it
// within the screens' own noise (twice the median absolute deviation of full/screen, once
// kNoiseSample configurations are measured both ways); once every configuration is screened, the
// best remaining ones in turn. Both constants were tuned on the H200 stage-7 dataset
// (docs/evolve.md says which seeds, and that the judgement on that dataset is optimistic).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "search/strategy.h"

namespace evo {

inline constexpr size_t kScreensFirst = 8;  // measured configurations before the first promotion
inline constexpr size_t kNoiseSample = 3;   // configurations measured both ways before the noise counts

// One configuration the run (or the elites before it) measured, at the value a model learns:
// its full evaluation, else its screen scaled by the full/screen ratio.
struct Measured {
  const Observation* observation = nullptr;
  double us = 0;
};

// Where the screens stand against the full evaluations.
struct ScreenStanding {
  double ratio = 1;                // full / screen, median over configurations measured at both
  double noise = 0;                // how far a screen may misjudge a full evaluation (relative)
  double incumbent = 0;            // best full µs (run or prior)
  std::vector<Measured> measured;  // each configuration once (prior first), failures left out
};

ScreenStanding screen_standing(const SearchState& s, const std::map<std::string, Evaluated>& seen);

// One generation of a strategy that screens and promotes: what it has not evaluated yet, where the
// screens stand, and the promotions due. Every slot is a promotion once nothing is left to screen,
// one once kScreensFirst configurations are measured, none before; with one slot (screens
// remain) only a screen that beats or ties the incumbent is promoted, otherwise the best
// remaining in turn, best screen first.
struct PromotionRound {
  std::vector<Config> open;  // allowed and never evaluated (search/strategy.h: unevaluated)
  ScreenStanding standing;
  std::vector<Proposal> promoted;
};
PromotionRound promotion_round(const SearchState& s, size_t count);

}  // namespace evo
