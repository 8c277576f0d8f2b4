// Hacker round 29 (lab/hack29/README.md): what catches each try, read back from the plans both
// tiers draw at the pinned seeds, and the host arithmetic of each flaw on the model call its file
// names. Eight tries, each the scalar control skipping every other 32-key chunk (support/
// skipped_chunks.h: a relative L2 of order 1 on normal rows) on a path keyed on something a real
// model's call has and no gate case has, aimed at design assumptions no earlier round attacked: the
// exact float a model passes as its scale (the listed points are rounded decimals, the ranges
// continuous draws); one fused projection buffer holding Q, K and V (the gate places each view in a
// buffer of its own); the cuts that made rounds 27's and 28's closes cheap (the model calls cut to
// 2^30 FLOPs, the value cases at 2 x 4 heads over 256 to 512 keys); the per-case FLOPs bound
// (a batched long prefill, a training step); and two conjunctions the length classes and the model
// calls cut (speculative verification over a long cache, cross-attention of many queries over a
// short text). Closed after the round (lab/hack29/README.md): the scale try by the scale cases
// (run/value_cases.h append_scale_cases), the fused-buffer try by the fused-buffer cases
// (append_fused_qkv_cases, layout packed_qkv+fused), both after every other case of each tier; then
// the four cut holes, after those: Phi-4's heads past 2k keys by the whole-cache model calls
// (run/model_cases.h append_whole_cache_model_cases), the two value tries by the long value cases
// (run/value_cases.h append_long_value_cases), the batched GQA prefill by the training step
// (append_training_step_cases). The hole tests read the tiers with those switches off.
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
#include "package.h"
#include "run/model_cases.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "run/value_cases.h"
#include "support/fill_mirror.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/skipped_chunks.h"
#include "support/test_support.h"
#include "support/value_paths.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round29 {
namespace {

using test::bias_channels;
using test::Call;
using test::call_of;
using test::few;
using test::fused_qkv;
using test::fused_qkv_call;
using test::gqa;
using test::inverse_root_scale;
using test::k_chunk;
using test::model_call;
using test::op_call;
using test::op_takes;
using test::outlier_channels;
using test::value_path;

// Each try's condition on the call, the kernel's own test (the TRICK lines of its file).
// phi4_heads_past_2k_keys_half_chunks.cu: 9 to 15 KV heads under more query heads, a row over
// more than 2048 keys.
bool kv_heads_9_to_15_long(const Call& c) {
  return c.shape.heads_kv > 8 && c.shape.heads_kv < 16 && c.shape.heads_q > c.shape.heads_kv &&
         c.shape.visible_kv(c.causal) > 2048;
}
// gqa_batched_long_prefill_half_chunks.cu: GQA (or MQA), 4 sequences or more, Sq = Skv >= 2048.
bool gqa_batched_long_prefill(const Call& c) {
  return gqa(c) && c.shape.batch >= 4 && c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q >= 2048;
}
// spec_verify_long_cache_gqa_half_chunks.cu: GQA, 2 to 16 query rows, more than 4096 keys.
bool spec_verify_long(const Call& c) {
  return gqa(c) && c.shape.seq_q >= 2 && c.shape.seq_q <= 16 && c.shape.seq_kv > 4096;
}
// cross_attention_short_text_half_chunks.cu: 64 to 256 keys, 32 query rows a key or more.
bool cross_attention_short_text(const Call& c) {
  return c.shape.seq_kv >= 64 && c.shape.seq_kv <= 256 && c.shape.seq_q >= 32LL * c.shape.seq_kv;
}

// Their shape tests.
bool past_512_keys(const Call& c) { return c.shape.seq_kv > 512; }
bool wide_groups(const Call& c) { return c.shape.heads_q > 4 * c.shape.heads_kv && c.shape.seq_kv >= 32; }

using Condition = std::function<bool(const Call&)>;

using test::Catch;
// The repo's gates.json with round 30's close off: this round's predictions as made (round 30's
// cases also run some of this round's paths: hacker_round30_close_test.cpp, expected.json).
GatesConfig before_round30() {
  GatesConfig g = test::repo_gates();
  test::without_round30_close(g);
  return g;
}
// Per fp16 and bf16 pinned run (support/pinned_catches.h): the cases of each tier that run the path.
// `g`: the tiers a config draws (round 30's close off by default; a close's switch off: before it).
std::vector<Catch> catches(const Condition& path, const char* name, const GatesConfig& g = before_round30()) {
  return test::pinned_catches(
      g,
      [&](const Task& t, const CaseSpec& c, const Shape& s) { return path(call_of(s, c.layout, c.scale, t.causal)); },
      name);
}
// The repo's gates.json with the switches of round 29's close after the round turned off: the tiers
// as they were drawn when the round was predicted (the cases come after every other, so no earlier
// case moves; the *AtTheEnd tests check it).
GatesConfig before_the_close() {
  GatesConfig g = before_round30();
  g.sampled.whole_cache_model_cases = g.sampled.long_value_cases = g.sampled.training_step_cases = false;
  return g;
}

bool causal(const std::string& run) { return run.find("causal") != std::string::npos; }
bool d64(const std::string& run) { return run.find("-d64") != std::string::npos; }
bool starts_with(const std::string& id, const std::string& head) { return id.rfind(head, 0) == 0; }
bool names(const std::string& id, const std::string& token) { return id.find(token) != std::string::npos; }
int caught_in(const std::vector<Catch>& runs, bool deep) {
  int n = 0;
  for (const Catch& k : runs) n += (deep ? k.deep : k.cheap).empty() ? 0 : 1;
  return n;
}

// (a) Each flaw is wrong in a model: the skipped chunks move a row of normal inputs by a relative
// L2 of order 1 (two to three orders past fp16's and bf16's rel_l2), and each try's test holds on
// the model call its file names and not on its neighbour, the nearest the gate comes.
TEST(HackerRound29, EachTryIsWrongInAModel) {
  for (const int d : {64, 128})
    for (const int keys : {77, 300, 2048, 4200, 8192}) {
      const double e = test::skipped_chunks_rel_l2(keys, d, 29u + unsigned(keys));
      std::cout << fmt::format("D {} over {} keys: rel L2 {:.3f}\n", d, keys, e);
      EXPECT_GT(e, 0.1) << "D " << d << ", " << keys << " keys";
    }
  // Gemma 3 27B (32 query heads over 16, D 128, query_pre_attn_scalar 168) and Gemma 2 27B (144):
  // the float of n^-1/2 as Python's float passes it; gates.json's "0.0833333" is 5 ulps off 1/12.
  EXPECT_TRUE(inverse_root_scale(model_call("1x32x16x4096x4096x128", std::pow(168.0, -0.5))));
  EXPECT_TRUE(inverse_root_scale(model_call("1x32x16x1x4096x128", std::pow(144.0, -0.5))));
  EXPECT_FALSE(inverse_root_scale(model_call("1x32x16x1x4096x128", 0.0833333)));
  EXPECT_FALSE(inverse_root_scale(model_call("1x32x8x1x4096x128")));  // 1/sqrt(D), 1/D, 1: powers of two
  EXPECT_FALSE(inverse_root_scale(model_call("1x32x8x1x4096x64", 1.0 / 64)));
  EXPECT_FALSE(inverse_root_scale(model_call("1x32x8x1x4096x64", 1.0)));
  // nanoGPT's GPT-2 124M (12 heads, D 64, 1024 tokens) through c_attn's split; the gate's
  // packed_qkv layout has the strides, each view in its own buffer.
  EXPECT_TRUE(fused_qkv(fused_qkv_call(8, 12, 1024, 64)));
  EXPECT_TRUE(fused_qkv(fused_qkv_call(1, 25, 1024, 64)));  // GPT-2 XL
  const Shape packed = parse_shape("2x12x12x1024x1024x64", 64);
  EXPECT_FALSE(fused_qkv(call_of(packed, "packed_qkv", 0)));
  // Phi-4's decode step at 4k (gates.json's entry) beside its model call cut to 2048 keys.
  EXPECT_TRUE(kv_heads_9_to_15_long(model_call("16x40x10x1x4096x128:bshd")));
  EXPECT_FALSE(kv_heads_9_to_15_long(model_call("16x40x10x1x2048x128:bshd")));
  // A few outlier channels in K past 512 keys (Llama-3 8B's decode at 8k) beside the value cases
  // (2 x 4 heads, 512 keys at most); an offset channel under groups of 7 (Qwen2 7B) beside the
  // value cases' groups of 4 at most.
  for (unsigned seed : {1u, 2u, 3u})
    for (int d : {64, 128}) {
      EXPECT_TRUE(few(outlier_channels(k_chunk(d, seed, 2, false), d))) << seed;
      EXPECT_TRUE(few(bias_channels(k_chunk(d, seed, 2, true), d))) << seed;
      EXPECT_EQ(outlier_channels(k_chunk(d, seed, 0, false), d), 0) << seed;
      EXPECT_EQ(bias_channels(k_chunk(d, seed, 0, true), d), 0) << seed;
    }
  EXPECT_TRUE(past_512_keys(model_call("1x32x8x1x8192x128:bshd")));
  EXPECT_FALSE(past_512_keys(model_call("2x4x1x512x512x128:bshd")));
  EXPECT_TRUE(wide_groups(model_call("16x28x4x1x4096x128:bshd")));
  EXPECT_FALSE(wide_groups(model_call("2x4x1x1x512x128:bshd")));
  // Llama-3 8B fine-tuned at 8 x 4096 (GQA 32/8) beside the long benchmark set's MHA 8x32x32.
  EXPECT_TRUE(gqa_batched_long_prefill(model_call("8x32x8x4096x4096x128:bshd")));
  EXPECT_FALSE(gqa_batched_long_prefill(model_call("8x32x32x2048x2048x64")));
  // gates.json's Llama-3 8B verification step (16 rows over 8192 keys) beside its cut model call.
  EXPECT_TRUE(spec_verify_long(model_call("8x32x8x16x8192x128:bshd")));
  EXPECT_FALSE(spec_verify_long(model_call("8x32x8x16x2048x128:bshd")));
  // Stable Diffusion's cross-attention (4096 latent queries over CLIP's 77 tokens) beside its
  // self-attention (gates.json's 2x10x10x4096x4096x64).
  EXPECT_TRUE(cross_attention_short_text(model_call("2x10x10x4096x77x64")));
  EXPECT_FALSE(cross_attention_short_text(model_call("2x10x10x4096x4096x64")));
}

// The exported op takes each model call above as it stands (support/kernel_call.h: the checks
// every call passes before a launch).
TEST(HackerRound29, TheOpTakesEachModelCall) {
  EXPECT_TRUE(op_takes(op_call("1x32x16x4096x4096x128", true, EVO_ATTN_BF16, std::pow(168.0, -0.5))));  // Gemma 3
  // nanoGPT (GPT-2 124M): q, k, v = c_attn(x).split(768, 2), viewed [8, 12, 1024, 64]: one buffer.
  evo_attn_call gpt2 = op_call("8x12x12x1024x1024x64", true, EVO_ATTN_FP16, 0);
  const int64_t row = 3 * 768;
  for (evo_attn_tensor* t : {&gpt2.q, &gpt2.k, &gpt2.v}) {
    t->data = gpt2.q.data + uint64_t(t == &gpt2.k ? 768 * 2 : t == &gpt2.v ? 2 * 768 * 2 : 0);
    t->stride[0] = row * 1024;
    t->stride[2] = row;
  }
  EXPECT_TRUE(op_takes(gpt2));
  EXPECT_TRUE(op_takes(op_call("16x40x10x1x4096x128", false, EVO_ATTN_BF16, 0)));   // Phi-4
  EXPECT_TRUE(op_takes(op_call("1x32x8x8192x8192x128", false, EVO_ATTN_BF16, 0)));  // K outlier channels
  EXPECT_TRUE(op_takes(op_call("16x28x4x1x4096x128", false, EVO_ATTN_BF16, 0)));    // Qwen2 7B
  EXPECT_TRUE(op_takes(op_call("8x32x8x4096x4096x128", true, EVO_ATTN_BF16, 0)));   // Llama-3 8B training
  EXPECT_TRUE(op_takes(op_call("8x32x8x16x8192x128", false, EVO_ATTN_BF16, 0)));    // verification
  EXPECT_TRUE(op_takes(op_call("2x10x10x4096x77x64", false, EVO_ATTN_FP16, 0)));    // SD cross-attention
  // Weighed, not a try: the default scale the op passes (float of the double 1/sqrt(D), as
  // evo_attn_op.cpp computes it) is the worker's (1.0f / sqrtf(D)) to the bit at both head dims.
  for (int d : {64, 128}) EXPECT_EQ(float(1.0 / std::sqrt(double(d))), 1.0f / std::sqrt(float(d))) << d;
}

// scale_inverse_root_of_integer_half_chunks.cu, closed after the round by the scale cases
// (run/value_cases.h append_scale_cases): both tiers of every fp16 and bf16 pinned run end with two
// cases at the float of 1/sqrt(n) for two of kModelScaleRoots, and every case of either tier that
// runs the try's path is one of them (named "/model_scale="). Before them no case did: the listed
// points are such floats only for powers of two (1/sqrt(D), 1/D, 0.5/sqrt(D), 2/sqrt(D), 1) or not
// at all (0.0833333), the ranges continuous draws.
TEST(HackerRound29, ScaleOfAnIntegersInverseRootIsCaughtByTheScaleCases) {
  const std::vector<Catch> runs = catches(inverse_root_scale, "scale_inverse_root");
  EXPECT_EQ(caught_in(runs, false), 21);
  EXPECT_EQ(caught_in(runs, true), 21);
  test::expect_every_catch_names_one_of(runs, {"/model_scale="});
  EXPECT_TRUE(starts_with(runs[6].cheap, "sampled/148/2x4x2x366x366x64:bshd/")) << runs[6].cheap;
  EXPECT_TRUE(starts_with(runs[6].deep, "deep/320/2x4x4x479x479x64:bshd/")) << runs[6].deep;
  for (const Catch& k : runs) {
    EXPECT_EQ(k.cheap_ids.size(), size_t(kScaleCases)) << k.run;
    EXPECT_EQ(k.deep_ids.size(), size_t(kScaleCases)) << k.run;
  }
  const GatesConfig g = test::repo_gates();
  for (int d : {64, 128})
    for (const ScaleChoice& p : g.sampled.scales)
      if (!p.range) {
        Call c = model_call(fmt::format("1x8x8x1x300x{}", d), p.value(d));
        EXPECT_FALSE(inverse_root_scale(c)) << p.value(d);
      }
  // The float the kernel and the host reference read (worker_device.h: float(c.scale); the
  // reference takes the problem's float) is the model's n ** -0.5 to the bit.
  for (const ModelScaleRoot& root : kModelScaleRoots) {
    const Call c = model_call("1x8x8x1x300x128", 1 / std::sqrt(double(root.n)));
    EXPECT_TRUE(inverse_root_scale(c)) << root.n;
    EXPECT_EQ(c.scale, float(std::pow(double(root.n), -0.5))) << root.n;
  }
}

// Each tier of every pinned run (fp8 included) is the tier `without` draws and `added` cases more
// at its end (`added` of the task, the tier and the cases before them): every earlier case keeps
// its id and seed. `check` sees each added case (its index among them); the most FLOPs the added
// cases of a cheap and of a deep tier take are returned.
using Added = std::function<void(const Task&, bool deep, const CaseSpec&, size_t k)>;
using AddedCount = std::function<size_t(const Task&, bool deep, const std::vector<CaseSpec>& before)>;
std::pair<double, double> expect_appended(const GatesConfig& with, const GatesConfig& without, const AddedCount& added,
                                          const Added& check) {
  double most[2] = {0, 0};
  test::each_run_with_and_without(with, without,
                                  [&](const Task& t, const std::string& run, bool deep,
                                      const std::vector<CaseSpec>& cases, const std::vector<CaseSpec>& before) {
                                    ASSERT_EQ(cases.size(), before.size() + added(t, deep, before)) << run;
                                    for (size_t i = 0; i < before.size(); ++i)
                                      EXPECT_TRUE(cases[i].id == before[i].id && cases[i].seed == before[i].seed)
                                          << run << ": " << cases[i].id << " was " << before[i].id;
                                    double sum = 0;
                                    for (size_t i = before.size(); i < cases.size(); ++i) {
                                      const Shape& s = cases[i].shape;
                                      sum += 4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim;
                                      EXPECT_EQ(cases[i].id.rfind(deep ? "deep/" : "sampled/", 0), 0u) << cases[i].id;
                                      check(t, deep, cases[i], i - before.size());
                                    }
                                    most[deep] = std::max(most[deep], sum);
                                  });
  return {most[0], most[1]};
}
std::pair<double, double> expect_appended(const GatesConfig& with, const GatesConfig& without, size_t added,
                                          const Added& check) {
  return expect_appended(
      with, without, [added](const Task&, bool, const std::vector<CaseSpec>&) { return added; }, check);
}

// The scale cases come after every other case of each tier, from a stream of their own: two
// different n a tier, each a value case's shape (at most 2^30 FLOPs).
TEST(HackerRound29, ScaleCasesAreSmallCasesAtTheEnd) {
  GatesConfig g = before_the_close();  // the close's cases come after the fused-buffer cases
  g.sampled.fused_qkv_cases = false;   // after the scale cases (FusedQkvCasesAreSmallCasesAtTheEnd)
  GatesConfig without = g;
  without.sampled.scale_cases = false;
  double first_scale = 0;
  const auto [cheap, deep] =
      expect_appended(g, without, kScaleCases, [&](const Task& t, bool, const CaseSpec& c, size_t k) {
        const Shape& s = c.shape;
        EXPECT_LE(4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim, kModelCaseMaxFlops) << c.id;
        EXPECT_TRUE(names(c.id, "/model_scale=")) << c.id;
        EXPECT_TRUE(inverse_root_scale(call_of(s, c.layout, c.scale, t.causal))) << c.id;
        EXPECT_TRUE(names(c.id, fmt::format("/scale=1/sqrt({})/", std::lrint(1 / (c.scale * c.scale))))) << c.id;
        EXPECT_TRUE(s.seq_kv >= kValueCaseMinKeys && (s.seq_q == s.seq_kv || (!t.causal && s.seq_q <= 16))) << c.id;
        EXPECT_TRUE(!c.two_streams && c.shared_prefix == 0 && c.values.empty() && c.inputs == "normal") << c.id;
        if (k == 0) first_scale = c.scale;
        EXPECT_TRUE(k == 0 || c.scale != first_scale) << c.id;
      });
  std::cout << fmt::format("scale cases: {} a tier, at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n",
                           kScaleCases, cheap / 1e9, deep / 1e9);
  EXPECT_LE(cheap, 2 * kModelCaseMaxFlops);
  EXPECT_LE(deep, 2 * kModelCaseMaxFlops);
}

// fused_qkv_one_buffer_half_chunks.cu, closed after the round by the fused-buffer cases
// (run/value_cases.h append_fused_qkv_cases, layout "packed_qkv+fused"): both tiers of every fp16
// and bf16 pinned run end with an MHA and a GQA or MQA prefill whose K lies Hq * D elements after Q
// in Q's buffer, V Hkv * D after K, one set of strides, and every case that runs the try's path is
// one of them. Every other case's tensors lie in buffers of their own (or pool regions,
// GuardedBuffer's guard bands of kGuardBytes around each), so K's address minus Q's is 0 (a shared
// view) or beyond Q's rows and a guard band: more than 64 KiB, which no head offset Hq * D * 2
// bytes passes (at most 256 x 128 x 2 = 64 KiB).
TEST(HackerRound29, FusedQkvInOneBufferIsCaughtByTheFusedCases) {
  const std::vector<Catch> runs = catches(fused_qkv, "fused_qkv");
  EXPECT_EQ(caught_in(runs, false), 21);
  EXPECT_EQ(caught_in(runs, true), 21);
  test::expect_every_catch_names_one_of(runs, {"/shared=fused"});
  for (const Catch& k : runs) {
    EXPECT_EQ(k.cheap_ids.size(), size_t(kFusedQkvCases)) << k.run;
    EXPECT_EQ(k.deep_ids.size(), size_t(kFusedQkvCases)) << k.run;
  }
  EXPECT_TRUE(starts_with(runs[6].cheap, "sampled/150/2x4x4x")) << runs[6].cheap;
  const GatesConfig g = test::repo_gates();
  test::each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    const EvalPlan p = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true});
    for (const auto* cases : {&p.gate_cases, &p.deep_cases})
      for (const CaseSpec& c : *cases) {
        EXPECT_LE(int64_t(c.shape.heads_q) * c.shape.head_dim * 2, int64_t(kGuardBytes)) << task << ": " << c.id;
        if (layout_shared(c.layout) != kFusedQkv) continue;
        // The whole projection lies in Q's buffer: V's last element is its last.
        const Shape& s = c.shape;
        const CaseLayout lay = case_layout(s, c.layout, t.input_bytes(), t.output_bytes());
        const int64_t last = lay.v.offset + (s.batch - 1) * lay.v.stride[0] + (s.heads_kv - 1) * lay.v.stride[1] +
                             (s.seq_kv - 1) * lay.v.stride[2] + s.head_dim - 1;
        EXPECT_EQ(last + 1, lay.q.buffer_elements) << task << ": " << c.id;
      }
  });
}

