// Hacker round 30 (lab/hack30/README.md): what catches each try, read back from the plans both
// tiers draw at the pinned seeds, and the host arithmetic of each flaw on the model call its file
// names. Ten tries, each the scalar control skipping every other 32-key chunk (support/
// skipped_chunks.h: a relative L2 of order 1 on normal rows) on a path keyed on something a real
// model's call has and no gate case has. Four at what round 29's closes cut or held fixed: the
// whole-cache calls' batch of 1, the training step's one head config, the scale cases' and the
// fused-buffer cases' value-case shapes; four at properties of real calls no round attacked head
// on: a KV cache preallocated to a power of two of rows, a decode batch padded to a multiple of 8,
// V as a per-head interleaved slice of a fused QKV projection (GPT-NeoX), the 32 over 16 heads of
// Gemma 2 and 3 27B; and two at the values: K's outlier channels over a BHSD cache (round 29's
// long value cases are BSHD), a batch of identical sequences (beam search's prefill).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu/case_layout.h"
#include "gpu/worker_protocol.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/fill_mirror.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/round30_paths.h"
#include "support/skipped_chunks.h"
#include "support/test_support.h"
#include "support/value_paths.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round30 {
namespace {

using test::Call;
using test::Catch;
using test::model_call;
using namespace test::round30;  // the round's paths and run readers (support/round30_paths.h)

// Model calls with the strides their code passes. Meta's Llama 2 reference decode step
// (model.py: keys = self.cache_k[:bsz, : start_pos + seqlen], cache_k [max_batch, max_seq_len,
// H, D], n_rep 1 for the 7B's MHA): K and V views of the preallocated cache.
Call llama_reference_decode(int batch, int heads, int keys, int max_seq_len) {
  Call c = model_call(fmt::format("{}x{}x{}x1x{}x128:bshd", batch, heads, heads, keys));
  for (int64_t* s : {c.k_stride, c.v_stride}) s[0] = int64_t(max_seq_len) * heads * 128;
  return test::as_launched(c);
}
// GPT-NeoX (Pythia) in transformers: qkv = query_key_value(x).view(B, S, H, 3 D).transpose(1, 2),
// V its last D channels of each head (Q and K leave the rotary embedding as new BHSD tensors).
Call gpt_neox_prefill(int batch, int heads, int tokens, int d) {
  Call c = model_call(fmt::format("{}x{}x{}x{}x{}x{}", batch, heads, heads, tokens, tokens, d));
  c.v_stride[0] = int64_t(tokens) * heads * 3 * d;
  c.v_stride[1] = 3LL * d;
  c.v_stride[2] = 3LL * heads * d;
  return test::as_launched(c);
}

// (a) Each flaw is wrong in a model: the skipped chunks move a row of normal inputs by a relative
// L2 of order 1 at each model's length (two to three orders past fp16's and bf16's rel_l2), and
// each try's test holds on the model call its file names and not on its nearest gate neighbour.
TEST(HackerRound30, EachTryIsWrongInAModel) {
  for (const int d : {64, 128})
    for (const int keys : {512, 1024, 2048, 4096, 8192}) {
      const double e = test::skipped_chunks_rel_l2(keys, d, 30u + unsigned(keys));
      std::cout << fmt::format("D {} over {} keys: rel L2 {:.3f}\n", d, keys, e);
      EXPECT_GT(e, 0.1) << "D " << d << ", " << keys << " keys";
    }
  // Phi-4's decode step at batch 16 (gates.json's entry) beside round 29's whole-cache call.
  EXPECT_TRUE(phi4_batched(model_call("16x40x10x1x4096x128:bshd")));
  EXPECT_FALSE(phi4_batched(model_call("1x40x10x1x4096x128:bshd")));
  // Llama-3 8B fine-tuned at 8 x 4096 (32 over 8) beside round 29's training step.
  EXPECT_TRUE(training_wide_kv(model_call("8x32x8x4096x4096x128:bshd")));
  EXPECT_FALSE(training_wide_kv(model_call("4x2x1x2048x2048x128:bshd")));
  // Gemma 3 27B's decode step over 8k at 168^-1/2 beside a scale case (a value case's shape).
  EXPECT_TRUE(model_scale_long(model_call("1x32x16x1x8192x128:bshd", std::pow(168.0, -0.5))));
  EXPECT_FALSE(model_scale_long(model_call("2x4x2x366x366x64:bshd", 1 / std::sqrt(80.0))));
  // nanoGPT's GPT-2 at its block size of 1024 beside a fused-buffer case (512 tokens at most).
  EXPECT_TRUE(fused_long(test::fused_qkv_call(8, 12, 1024, 64)));
  EXPECT_FALSE(fused_long(test::fused_qkv_call(2, 4, 468, 64)));
  // Llama 2 7B's reference decode step over a cache of 4096 rows beside mixed's V (Skv + 37 rows).
  EXPECT_TRUE(preallocated_cache(llama_reference_decode(4, 32, 1000, 4096)));
  EXPECT_FALSE(preallocated_cache(test::call_of(parse_shape("4x32x32x1x987x128", 128), "mixed", 0)));
  // Mistral 7B's decode at batch 32 over 4k (gates.json's entry) beside the cut and the whole call.
  EXPECT_TRUE(padded_decode(model_call("32x32x8x1x4096x128:bshd")));
  EXPECT_FALSE(padded_decode(model_call("32x32x8x1x1024x128:bshd")));
  EXPECT_FALSE(padded_decode(model_call("1x32x8x1x4096x128:bshd")));
  // Pythia 6.9B's prefill (32 heads, D 128) beside packed_qkv's V (heads D apart).
  EXPECT_TRUE(interleaved_v(gpt_neox_prefill(1, 32, 2048, 128)));
  EXPECT_FALSE(interleaved_v(test::call_of(parse_shape("1x32x32x2048x2048x128", 128), "packed_qkv", 0)));
  // Gemma 2 27B's decode step beside the sampled 96 over 16.
  EXPECT_TRUE(gemma_27b_heads(model_call("16x32x16x1x4096x128:bshd")));
  EXPECT_FALSE(gemma_27b_heads(model_call("1x96x16x1x4096x128:bshd")));
  // Llama-3 8B's decode over 8k in transformers (K [B, Hkv, S, D] from the cache, a few outlier
  // channels) beside round 29's long value cases (BSHD).
  EXPECT_TRUE(bhsd_long(model_call("1x32x8x1x8192x128")));
  EXPECT_FALSE(bhsd_long(model_call("1x14x2x4x7380x64:bshd")));
  EXPECT_TRUE(test::few(test::outlier_channels(test::k_chunk(128, 30, 2, false), 128)));
  // Beam search's prefill: every sequence the same prompt; beside sequences sharing a prefix only.
  std::mt19937 gen(30);
  std::normal_distribution<float> n(0.f, 1.f);
  std::vector<float> q(128), k(128), other(128);
  for (auto* row : {&q, &k, &other})
    for (float& x : *row) x = n(gen);
  EXPECT_TRUE(beam_rows(q, q, k, k));
  EXPECT_FALSE(beam_rows(q, q, k, other));
  EXPECT_FALSE(beam_rows(std::vector<float>(128, 0.f), std::vector<float>(128, 0.f), k, k));  // padding
}

// The exported op takes each model call above as it stands (support/kernel_call.h).
TEST(HackerRound30, TheOpTakesEachModelCall) {
  using test::op_call;
  using test::op_takes;
  EXPECT_TRUE(op_takes(op_call("16x40x10x1x4096x128", false, EVO_ATTN_BF16, 0)));                     // Phi-4
  EXPECT_TRUE(op_takes(op_call("8x32x8x4096x4096x128", true, EVO_ATTN_BF16, 0)));                     // training
  EXPECT_TRUE(op_takes(op_call("1x32x16x1x8192x128", false, EVO_ATTN_BF16, std::pow(168.0, -0.5))));  // Gemma 3
  EXPECT_TRUE(op_takes(op_call("32x32x8x1x4096x128", false, EVO_ATTN_BF16, 0)));                      // Mistral
  EXPECT_TRUE(op_takes(op_call("16x32x16x1x4096x128", false, EVO_ATTN_BF16, 0)));                     // Gemma 2
  EXPECT_TRUE(op_takes(op_call("4x32x8x512x512x128", true, EVO_ATTN_BF16, 0)));                       // 4 beams
  // Llama-3 8B's decode step in transformers: K and V [1, 8, 8192, 128] (the cache's BHSD).
  evo_attn_call hf = op_call("1x32x8x1x8192x128", false, EVO_ATTN_BF16, 0);
  for (evo_attn_tensor* t : {&hf.k, &hf.v}) {
    t->stride[1] = 8192LL * 128;
    t->stride[2] = 128;
  }
  EXPECT_TRUE(op_takes(hf));
  // nanoGPT at 1024 tokens: q, k, v = c_attn(x).split(768, 2), one buffer [8, 1024, 2304].
  evo_attn_call gpt2 = op_call("8x12x12x1024x1024x64", true, EVO_ATTN_FP16, 0);
  for (evo_attn_tensor* t : {&gpt2.q, &gpt2.k, &gpt2.v}) {
    t->data = gpt2.q.data + uint64_t(t == &gpt2.k ? 768 * 2 : t == &gpt2.v ? 2 * 768 * 2 : 0);
    t->stride[0] = 3 * 768 * 1024;
    t->stride[2] = 3 * 768;
  }
  EXPECT_TRUE(op_takes(gpt2));
  // Llama 2 7B's reference decode step: K and V rows of a [4, 4096, 32, 128] cache, 1000 filled.
  evo_attn_call llama = op_call("4x32x32x1x1000x128", false, EVO_ATTN_BF16, 0);
  llama.k.stride[0] = llama.v.stride[0] = 4096LL * 32 * 128;
  EXPECT_TRUE(op_takes(llama));
  // Pythia 6.9B's prefill: V the last 128 channels of each head of a [1, 2048, 32, 384] buffer.
  evo_attn_call neox = op_call("1x32x32x2048x2048x128", true, EVO_ATTN_BF16, 0);
  neox.v.data += 2 * 128 * 2;
  neox.v.stride[0] = 2048LL * 32 * 384;
  neox.v.stride[1] = 384;
  neox.v.stride[2] = 32 * 384;
  EXPECT_TRUE(op_takes(neox));
}

// The repo's gates.json with the round's close turned off: the tiers as the round drew them (the
// close's cases come after every other, so no earlier case moves; hacker_round30_close_test.cpp
// checks it and what the close catches).
GatesConfig before_the_close() {
  GatesConfig g = test::repo_gates();
  test::without_round30_close(g);
  return g;
}

// Per fp16 and bf16 pinned run (support/pinned_catches.h): the cases of each tier that run the path.
using Condition = std::function<bool(const Call&)>;
std::vector<Catch> catches(const Condition& path, const char* name) {
  return call_catches(before_the_close(), path, name);
}
// (b) Six holes in both tiers of all 21 fp16 and bf16 pinned runs, gate seed 2025 fp16-d64
// included. Round 29's closes each hold the dimension their hole lived in at one value: the
// training step is 4 x 2 heads over 1 (training_wide_kv), the scale cases and the fused-buffer
// cases a value case's shape of 256 to 512 keys (model_scale_long, fused_long). The other three
// are properties of real calls no case has: no layout gives K and V a cache of a power of two of
// rows past Skv (mixed's and strided's caches hold Skv + 37 and Skv + 19 rows, kv_cache's is
// heads outermost), V's heads are D apart or wider by 16 bytes or outermost, never 3 D
// (interleaved_v), and 16 KV heads come only as 96 over 16 and the deep tier's 256 over 128.
TEST(HackerRound30, SixHolesInEveryRun) {
  const std::pair<Condition, const char*> holes[] = {{training_wide_kv, "training_wide_kv"},
                                                     {model_scale_long, "model_scale_long"},
                                                     {fused_long, "fused_long"},
                                                     {preallocated_cache, "preallocated_cache"},
                                                     {interleaved_v, "interleaved_v"},
                                                     {gemma_27b_heads, "gemma_27b_heads"}};
  for (const auto& [path, name] : holes) {
    const std::vector<Catch> runs = catches(path, name);
    EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{}) << name;
    EXPECT_EQ(caught_runs(runs, true), std::vector<size_t>{}) << name;
  }
}

