// Hacker round 32's close of its two open holes (lab/notes/h200-20261203-twenty-eighth-session.md):
// two cases after every other case of a tier (run/sampler.cpp draw_tier, after Flux's joint
// attention), in both tiers, for views of Q or of the KV cache that models pass and no layout drew.
// Each is drawn where its strides reach a kernel: a launch gives a dim of size 1 the stride D
// (evo_launch_stride), so Q's row stride needs two rows or more, a head stride two heads, a batch
// stride two sequences.
//  - "fused_q" (gpu/case_layout.h): Q alone a view of the fused projection, K and V dense BHSD, as
//    GPT-2 in transformers passes them past generate()'s first step. Unmasked: verifying
//    kVerifyRows draft tokens over kLayoutCacheKeys keys (assisted generation); causal: a prefill of
//    kLayoutPrefillTokens tokens. 1 or 2 sequences, 1 to 4 KV heads under 1 to kLayoutGroup times as
//    many. The id names "/layout=fused_q/" and ends in "/model=gpt_2_fused_q_verify" or "_prefill".
//  - "pow2_cache_bhsd": K and V head-major views of a cache of a power of two of rows a head, as
//    gpt-fast and torchtune slice theirs. kLayoutBatch sequences (2 to 4) of 2 to 4 KV heads under 1
//    to kLayoutGroup times as many; unmasked a decode step of 1 to kBeamDecodeRows rows over
//    kLayoutCacheKeys keys, causal a prefill. The id names "/layout=pow2_cache_bhsd/" and ends in
//    "/model=gpt_fast_pow2_cache_decode" or "_prefill".
// Each cut to 2^30 FLOPs (cut_cache_case). `rng` salted by "view_layout_cases", so every earlier
// case keeps its index, id, seed and draws; nothing when the space's view_layout_cases is off.
#pragma once
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"
#include "run/sample_rows.h"

namespace evo {

inline constexpr int kVerifyRows[2] = {2, 16};  // a speculative step's draft tokens
void append_view_layout_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                              const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                              std::vector<CaseSpec>& out);

// Hacker round 33's close of its KV-packed hole (lab/hack33/README.md), after the two views, both
// tiers: "kv_packed" (gpu/case_layout.h), K and V views of flash-attn's MHA inference cache
// [B, C, 2, Hkv, D] (its GPT and Llama decode), 1 to 4 sequences, 1 to 4 KV heads under 1 to
// kLayoutGroup times as many; unmasked a decode step of 1 to kBeamDecodeRows rows over
// kLayoutCacheKeys keys, causal a prefill of kLayoutPrefillTokens tokens; cut to 2^30 FLOPs. The id
// names "/layout=kv_packed/" and ends in "/model=flash_attn_kv_cache_decode" or "_prefill". `rng`
// salted by "kv_packed_cases"; nothing when the space's kv_packed_cases is off.
void append_kv_packed_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                            const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                            std::vector<CaseSpec>& out);

}  // namespace evo
