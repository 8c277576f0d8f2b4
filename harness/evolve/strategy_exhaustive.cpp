// exhaustive: every configuration the parsed EVO_CONSTRAINT rules allow screened, in a seeded
// random order (so a run cut short by its budget leaves a uniform sample unmeasured, not a
// corner of the domain), then the best screens evaluated in full, best first: successive halving
// with one rung over the whole domain (Kernel Tuner's brute_force, with a screen).
// `--population` is how many per generation. `evo dataset` builds a ground-truth dataset from
// such a run (docs/evolve.md, "Datasets").
#include <algorithm>

#include "evolve/strategy.h"

namespace evo {

namespace {

class ExhaustiveStrategy : public Strategy {
 public:
  std::vector<Proposal> ask(const SearchState& s, size_t count, std::mt19937_64& rng) const override {
    const auto seen = evaluated(s);
    std::vector<Config> open;
    for (const auto& c : *s.feasible)
      if (!seen.count(config_key(*c.sv->variant, c.params)) && !(s.known && s.known(*c.sv->variant, c.params)))
        open.push_back(c);
    shuffle(open, rng);
    std::vector<Proposal> out;
    for (auto& c : open) {
      if (out.size() >= count) return out;
      Proposal q;
      q.variant = c.sv->variant;
      q.params = std::move(c.params);
      q.fidelity = Fidelity::screen;
      q.rationale = "exhaustive: screened";
      out.push_back(std::move(q));
    }
    if (!out.empty()) return out;
    std::vector<std::pair<double, const Observation*>> ranked;
    for (const auto& o : s.run) {
      const auto& e = seen.at(config_key(*o.variant, o.params));
      if (o.fidelity == Fidelity::screen && !e.failed && !e.full && e.screen_us > 0)
        ranked.emplace_back(e.screen_us, &o);
    }
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [us, o] : ranked) {
      if (out.size() >= count) break;
      Proposal q;
      q.variant = o->variant;
      q.params = o->params;
      q.fidelity = Fidelity::promote;
      q.parent = o->candidate_id;
      q.rationale = "exhaustive: promoted in screen order";
      out.push_back(std::move(q));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive_strategy() { return std::make_unique<ExhaustiveStrategy>(); }

}  // namespace evo
