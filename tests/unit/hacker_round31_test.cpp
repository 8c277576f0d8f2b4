// Hacker round 31 (lab/hack31/README.md): what catches each try, read back from the plans both
// tiers draw at the pinned seeds with every close of rounds 27 to 30 on, and the host arithmetic of
// each flaw on the model call its file names. Ten tries, each the scalar control skipping every
// other 32-key chunk (support/skipped_chunks.h) on a path keyed on something a real model's call
// has and no gate case has: seven at the values round 30's closes fixed (the beam prefill's pairs,
// neox_v's MHA form, pow2_cache's 2 to 4 sequences, the GQA training step's ratio of 2 at D 128,
// the Phi-4 prefill's 2 or 3 sequences, the Gemma call's 2048 keys and 544 tokens), two at a layout
// and a head pair no kind draws (V alone in a fused projection, 48 over 8), one at the cheap tier's
// batch (a server's full decode batch).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu/case_layout.h"
#include "run/plan.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/round30_paths.h"
#include "support/round31_paths.h"
#include "support/skipped_chunks.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round31 {
namespace {

using test::Call;
using test::Catch;
using test::layout_call;
using test::model_call;
using test::round30::call_catches;
using test::round30::caught_runs;
using test::round30::expect_every_catch_names;
using test::round30::span;
using test::round30::starts_with;
using namespace test::round31;  // the round's paths (support/round31_paths.h)

// InternLM2 in its modeling code: qkv = wqkv(x) viewed [B, S, Hkv, g + 2, D], V = qkv[..., -1, :]:
// heads (g + 2) D apart, rows (g + 2) Hkv D.
Call internlm2_prefill(int batch, int hq, int hkv, int tokens) {
  Call c = model_call(fmt::format("{}x{}x{}x{}x{}x128:bshd", batch, hq, hkv, tokens, tokens));
  const int64_t w = int64_t(hq / hkv + 2) * 128;
  c.v_stride[0] = w * hkv * tokens;
  c.v_stride[1] = w;
  c.v_stride[2] = w * hkv;
  return test::as_launched(c);
}
// Phi-3 and Phi-4 in transformers: qkv = qkv_proj(x); V = qkv[..., (Hq + Hkv) D:] viewed
// [B, S, Hkv, D] and transposed (heads D apart, rows (Hq + 2 Hkv) D); Q and K leave the rotary
// embedding as new dense tensors (BHSD here).
Call phi_prefill(int batch, int hq, int hkv, int tokens) {
  Call c = model_call(fmt::format("{}x{}x{}x{}x{}x128", batch, hq, hkv, tokens, tokens));
  const int64_t row = int64_t(hq + 2 * hkv) * 128;
  c.v_stride[0] = row * tokens;
  c.v_stride[1] = 128;
  c.v_stride[2] = row;
  return test::as_launched(c);
}
// Meta's Llama 2 reference decode step (cache_k[:bsz, :start_pos + seqlen] of a [max_batch,
// max_seq_len, H, D] cache): K and V views with batch stride max_seq_len H D.
Call llama_reference_decode(int batch, int heads, int keys, int max_seq_len) {
  Call c = model_call(fmt::format("{}x{}x{}x1x{}x128:bshd", batch, heads, heads, keys));
  for (int64_t* s : {c.k_stride, c.v_stride}) s[0] = int64_t(max_seq_len) * heads * 128;
  return test::as_launched(c);
}
// Sequence 2's rows equal sequence 0's (the try's test on Q's last row and K's last key), per
// sequence rows of Q and K.
bool third_repeats_first_rows(const std::vector<std::vector<float>>& q, const std::vector<std::vector<float>>& k) {
  return q.size() >= 3 && test::round30::beam_rows(q[0], q[2], k[0], k[2]);
}

// (a) Each flaw is wrong in a model: the skipped chunks move a row of normal inputs by a relative
// L2 of order 1 at each model's length, and each try's test holds on the model call its file names
// and not on its nearest gate neighbour (the case round 30's second close draws, or round 29's).
TEST(HackerRound31, EachTryIsWrongInAModel) {
  for (const int d : {64, 128})
    for (const int keys : {1024, 2048, 4096, 8192}) {
      const double e = test::skipped_chunks_rel_l2(keys, d, 31u + unsigned(keys));
      std::cout << fmt::format("D {} over {} keys: rel L2 {:.3f}\n", d, keys, e);
      EXPECT_GT(e, 0.1) << "D " << d << ", " << keys << " keys";
    }
  // 4 beams of one prompt (repeat_interleave(4)): every sequence the same; beside the beam prefill's
  // pairs (sequence 2k + 1 repeats 2k, sequence 2 its own).
  std::mt19937 gen(31);
  std::normal_distribution<float> n(0.f, 1.f);
  const auto row = [&] {
    std::vector<float> r(128);
    for (float& x : r) x = n(gen);
    return r;
  };
  const std::vector<float> q = row(), k = row(), q2 = row(), k2 = row();
  EXPECT_TRUE(third_repeats_first_rows({q, q, q, q}, {k, k, k, k}));
  EXPECT_FALSE(third_repeats_first_rows({q, q, q2, q2}, {k, k, k2, k2}));
  // InternLM2 7B's prefill (32 over 8, V 6 D apart) beside neox_v's MHA form; the GQA form the
  // layout places (not drawn) meets it.
  EXPECT_TRUE(gqa_interleaved_v(internlm2_prefill(1, 32, 8, 2048)));
  EXPECT_FALSE(gqa_interleaved_v(layout_call("1x4x4x517x517x64", "neox_v")));
  EXPECT_TRUE(gqa_interleaved_v(layout_call("1x8x2x517x517x64", "neox_v")));
  // Llama 2 7B's reference decode step at batch 1 does not take the path: the op launches a batch of
  // one with batch stride D (evo_launch_stride), as the gate does; neither does pow2_cache at 2 to 4
  // sequences nor at one. A void try (admitted on the H200, 2026-12-03, as it must be).
  EXPECT_FALSE(pow2_cache_one_sequence(llama_reference_decode(1, 32, 1000, 4096)));
  EXPECT_FALSE(pow2_cache_one_sequence(layout_call("2x16x4x1x3871x64", "pow2_cache")));
  EXPECT_FALSE(pow2_cache_one_sequence(layout_call("1x16x4x1x3871x64", "pow2_cache")));
  // Llama-3 8B's training step at 8 x 4096 (32 over 8) beside the GQA training step at D 128.
  EXPECT_TRUE(training_group_four(model_call("8x32x8x4096x4096x128:bshd")));
  EXPECT_FALSE(training_group_four(model_call("4x8x4x2048x2048x128:bshd")));
  // Phi-4's prefill of a 4k prompt (gates.json's own entry) beside the Phi-4 prefill at a batch of 2.
  EXPECT_TRUE(phi4_one_prompt(model_call("1x40x10x4096x4096x128:bshd")));
  EXPECT_FALSE(phi4_one_prompt(model_call("2x40x10x2049x2049x128:bshd")));
  // Gemma 3 27B's decode step over 8k beside the Gemma call (2048 keys at most).
  EXPECT_TRUE(gemma_past_2k(model_call("1x32x16x1x8192x128:bshd", std::pow(168.0, -0.5))));
  EXPECT_FALSE(gemma_past_2k(model_call("3x32x16x4x2048x128:bshd", std::pow(168.0, -0.5))));
  // Gemma 3 27B's prefill of a 1k prompt beside the Gemma prefill (544 tokens at most).
  EXPECT_TRUE(model_scale_long_prefill(model_call("1x32x16x1024x1024x128:bshd", std::pow(168.0, -0.5))));
  EXPECT_FALSE(model_scale_long_prefill(model_call("1x32x16x544x544x128:bshd", std::pow(168.0, -0.5))));
  // Phi-4's prefill in transformers (V a view of qkv_proj's output) beside packed_qkv and the
  // fused-buffer cases (K in the buffer too).
  EXPECT_TRUE(fused_v_alone(phi_prefill(1, 40, 10, 2048)));
  EXPECT_FALSE(fused_v_alone(layout_call("1x4x2x921x921x64", "packed_qkv")));
  EXPECT_FALSE(fused_v_alone(test::fused_qkv_call(8, 12, 1024, 64)));
  // vLLM's default max_num_seqs of 256: Llama-3 8B's decode step at 256 sequences over 1k, beside
  // gates.json's batch of 64.
  EXPECT_TRUE(server_max_batch(model_call("256x32x8x1x1024x128:bshd")));
  EXPECT_FALSE(server_max_batch(model_call("64x32x8x1x2048x128:bshd")));
  // Mixtral 8x22B's decode step beside gqa_other's 40 over 8.
  EXPECT_TRUE(heads_48_over_8(model_call("16x48x8x1x4096x128:bshd")));
  EXPECT_FALSE(heads_48_over_8(model_call("16x40x8x1x4096x128:bshd")));
}

// The exported op takes each model call above as it stands (support/kernel_call.h).
TEST(HackerRound31, TheOpTakesEachModelCall) {
  using test::op_call;
  using test::op_takes;
  const double gemma = std::pow(168.0, -0.5);
  EXPECT_TRUE(op_takes(op_call("4x32x8x512x512x128", true, EVO_ATTN_BF16, 0)));         // 4 beams
  EXPECT_TRUE(op_takes(op_call("8x32x8x4096x4096x128", true, EVO_ATTN_BF16, 0)));       // training
  EXPECT_TRUE(op_takes(op_call("1x40x10x4096x4096x128", true, EVO_ATTN_BF16, 0)));      // Phi-4
  EXPECT_TRUE(op_takes(op_call("1x32x16x1x8192x128", false, EVO_ATTN_BF16, gemma)));    // Gemma 3
  EXPECT_TRUE(op_takes(op_call("1x32x16x1024x1024x128", true, EVO_ATTN_BF16, gemma)));  // Gemma 3
  EXPECT_TRUE(op_takes(op_call("256x32x8x1x1024x128", false, EVO_ATTN_BF16, 0)));       // vLLM
  EXPECT_TRUE(op_takes(op_call("16x48x8x1x4096x128", false, EVO_ATTN_BF16, 0)));        // Mixtral
  // InternLM2 7B's prefill: V the last 128 channels of each group of a [1, 2048, 8, 6 * 128] buffer.
  evo_attn_call intern = op_call("1x32x8x2048x2048x128", true, EVO_ATTN_BF16, 0);
  intern.v.data += 5 * 128 * 2;
  intern.v.stride[0] = 2048LL * 8 * 768;
  intern.v.stride[1] = 768;
  intern.v.stride[2] = 8 * 768;
  EXPECT_TRUE(op_takes(intern));
  // Llama 2 7B's reference decode step at batch 1: K and V rows of a [1, 4096, 32, 128] cache.
  evo_attn_call llama = op_call("1x32x32x1x1000x128", false, EVO_ATTN_BF16, 0);
  llama.k.stride[0] = llama.v.stride[0] = 4096LL * 32 * 128;
  EXPECT_TRUE(op_takes(llama));
  // Phi-4's prefill in transformers: V the last 1280 channels of a [1, 2048, 7680] projection, Q
  // and K dense BHSD.
  evo_attn_call phi = op_call("1x40x10x2048x2048x128", true, EVO_ATTN_BF16, 0);
  for (evo_attn_tensor* t : {&phi.q, &phi.k}) {
    t->stride[1] = t->size[2] * 128;
    t->stride[2] = 128;
    t->stride[0] = t->size[1] * t->stride[1];
  }
  phi.v.data += 50 * 128 * 2;
  phi.v.stride[0] = 2048LL * 7680;
  phi.v.stride[1] = 128;
  phi.v.stride[2] = 7680;
  EXPECT_TRUE(op_takes(phi));
}

using Condition = std::function<bool(const Call&)>;
std::vector<Catch> catches(const Condition& path, const char* name) {
  return call_catches(test::repo_gates_before_round31_close(), path, name);
}

// (b) Seven holes in both tiers of all 21 fp16 and bf16 pinned runs, gate seed 2025 fp16-d64
// included. Round 30's second close drew each kind at one value of what its hole lived beside:
// neox_v MHA only (gqa_interleaved_v), pow2_cache at 2 to 4 sequences (pow2_cache_one_sequence),
// the Phi-4 prefill at 2 or 3 sequences (phi4_one_prompt), the Gemma call over 2048 keys at most
// and a prefill of 544 tokens at most (gemma_past_2k, model_scale_long_prefill); no layout gives V
// alone a fused projection's rows (fused_v_alone), and 48 query heads come only over 3.
TEST(HackerRound31, SevenCallHolesInEveryRun) {
  const std::pair<Condition, const char*> holes[] = {{gqa_interleaved_v, "gqa_interleaved_v"},
                                                     {pow2_cache_one_sequence, "pow2_cache_one_sequence"},
                                                     {phi4_one_prompt, "phi4_one_prompt"},
                                                     {gemma_past_2k, "gemma_past_2k"},
                                                     {model_scale_long_prefill, "model_scale_long_prefill"},
                                                     {fused_v_alone, "fused_v_alone"},
                                                     {heads_48_over_8, "heads_48_over_8"}};
  for (const auto& [path, name] : holes) {
    const std::vector<Catch> runs = catches(path, name);
    EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{}) << name;
    EXPECT_EQ(caught_runs(runs, true), std::vector<size_t>{}) << name;
  }
}

