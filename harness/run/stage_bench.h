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

// What a stage's candidates are timed on, one rule for evo run, evo evolve and evo context:
// `given` (--bench) when not empty, else the stage's own sets, else gates.json's benchmark_sets.
std::vector<std::string> bench_sets_for(const Context& ctx, const Stage& stage, const std::vector<std::string>& given);

}  // namespace evo
