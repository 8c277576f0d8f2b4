// The evolution part of COMPARE.md (appended by evo compare): every `evo evolve` run (generator, evaluations,
// GPU-seconds per evaluation, admissions), best fitness against GPU-seconds for runs of the
// same stage and task side by side (builtin against random sampling), and each elite's lineage.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace evo {

// Empty when no record came from evo evolve.
std::string render_evolution_markdown(const std::vector<nlohmann::json>& records, const std::string& gpu_filter,
                                      const std::string& task_filter);

}  // namespace evo
