// Which candidates a stage run evaluates, in order: first each variant of stage N carrying
// the params of stage N-1's elites (shared names carry over), then the rest of the domain
// in a reproducible shuffled order. Duplicates are dropped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "store/population.h"

namespace evo {

struct Selected {
  Candidate candidate;
  std::string origin;  // "elite" or "domain"
};

std::vector<Selected> select_candidates(const Stage& stage, const Task& task, const std::string& arch,
                                        const std::vector<Elite>& previous_elites, uint64_t rng_seed);

}  // namespace evo
