#include <algorithm>
#include <random>

#include "evolve/generator.h"

namespace evo {

namespace {

// std::mt19937_64 is fully specified; the draws below use only its raw output, so a seed gives
// the same proposals on every platform (std::uniform_int_distribution is not specified).
size_t draw(std::mt19937_64& rng, size_t n) { return n <= 1 ? 0 : size_t(rng() % n); }

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

// The parent's params laid out in the search variant's order (a parent from an older record
// may miss a tunable: it takes the default).
ParamSet aligned(const SearchVariant& sv, const ParamSet& given) {
  ParamSet p;
  for (const auto& t : sv.tunables) {
    long v = t.values.front();
    for (const auto& [n, x] : given)
      if (n == t.name) v = x;
    p.emplace_back(t.name, v);
  }
  return p;
}

}  // namespace

TunableGenerator::TunableGenerator(std::vector<SearchVariant> space, bool random_only, uint64_t seed)
    : space_(std::move(space)), random_only_(random_only), seed_(seed) {}

size_t TunableGenerator::domain_size() const {
  size_t n = 0;
  for (const auto& sv : space_) n += sv.configs();
  return n;
}

const SearchVariant* TunableGenerator::space_of(const Variant* v) const {
  for (const auto& sv : space_)
    if (sv.variant == v) return &sv;
  return nullptr;
}

std::vector<Proposal> TunableGenerator::propose(
    const std::vector<Individual>& parents, size_t count, int generation,
    const std::function<bool(const Variant&, const ParamSet&)>& known) const {
  std::mt19937_64 rng(seed_ * 1000003u + uint64_t(generation));
  std::vector<Proposal> out;
  std::vector<const Individual*> breeders;
  for (const auto& p : parents)
    if (space_of(p.variant)) breeders.push_back(&p);
  auto seen = [&](const Proposal& p) {
    if (known(*p.variant, p.params)) return true;
    for (const auto& o : out)
      if (o.variant == p.variant && o.params == p.params) return true;
    return false;
  };
  // Bounded retries: a nearly exhausted domain ends the generation short rather than spinning.
  for (size_t tries = 0; out.size() < count && tries < 50 * count && !space_.empty(); ++tries) {
    Proposal p;
    if (random_only_ || breeders.empty()) {
      const SearchVariant& sv = space_[draw(rng, space_.size())];
      p = {sv.variant, uniform(sv, rng), "", "",
           random_only_ ? "uniform draw from the domain" : "no elite yet: uniform draw"};
    } else {
      // Tournament of two over the ranked parents (best first): the fitter one breeds.
      const Individual* a = breeders[std::min(draw(rng, breeders.size()), draw(rng, breeders.size()))];
      const SearchVariant& sv = *space_of(a->variant);
      const Individual* b = breeders[draw(rng, breeders.size())];
      if (b != a && b->variant == a->variant && draw(rng, 10) < 3) {
        p = {sv.variant, cross(aligned(sv, a->params), aligned(sv, b->params), rng), "",
             a->candidate_id + "+" + b->candidate_id, "crossover of two elites"};
        if (seen(p)) p.params = mutate(sv, p.params, rng), p.rationale = "crossover of two elites, then a mutation";
      } else {
        p = {sv.variant, mutate(sv, aligned(sv, a->params), rng), "", a->candidate_id, "mutation of an elite"};
      }
    }
    if (!seen(p)) out.push_back(std::move(p));
  }
  return out;
}

}  // namespace evo