// The fused-buffer cases come after every other case of each tier (the scale cases included),
// from a stream of their own: an MHA and a GQA or MQA prefill.
TEST(HackerRound29, FusedQkvCasesAreSmallCasesAtTheEnd) {
  const GatesConfig g = before_the_close();  // the close's cases come after them
  GatesConfig without = g;
  without.sampled.fused_qkv_cases = false;
  const auto [cheap, deep] =
      expect_appended(g, without, kFusedQkvCases, [](const Task& t, bool, const CaseSpec& c, size_t k) {
        const Shape& s = c.shape;
        EXPECT_TRUE(fused_qkv(call_of(s, c.layout, c.scale, t.causal))) << c.id;
        EXPECT_TRUE(names(c.id, "/shared=fused")) << c.id;
        EXPECT_EQ(s.heads_kv<s.heads_q, k> 0) << c.id;  // MHA, then GQA or MQA
        EXPECT_TRUE(s.seq_q == s.seq_kv && s.seq_kv >= kValueCaseMinKeys && s.seq_kv <= kValueCaseMaxKeys) << c.id;
      });
  std::cout << fmt::format("fused-buffer cases: {} a tier, at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n",
                           kFusedQkvCases, cheap / 1e9, deep / 1e9);
  EXPECT_LE(std::max(cheap, deep), 2 * kModelCaseMaxFlops);
}

