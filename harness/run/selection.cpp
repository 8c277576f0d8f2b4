#include "run/selection.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <set>

#include "core/errors.h"

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

ConfigPattern parse_config_pattern(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return usage_error(fmt::format("--only '{}': {} (write VARIANT or VARIANT:NAME=VALUE,...)", text, why));
  };
  ConfigPattern p;
  p.text = text;
  const size_t colon = text.find(':');
  p.variant = text.substr(0, colon);
  if (p.variant.empty()) throw bad("no variant");
  if (colon == std::string::npos) return p;
  const std::string list = text.substr(colon + 1);
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string item = list.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == item.size()) throw bad("'" + item + "' is not NAME=VALUE");
    const std::string value = item.substr(eq + 1);
    size_t used = 0;
    long v = 0;
    try {
      v = std::stol(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size()) throw bad("'" + value + "' is not an integer");
    p.params.emplace_back(item.substr(0, eq), v);
    start = end + 1;
  }
  return p;
}

bool matches(const ConfigPattern& pattern, const Candidate& c) {
  const std::string& id = c.variant->id;
  const std::string stem = id.substr(id.find('/') + 1);
  if (pattern.variant != id && pattern.variant != stem) return false;
  for (const auto& [name, value] : pattern.params) {
    const auto it = std::find_if(c.params.begin(), c.params.end(), [&](const auto& p) { return p.first == name; });
    if (it == c.params.end() || it->second != value) return false;
  }
  return true;
}

void keep_only(std::vector<Selected>& selected, const std::vector<ConfigPattern>& patterns,
               const std::string& task_name) {
  if (patterns.empty()) return;
  std::vector<Selected> kept;
  std::vector<bool> used(patterns.size(), false);
  for (auto& s : selected) {
    bool any = false;
    for (size_t i = 0; i < patterns.size(); ++i)
      if (matches(patterns[i], s.candidate)) any = used[i] = true;
    if (any) kept.push_back(std::move(s));
  }
  for (size_t i = 0; i < patterns.size(); ++i)
    if (!used[i])
      throw usage_error(
          fmt::format("--only '{}': no configuration of this stage for {} matches it (evo list shows "
                      "the variants and their tunables' values)",
                      patterns[i].text, task_name));
  selected = std::move(kept);
}

}  // namespace evo
