// A candidate's tunables (ParamSet) as records, populations and manifests write them:
// {"NAME": integer, ...}. The one mapping between the two, and the one identity of a candidate
// in the records built on it.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/candidate.h"

namespace evo {

// {"BLOCK_M": 128, "BLOCK_N": 64}: keys sorted, as every JSON object evo writes.
nlohmann::json params_json(const ParamSet& params);

// The tunables of a JSON object whose every value is an integer, in the object's (sorted) key
// order; nullopt for anything else (a string, a fraction, a list). A variant's declaration order
// is the variant's to restore (carry_params, aligned).
std::optional<ParamSet> params_from_json(const nlohmann::json& j);

// The identity of a candidate across runs and files: what was compiled (variant, tunables,
// source hash) for which task. Populations keep one record per identity and the regime table one
// kernel per identity; both ask here. The text sorts kernels in a population's regime table.
std::string candidate_identity(const std::string& variant, const ParamSet& params, const std::string& task,
                               const std::string& source_sha256);

}  // namespace evo
