// A stage's own benchmark sets (stage.json "bench_sets"), which `evo run` and `evo evolve` time
// the stage on when --bench is not given: the decode stage on the decode set rather than
// gates.json's prefill shapes.
#pragma once
#include <string>
#include <vector>

#include "run/context.h"

namespace evo {

// The names in the stage's stage.json "bench_sets", or none; a usage error naming the file when
// the field is not an array of non-empty strings. An unknown set name fails later, in the plan.
std::vector<std::string> stage_bench_sets(const Context& ctx, const Stage& stage);

}  // namespace evo
