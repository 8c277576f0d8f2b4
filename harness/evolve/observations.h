// What a search strategy learns from (search/strategy.h), read from `evo evolve` records: the
// variant (by id, among the stage's), the params in the variant's order, the fidelity (the
// record's evolve.phase), the outcome, the fitness and the GPU-seconds.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "search/strategy.h"
#include "store/population.h"
#include "store/typed_record.h"

namespace evo {

// Records of variants outside `stage` (generated sources) are left out. `fidelity`: what a
// record without an evolve.phase counts as (a population's elite: full).
std::vector<Observation> observations_of(const std::vector<Record>& records, const Stage& stage,
                                         Fidelity fidelity = Fidelity::full);
// A population's elites (store/population.h entries: variant, params, candidate id, fitness).
std::vector<Observation> elite_observations(const std::vector<Elite>& elites, const Stage& stage);

}  // namespace evo
