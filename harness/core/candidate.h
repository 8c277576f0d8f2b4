// A candidate is one variant with one choice of tunables, for one task and one arch.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/task.h"
#include "core/variant.h"

namespace evo {

using ParamSet = std::vector<std::pair<std::string, long>>;  // declaration order

struct Candidate {
  const Variant* variant = nullptr;
  ParamSet params;
  Task task;
  std::string arch = "sm_90a";

  // Stable identity: variant id, params, task and the source's hash (16 hex digits).
  std::string id() const;
  std::string params_text() const;  // "BLOCK_M=64 BLOCK_N=32", or "(defaults)"
};

// Every combination of the variant's tunables (cartesian product, declaration order).
// "BLOCK_M=64 BLOCK_N=32" in the set's order; "" for none.
std::string param_set_text(const ParamSet& params);
std::vector<ParamSet> expand_params(const Variant& v);
// The tunables' first values.
ParamSet default_params(const Variant& v);
// `base` carried onto v: shared names take base's value when v allows it, others v's default.
ParamSet carry_params(const Variant& v, const ParamSet& base);

}  // namespace evo
