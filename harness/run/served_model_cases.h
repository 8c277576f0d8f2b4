// Hacker round 32's close (lab/hack32/README.md "Close (close32)"): three kinds of case after every
// other case of a tier (run/sampler.cpp draw_tier, after round 31's range ends), for calls a served
// model makes that no class draws. Each kind draws from a stream of its own (`rng`'s state salted
// by its name), so every earlier case keeps its index, id, seed and draws, and each is behind a
// switch of its own in SampleSpace (nothing when it is off). The rules:
//  - a server at tensor parallelism t runs each GPU's shard of a model's heads, Hq/t over Hkv/t
//    (Hkv/t is 1 where the KV heads are fewer than t and replicated): every shard of a listed model
//    is a call some tier draws;
//  - an encoder fixes its length (Whisper's 1500 frames, CLIP's 77 text tokens, a vision encoder's
//    1601-token tiles), so every call over it has that exact length: the length is kept whole and
//    the batch (and the rows) cut.
#pragma once
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "core/task.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"
#include "run/sample_rows.h"

namespace evo {

// The tensor-parallel shards of the listed models: for each GQA or MQA pair (Hq, Hkv) of gates.json
// model_shapes, then of kReleasedHeads (run/batch_cases.h), and each t of kTensorParallel dividing
// Hq, the pair (Hq/t, Hkv/t) where t divides Hkv, (Hq/t, 1) where Hkv divides t, in that order;
// leaving out MHA shards and every pair a heads class, a model entry, a released pair or an earlier
// shard lists. With the repo's gates.json: 16/4, 8/2, 7/1, 20/5, 2/1, 24/4, 6/1, 9/1, 12/1, 4/2.
inline constexpr int kTensorParallel[] = {2, 4, 8};
std::vector<HeadConfig> tensor_parallel_shards(const GatesConfig& gates, const SampleSpace& space);

// One small case per shard, in both tiers, as a released pair's (append_released_heads_cases):
// unmasked a decode step (one sequence, one row over kReleasedHeadsKeys keys, drawn), causal a
// prefill of kReleasedHeadsTokens tokens (drawn); BSHD, the default scale, normal inputs with their
// massive channels. The id ends in "/model=tp_shard_<Hq>_<Hkv>". `rng` salted by
// "tensor_parallel_shards"; nothing when the space's tensor_parallel_shards is off.
void append_tensor_parallel_shard_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                        const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                        std::vector<CaseSpec>& out);

// The encoders' fixed lengths.
inline constexpr int kWhisperFrames = 1500;  // 30 s of audio, every input padded to it
inline constexpr int kWhisperHeads = 20;     // whisper-large
inline constexpr int kClipTokens = 77;       // CLIP's text context
inline constexpr int kSdxlBatch = 2;         // classifier-free guidance
// SDXL's U-Net cross-attention at 1024x1024: (latent rows, heads) of its two transformer levels.
inline constexpr int kSdxlLevels[2][2] = {{4096, 10}, {1024, 20}};
inline constexpr int kVisionTileTokens = 1601;  // Llama 3.2 Vision: 40x40 patches and a CLS token
inline constexpr int kVisionTiles = 4;
inline constexpr int kVisionHeads[2] = {32, 8};
inline constexpr int kVisionTextRows[2] = {64, 512};
inline constexpr double kVisionCrossMaxFlops = 8589934592.0;  // 2^33

// A decoder's step over an encoder's fixed length, unmasked tasks only (under the top-left mask a
// step's row sees its first keys alone), in both tiers: Whisper's decoder cross-attention (one
// sequence, one row over kWhisperFrames keys, kWhisperHeads MHA; "/model=whisper_decoder_step") and
// Llama 3.2 Vision's (one row over 1 to kVisionTiles tiles of kVisionTileTokens keys, drawn,
// kVisionHeads; "/model=llama_3_2_vision_decode_step"). BHSD (Whisper) and BSHD (Llama), the task's
// head dim, the default scale. Each under 0.03 GFLOP. `rng` salted by "fixed_length_steps";
// nothing when the space's fixed_length_steps is off.
void append_fixed_length_steps(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out);

// The encoders' whole calls, on every task (gates.json turns the switch off in the cheap tier: the
// deep tier alone): Whisper's encoder self-attention (1x20x20x1500x1500, "/model=whisper_encoder",
// 11.5 GFLOP at D 64), SDXL's cross-attention (kSdxlBatch sequences, one level of kSdxlLevels drawn,
// over kClipTokens keys, "/model=sdxl_cross_attention", at most 3.2 GFLOP) and Llama 3.2 Vision's
// prefill cross-attention (one sequence, kVisionTextRows rows drawn over 1 to kVisionTiles tiles
// drawn, the rows halved while past kVisionCrossMaxFlops, no fewer than 64 (6.7 GFLOP at D 128),
// "/model=llama_3_2_vision_cross_attention"). BHSD (Whisper, SDXL) and BSHD (Llama), the task's
// head dim, the default scale; each only where it fits the tier's bounds. `rng` salted by
// "fixed_length_calls"; nothing when the space's fixed_length_calls is off.
void append_fixed_length_calls(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                               const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                               std::vector<CaseSpec>& out);

// A diffusion transformer's joint attention, whose length its model fixes (1024x1024 images: a 64x64
// latent in 2x2 patches, 4096 tokens, beside T5's prompt padded to 512), unmasked tasks only, the
// deep tier alone (gates.json's cheap tier turns joint_attention_calls off): Flux.1's call,
// 1x24x24x4608x4608 at the task's head dim (130 GFLOP at D 64, 261 at D 128, under the deep tier's
// max_flops), BHSD, the default scale; "/model=flux_joint_attention". `rng` salted by
// "joint_attention_calls"; nothing when the space's joint_attention_calls is off or past the bounds.
inline constexpr int kFluxHeads = 24;
inline constexpr int kFluxTokens = 4096 + 512;
void append_joint_attention_calls(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                                  const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                                  std::vector<CaseSpec>& out);

}  // namespace evo
