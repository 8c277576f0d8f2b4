// The value cases of a tier (run/sampler.cpp draw_tier; hacker round 28): one case per pattern of
// real models' values that the input kinds never drew (gpu/input_fill.h value_kinds), after every
// other case of the tier.
#pragma once
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"
#include "run/sample_rows.h"

namespace evo {

// One case per value kind on a 16-bit task (none on fp8: its per-tensor quantization is a grid of
// its own, and the tries the kinds answer are 16-bit ones): 2 sequences of 4 query heads over 4,
// 2 or 1 KV heads, kValueCaseMinKeys to kValueCaseMaxKeys keys (drawn), a prefill (Sq = Skv) or,
// on a task without a mask, every second kind a decode step (Sq 1 to kSharedDecodeRows), a plain
// BHSD or BSHD view (256-byte aligned, finite junk), the default scale 1/sqrt(D), normal inputs
// (attention_sink's for "small_sink"; "massive_*" with its channels), each at most 2^30 FLOPs.
// Each id names every dimension as a sampled case's does and "/values=" its kind, so a failure
// says what the inputs held. The draws come from a stream of their own (`rng`'s state salted by
// "value_cases"), so every other case keeps its id, seed and draws. Nothing when the space's
// value_cases is off.
inline constexpr int kValueCaseMinKeys = 256, kValueCaseMaxKeys = 512;
void append_value_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                        const SplitMix& rng, const std::string& prefix, std::vector<CaseSpec>& out);

}  // namespace evo
