// Hacker round 33's close of its three length holes (lab/hack33/README.md "Closed"): three kinds of
// case after every other case of a tier (run/sampler.cpp draw_tier, after the KV-packed cache), for
// calls whose length a model or its input fixes and that no class drew. Each kind draws from a stream
// of its own (`rng`'s state salted by its name), so every earlier case keeps its index, id, seed and
// draws, and each is behind a switch of its own in SampleSpace (nothing when it is off). The rules:
//  - a call over a whole window of a power of two of rows, Sq = Skv (a 4k model's perplexity window
//    or packed pretraining sequence; a diffusion U-Net's 64 x 64 latent level; ModernBERT's global
//    layers): the window is kept whole and the heads cut, so the cheap tier holds one at 4096;
//  - a vision tower's length is fixed by its resolution and patch, (res / patch)^2 plus a class
//    token: every call of the tower has it, so the tower's length is kept whole at one image;
//  - a GQA model prefills prompts past 8k keys (a 128k context), Sq = Skv: a GQA case past 8192
//    tokens, its heads a tensor-parallel shard, the length drawn within the tier's bounds.
#pragma once
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"
#include "run/sample_rows.h"

namespace evo {

// A whole window of kWholeWindowRows rows at one sequence of one head (the task's head dim and mask,
// BHSD), in both tiers: 1x1x1x4096x4096 (4.3 GFLOP at D 64, 8.6 at D 128, under the cheap tier's
// max_flops; 8192 rows would not fit). The id ends in "/model=whole_window_4096". `rng` salted by
// "whole_window_calls"; nothing when the space's whole_window_calls is off or past the bounds.
inline constexpr int kWholeWindowRows = 4096;
void append_whole_window_calls(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out);

// The vision towers of the common multimodal models, each one image's self-attention over its fixed
// length at kVisionTowerHeads MHA (ViT-L's 16), BHSD, the task's head dim and mask, on every task
// (gates.json's cheap tier turns vision_tower_calls off: the deep tier alone): each listed tower, then
// a square grid of kVisionGridSides drawn with a class token (g^2 + 1 tokens: any ViT at any
// resolution). At most 26.3 GFLOP a tier at D 64 (52.6 at D 128). Ids end in "/model=<tower's name>"
// and "/model=vit_grid_<g>x<g>_cls". `rng` salted by "vision_tower_calls"; nothing when the space's
// vision_tower_calls is off.
struct VisionTower {
  const char* name;
  int tokens;
};
inline constexpr VisionTower kVisionTowers[] = {
    {"clip_vit_l14_224_257_tokens", 16 * 16 + 1},     // CLIP ViT-L/14 at 224 px (OpenCLIP ViT-H/14 the same)
    {"clip_vit_l14_336_577_tokens", 24 * 24 + 1},     // CLIP ViT-L/14-336: LLaVA-1.5's tower
    {"siglip_so400m_384_729_tokens", 27 * 27},        // SigLIP so400m/14 at 384 px: PaliGemma, LLaVA-OneVision
    {"internvit_300m_448_1025_tokens", 32 * 32 + 1},  // InternViT-300M at 448 px: InternVL2
    {"dinov2_l14_518_1370_tokens", 37 * 37 + 1},      // DINOv2 ViT-L/14 at 518 px
};
inline constexpr int kVisionTowerHeads = 16;
inline constexpr int kVisionGridSides[2] = {7, 40};
void append_vision_tower_calls(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out);

// A GQA prefill past 8k tokens, the task's mask (causal: Llama 3.1 8B's long prompt; unmasked: a
// decoder-based embedding of a long document), in the tier where it fits (gates.json's cheap tier
// turns long_gqa_prefill_cases off: the least, 8193 rows, is past its max_flops): one sequence of
// Llama 3 8B's heads at tensor parallelism 4 (8 over 2, kLongGqaHeads), BSHD, Sq = Skv drawn from
// kLongGqaTokens[0] to the most within the tier's max_flops (and kLongGqaTokens[1]): at the deep
// tier's 3e11, up to 12 103 tokens at D 64 and 8558 at D 128, so at most 3e11 FLOPs a tier. The id
// ends in "/model=llama_3_8b_tp4_long_prefill". `rng` salted by "long_gqa_prefill_cases"; nothing
// when the space's long_gqa_prefill_cases is off or no length past 8192 fits.
inline constexpr int kLongGqaHeads[2] = {8, 2};
inline constexpr int kLongGqaTokens[2] = {8193, 32768};
void append_long_gqa_prefill_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                   const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                   std::vector<CaseSpec>& out);

}  // namespace evo
