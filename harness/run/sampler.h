// The sampled part of the correctness gate: cases drawn from gates.json "sampled" with the
// run's gate seed. Unknown before the run (the seed is drawn then), reproducible after it
// (`--gate-seed S` draws the same cases), and recorded in every record.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"

namespace evo {

inline constexpr const char* kSampledPrefix = "sampled/";

// A fresh seed from the OS's entropy source.
uint32_t draw_gate_seed();
// Parses --gate-seed: a decimal integer in [0, 2^32); throws usage_error naming the value.
uint32_t parse_gate_seed(const std::string& text);

// `space.cases` cases for the task. Every value of every dimension is used by at least one case
// when the dimension has at most `cases` values; which values meet in one case is random.
// Each case fits the space's element and FLOP bounds (batch, then Sq, then Skv shrink first).
std::vector<CaseSpec> draw_sampled_cases(const GatesConfig& gates, const Task& task, uint32_t seed);

bool is_sampled_case(const std::string& case_id);

}  // namespace evo