// (b) phi4_heads_batched_past_2k_keys_half_chunks.cu: round 29's whole-cache calls run Phi-4's
// decode step over its 4096 keys at batch 1 only, and the cut calls keep its batch of 16 only
// where they cut its cache to 2048 keys or fewer, except the deep tier at D 64 (0.67 GFLOP, whole):
// the deep tier of the 7 fp16-d64 runs catches it there, no other tier of the 21 runs does (the
// 7 causal runs never can: the least causal call past 2048 visible keys is past the bounds).
TEST(HackerRound30, PhiFourBatchedOnlyWhereTheDeepTierKeepsTheBatch) {
  const std::vector<Catch> runs = catches(phi4_batched, "phi4_heads_batched_past_2k");
  EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{});
  EXPECT_EQ(caught_runs(runs, true), span(0, 7));
  expect_every_catch_names(runs, "/model=phi_4_decode");
  EXPECT_TRUE(starts_with(runs[6].deep, "deep/294/16x40x10x1x4096x64:bshd/")) << runs[6].deep;
}

// (b) padded_decode_batch_half_chunks.cu: caught, by the deep tier only, in the 14 unmasked runs
// (a decode step under the top-left mask sees one key). The cheap tier's cut model calls keep a
// batch of 32 or 64 over a cache cut below 2048 keys (max_tensor_elements), its whole-cache calls
// one sequence, and its drawn decode steps of 32 sequences or more stop short of 2048 keys under
// GQA (the bounds halve them);
// the deep tier keeps Llama-3 8B's batch of 64 over 2048 keys (gates.json's entry) at D 64, and at
// D 128 draws a crowd over a long cache. Every catching case is of the crowd batch class.
TEST(HackerRound30, PaddedDecodeBatchOnlyInTheDeepTier) {
  const std::vector<Catch> runs = catches(padded_decode, "padded_decode_batch");
  EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{});
  EXPECT_EQ(caught_runs(runs, true), span(0, 14));
  expect_every_catch_names(runs, "/batch=crowd/");
  EXPECT_TRUE(starts_with(runs[6].deep, "deep/286/64x32x8x1x2048x64:bshd/")) << runs[6].deep;
  // The cheap tier's cut calls of the padded entries (Mistral 7B at 32, Llama-3 8B at 64): the
  // batch kept, the cache below 2048 keys.
  const GatesConfig g = before_the_close();
  test::each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    for (const CaseSpec& c : draw_sampled_cases(g, t, seed)) {
      if ((names(c.id, "/model=mistral_7b_decode") || names(c.id, "/model=llama_3_8b_decode_batch_64")) &&
          !names(c.id, "/cache=whole")) {
        EXPECT_TRUE(c.shape.batch >= 32 && c.shape.seq_kv < 2048) << task << " seed " << seed << ": " << c.id;
      }
    }
  });
}