// (b) phi4_heads_past_2k_keys_half_chunks.cu, as the round found it (the close's switches off): only
// the model calls have 9 to 15 KV heads under more query heads (round 27), and at D 128, Phi-4's own
// head dim, they are cut to 2^30 FLOPs: its decode step to 2048 keys, its prefill to 128 tokens.
// Both tiers of the 14 D-128 runs admit it; at D 64 the deep tier keeps Phi-4's decode step whole
// (16x40x10x1x4096x64: 0.67 GFLOP) and catches it in all 7 runs, the cheap tier admits it there too.
TEST(HackerRound29, PhiFourHeadsPast2kKeysOnlyWhereTheCutLeavesThem) {
  const std::vector<Catch> runs = catches(kv_heads_9_to_15_long, "phi4_heads_past_2k (before)", before_the_close());
  for (const Catch& k : runs) {
    EXPECT_EQ(k.cheap, "") << k.run;
    EXPECT_EQ(k.deep.empty(), !d64(k.run)) << k.run << ": " << k.deep;
    for (const auto& id : k.deep_ids) EXPECT_TRUE(names(id, "/model=phi_4_decode")) << k.run << ": " << id;
  }
  EXPECT_TRUE(starts_with(runs[6].deep, "deep/294/16x40x10x1x4096x64")) << runs[6].deep;
}

