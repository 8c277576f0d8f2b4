// exhaustive: every configuration the parsed EVO_CONSTRAINT rules allow screened, in a seeded
// random order (so a run cut short by its budget leaves a uniform sample unmeasured, not a
// corner of the domain), and the best screens evaluated in full, best first: successive halving
// with one rung over the whole domain (Kernel Tuner's brute_force, with a screen). Each
// generation first promotes the best screen not yet evaluated in full (once there is one), then
// screens what is left with the rest of `--population`; when everything is screened, promotions
// fill the generation. `evo dataset` builds a ground-truth dataset from such a run
// (docs/evolve.md, "Datasets"); lab/device-sessions/search.sh runs it as a screening generation,
// then generations of one (one promotion each) until the budget is spent.
#include <algorithm>

#include "search/strategy.h"

namespace evo {

namespace {

// Screened, not failed, not yet evaluated in full: best screen first.
std::vector<const Observation*> screened_best_first(const SearchState& s,
                                                    const std::map<std::string, Evaluated>& seen) {
  std::vector<std::pair<double, const Observation*>> ranked;
  for (const auto& o : s.run) {
    const auto& e = seen.at(config_key(*o.variant, o.params));
    if (o.fidelity == Fidelity::screen && !e.failed && !e.full && e.screen_us > 0) ranked.emplace_back(e.screen_us, &o);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const Observation*> out;
  for (const auto& [us, o] : ranked) out.push_back(o);
  return out;
}

Proposal promotion(const Observation& o) {
  Proposal q;
  q.variant = o.variant;
  q.params = o.params;
  q.fidelity = Fidelity::promote;
  q.parent = o.candidate_id;
  q.rationale = "exhaustive: the best screen not yet evaluated in full";
  return q;
}

class ExhaustiveStrategy : public Strategy {
 public:
  std::vector<Proposal> ask(const SearchState& s, size_t count, std::mt19937_64& rng) const override {
    const auto seen = evaluated(s);
    std::vector<Config> open = unevaluated(s, seen);
    shuffle(open, rng);
    const auto best = screened_best_first(s, seen);
    // One promotion a generation while screens remain; all of them once none does.
    const size_t promote = std::min(best.size(), open.empty() ? count : std::min<size_t>(count, 1));
    std::vector<Proposal> out;
    for (size_t i = 0; i < promote; ++i) out.push_back(promotion(*best[i]));
    for (auto& c : open) {
      if (out.size() >= count) break;
      Proposal q;
      q.variant = c.sv->variant;
      q.params = std::move(c.params);
      q.fidelity = Fidelity::screen;
      q.rationale = "exhaustive: screened";
      out.push_back(std::move(q));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive_strategy() { return std::make_unique<ExhaustiveStrategy>(); }

}  // namespace evo
