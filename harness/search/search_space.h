// The domain `evo evolve` searches: each variant's front-matter tunables, widened by the
// optional "search" entry of the stage's stage.json ({"<variant stem>": {"PARAM": [values]}}),
// with the variant's EVO_CONSTRAINT rules read from its source (constraint_rules.h), so a
// search knows which configurations the compiler would reject before it proposes them.
// The extra values live outside the variant file on purpose: a candidate id hashes the file,
// so widening the search there would rename every configuration already measured.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/candidate.h"
#include "search/constraint_rules.h"

namespace evo {

struct SearchVariant {
  const Variant* variant = nullptr;
  std::vector<Tunable> tunables;  // front matter values first, then the stage.json extras
  // The variant's rules and the task they are read for (EVO_DTYPE, EVO_HEAD_DIM, EVO_CAUSAL);
  // none: every configuration counts as feasible until compiled.
  std::shared_ptr<const ConstraintRules> rules{};
  Task task{};

  size_t configs() const;
  // Every combination of the tunables, in declaration order (the first tunable varies slowest).
  std::vector<ParamSet> all() const;
  // The parsed rules on these params: violated means NVRTC would stop at an EVO_CONSTRAINT.
  ConstraintCheck check(const ParamSet& params) const;
  bool feasible(const ParamSet& params) const { return check(params).result != RuleResult::violated; }
  size_t feasible_configs() const;
};

// A configuration of a space.
struct Config {
  const SearchVariant* sv = nullptr;
  ParamSet params;
};

// Every configuration the parsed rules allow, variant by variant in declaration order.
std::vector<Config> feasible_configs(const std::vector<SearchVariant>& space);

// The variant's tunables with its rules read (following #include "evo_attn.cuh" into
// `common_dir`, the ABI header folder).
SearchVariant make_search_variant(const Variant& v, std::vector<Tunable> tunables, const Task& task,
                                  const std::filesystem::path& common_dir);
// The same, with `include` giving the text of a quoted #include (a dataset keeps the header).
SearchVariant make_search_variant(const Variant& v, std::vector<Tunable> tunables, const Task& task,
                                  const std::function<std::optional<std::string>(const std::string&)>& include);

// Throws a usage error naming stage.json when its "search" entry is malformed.
std::vector<SearchVariant> search_space(const std::filesystem::path& root, const Stage& stage, const Task& task);

// What a generator is told about one variant's space: {"variant", "tunables": {name: [values]},
// "configs", "feasible_configs", "constraints": [{"rule", "message", "line"}], "macros": {name:
// body}} (the variant's own object-like #defines, which the rules use, e.g. SMEM_BYTES).
nlohmann::json search_space_json(const SearchVariant& sv);

}  // namespace evo