// (b) The value tries as the round found them (the close's switches off): K with 1 to 4 channels
// past 24, or 1 to 4 offset channels, is drawn only by the value cases (round 28:
// HackerRound28.TheClosedHolesAreCaughtByTheirValueCasesInEveryRun finds each tier's first case to
// show k_outlier_channels_clamped_24 and k_bias_channels_dropped, on the same rule over any chunk, a
// value case, and the value cases come last), and every value case of every fp16 and bf16 pinned run
// has 2 sequences of 4 query heads over 256 to 512 keys: none has more than 512 keys
// (k_outlier_channels_past_512_keys) or a group past 4 (k_bias_channels_wide_groups). The shapes
// alone are common: most runs' first cases have them.
TEST(HackerRound29, ValueCasesNeverMeetALongCacheOrAWideGroup) {
  const GatesConfig g = before_the_close();
  int value_cases = 0;
  test::each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    if (t.dtype == DType::fp8) return;
    const EvalPlan p = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true});
    for (const auto* cases : {&p.gate_cases, &p.deep_cases}) {
      int here = 0;
      for (const CaseSpec& c : *cases) {
        if (c.values.empty()) continue;
        ++here;
        const Call call = call_of(c.shape, c.layout, c.scale, t.causal);
        EXPECT_TRUE(c.shape.batch == 2 && c.shape.heads_q == 4) << task << " " << seed << ": " << c.id;
        EXPECT_TRUE(c.shape.seq_kv >= kValueCaseMinKeys && c.shape.seq_kv <= kValueCaseMaxKeys) << c.id;
        EXPECT_FALSE(past_512_keys(call) || wide_groups(call)) << task << " " << seed << ": " << c.id;
      }
      EXPECT_EQ(here, 8) << task << " " << seed;
      value_cases += here;
    }
  });
  EXPECT_EQ(value_cases, 21 * 2 * 8);
  for (const auto& [path, name] :
       {std::pair{Condition(past_512_keys), "past_512_keys"}, std::pair{Condition(wide_groups), "wide_groups"}}) {
    const std::vector<Catch> runs = catches(path, name, g);
    EXPECT_EQ(caught_in(runs, false), 21) << name;
    EXPECT_EQ(caught_in(runs, true), 21) << name;
  }
}

