// The model calls of a tier (run/sampler.cpp draw_tier; hacker round 27): each attention call of
// a public model that gates.json model_shapes lists, cut down to a gate case, after every other
// case of the tier.
#pragma once
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"
#include "run/sample_rows.h"

namespace evo {

// One case per entry of gates.json model_shapes, at the task's head dim and mask: the model's
// heads (Hq, Hkv), lengths, batch and contiguous view (BSHD or BHSD, 256-byte aligned), the
// default scale (0: 1/sqrt(D) as the worker passes it) and normal inputs, cut to fit the tier's
// bounds and kModelCaseMaxFlops by halving (so a power of two stays one): a decode step (Sq <=
// kSharedDecodeRows) its cache to no fewer than kModelCaseMinKeys keys, then its batch (a
// server's batch is what it is served at); a prefill its batch, then both lengths. Then one more,
// "prefill_pow2": the list's first GQA prefill over a power-of-two length of kModelPrefillKeys or
// more, at one sequence of exactly kModelPrefillKeys (Sq = Skv), its heads cut to
// kModelPrefillMaxFlops (the KV heads first, the ratio kept, at least two KV heads; then the query
// heads to a multiple of them). Each id names every dimension as a sampled case's does, and
// "/model=" the entry ("/model=prefill_pow2:" the extra one). The seeds come from a stream of their
// own (`rng`'s state salted), so every other case keeps its draws.
void append_model_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                        const SplitMix& rng, const std::string& prefix, std::vector<CaseSpec>& out);

}  // namespace evo
