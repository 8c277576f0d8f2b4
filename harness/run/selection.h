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

// `evo run --only`: one configuration pattern, "VARIANT" or "VARIANT:NAME=VALUE,...", where
// VARIANT is a variant's id (9-decode/split_kv_tma) or its file stem (split_kv_tma) and the
// named tunables must all hold those values (the others take every value of the domain).
// Throws usage_error naming what to fix when the text is not of that form.
struct ConfigPattern {
  std::string text;  // as written, for messages
  std::string variant;
  ParamSet params;
};
ConfigPattern parse_config_pattern(const std::string& text);
bool matches(const ConfigPattern& pattern, const Candidate& c);
// Keeps the candidates any pattern matches, in their order. Re-measuring given configurations
// (a fixed kernel's former elites, a configuration from a search dataset) needs no budget
// guess and no lucky draw. Throws usage_error for a pattern that matches none of `selected`.
void keep_only(std::vector<Selected>& selected, const std::vector<ConfigPattern>& patterns,
               const std::string& task_name);

}  // namespace evo