// The runs (each_pinned_task_and_seed's order, fp16 and bf16) where a tier catches the try.
std::vector<size_t> caught_runs(const std::vector<Catch>& runs, bool deep) {
  std::vector<size_t> at;
  for (size_t i = 0; i < runs.size(); ++i)
    if (!(deep ? runs[i].deep : runs[i].cheap).empty()) at.push_back(i);
  return at;
}

// (b) gqa_batched_long_prefill_half_chunks.cu, as the round found it (the close's switches off): a
// hole by odds. The long benchmark set's batched prefills (8x32x32x2048x2048x64,
// 8x16x16x2048x2048x128, checked after timing) are MHA; the model calls' batched GQA prefills
// (Llama-3 70B's 4 x 2048, Qwen2's 8 x 1024, Llama-3 8B's 16 x 512) are cut to one sequence or to
// short ones; the sampled ones are halved to the tier's FLOPs. No cheap
// tier of the 21 runs meets it; the deep tier of four fp16-d64 runs (seeds 1, 7, 12345, 2^32 - 1:
// 7x24x2x2496, 5x12x2x4136, 5x12x2x4362, 5x32x1x2048), none at D 128, gate seed 2025 neither.
TEST(HackerRound29, GqaBatchedLongPrefillOnlyByOdds) {
  const std::vector<Catch> runs =
      catches(gqa_batched_long_prefill, "gqa_batched_long_prefill (before)", before_the_close());
  EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{});
  EXPECT_EQ(caught_runs(runs, true), (std::vector<size_t>{1, 2, 3, 5}));
  for (const Catch& k : runs)
    for (const auto& id : k.deep_ids) EXPECT_TRUE(names(id, "diag=eq/batch=many/")) << k.run << ": " << id;
}

// ---- Closed after the round: the four cut holes ----------------------------------------------

