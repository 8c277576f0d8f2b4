#include "run/selection.h"

#include <algorithm>
#include <random>
#include <set>

namespace evo {

std::vector<Selected> select_candidates(const Stage& stage, const Task& task, const std::string& arch,
                                        const std::vector<Elite>& previous_elites, uint64_t rng_seed) {
  std::vector<Selected> out;
  std::set<std::string> seen;
  auto add = [&](const Variant& v, const ParamSet& p, const char* origin) {
    Candidate c{&v, p, task, arch};
    if (seen.insert(v.id + "|" + c.params_text()).second) out.push_back({c, origin});
  };
  for (const auto& elite : previous_elites)
    for (const auto& v : stage.variants)
      if (v.supports(task)) add(v, carry_params(v, elite.params), "elite");
  // No elites to start from: each variant's declared defaults come first.
  if (previous_elites.empty())
    for (const auto& v : stage.variants)
      if (v.supports(task)) add(v, default_params(v), "domain");
  std::vector<std::pair<const Variant*, ParamSet>> rest;
  for (const auto& v : stage.variants)
    if (v.supports(task))
      for (const auto& p : expand_params(v)) rest.emplace_back(&v, p);
  // std::mt19937_64 and the Fisher-Yates below are fully specified, so the order is the same
  // on every platform (std::shuffle's algorithm is not).
  std::mt19937_64 rng(rng_seed);
  for (size_t i = rest.size(); i > 1; --i) std::swap(rest[i - 1], rest[rng() % i]);
  for (const auto& [v, p] : rest) add(*v, p, "domain");
  return out;
}

}  // namespace evo
