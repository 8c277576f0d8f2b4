// The ablation cache: what COMPARE.md's "Search ablation" shows of one dataset
// (section_ablations, ablate/ablation.h), simulated once by `evo ablate DATASET --write-cache`
// and read by `evo compare`, which would otherwise simulate the 40 seeds of every strategy again
// on each call (about 90 CPU-seconds for the H200 dataset). It keeps each run's SimSummary and
// each ablation's header figures; the text is rendered from them on every call, so a change of
// wording needs no new cache.
//
// Its key is everything the figures depend on besides the code: the dataset file's sha256, the
// spec (strategies, seeds, budgets, population, targets, horizon), the hang limits it priced
// hangs by, and kSimulationVersion for the code. When the key differs `evo compare` simulates
// again and says which part differed: the cache only saves time, it never changes what COMPARE.md
// says (a stale figure in a committed report is worse than a slow run).
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ablate/ablation.h"

namespace evo {

inline constexpr int kAblationCacheSchema = 2;  // 2: deep_gated, deep_gate_s

// Bump when a change of code alters what a simulation returns for the same dataset and seeds: a
// strategy or the surrogate (search/), the promotion rule, the replay or hang pricing
// (ablate/simulate.*), the permuted control, the hard-domain choice, section_ablations.
// AblationCache.CommittedCacheIsWhatTheSimulatorSays re-simulates a sample of the committed
// cache's runs and fails when this was not bumped.
inline constexpr int kSimulationVersion = 3;  // 3: no one-off repricing; the deep tier left out (simulate.h)

// The key of a cache of the dataset whose file holds `dataset_file_bytes`, simulated with `spec`
// (its hang_limits included).
nlohmann::json ablation_cache_key(std::string_view dataset_file_bytes, const AblationSpec& spec);

// Where the cache of a dataset lives: results/ablation/X.json for results/datasets/X.json (the
// datasets folder's sibling "ablation"), where `evo compare` looks.
std::filesystem::path ablation_cache_path(const std::filesystem::path& dataset_file);

// The file's text: one line per top-level field and one per strategy of each ablation (diffable).
std::string ablation_cache_text(const nlohmann::json& key, const std::vector<AblationResult>& results);

// The cached ablations of the dataset whose file holds `dataset_file_bytes`, named `name` (as
// COMPARE.md names the dataset), when the file's key is ablation_cache_key(dataset_file_bytes,
// spec); nullopt otherwise, and `why` says what kept it from being used: no file, an unreadable
// one, or which parts of the key differ.
std::optional<std::vector<AblationResult>> read_ablation_cache(const std::filesystem::path& file,
                                                               std::string_view dataset_file_bytes,
                                                               const AblationSpec& spec, const std::string& name,
                                                               std::string& why);

}  // namespace evo