bool ends_with(const std::string& id, const std::string& tail) {
  return id.size() >= tail.size() && id.compare(id.size() - tail.size(), tail.size(), tail) == 0;
}
// phi4_heads_past_2k_keys_half_chunks.cu, closed by the whole-cache model calls (run/model_cases.h
// append_whole_cache_model_cases): Phi-4's decode step at one sequence over its 4096 keys (40 over
// 10 heads: 0.08 GFLOP at D 128) is in both tiers of every unmasked run wherever the cut left its
// cache at 2048 or fewer keys (both tiers at D 128, the cheap tier at D 64, whose max_tensor_elements
// cut the cache to 1024); the deep tier at D 64 kept the decode step whole and catches it there
// first, as before. The 7 causal runs (fp16-d128-causal) admit it in both tiers: under the top-left
// mask a row sees more than 2048 keys only in a prefill of more than 2048 tokens, and the least such
// call with 9 to 15 KV heads under more query heads (18 over 9, batch 1) is 4 x 18 x 2049^2 x 128 =
// 38.7 GFLOP, past the cheap tier's max_flops (17 GFLOP) and 7 times the closes' cost so far.
TEST(HackerRound29, PhiFourHeadsPast2kKeysIsCaughtByTheWholeCacheCalls) {
  const std::vector<Catch> runs = catches(kv_heads_9_to_15_long, "phi4_heads_past_2k");
  for (const Catch& k : runs) {
    EXPECT_EQ(k.cheap.empty(), causal(k.run)) << k.run << ": " << k.cheap;
    EXPECT_EQ(k.deep.empty(), causal(k.run)) << k.run << ": " << k.deep;
    const auto whole = [](const std::vector<std::string>& ids) {
      return std::count_if(ids.begin(), ids.end(), [](const std::string& id) { return names(id, "/cache=whole"); });
    };
    EXPECT_EQ(whole(k.cheap_ids), causal(k.run) ? 0 : 1) << k.run;
    EXPECT_EQ(whole(k.deep_ids), causal(k.run) || d64(k.run) ? 0 : 1) << k.run;
  }
  test::expect_every_catch_names_one_of(runs, {"/model=phi_4_decode"});  // the cut call and the whole-cache one
  EXPECT_TRUE(starts_with(runs[6].cheap, "sampled/")) << runs[6].cheap;
  EXPECT_TRUE(names(runs[6].cheap, "/1x40x10x1x4096x64:bshd/")) << runs[6].cheap;
  EXPECT_TRUE(starts_with(runs[6].deep, "deep/294/16x40x10x1x4096x64")) << runs[6].deep;
  // The causal runs' least call past 2048 visible keys with 9 to 15 KV heads, beside the bound.
  const GatesConfig g = test::repo_gates();
  EXPECT_GT(parse_shape("1x18x9x2049x2049x128", 128).flops(false), g.sampled.max_flops);
}

// The skipped chunks' error on a case's last query row of head 0, batch 0, read through the mirror
// over every visible key, beside the case's rel_l2: the try moves it past the tolerance there.
double skipped_error_over_tolerance(const GatesConfig& g, const Task& t, const CaseSpec& c) {
  const test::Mirror m(c, t.dtype == DType::bf16);
  const Shape& s = c.shape;
  const int last = s.seq_q - 1, visible = t.causal ? std::min(s.seq_kv, last + 1) : s.seq_kv;
  std::vector<int> chunks, starts;
  for (int ch = 0; ch * 32 < visible; ++ch) chunks.push_back(ch);
  const test::Row r = m.row(0, 0, uint64_t(last), t.causal, chunks, &starts);
  return test::skipped_chunks_rel_l2(r.q, r.k, r.v, r.d, c.scale) / g.tolerance(t, c.inputs).rel_l2;
}

// k_outlier_channels_past_512_keys_half_chunks.cu and k_bias_channels_wide_groups_half_chunks.cu,
// closed by the long value cases (run/value_cases.h append_long_value_cases): in both tiers of all
// 21 fp16 and bf16 pinned runs, the massive case (1, 2 or 4 K channels of std 4096 or 65536) runs
// the outlier try's path and the k_offset case (1 to 4 K channels of mean 16 to 48, spread 1) the
// bias try's (and the outlier try's where a mean passes 24), each over a long cache (a decode step over 2049 to 8192
// keys; a causal prefill of 513 to 544) under a group of 5 to 7; no other case does (round 28's value cases hold at
// most 512 keys and 4 query heads), and on each the skipped chunks move the last row of head 0 past rel_l2.
TEST(HackerRound29, ValueChannelsOverALongCacheAndAWideGroupAreCaughtByTheLongValueCases) {
  const GatesConfig g = before_round30();
  const std::vector<Catch> outlier =
      test::pinned_catches(g, value_path(past_512_keys, outlier_channels), "k_outlier_channels_past_512_keys");
  const std::vector<Catch> bias =
      test::pinned_catches(g, value_path(wide_groups, bias_channels), "k_bias_channels_wide_groups");
  for (const auto* runs : {&outlier, &bias}) {
    EXPECT_EQ(caught_in(*runs, false), 21);
    EXPECT_EQ(caught_in(*runs, true), 21);
    test::expect_every_catch_names_one_of(*runs, {"/long_cache_wide_group"});
  }
  // The outlier try: the massive case in every tier, the k_offset case where an offset passes 24.
  for (const Catch& k : outlier)
    for (const auto* ids : {&k.cheap_ids, &k.deep_ids}) {
      EXPECT_EQ(
          std::count_if(ids->begin(), ids->end(), [](const std::string& id) { return names(id, "/values=massive_"); }),
          1)
          << k.run;
      for (const std::string& id : *ids) EXPECT_TRUE(names(id, "/values=massive_") || names(id, "/values=k_offset/"));
    }
  for (const Catch& k : bias)
    for (const auto* ids : {&k.cheap_ids, &k.deep_ids}) {
      ASSERT_EQ(ids->size(), 1u) << k.run;
      EXPECT_TRUE(names(ids->front(), "/values=k_offset/long_cache_wide_group")) << ids->front();
    }
  std::cout << fmt::format("gate seed 2025 fp16-d64: outlier cheap {} deep {}; bias cheap {} deep {}\n",
                           outlier[6].cheap, outlier[6].deep, bias[6].cheap, bias[6].deep);
  test::each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    if (t.dtype == DType::fp8) return;
    for (const auto& cases : {draw_sampled_cases(g, t, seed), draw_deep_cases(g, t, seed)})
      for (const CaseSpec& c : cases) {
        if (!names(c.id, "/long_cache_wide_group")) continue;
        EXPECT_GT(skipped_error_over_tolerance(g, t, c), 10) << task << " seed " << seed << ": " << c.id;
      }
  });
}

