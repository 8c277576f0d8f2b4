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

// A gates.json model_shapes entry's name as an id token: lower case, each run of other characters
// one '_' ("Phi-4 decode (GQA 40/10), ..." is "phi_4_decode_gqa_40_10_...").
std::string model_token(const std::string& model);

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

// Hacker round 29's close of the cut above (after the fused-buffer cases): each decode step
// (Sq <= kSharedDecodeRows) whose cut shortened its cache, again at one sequence over its whole
// cache, its heads halved (the ratio kept) only while past kModelCaseMaxFlops or the tier's
// bounds: a cache length is what a kernel keys on, a batch what a server happens to run at. So
// Phi-4's 40 over 10 heads meet its 4096 keys (0.08 GFLOP at D 128) where the cut left them at
// 2048. On unmasked tasks only: under the task's top-left mask a decode step's rows see their
// first keys alone, and the cache past them is read by no row. Each id ends in
// "/model=<entry>/cache=whole". A stream of its own (`rng` salted by "whole_cache_model_calls");
// nothing when the space's whole_cache_model_cases is off.
void append_whole_cache_model_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                    const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                    std::vector<CaseSpec>& out);

// Hacker round 29's close of a training step (after the long value cases): one case a tier of a
// GQA model's training step or batched prefill, large in batch and length at once, cut in heads
// rather than in either: kTrainingStepBatch sequences of kTrainingStepTokens tokens (Sq = Skv)
// under 2 query heads over 1 KV head (Llama-3 8B trains at 8 x 4096 over 32 / 8 heads), BSHD, the
// default scale, normal inputs with their massive channels: 2^33 FLOPs at D 64 (half of it under
// the causal mask), 2^34 at D 128, past the cheap tier's max_flops (1.7e10), so there only the
// deep tier holds it. The id ends in "/model=training_step". A stream of its own (`rng` salted by
// "training_step"); nothing when the space's training_step_cases is off.
inline constexpr int kTrainingStepBatch = 4, kTrainingStepTokens = 2048;
void append_training_step_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                std::vector<CaseSpec>& out);

}  // namespace evo
