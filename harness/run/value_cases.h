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

// The scale cases of a tier (hacker round 29), after the value cases: kScaleCases cases whose
// softmax scale is the float of 1/sqrt(n) for an integer n a model computes its scale from that
// is not a power of two (kModelScaleRoots), two different n a tier, as the model passes it
// (Python's n ** -0.5: the double rounded once to float by the worker), where the listed points
// are rounded decimals ("0.0833333" for 1/12) or powers of two and the ranges continuous draws.
// The shapes are the value cases' (2 sequences of 4 query heads over 4, 2 or 1 KV heads, 256 to
// 512 keys, a prefill or on a task without a mask a decode step for the second, a plain BHSD or
// BSHD view), normal inputs with their massive channels (as a model call's), on every task. Each
// id names the scale ("scale=1/sqrt(168)") and ends in "/model_scale=<model>". A stream of their
// own (`rng` salted by "model_scales"), so every other case keeps its id, seed and draws. Nothing
// when the space's scale_cases is off.
struct ModelScaleRoot {
  int n;
  const char* model;
};
inline constexpr ModelScaleRoot kModelScaleRoots[] = {{80, "phi_2"},          // head dim 80 (2560 / 32 heads)
                                                      {96, "phi_3_mini"},     // head dim 96 (3072 / 32)
                                                      {144, "gemma_2_27b"},   // query_pre_attn_scalar 144
                                                      {168, "gemma_3_27b"}};  // query_pre_attn_scalar 168
inline constexpr int kScaleCases = 2;
// The fused-buffer cases of a tier (hacker round 29), after the scale cases: kFusedQkvCases
// prefills (Sq = Skv) whose Q, K and V are views of one fused projection buffer ("packed_qkv+fused",
// gpu/case_layout.h kFusedQkv: K Hq·D elements after Q, V Hkv·D after K, one set of strides), as
// nanoGPT's c_attn split passes them, where packed_qkv puts each view in a buffer of its own: one
// MHA, one GQA or MQA, each 2 sequences of 4 query heads over 256 to 512 tokens, the default
// scale, normal inputs, on every task. Each id names the view ("/shared=fused"). A stream of their
// own (`rng` salted by "fused_qkv"); nothing when the space's fused_qkv_cases is off.
inline constexpr int kFusedQkvCases = 2;
void append_fused_qkv_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                            const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                            std::vector<CaseSpec>& out);
void append_scale_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space, const SampleRows& rows,
                        const SplitMix& rng, const std::string& prefix, std::vector<CaseSpec>& out);

// The long value cases of a tier (hacker round 29's close, after the whole-cache model calls): the
// value kinds that lay a few large or offset channels in K (one of "massive_1", "massive_2",
// "massive_4", drawn, then "k_offset") again, each over a long cache under a wide group, where the
// value cases' 2 x 4 query heads over 256 to 512 keys never put them: one sequence of
// kLongValueGroups query heads a KV head (Qwen2 7B's 28 over 4 is 7); on an unmasked task over 1
// or 2 KV heads, a decode step of 1 to kSharedDecodeRows rows over kLongValueCacheKeys (Llama-3
// 8B's decode at 8k), on a causal one over 1 KV head, a prefill of kLongValuePrefillKeys tokens
// (past the value cases' 512; a prefill's cost is quadratic): each within 2^30 FLOPs. BSHD (a KV
// cache's order), the default scale, normal inputs (with the kind's narrow massive channels),
// 16-bit tasks only, as the value cases. Each id ends in "/values=<kind>/long_cache_wide_group". A stream of its own
// (`rng` salted by "long_value_cases"); nothing when the space's long_value_cases is off.
inline constexpr int kLongValueGroups[2] = {5, 7};           // past 4 query heads a KV head
inline constexpr int kLongValueCacheKeys[2] = {2049, 8192};  // past 2k, to Llama-3 8B's 8k
inline constexpr int kLongValuePrefillKeys[2] = {513, 544};  // past the value cases' 512
void append_long_value_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                             const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                             std::vector<CaseSpec>& out);

// Hacker round 30's close (run/model_cases.h has its other kinds; this is their order after the
// Gemma call). A fused-buffer prefill past 512 tokens: one case a tier of one sequence, 4 query
// heads over 4, 2 or 1 (drawn), kLongFusedQkvTokens tokens cut to 2^30 FLOPs (724 at D 128), as
// append_fused_qkv_cases lays it ("/shared=fused"). `rng` salted by "long_fused_qkv"; nothing when
// the space's long_fused_qkv_cases is off.
inline constexpr int kLongFusedQkvTokens[2] = {513, 1024};  // to nanoGPT's block size
void append_long_fused_qkv_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                 const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                 std::vector<CaseSpec>& out);
// A long value case over a BHSD cache (after the fused prefill): one massive kind (drawn) on a
// long value case's shape in dense BHSD (transformers' DynamicCache, K [B, Hkv, S, D]), where round
// 29's long value cases are BSHD; 16-bit tasks only. Two KV heads where the shape drew one (the
// space's bhsd_two_kv_heads: the head stride must reach the kernel), up to 2.2 GFLOP on a prefill. The id ends in
// "/values=<kind>/long_cache_wide_group". `rng` salted by "bhsd_long_value_cases"; nothing when the
// space's bhsd_long_value_cases is off.
void append_bhsd_long_value_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                  const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                  std::vector<CaseSpec>& out);

}  // namespace evo
