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
// Round 31's close (SampleSpace::model_ranges, a stream salted "beam_prefill_ranges"): the beams n
// of 2 to 4 (drawn) over 1 or 2 prompts (B = n or 2n), every sequence of a group of n the group's
// first ("repeat_interleave_<n>", gpu/value_fill.h kRepeatInterleave; n = 2 stays "repeat_batch"),
// the prompt's tokens cut to 2^30 FLOPs again.
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
// Round 31's close (SampleSpace::model_ranges): at D 128 the ratio is a model's, 4 or 8 (drawn from
// a stream salted "gqa_training_step_ranges"), the cap kGqaTrainingWideMaxFlops, and the cut takes
// the KV heads toward 4, then the ratio to 4, so the step ends at 4x16x4x2048x2048 (137 GFLOP, a
// model's group of 4 at its own head dim); D 64 unchanged.
inline constexpr double kGqaTrainingWideMaxFlops = 137438953472.0;  // 2^37
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
// Round 31's close (SampleSpace::model_ranges, a stream salted "phi4_prefill_ranges"): 1 to 3
// sequences (one prompt the commonest prefill), cut to 2 where past the bounds as before.
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
// Round 31's close (SampleSpace::model_ranges, a stream salted "model_layouts_ranges"; the other
// draws unchanged): pow2_cache's batch from 1 (a chat's decode step, Llama 2's reference at batch 1),
// and neox_v's group g = Hq / Hkv of 1 to kLayoutGroup ([B, S, Hkv, (g + 2) D]: InternLM2's wqkv,
// Megatron's per-group QKV; the id ends in "/model=interleaved_gqa_prefill" where g > 1); and a
// third case, "fused_v" (gpu/case_layout.h: V alone a view of Phi-3's and Phi-4's fused projection,
// head stride D, row stride (Hq + 2 Hkv) D; Q and K dense BHSD), 1 or 2 sequences, 1 to 4 KV heads
// under 1 to kLayoutGroup times as many query heads, a prefill of kLayoutPrefillTokens tokens cut to
// 2^30 FLOPs, from a stream salted "model_layouts_fused_v"; the id names "/layout=fused_v/" and ends
// in "/model=phi_3_fused_v_prefill".
inline constexpr int kLayoutGroup = 4;
// `s`'s keys (on a causal task its tokens, Sq = Skv) halved while past 2^30 FLOPs or the tier's
// bounds in `layout`, no shorter than kSharedShortMinKeys: whether it fits.
bool cut_cache_case(const Task& task, const SampleRows& rows, const std::string& layout, Shape& s);
// A model case (run/model_cases.h model_case) in `layout` (gpu/case_layout.h) rather than its
// shape's own view, the id naming "/layout=<layout>/" and ending in "/model=<name>".
CaseSpec layout_case(const GatesConfig& gates, const SampleSpace& space, const Shape& s, SplitMix& r,
                     const std::string& layout, const std::string& name, const std::string& at);
void append_model_layout_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out);

// Hacker round 31's close: released models' (Hq, Hkv) pairs that no heads class of gates.json lists
// (round 30 listed the one pair it named, 32 over 16, in the Gemma call; Phi-4's 40 over 10 is a
// model_shapes entry). One small case each, in both tiers, after every other case: unmasked a decode
// step (one sequence, one row over kReleasedHeadsKeys keys, drawn), causal a prefill of
// kReleasedHeadsTokens tokens (drawn: its rows past 32 see more than one 32-key chunk); BSHD, the
// default scale, normal inputs with their massive channels. The id ends in
// "/model=heads_<Hq>_<Hkv>". `rng` salted by "released_heads"; nothing when the space's
// released_heads_cases is off.
struct ReleasedHeads {
  int heads_q, heads_kv;
  const char* models;
};
inline constexpr ReleasedHeads kReleasedHeads[] = {
    {48, 8, "Mixtral 8x22B, DBRX, InternLM2 20B, Codestral 22B"},
    {56, 8, "Yi 34B"},
    {36, 4, "StarCoder2 7B"},
    {48, 4, "StarCoder2 15B"},
    {14, 2, "Qwen2.5 0.5B"},
    {16, 2, "Qwen2.5 3B"},
    {64, 4, "Qwen3 235B-A22B"},
    {32, 2, "GLM-4 9B, ChatGLM3 6B"},
    {96, 8, "Command R+"},
    {8, 4, "Gemma 2 2B"},
    {8, 1, "Gemma 2B"},
    {4, 1, "Gemma 3 1B"},
};
inline constexpr int kReleasedHeadsKeys[2] = {256, 1024};
inline constexpr int kReleasedHeadsTokens[2] = {48, 64};
void append_released_heads_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                 const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                 std::vector<CaseSpec>& out);

// The close of round 31's three narrowed holes (lab/hack32/README.md "Close of round 31's narrowed
// holes"): round 31's close drew each kind's dimension over the model's range, but one draw a tier
// lands on one value of it, so a run can miss the range's end a model's commonest call has. After
// every other case (the released pairs included), where the tier has no case of the kind at that
// end already (its id and shape read from `out`), one case each, from a stream of its own salted by
// its name:
//  - "pow2_cache_one_sequence": the power-of-two cache (append_model_layout_cases' draws) at one
//    sequence, cut to 2^30 FLOPs;
//  - "phi4_one_prompt": Phi-4's 40 over 10 heads on one prompt of kPhi4PrefillTokens[0] to
//    kPhi4ContextTokens tokens (Sq = Skv; unmasked tasks too: the kind was causal only), cut by
//    quarters to kPhi4OnePromptMaxFlops and the tier's bounds, no shorter than 2049;
//  - "gemma_27b_long_prefill": a Gemma 2 or 3 27B prefill (one sequence, 32 over 16, the model's
//    scale) of 545 to kGemmaLongPrefillKeys tokens (unmasked tasks too), cut by quarters to
//    kGemmaLongPrefillMaxFlops, no shorter than 545.
// Each id ends in "/range_end=one_sequence", "/range_end=one_prompt" or "/range_end=past_544_rows"
// after its kind's own. Nothing when the space's model_range_ends is off; gates.json turns it off
// in the cheap tier (the Phi-4 and Gemma prefills are 34 to 86 GFLOP).
inline constexpr int kPhi4ContextTokens = 16384;
inline constexpr double kPhi4OnePromptMaxFlops = 68719476736.0;  // 2^36
void append_model_range_end_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                  const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                  std::vector<CaseSpec>& out);

}  // namespace evo
