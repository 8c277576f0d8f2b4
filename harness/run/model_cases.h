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

// A model call's case at `at` (its prefix and index): shape `s` in its own contiguous view (BSHD or
// BHSD, 256-byte aligned, finite junk), the default scale, normal inputs with their massive
// channels, a seed from `r`; the id names every dimension and ends in "/model=<name>".
CaseSpec model_case(const GatesConfig& gates, const SampleSpace& space, const Shape& s, SplitMix& r,
                    const std::string& name, const std::string& at);

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

// Hacker round 30's close (after the training step; value_cases.h has its other two kinds). Each
// kind draws per run the dimensions a close would otherwise fix, from a stream of its own.
//
// The batched whole-cache decode steps: the decode steps round 29's whole-cache calls take, again
// at kBatchedModelBatch sequences (one draw a tier) over the whole cache, the heads halved together
// only while past kBatchedModelMaxFlops or the tier's bounds (Phi-4's 40 over 10 stays whole at D
// 128). Unmasked tasks only; the id ends in "/model=<entry>/cache=whole/batch=<B>". `rng` salted by
// "batched_model_calls"; nothing when the space's batched_model_cases is off.
inline constexpr int kBatchedModelBatch[2] = {2, 3};
inline constexpr double kBatchedModelMaxFlops = 268435456.0;  // 2^28 a case
void append_batched_model_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                std::vector<CaseSpec>& out);
// A Gemma 2 or 3 27B call (drawn): 32 query heads over 16 KV heads, no other case's pair, at the
// model's scale, query_pre_attn_scalar^-1/2 (144 or 168, round 29's scale roots) past 512 keys.
// Unmasked: a decode step of kBatchedModelBatch sequences, 1 to kGemmaDecodeRows rows over
// kGemmaCacheKeys; causal (a decode step's row sees its first keys alone): one sequence's prefill
// of kGemmaPrefillKeys tokens. BSHD, normal inputs with their massive channels. The id ends in
// "/model=gemma_<2|3>_27b/model_scale=gemma_<2|3>_27b". `rng` salted by "gemma_27b"; nothing when
// the space's gemma_27b_cases is off.
inline constexpr int kGemmaDecodeRows = 4;
inline constexpr int kGemmaCacheKeys[2] = {513, 2048};
inline constexpr int kGemmaPrefillKeys[2] = {513, 544};
// Round 31's close (SampleSpace::model_ranges, from a stream salted "gemma_27b_ranges"; the other
// draws unchanged): unmasked, 1 to 3 sequences over 513 to kGemmaLongKeys keys (Gemma's contexts
// past 2048: its global layers see the whole of one), the batch cut first, then the cache halved,
// to the tier's bounds; causal, in the deep tier only (its max_flops past the cheap tier's), a
// prefill of 513 to kGemmaLongPrefillKeys tokens cut by quarters to kGemmaLongPrefillMaxFlops, no
// shorter than 545 (past the 544 rows the short prefill stops at); the cheap tier keeps it.
inline constexpr int kGemmaLongKeys = 8192;
inline constexpr int kGemmaLongPrefillKeys = 2048;
inline constexpr double kGemmaLongPrefillMaxFlops = 34359738368.0;  // 2^35
void gemma_model_ranges(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                        const SplitMix& rng, Shape& s);
// One Gemma call of shape `s` at `at` (drawn by `r`): Gemma 3's scale 168^-1/2 or Gemma 2's
// 144^-1/2, the id ending in "/model=<model>/model_scale=<model>".
CaseSpec gemma_27b_case(const GatesConfig& gates, const SampleSpace& space, const Shape& s, SplitMix& r, bool gemma_3,
                        const std::string& at);
void append_gemma_27b_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                            const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                            std::vector<CaseSpec>& out);
// A served decode batch (the last kind): one decode step (Sq 1) of a batch padded to a multiple of
// 8 in kPaddedDecodeBatch (a server's CUDA graphs) over kPaddedDecodeKeys, 4 query heads over 2 or
// 1, BSHD, in every tier, the cheap one included (0.07 to 0.54 GFLOP). Unmasked tasks only. The id
// ends in "/model=padded_decode_batch". `rng` salted by "padded_decode"; nothing when the space's
// padded_decode_cases is off.
inline constexpr int kPaddedDecodeBatch[2] = {32, 64};
inline constexpr int kPaddedDecodeKeys[2] = {2048, 4096};
// Round 31's close (SampleSpace::model_ranges, a stream salted "padded_decode_ranges"): the batch
// 8 to kServerDecodeBatch (vLLM's default max_num_seqs) in steps of 8; within the tier's bounds the
// cache halved to no fewer than kServerDecodeKeys, then MQA, then the batch by 8.
inline constexpr int kServerDecodeBatch = 256;
inline constexpr int kServerDecodeKeys = 1024;
void append_padded_decode_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                std::vector<CaseSpec>& out);

}  // namespace evo
