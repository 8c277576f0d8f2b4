// Hacker round 33's paths (lab/hack33/README.md): each try's test on the call, as its kernel reads
// it (support/kernel_call.h: the params a launch passes, a dim of size 1 given the stride D), read
// over the plans both tiers draw at the pinned seeds with every close through round 32's on.
#pragma once
#include <cstdint>

#include "support/kernel_call.h"

namespace evo::test::round33 {

inline bool pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }
inline bool decode(const Call& c) { return c.shape.seq_q == 1; }
inline bool mha(const Call& c) { return c.shape.heads_q == c.shape.heads_kv; }

// mistral_rolling_buffer_4096_half_chunks.cu: a GQA decode step over exactly 4096 keys (Mistral 7B
// v0.1's rolling buffer cache of its 4096-token window, full at every step past 4096 tokens).
inline bool rolling_buffer_4096(const Call& c) { return decode(c) && gqa(c) && c.shape.seq_kv == 4096; }
// gemma3_local_window_1024_half_chunks.cu: a GQA decode step over exactly 1024 keys (Gemma 3's local
// layers, five of every six, see a window of 1024 keys at every step past 1024 tokens).
inline bool local_window_1024(const Call& c) { return decode(c) && gqa(c) && c.shape.seq_kv == 1024; }
// full_context_window_prefill_half_chunks.cu: Sq = Skv, a power of two of 4096 or more (a model's
// whole context window in one call: lm-evaluation-harness's perplexity windows, packed pretraining).
inline bool full_context_window(const Call& c) {
  return c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q >= 4096 && pow2(c.shape.seq_q);
}
// video_dit_full_attention_half_chunks.cu: unmasked MHA, Sq = Skv past 16384 (a video diffusion
// transformer's full 3D attention over every latent token: Wan 2.1, HunyuanVideo, CogVideoX).
inline bool video_full_attention(const Call& c) {
  return !c.causal && mha(c) && c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q > 16384;
}
// long_context_decode_past_64k_half_chunks.cu: a GQA decode step over more than 65536 keys (Llama
// 3.1's and Qwen2.5's 128k contexts).
inline bool decode_past_64k(const Call& c) { return decode(c) && gqa(c) && c.shape.seq_kv > 65536; }
// static_cache_capacity_half_chunks.cu: K a head-major view of a cache of C rows a head (row stride
// D, head stride C D), C not a power of two and at least Skv + 64 (transformers' StaticCache,
// max_cache_len the prompt plus max_new_tokens, sliced to its filled rows; a dim of size 1 is launched
// with the stride D, so the head stride holds only over 2 KV heads or more).
inline bool static_cache(const Call& c) {
  const int64_t d = c.shape.head_dim, rows = c.k_stride[1] / d;
  return c.shape.heads_kv >= 2 && c.k_stride[2] == d && c.k_stride[1] % d == 0 && rows >= c.shape.seq_kv + 64 &&
         !pow2(rows);
}
// clip_vit_l14_336_577_tokens_half_chunks.cu: MHA over exactly 577 keys (CLIP ViT-L/14 at 336 px:
// 24 x 24 patches and a class token; LLaVA-1.5's vision tower).
inline bool clip_336_tokens(const Call& c) { return mha(c) && c.shape.seq_kv == 577; }
// mqa_long_prefill_half_chunks.cu: one KV head, Sq = Skv past 4096 (StarCoder's 48 over 1 at its
// 8192-token context, Falcon-7B's 71 over 1).
inline bool mqa_long_prefill(const Call& c) {
  return c.shape.heads_kv == 1 && c.shape.heads_q > 1 && c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q > 4096;
}

// sdxl_self_attention_4096_half_chunks.cu: unmasked MHA, Sq = Skv = 4096 (a diffusion U-Net's
// self-attention over 64 x 64 latent pixels: SDXL at 1024x1024, SD 2 at 512x512).
inline bool latent_64x64_self(const Call& c) {
  return !c.causal && mha(c) && c.shape.seq_q == 4096 && c.shape.seq_kv == 4096;
}
// long_gqa_prefill_past_8k_half_chunks.cu: GQA, Sq = Skv past 8192 (Llama 3.1's prefill of a long
// prompt; unmasked, a decoder-based embedding of one long document).
inline bool long_gqa_prefill(const Call& c) {
  return gqa(c) && c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q > 8192;
}

// flash_attn_kv_packed_cache_half_chunks.cu: K a view of a KV-packed buffer [B, S, 2, Hkv, D], heads
// D apart and rows 2 Hkv D apart (flash-attn's MHA inference cache, kv_cache[:, :S, 0]).
inline bool kv_packed(const Call& c) {
  return c.k_stride[1] == c.shape.head_dim && c.k_stride[2] == 2LL * c.shape.heads_kv * c.shape.head_dim;
}

}  // namespace evo::test::round33