// (b) four_beams_third_repeats_first_half_chunks.cu, read through the host mirror of the fill: the
// beam prefill repeats sequences in pairs (2k + 1 repeats 2k) and the shared forms' accident does
// too, so sequence 2 never equals sequence 0 in any case of the 21 runs.
TEST(HackerRound31, FourBeamsOfOnePromptInNoRun) {
  const std::vector<Catch> runs =
      test::pinned_catches(test::repo_gates_before_round31_close(), third_repeats_first, "four_beams");
  EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{});
  EXPECT_EQ(caught_runs(runs, true), std::vector<size_t>{});
  // The beam prefill itself meets round 30's test (sequence 1 repeats 0) in both tiers of every run.
  const std::vector<Catch> pairs =
      test::pinned_catches(test::repo_gates_before_round31_close(), test::round30::beam_case, "beam_pairs");
  EXPECT_EQ(caught_runs(pairs, false), span(0, 21));
  EXPECT_EQ(caught_runs(pairs, true), span(0, 21));
}

// (b) training_step_group_of_four_half_chunks.cu: the GQA training step's cut ends at 8 over 4 at
// D 128 (a ratio of 2); at D 64 it keeps a ratio of 4 where drawn: the deep tier of fp16-d64 seeds
// 1511791795 and 2025 catches it, no other tier of the 21 runs (every cheap tier: the step is past
// its max_flops).
TEST(HackerRound31, TrainingStepGroupOfFourOnlyWhereD64DrawsIt) {
  const std::vector<Catch> runs = catches(training_group_four, "training_group_four");
  EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{});
  EXPECT_EQ(caught_runs(runs, true), (std::vector<size_t>{4, 6}));
  expect_every_catch_names(runs, "/model=training_step_gqa_");
  EXPECT_TRUE(starts_with(runs[6].deep, "deep/334/4x16x4x2048x2048x64:bshd/")) << runs[6].deep;
}

