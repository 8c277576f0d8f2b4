// Hacker round 30's second close (lab/hack30/README.md "Second pass"): four kinds of case after
// every other case of a tier (run/sampler.cpp draw_tier, after the padded decode batch), for the
// round's holes the first close left open: whole repeated sequences (a beam search's prefill), a
// training step over several KV heads, Phi-4's heads on a causal prefill past 2048 keys, and the
// strides of two model layouts (a power-of-two cache, GPT-NeoX's interleaved V). Each kind draws
// from a stream of its own (`rng`'s state salted by its name), so every earlier case keeps its
// index, id, seed and draws; each draws per run the dimensions a close would otherwise fix (the
// round's rule), and each is behind a switch of its own in SampleSpace (nothing when it is off).
#pragma once
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"
#include "run/sample_rows.h"

namespace evo {

// The cheap kinds' cost: each case at most 2^30 FLOPs (kModelCaseMaxFlops), its length cut to fit.
//
// A beam search's prefill: kBeamCount sequences (drawn) whose odd ones repeat the one before whole,
// Q, K and V ("repeat_batch": gpu/value_fill.h kRepeatBatch, the shared prefix covering every row),
// as generate(num_beams > 1) expands one prompt by repeat_interleave; 1 or 2 KV heads under 1 or 2
// times as many query heads (drawn). Causal tasks: the prefill (Sq = Skv, kBeamPromptTokens drawn,
// cut to 2^30 FLOPs); unmasked: the first decode step (1 to kBeamDecodeRows rows over
// kBeamCacheKeys keys). BSHD, the default scale, normal inputs with their massive channels, in
// both tiers. The id ends in "/model=beam_prefill/values=repeat_batch/prefix=<rows>". `rng`
// salted by "beam_prefill"; nothing when the space's beam_prefill_cases is off.
inline constexpr int kBeamCount[2] = {2, 4};
inline constexpr int kBeamPromptTokens[2] = {256, 768};
inline constexpr int kBeamDecodeRows = 4;
inline constexpr int kBeamCacheKeys[2] = {256, 2048};
void append_beam_prefill_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out);

// A GQA training step over several KV heads (after the beam prefill): kGqaTrainingBatch sequences
// (drawn) of kGqaTrainingTokens tokens (drawn, Sq = Skv) under 4 to 8 KV heads (drawn) at a ratio
// of 2 or 4 (drawn), cut to kGqaTrainingMaxFlops (the length to 2048 first, then the batch to 4,
// the ratio to 2, the KV heads to 4: 4x8x4x2048x2048 is 2^35 FLOPs at D 64, 2^36 at D 128, where
// the cut always ends), BSHD, the default scale, normal inputs with their massive channels. Past
// the cheap tier's max_flops: the deep tier only. The id ends in
// "/model=training_step_gqa_<Hq>_<Hkv>". `rng` salted by "gqa_training_step"; nothing when the
// space's gqa_training_step_cases is off.
inline constexpr int kGqaTrainingBatch[2] = {4, 8};
inline constexpr int kGqaTrainingTokens[2] = {2048, 2304};
inline constexpr int kGqaTrainingKvHeads[2] = {4, 8};
inline constexpr double kGqaTrainingMaxFlops = 68719476736.0;  // 2^36
void append_gqa_training_step_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                    const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                    std::vector<CaseSpec>& out);

// Phi-4's heads on a causal prefill past 2048 keys (after the training step; causal tasks only,
// where a row sees more than 2048 keys only in a prefill that long): kPhi4PrefillBatch sequences
// (drawn) of 40 query heads over 10 KV heads, kPhi4PrefillTokens tokens (drawn, Sq = Skv), cut to
// kPhi4PrefillMaxFlops and the tier's bounds (the batch to 2, then the length to 2049: 172 GFLOP
// at D 128, half of it under the mask). Past the cheap tier's max_flops: the deep tier only. BSHD,
// the default scale, normal inputs with their massive channels. The id ends in
// "/model=phi_4_kv_heads_prefill". `rng` salted by "phi4_prefill"; nothing when the space's
// phi4_prefill_cases is off.
inline constexpr int kPhi4PrefillBatch[2] = {2, 3};
inline constexpr int kPhi4PrefillTokens[2] = {2049, 2176};
inline constexpr double kPhi4PrefillMaxFlops = 2e11;
void append_phi4_prefill_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out);

// Two model layouts (the last kind), one case each a tier, in both tiers:
//  - "pow2_cache" (gpu/case_layout.h): K and V views of a cache preallocated to a power of two of
//    rows past Skv (1 to 16 times the next one), kLayoutBatch sequences (drawn, two or more), 1, 2
//    or 4 KV heads under 1, 2 or 4 times as many query heads (drawn); causal tasks a prefill of
//    kLayoutPrefillTokens tokens, unmasked a decode step of 1 to kBeamDecodeRows rows over
//    kLayoutCacheKeys keys (drawn); the cache's keys (a prefill's tokens) halved while past 2^30
//    FLOPs or the tier's bounds. The id names "/layout=pow2_cache/" and ends in
//    "/model=pow2_cache_decode" or "/model=pow2_cache_prefill";
//  - "neox_v": GPT-NeoX's V, the last D channels of each head of its fused projection [B, S, H,
//    3·D]: MHA (GPT-NeoX's and Pythia's heads) of 2 to 8 heads, 1 or 2 sequences, a prefill of
//    kLayoutPrefillTokens tokens (drawn) cut to 2^30 FLOPs. The id names "/layout=neox_v/" and
//    ends in "/model=gpt_neox_prefill".
// The default scale, normal inputs with their massive channels, finite junk in the cache's spare
// rows and the projection's other channels. `rng` salted by "model_layouts"; nothing when the
// space's model_layout_cases is off.
inline constexpr int kLayoutBatch[2] = {2, 4};
inline constexpr int kLayoutPrefillTokens[2] = {256, 1024};
inline constexpr int kLayoutCacheKeys[2] = {256, 4096};
void append_model_layout_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out);

}  // namespace evo
