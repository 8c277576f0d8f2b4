// genetic: the builtin generator before issue 26, kept as a strategy for the ablation. Mutation
// (one or two tunables step to a neighbouring value, or jump) and crossover (a per-tunable mix of
// two parents of one variant), parents by a tournament of two over the stage's elites and the
// run's best full evaluations; uniform draws from the whole domain until a parent exists. It
// does not read the constraints and evaluates at the loop's fidelity.
#include <algorithm>

#include "search/strategy.h"

namespace evo {

namespace {

ParamSet uniform(const SearchVariant& sv, std::mt19937_64& rng) {
  ParamSet p;
  for (const auto& t : sv.tunables) p.emplace_back(t.name, t.values[draw(rng, t.values.size())]);
  return p;
}

// Moves one or two tunables: mostly to a neighbouring value of the (sorted) domain, sometimes
// anywhere, so the search both refines and jumps.
ParamSet mutate(const SearchVariant& sv, ParamSet p, std::mt19937_64& rng) {
  if (sv.tunables.empty()) return p;
  const size_t moves = 1 + draw(rng, 2);
  for (size_t m = 0; m < moves; ++m) {
    const size_t k = draw(rng, sv.tunables.size());
    std::vector<long> dom = sv.tunables[k].values;
    if (dom.size() < 2) continue;
    std::sort(dom.begin(), dom.end());
    const size_t at = size_t(std::find(dom.begin(), dom.end(), p[k].second) - dom.begin());
    if (at >= dom.size() || draw(rng, 4) == 0) {
      p[k].second = dom[draw(rng, dom.size())];
    } else {
      const bool up = at == 0 || (at + 1 < dom.size() && draw(rng, 2) == 0);
      p[k].second = dom[up ? at + 1 : at - 1];
    }
  }
  return p;
}

ParamSet cross(const ParamSet& a, const ParamSet& b, std::mt19937_64& rng) {
  ParamSet p = a;
  for (size_t k = 0; k < p.size() && k < b.size(); ++k)
    if (draw(rng, 2)) p[k].second = b[k].second;
  return p;
}

// The elites, then the run's best full evaluations (at most `count`), best first each.
std::vector<const Observation*> breeders(const SearchState& s, size_t count) {
  std::vector<const Observation*> out, own;
  for (const auto& o : s.prior)
    if (space_of(*s.space, o.variant) && o.value_us > 0) out.push_back(&o);
  for (const auto& o : s.run)
    if (o.fidelity != Fidelity::screen && o.outcome == "ok" && o.value_us > 0) own.push_back(&o);
  auto by_value = [](const Observation* a, const Observation* b) { return a->value_us < b->value_us; };
  std::stable_sort(out.begin(), out.end(), by_value);
  std::stable_sort(own.begin(), own.end(), by_value);
  for (size_t i = 0; i < own.size() && i < count; ++i) out.push_back(own[i]);
  return out;
}

class GeneticStrategy : public Strategy {
 public:
  std::vector<Proposal> ask(const SearchState& s, size_t count, std::mt19937_64& rng) const override {
    const auto parents = breeders(s, count);
    std::vector<Proposal> out;
    // Bounded: a nearly exhausted domain ends the generation short rather than spinning (the
    // caller drops repeats).
    for (size_t tries = 0; out.size() < 4 * count && tries < 50 * count && !s.space->empty(); ++tries) {
      Proposal p;
      if (parents.empty()) {
        const SearchVariant& sv = (*s.space)[draw(rng, s.space->size())];
        p.variant = sv.variant;
        p.params = uniform(sv, rng);
        p.rationale = "no elite yet: uniform draw";
      } else {
        const Observation* a = parents[std::min(draw(rng, parents.size()), draw(rng, parents.size()))];
        const SearchVariant& sv = *space_of(*s.space, a->variant);
        const Observation* b = parents[draw(rng, parents.size())];
        p.variant = sv.variant;
        if (b != a && b->variant == a->variant && draw(rng, 10) < 3) {
          p.params = mutate(sv, cross(aligned(sv, a->params), aligned(sv, b->params), rng), rng);
          p.parent = a->candidate_id + "+" + b->candidate_id;
          p.rationale = "crossover of two elites, then a mutation";
        } else {
          p.params = mutate(sv, aligned(sv, a->params), rng);
          p.parent = a->candidate_id;
          p.rationale = "mutation of an elite";
        }
      }
      const bool repeat = std::any_of(out.begin(), out.end(), [&](const Proposal& o) { return o.params == p.params; });
      if (!repeat) out.push_back(std::move(p));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_genetic_strategy() { return std::make_unique<GeneticStrategy>(); }

}  // namespace evo
