// Hacker round 33 (lab/hack33/README.md): what catches each try, read back from the plans both tiers
// draw at the pinned seeds with every close through round 32's on and round 33's own close off
// (test::repo_gates_before_round33_close(); hacker_round33_close_test.cpp reads it on), and the
// host arithmetic of each flaw on the model call its file names. Eleven tries, each the scalar
// control skipping every other 32-key chunk (support/skipped_chunks.h) on a path keyed on something a
// real model's call has: a sliding window's full ring (Mistral's 4096, Gemma 3's 1024), a whole
// context window, a video DiT's full attention, a decode past 64k keys, a StaticCache's capacity,
// CLIP ViT-L/14-336's 577 tokens, an MQA prefill past 4k, a U-Net's 64 x 64 latent self-attention, a
// GQA prefill past 8k, flash-attn's KV-packed cache.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/round30_paths.h"
#include "support/round31_paths.h"
#include "support/round33_paths.h"
#include "support/skipped_chunks.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round33 {
namespace {

using test::Call;
using test::Catch;
using test::model_call;
using test::round30::call_catches;
using test::round30::span;
using test::round31::expect_runs;
using namespace test::round33;  // the round's paths (support/round33_paths.h)

Call masked_call(const std::string& dims, bool causal, double scale = 0) {
  Call c = model_call(dims, scale);
  c.causal = causal;
  return test::as_launched(c);
}
// transformers' StaticCache [B, Hkv, capacity, D] handed to the op as its filled rows
// (k_cache[:, :, :keys]): Llama 3.1 8B's decode step.
Call static_cache_decode(int batch, int keys, int capacity) {
  Call c = model_call(fmt::format("{}x32x8x1x{}x128", batch, keys));
  for (int64_t* s : {c.k_stride, c.v_stride}) {
    s[0] = 8LL * capacity * 128;
    s[1] = int64_t(capacity) * 128;
    s[2] = 128;
  }
  return test::as_launched(c);
}
// flash-attn's MHA inference cache [B, capacity, 2, Hkv, D] (flash_attn.modules.mha _update_kv_cache),
// K and V its filled rows kv_cache[:, :keys, 0] and [:, :keys, 1].
Call kv_packed_decode(const std::string& dims, int capacity) {
  Call c = model_call(dims);
  const int64_t d = c.shape.head_dim, row = 2LL * c.shape.heads_kv * d;
  for (int64_t* s : {c.k_stride, c.v_stride}) {
    s[0] = row * capacity;
    s[1] = d;
    s[2] = row;
  }
  return test::as_launched(c);
}
const double kGemma3Scale = 1.0 / std::sqrt(168.0);  // Gemma 3 27B's query_pre_attn_scalar

// (a) Each flaw is wrong in a model: the skipped chunks move a row of normal inputs by a relative L2
// of order 1 at each model's length, and each try's test holds on the model call its file names and
// not on its nearest neighbour.
TEST(HackerRound33, EachTryIsWrongInAModel) {
  for (const int d : {64, 128})
    for (const int keys : {577, 1024, 4096, 8192, 17776, 20000, 100000}) {
      const double e = test::skipped_chunks_rel_l2(keys, d, 33u + unsigned(keys));
      std::cout << fmt::format("D {} over {} keys: rel L2 {:.3f}\n", d, keys, e);
      EXPECT_GT(e, 0.1) << "D " << d << ", " << keys << " keys";
    }
  EXPECT_TRUE(rolling_buffer_4096(model_call("16x32x8x1x4096x128:bshd")));  // Mistral 7B v0.1 past its window
  EXPECT_FALSE(rolling_buffer_4096(model_call("16x32x8x1x4095x128:bshd")));
  EXPECT_FALSE(rolling_buffer_4096(model_call("16x32x32x1x4096x128:bshd")));
  EXPECT_TRUE(local_window_1024(model_call("8x32x16x1x1024x128:bshd", kGemma3Scale)));  // Gemma 3 27B, local
  EXPECT_FALSE(local_window_1024(model_call("8x32x16x1x1025x128:bshd", kGemma3Scale)));
  EXPECT_TRUE(full_context_window(masked_call("1x32x32x4096x4096x128", true)));      // Llama 2 7B perplexity
  EXPECT_TRUE(full_context_window(masked_call("1x32x8x8192x8192x128:bshd", true)));  // Llama 3 8B
  EXPECT_TRUE(full_context_window(masked_call("1x12x12x8192x8192x64", false)));      // ModernBERT-base
  EXPECT_FALSE(full_context_window(masked_call("1x32x32x4000x4000x128", true)));
  EXPECT_FALSE(full_context_window(masked_call("1x32x32x2048x2048x128", true)));
  EXPECT_TRUE(video_full_attention(masked_call("2x30x30x17776x17776x64", false)));   // CogVideoX-2B
  EXPECT_TRUE(video_full_attention(masked_call("1x12x12x32760x32760x128", false)));  // Wan 2.1 1.3B
  EXPECT_FALSE(video_full_attention(masked_call("1x12x12x32760x32760x128", true)));
  EXPECT_FALSE(video_full_attention(masked_call("1x12x12x16384x16384x128", false)));
  EXPECT_TRUE(decode_past_64k(model_call("1x32x8x1x100000x128:bshd")));  // Llama 3.1 8B at 100k
  EXPECT_TRUE(decode_past_64k(model_call("1x28x4x1x120000x128:bshd")));  // Qwen2.5-7B with YaRN
  EXPECT_FALSE(decode_past_64k(model_call("1x32x8x1x65536x128:bshd")));
  // StaticCache of 1256 rows (1000-token prompt, 256 new): every step but the last 64 takes the path;
  // a power-of-two capacity (pow2_cache_bhsd's) and strided's Skv + 19 rows do not.
  EXPECT_TRUE(static_cache(static_cache_decode(1, 1100, 1256)));
  EXPECT_TRUE(static_cache(static_cache_decode(4, 1001, 1256)));
  EXPECT_FALSE(static_cache(static_cache_decode(1, 1100, 2048)));
  EXPECT_FALSE(static_cache(static_cache_decode(1, 1100, 1119)));
  EXPECT_FALSE(static_cache(static_cache_decode(1, 1200, 1256)));
  EXPECT_TRUE(clip_336_tokens(model_call("8x16x16x577x577x64")));  // LLaVA-1.5's vision tower
  EXPECT_FALSE(clip_336_tokens(model_call("8x16x16x576x576x64")));
  EXPECT_FALSE(clip_336_tokens(model_call("8x16x16x257x257x64")));                // CLIP ViT-L/14 at 224 px
  EXPECT_TRUE(mqa_long_prefill(masked_call("1x48x1x8192x8192x128:bshd", true)));  // StarCoder's FIM prompt
  EXPECT_FALSE(mqa_long_prefill(masked_call("1x48x1x4096x4096x128:bshd", true)));
  EXPECT_FALSE(mqa_long_prefill(masked_call("1x48x2x8192x8192x128:bshd", true)));
  EXPECT_TRUE(latent_64x64_self(masked_call("2x10x10x4096x4096x64", false)));   // SDXL at 1024x1024
  EXPECT_TRUE(latent_64x64_self(masked_call("2x5x5x4096x4096x64", false)));     // SD 2.1 base at 512x512
  EXPECT_FALSE(latent_64x64_self(masked_call("2x20x20x1024x1024x64", false)));  // SDXL's third level
  EXPECT_FALSE(latent_64x64_self(masked_call("2x10x10x4096x4096x64", true)));
  EXPECT_TRUE(long_gqa_prefill(masked_call("1x32x8x20000x20000x128:bshd", true)));   // Llama 3.1 8B
  EXPECT_TRUE(long_gqa_prefill(masked_call("1x28x4x32768x32768x128:bshd", false)));  // gte-Qwen2-7B
  EXPECT_FALSE(long_gqa_prefill(masked_call("1x32x8x8192x8192x128:bshd", true)));
  EXPECT_FALSE(long_gqa_prefill(masked_call("1x32x32x20000x20000x128", true)));
}

// flash-attn's GPT-2 and Llama 2 decode steps over its KV-packed cache beside the layouts that put K
// and V in one buffer: packed_qkv (Q too: rows (Hq + 2 Hkv) D) and the shared kv view (rows Hkv D).
TEST(HackerRound33, KvPackedCacheIsWrongInAModel) {
  EXPECT_TRUE(kv_packed(kv_packed_decode("8x12x12x1x300x64", 1024)));
  EXPECT_TRUE(kv_packed(kv_packed_decode("4x32x32x1x1500x128", 4096)));
  EXPECT_FALSE(kv_packed(test::layout_call("1x4x2x921x921x64", "packed_qkv")));
  EXPECT_FALSE(kv_packed(test::layout_call("2x8x8x300x300x64", "bshd+kv")));
  EXPECT_FALSE(kv_packed(model_call("8x12x12x1x300x64:bshd")));
}

// The exported op takes each model call above as it stands (support/kernel_call.h).
TEST(HackerRound33, TheOpTakesEachModelCall) {
  using test::op_call;
  using test::op_takes;
  EXPECT_TRUE(op_takes(op_call("16x32x8x1x4096x128", false, EVO_ATTN_BF16, 0)));             // Mistral 7B
  EXPECT_TRUE(op_takes(op_call("8x32x16x1x1024x128", false, EVO_ATTN_BF16, kGemma3Scale)));  // Gemma 3 27B
  EXPECT_TRUE(op_takes(op_call("1x32x32x4096x4096x128", true, EVO_ATTN_BF16, 0)));           // Llama 2 7B
  EXPECT_TRUE(op_takes(op_call("1x12x12x8192x8192x64", false, EVO_ATTN_FP16, 0)));           // ModernBERT
  EXPECT_TRUE(op_takes(op_call("2x30x30x17776x17776x64", false, EVO_ATTN_FP16, 0)));         // CogVideoX-2B
  EXPECT_TRUE(op_takes(op_call("1x12x12x32760x32760x128", false, EVO_ATTN_BF16, 0)));        // Wan 2.1
  EXPECT_TRUE(op_takes(op_call("1x32x8x1x100000x128", false, EVO_ATTN_BF16, 0)));            // Llama 3.1 8B
  EXPECT_TRUE(op_takes(op_call("8x16x16x577x577x64", false, EVO_ATTN_FP16, 0)));             // LLaVA-1.5
  EXPECT_TRUE(op_takes(op_call("1x48x1x8192x8192x128", true, EVO_ATTN_BF16, 0)));            // StarCoder
  EXPECT_TRUE(op_takes(op_call("2x10x10x4096x4096x64", false, EVO_ATTN_FP16, 0)));           // SDXL
  EXPECT_TRUE(op_takes(op_call("1x32x8x20000x20000x128", true, EVO_ATTN_BF16, 0)));          // Llama 3.1 8B
  EXPECT_TRUE(op_takes(op_call("1x28x4x32768x32768x128", false, EVO_ATTN_BF16, 0)));         // gte-Qwen2
  // transformers' StaticCache: K and V the first 1100 rows of each head of a [1, 8, 1256, 128] cache.
  evo_attn_call fixed = op_call("1x32x8x1x1100x128", false, EVO_ATTN_BF16, 0);
  for (evo_attn_tensor* t : {&fixed.k, &fixed.v}) {
    t->stride[0] = 8LL * 1256 * 128;
    t->stride[1] = 1256LL * 128;
    t->stride[2] = 128;
  }
  EXPECT_TRUE(op_takes(fixed));
  // flash-attn's GPT-2: K and V the first 300 rows of a [8, 1024, 2, 12, 64] KV-packed cache.
  evo_attn_call packed = op_call("8x12x12x1x300x64", false, EVO_ATTN_FP16, 0);
  packed.v.data = packed.k.data + 12 * 64 * 2;  // V = kv_cache[:, :, 1], Hkv D elements past K
  for (evo_attn_tensor* t : {&packed.k, &packed.v}) {
    t->stride[0] = 1024LL * 2 * 12 * 64;
    t->stride[1] = 64;
    t->stride[2] = 2 * 12 * 64;
  }
  EXPECT_TRUE(op_takes(packed));
}

using Condition = std::function<bool(const Call&)>;
std::vector<Catch> catches(const Condition& path, const char* name) {
  return call_catches(test::repo_gates_before_round33_close(), path, name);
}

// (b) Four holes in both tiers of all 21 fp16 and bf16 pinned runs, gate seed 2025 fp16-d64
// included: no MHA case has exactly 577 keys, no unmasked MHA case Sq = Skv = 4096, no GQA case
// Sq = Skv past 8192, no K rows 2 Hkv D apart.
TEST(HackerRound33, FourHolesInEveryRun) {
  const std::pair<Condition, const char*> holes[] = {{clip_336_tokens, "clip_336_tokens"},
                                                     {latent_64x64_self, "latent_64x64_self"},
                                                     {long_gqa_prefill, "long_gqa_prefill"},
                                                     {kv_packed, "kv_packed"}};
  for (const auto& [path, name] : holes) expect_runs(catches(path, name), {}, {}, "", "");
}

// (b) The two sliding windows: both tiers of the 14 unmasked runs (a one-row causal step sees one
// key), by gates.json's decode entries (and, for 1024 keys, the deep tier's far layouts).
TEST(HackerRound33, SlidingWindowsInEveryUnmaskedRun) {
  const std::vector<Catch> ring = catches(rolling_buffer_4096, "rolling_buffer_4096");
  expect_runs(ring, span(0, 14), span(0, 14), "sampled/117/16x28x4x1x4096x64:bshd/",
              "deep/287/16x64x8x1x4096x64:bshd/");
  test::expect_every_catch_names_one_of(ring, {"_4k_context"});
  const std::vector<Catch> local = catches(local_window_1024, "local_window_1024");
  expect_runs(local, span(0, 14), span(0, 14), "sampled/116/32x32x8x1x1024x64:bshd/", "deep/far/1x32x2x1x1024x64/");
  test::expect_every_catch_names_one_of(local, {"_decode", "/layout=far_"});
}

// (b) A whole context window and a StaticCache's capacity: both tiers of all 21 runs.
TEST(HackerRound33, ContextWindowAndStaticCacheInEveryRun) {
  const std::vector<Catch> window = catches(full_context_window, "full_context_window");
  expect_runs(window, span(0, 21), span(0, 21), "long/2x32x32x8192x8192x64/", "deep/frontier/1x32x32x32768x32768x64/");
  test::expect_every_catch_names_one_of(window, {"long/", "long-keys/", "deep/frontier/"});
  const std::vector<Catch> cache = catches(static_cache, "static_cache");
  expect_runs(cache, span(0, 21), span(0, 21), "sampled/1/5x48x3x472x472x64/", "deep/28/795x96x16x2x1024x64/");
  test::expect_every_catch_names_one_of(cache, {"/layout=kv_cache/"});
}

// (b) Three tries only the deep tier catches: the video DiT (the frontier's 32k MHA shapes alone),
// the decode past 64k keys (ctx_128k draws and the frontier's decode), the MQA prefill past 4k
// (drawn eq-diagonal MQA cases in 15 of the 21 runs).
TEST(HackerRound33, ThreeOnlyInTheDeepTier) {
  const std::vector<Catch> video = catches(video_full_attention, "video_full_attention");
  expect_runs(video, {}, span(0, 14), "", "deep/frontier/1x32x32x32768x32768x64/");
  test::expect_every_catch_names_one_of(video, {"deep/frontier/"});
  const std::vector<Catch> decode = catches(decode_past_64k, "decode_past_64k");
  expect_runs(decode, {}, span(0, 14), "", "deep/5/1x16x8x1x80214x64/");
  test::expect_every_catch_names_one_of(decode, {"/skv=ctx_128k", "deep/frontier/"});
  const std::vector<Catch> mqa = catches(mqa_long_prefill, "mqa_long_prefill");
  expect_runs(mqa, {}, {0, 1, 4, 5, 6, 7, 9, 11, 13, 14, 15, 17, 18, 19, 20}, "", "deep/121/1x32x1x4650x4650x64/");
  test::expect_every_catch_names_one_of(mqa, {"/ratio=mqa/"});
}

}  // namespace
}  // namespace evo::hacker_round33
