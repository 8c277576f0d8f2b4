// Hacker round 32's paths (lab/hack32/README.md): each try's test on the call, as its kernel reads
// it (support/kernel_call.h), read over the plans both tiers draw at the pinned seeds with every
// close through round 31's narrowed holes on (support/pinned_catches.h).
#pragma once
#include <cstdint>

#include "support/kernel_call.h"

namespace evo::test::round32 {

inline bool mha(const Call& c) { return c.shape.heads_q == c.shape.heads_kv; }
inline bool heads(const Call& c, int q, int kv) { return c.shape.heads_q == q && c.shape.heads_kv == kv; }
// A row's width in a fused projection [B, S, (Hq + 2 Hkv) D].
inline int64_t fused_row(const Call& c) { return (int64_t(c.shape.heads_q) + 2 * c.shape.heads_kv) * c.shape.head_dim; }

// gpt2_generate_fused_q_alone_half_chunks.cu: Q alone a view of a fused projection (heads D apart,
// rows (Hq + 2 Hkv) D), K's rows not (the cache's own tensor): transformers' GPT-2 past the first
// step of generate(), K and V from DynamicCache's torch.cat.
inline bool fused_q_alone(const Call& c) {
  return c.q_stride[1] == c.shape.head_dim && c.q_stride[2] == fused_row(c) && c.k_stride[2] != fused_row(c);
}
// gpt_fast_bhsd_pow2_cache_half_chunks.cu: K a BHSD view of a cache of C rows a head (row stride D,
// head stride C D, batch stride Hkv C D), C a power of two of 256 or more past Skv: gpt-fast's and
// torchtune's KVCache [B, Hkv, max_seq_len, D] sliced to its filled rows.
inline bool bhsd_pow2_cache(const Call& c) {
  const int64_t d = c.shape.head_dim, rows = c.k_stride[1] / d;
  return c.k_stride[2] == d && c.k_stride[1] % d == 0 && rows >= 256 && (rows & (rows - 1)) == 0 &&
         rows > c.shape.seq_kv && c.k_stride[0] == rows * d * c.shape.heads_kv;
}
// tp8_shard_12_over_1_half_chunks.cu: 12 query heads over 1 (96 over 8 at 8-way tensor parallelism:
// Mistral Large 2, Command R+).
inline bool tp8_shard_12_1(const Call& c) { return heads(c, 12, 1); }
// phi4_tp2_shard_20_over_5_half_chunks.cu: 20 query heads over 5 (Phi-4's 40 over 10 at 2-way
// tensor parallelism).
inline bool tp2_shard_20_5(const Call& c) { return heads(c, 20, 5); }
// whisper_1500_frames_half_chunks.cu: MHA over exactly 1500 keys (Whisper's 30 s of encoder frames:
// the encoder's self-attention and the decoder's cross-attention).
inline bool whisper_frames(const Call& c) { return mha(c) && c.shape.seq_kv == 1500; }
// sdxl_cross_attention_77_tokens_half_chunks.cu: MHA, 1024 query rows or more over exactly 77 keys
// (a U-Net's latent pixels over CLIP's 77 text tokens).
inline bool sd_cross_77(const Call& c) { return mha(c) && c.shape.seq_kv == 77 && c.shape.seq_q >= 1024; }
// llama32_vision_cross_attention_1601_half_chunks.cu: GQA over a whole number of 1601-key tiles
// (Llama 3.2 Vision's cross-attention layers: 1601 vision tokens a tile, 1 to 4 tiles).
inline bool vision_tiles_1601(const Call& c) { return gqa(c) && c.shape.seq_kv % 1601 == 0; }
// flux_joint_attention_24_heads_half_chunks.cu: 24 heads over 24, unmasked, Sq = Skv >= 4096
// (Flux.1's joint attention over 4096 image and 512 text tokens).
inline bool flux_joint(const Call& c) {
  return heads(c, 24, 24) && !c.causal && c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q >= 4096;
}
// bidirectional_embedding_gqa_batch_half_chunks.cu: an unmasked GQA call of 2 sequences or more,
// Sq = Skv > 4096 (gte-Qwen2-7B-instruct, NV-Embed-v2: a decoder made bidirectional, embedding a
// batch of long documents).
inline bool bidirectional_gqa_batch(const Call& c) {
  return !c.causal && gqa(c) && c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q > 4096 && c.shape.batch >= 2;
}

}  // namespace evo::test::round32