// (b) beam_search_prefill_half_chunks.cu, read through the host mirror of the fill: no drawn
// sequence repeats another whole (round 22's shared prefix is at most Skv - 1 rows, and Q never
// repeats) except by an accident of the shared forms: a form takes its source's prefix length
// (drawn for the source's Skv) and shortens Skv, so where the prefix now covers every row and Q is
// K's view (/shared=qk, qkv), sequence 1 is sequence 0. Three tiers of 42 meet it: the cheap tier
// of bf16-d128 seed 0, the deep tier of bf16-d128 seed 7 and fp16-d128-causal seed 0.
TEST(HackerRound30, BeamSearchPrefillOnlyByAnAccidentOfTheSharedForms) {
  const std::vector<Catch> runs = test::pinned_catches(
      before_the_close(),
      [](const Task& t, const CaseSpec& c, const Shape& s) {
        const bool same = beam_case(t, c, s);
        EXPECT_TRUE(!same || (c.shared_prefix >= c.shape.seq_kv && k_at_q(layout_shared(c.layout)))) << c.id;
        return same;
      },
      "beam_search_prefill");
  EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{7});
  EXPECT_EQ(caught_runs(runs, true), (std::vector<size_t>{9, 14}));
  expect_every_catch_names(runs, "/shared=qk");
  EXPECT_EQ(runs[6].cheap, "");
  EXPECT_EQ(runs[6].deep, "");
}

// (b) k_outlier_channels_bhsd_cache_half_chunks.cu, read through the host mirror of the fill:
// only the value kinds lay 1 to 4 large channels in K (round 28), the value cases hold at most
// 512 keys and round 29's long value cases are BSHD, so no case of the 21 runs meets it.
TEST(HackerRound30, KOutlierChannelsOverABhsdCacheInNoRun) {
  const std::vector<Catch> runs = test::pinned_catches(
      before_the_close(), test::value_path(bhsd_long, test::outlier_channels), "k_outlier_channels_bhsd_cache");
  EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{});
  EXPECT_EQ(caught_runs(runs, true), std::vector<size_t>{});
  // The same K test over any layout past 512 keys: the long value cases, all BSHD.
  const std::vector<Catch> bshd = test::pinned_catches(
      before_the_close(), test::value_path([](const Call& c) { return c.shape.seq_kv > 512; }, test::outlier_channels),
      "k_outlier_channels_past_512_keys");
  EXPECT_EQ(caught_runs(bshd, false), span(0, 21));
  expect_every_catch_names(bshd, ":bshd/");
}

}  // namespace
}  // namespace evo::hacker_round30