// (b) server_max_batch_decode_half_chunks.cu: no cheap tier draws a decode step of 128 sequences
// or more over 1024 keys (its bounds cut the crowd), the deep tier draws one in 12 of the 14
// unmasked runs (not fp16-d64 seed 1, bf16-d128 seed 0), each of the crowd batch class; the causal
// 7 cannot be wrong (a top-left decode step sees one key).
TEST(HackerRound31, ServerMaxBatchOnlyInTheDeepTier) {
  const std::vector<Catch> runs = catches(server_max_batch, "server_max_batch");
  EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{});
  EXPECT_EQ(caught_runs(runs, true), (std::vector<size_t>{0, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13}));
  expect_every_catch_names(runs, "/batch=crowd/");
  EXPECT_TRUE(starts_with(runs[6].deep, "deep/192/620x256x1x1x4416x64:bshd/")) << runs[6].deep;
}

// (b) The nearest case each try lives beside at gate seed 2025 fp16-d64 (the GPU suite's run; the
// ids lab/hack31/README.md cites): the kind round 30's close appended meets round 30's test and not
// this round's, except where this round's try is caught (the GQA training step at 16 over 4, the
// deep tier's crowd of 620 sequences).
TEST(HackerRound31, NearestCasesAtGateSeed2025) {
  const GatesConfig g = test::repo_gates_before_round31_close();
  using test::round30::names;
  const std::pair<const char*, std::pair<Condition, Condition>> near[] = {
      {"sampled/177/2x4x4x673x673x64/", {test::round30::interleaved_v, gqa_interleaved_v}},
      {"sampled/176/2x16x4x1x3871x64:bshd/", {test::round30::preallocated_cache, pow2_cache_one_sequence}},
      {"sampled/169/2x40x10x1x4096x64:bshd/", {test::round30::phi4_batched, phi4_one_prompt}},
      {"sampled/171/3x32x16x3x1466x64:bshd/", {test::round30::gemma_27b_heads, gemma_past_2k}},
      {"sampled/171/3x32x16x3x1466x64:bshd/", {test::round30::model_scale_long, model_scale_long_prefill}},
      {"sampled/172/1x4x2x921x921x64:bshd/", {test::fused_qkv, fused_v_alone}},
      {"sampled/174/64x4x1x1x2511x64:bshd/", {test::round30::padded_decode, server_max_batch}},
      {"deep/334/4x16x4x2048x2048x64:bshd/", {test::gqa, training_group_four}},
      {"deep/192/620x256x1x1x4416x64:bshd/", {test::gqa, server_max_batch}}};
  int seen = 0, beams = 0;
  test::each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    if (task != "fp16-d64" || seed != 2025) return;
    const EvalPlan p = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true});
    std::vector<const CaseSpec*> cases;
    for (const auto* tier : {&p.gate_cases, &p.deep_cases})
      for (const CaseSpec& c : *tier) cases.push_back(&c);
    for (const auto& [id, paths] : near) {
      const bool caught = starts_with(id, "deep/");
      int found = 0;
      for (const CaseSpec* c : cases) {
        if (!starts_with(c->id, id)) continue;
        ++found;
        const Call call = test::call_of(c->shape, c->layout, c->scale, t.causal);
        EXPECT_TRUE(paths.first(call)) << c->id;
        EXPECT_EQ(paths.second(call), caught) << c->id;
      }
      EXPECT_EQ(found, 1) << id;
      ++seen;
    }
    // The beam prefill: sequence 1 repeats 0, sequence 2 does not.
    for (const CaseSpec* c : cases) {
      if (!names(c->id, "/model=beam_prefill/")) continue;
      EXPECT_TRUE(test::round30::beam_case(t, *c, c->shape)) << c->id;
      EXPECT_FALSE(third_repeats_first(t, *c, c->shape)) << c->id;
      beams += c->shape.batch >= 3 ? 1 : 0;
    }
  });
  EXPECT_EQ(seen, 9);
  EXPECT_GE(beams, 1);  // a beam prefill of 3 sequences or more (sampled/175: 4)
}

}  // namespace
}  // namespace evo::hacker_round31