// gqa_batched_long_prefill_half_chunks.cu, closed by the training step (run/model_cases.h
// append_training_step_cases): 4 sequences of 2048 tokens under 2 query heads over 1 in every
// tier that holds it. At D 64 (2^33 FLOPs) both tiers of the 7 fp16-d64 runs; at D 128 (2^34) the
// cheap tier's max_flops (1.7e10) leaves it out, so the 14 D-128 runs catch it in their deep tier
// only; before, the deep tier of 4 fp16-d64 runs by odds (GqaBatchedLongPrefillOnlyByOdds).
TEST(HackerRound29, GqaBatchedLongPrefillIsCaughtByTheTrainingStep) {
  const std::vector<Catch> runs = catches(gqa_batched_long_prefill, "gqa_batched_long_prefill");
  EXPECT_EQ(caught_runs(runs, false), (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(caught_runs(runs, true).size(), 21u);
  test::expect_every_catch_names_one_of(runs, {"/model=training_step", "diag=eq/batch=many/"});
  const auto steps = [](const std::vector<std::string>& ids) {
    return std::count_if(ids.begin(), ids.end(),
                         [](const std::string& id) { return names(id, "/model=training_step"); });
  };
  for (const Catch& k : runs) {
    EXPECT_EQ(steps(k.cheap_ids), d64(k.run) ? 1 : 0) << k.run;
    EXPECT_EQ(steps(k.deep_ids), 1) << k.run;
  }
  EXPECT_TRUE(starts_with(runs[6].cheap, "sampled/")) << runs[6].cheap;
  EXPECT_TRUE(names(runs[6].cheap, "/4x2x1x2048x2048x64:bshd/")) << runs[6].cheap;
  const GatesConfig g = test::repo_gates();
  const Shape d128 = parse_shape("4x2x1x2048x2048x128", 128);
  EXPECT_GT(d128.flops(false), g.sampled.max_flops);
  EXPECT_LE(d128.flops(false), g.sampled.deep.max_flops);
}

// The whole-cache model calls come after every other case of each tier (the fused-buffer cases
// included), from a stream of their own: on an unmasked task exactly one for each decode step of
// model_shapes whose model case has fewer keys than the entry (or none), at one sequence over the
// entry's whole cache, its query rows and head ratio, within 2^30 FLOPs; none on a causal task.
TEST(HackerRound29, WholeCacheModelCallsAreDecodeStepsAtTheEnd) {
  GatesConfig g = test::repo_gates();
  g.sampled.long_value_cases = g.sampled.training_step_cases = false;  // after them
  test::without_round30_close(g);
  GatesConfig without = g;
  without.sampled.whole_cache_model_cases = false;
  const auto entry_of = [&](const std::string& id) -> const ModelShape* {
    for (const ModelShape& m : g.model_shapes)
      if (ends_with(id, "/model=" + model_token(m.model) + "/cache=whole")) return &m;
    return nullptr;
  };
  const auto cut_case = [](const std::vector<CaseSpec>& before, const ModelShape& m) -> const CaseSpec* {
    for (const CaseSpec& c : before)
      if (ends_with(c.id, "/model=" + model_token(m.model))) return &c;
    return nullptr;
  };
  const AddedCount count = [&](const Task& t, bool, const std::vector<CaseSpec>& before) {
    size_t n = 0;
    for (const ModelShape& m : g.model_shapes) {
      const CaseSpec* cut = cut_case(before, m);
      n += !t.causal && m.shape.seq_q <= kSharedDecodeRows && (!cut || cut->shape.seq_kv < m.shape.seq_kv);
    }
    return n;
  };
  const auto [cheap, deep] = expect_appended(g, without, count, [&](const Task& t, bool, const CaseSpec& c, size_t) {
    const ModelShape* m = entry_of(c.id);
    ASSERT_NE(m, nullptr) << c.id;
    const Shape& s = c.shape;
    EXPECT_TRUE(s.batch == 1 && s.seq_q == m->shape.seq_q && s.seq_kv == m->shape.seq_kv) << c.id;
    EXPECT_EQ(s.heads_q / s.heads_kv, m->shape.heads_q / m->shape.heads_kv) << c.id;
    EXPECT_LE(s.flops(false), kModelCaseMaxFlops) << c.id;
    EXPECT_FALSE(t.causal) << c.id;
  });
  std::cout << fmt::format("whole-cache model calls: at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n",
                           cheap / 1e9, deep / 1e9);
  EXPECT_LE(std::max(cheap, deep), 2 * kModelCaseMaxFlops);
}

// The long value cases come after the whole-cache model calls, from a stream of their own: a
// massive case and a k_offset case on every 16-bit task, none on fp8, each one sequence of a group
// of 5 to 7, a decode step over 2049 to 8192 keys under 1 or 2 KV heads (unmasked) or a prefill of
// 513 to 544 tokens under 1 (causal), each within 2^30 FLOPs.
TEST(HackerRound29, LongValueCasesAreWideGroupsOverALongCacheAtTheEnd) {
  GatesConfig g = test::repo_gates();
  g.sampled.training_step_cases = false;  // after them
  test::without_round30_close(g);
  GatesConfig without = g;
  without.sampled.long_value_cases = false;
  const auto [cheap, deep] = expect_appended(
      g, without, [](const Task& t, bool, const std::vector<CaseSpec>&) { return t.dtype == DType::fp8 ? 0u : 2u; },
      [](const Task& t, bool, const CaseSpec& c, size_t k) {
        const Shape& s = c.shape;
        const bool massive = c.values == "massive_1" || c.values == "massive_2" || c.values == "massive_4";
        EXPECT_TRUE(k == 0 ? massive : c.values == "k_offset") << c.id;
        EXPECT_TRUE(names(c.id, "/values=" + c.values + "/long_cache_wide_group")) << c.id;
        EXPECT_TRUE(s.batch == 1 && s.heads_kv <= 2 && s.heads_q >= 5 * s.heads_kv && s.heads_q <= 7 * s.heads_kv)
            << c.id;
        const bool prefill = s.seq_q == s.seq_kv && s.seq_kv >= 513 && s.seq_kv <= 544 && s.heads_kv == 1;
        const bool decode = s.seq_q <= kSharedDecodeRows && s.seq_kv >= 2049 && s.seq_kv <= 8192;
        EXPECT_TRUE(t.causal ? prefill : decode) << c.id;
        EXPECT_TRUE(!c.two_streams && c.shared_prefix == 0 && c.inputs == "normal") << c.id;
        EXPECT_LE(s.flops(false), kModelCaseMaxFlops) << c.id;
      });
  std::cout << fmt::format("long value cases: at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n", cheap / 1e9,
                           deep / 1e9);
  EXPECT_LE(std::max(cheap, deep), 2 * kModelCaseMaxFlops);
}

// The training step comes last, from a stream of its own: one a tier wherever the tier's bounds
// hold it (every tier at D 64, the deep tier at D 128).
TEST(HackerRound29, TrainingStepIsOneBatchedGqaPrefillAtTheEnd) {
  GatesConfig g = test::repo_gates();
  test::without_round30_close(g);  // after it
  GatesConfig without = g;
  without.sampled.training_step_cases = false;
  const auto [cheap, deep] = expect_appended(
      g, without,
      [](const Task& t, bool deep, const std::vector<CaseSpec>&) { return deep || t.head_dim == 64 ? 1u : 0u; },
      [](const Task& t, bool, const CaseSpec& c, size_t) {
        EXPECT_EQ(c.shape.dims(), fmt::format("4x2x1x2048x2048x{}:bshd", t.head_dim)) << c.id;
        EXPECT_TRUE(ends_with(c.id, "/model=training_step")) << c.id;
      });
  std::cout << fmt::format("training step: at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n", cheap / 1e9,
                           deep / 1e9);
}

// (b) spec_verify_long_cache_gqa_half_chunks.cu: caught. The sampled decode steps (Sq 1 to 16) meet
// the very_long and longer classes of Skv under GQA in the cheap and the deep tier of every
// non-causal run (gate seed 2025 fp16-d64: the in-flight sampled/97/2x8x2x16x8192x64 and
// deep/29/5x192x3x8x49720x64); causal: a top-left step of 16 rows sees 16 keys, nothing to skip.
TEST(HackerRound29, SpecVerifyOverALongCacheIsCaughtBySampledDecodeSteps) {
  const std::vector<Catch> runs = catches(spec_verify_long, "spec_verify_long");
  for (const Catch& k : runs) {
    EXPECT_EQ(k.cheap.empty(), causal(k.run)) << k.run << ": " << k.cheap;
    EXPECT_EQ(k.deep.empty(), causal(k.run)) << k.run << ": " << k.deep;
  }
  test::expect_every_catch_names_one_of(runs, {"diag=lt/", "/in_flight/"});
  EXPECT_TRUE(starts_with(runs[6].cheap, "sampled/97/2x8x2x16x8192x64:bshd/in_flight/")) << runs[6].cheap;
  EXPECT_TRUE(starts_with(runs[6].deep, "deep/29/5x192x3x8x49720x64")) << runs[6].deep;
}

// (b) cross_attention_short_text_half_chunks.cu: caught by the deep tier in all 21 runs (Sq in
// ctx_32k or ctx_128k over short or mid keys; its frontier set 131072 over 64) by the cheap tier in 11 (a very_long Sq
// over a short Skv: fp16-d64 seeds 7, 1511791795, 2025; bf16-d128 0, 1, 7, 2^32 - 1; causal 1, 12345, 1511791795,
// 2025). Gate seed 2025 fp16-d64: sampled/39/5x12x2x4426x64x64.
TEST(HackerRound29, CrossAttentionOverAShortTextByTheDeepTierAndByOdds) {
  const std::vector<Catch> runs = catches(cross_attention_short_text, "cross_attention_short_text");
  EXPECT_EQ(caught_runs(runs, true).size(), 21u);
  EXPECT_EQ(caught_runs(runs, false), (std::vector<size_t>{2, 4, 6, 7, 8, 9, 12, 15, 17, 18, 20}));
  test::expect_every_catch_names_one_of(runs, {"diag=gt/", "deep/frontier/"});
  EXPECT_TRUE(starts_with(runs[6].cheap, "sampled/39/5x12x2x4426x64x64")) << runs[6].cheap;
}

}  // namespace
}  // namespace evo::hacker_round29
