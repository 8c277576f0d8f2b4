// Hacker round 30's second close (lab/hack30/README.md "Second pass"): four kinds of case appended
// to both tiers after the first close's, each from a stream of its own and behind a sampled.*
// switch of its own, each drawing per run the dimensions a close would otherwise fix, for the
// four holes the first close left open (beam_search_prefill, training_step_four_kv_heads,
// preallocated_cache_pow2, gpt_neox_interleaved_v) and the Phi-4 try on causal tasks. The tests
// check that every earlier case keeps its id and seed with each kind added, what each kind is and
// costs, that the fill repeats whole sequences where the kind says, that the op takes the new
// layouts, and which pinned runs' tiers now catch each try (support/round30_paths.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "gpu/value_fill.h"
#include "gpu/worker_protocol.h"
#include "run/batch_cases.h"
#include "run/sampler.h"
#include "support/fill_mirror.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/pinned_runs.h"
#include "support/round30_paths.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round30_open_close {
namespace {

using test::Call;
using test::Catch;
using namespace test::round30;  // the round's paths and run readers

// The kinds in the order draw_tier appends them, each with its switch, how many cases a tier of the
// task gets, and a check of each.
using Switch = bool SampleSpace::*;
struct Kind {
  const char* name;
  Switch on;
  std::function<size_t(const Task&, bool deep)> count;
  std::function<void(const Task&, const CaseSpec&)> check;
};

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = {
      {"beam search prefills", &SampleSpace::beam_prefill_cases, [](const Task&, bool) { return size_t(1); },
       [](const Task& t, const CaseSpec& c) {
         EXPECT_TRUE(names(c.id, "/model=beam_prefill/values=repeat_batch/prefix=")) << c.id;
         EXPECT_EQ(c.values, kRepeatBatch) << c.id;
         EXPECT_GE(c.shared_prefix, std::max(c.shape.seq_q, c.shape.seq_kv)) << c.id;
         EXPECT_TRUE(c.shape.batch >= kBeamCount[0] && c.shape.batch <= kBeamCount[1]) << c.id;
         EXPECT_EQ(c.shape.seq_q == c.shape.seq_kv, t.causal) << c.id;
         EXPECT_LE(c.shape.flops(false), kModelCaseMaxFlops) << c.id;
       }},
      {"GQA training steps over 4 KV heads or more", &SampleSpace::gqa_training_step_cases,
       [](const Task&, bool deep) { return size_t(deep ? 1 : 0); },
       [](const Task&, const CaseSpec& c) {
         EXPECT_TRUE(names(c.id, "/model=training_step_gqa_")) << c.id;
         EXPECT_TRUE(c.shape.batch >= 4 && c.shape.heads_kv >= 4 && c.shape.heads_q > c.shape.heads_kv &&
                     c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q >= 2048)
             << c.id;
         EXPECT_LE(c.shape.flops(false), kGqaTrainingMaxFlops) << c.id;
       }},
      {"Phi-4 causal prefills past 2048 keys", &SampleSpace::phi4_prefill_cases,
       [](const Task& t, bool deep) { return size_t(deep && t.causal ? 1 : 0); },
       [](const Task&, const CaseSpec& c) {
         EXPECT_TRUE(names(c.id, "/model=phi_4_kv_heads_prefill")) << c.id;
         EXPECT_TRUE(c.shape.heads_q == 40 && c.shape.heads_kv == 10 && c.shape.batch >= 2 &&
                     c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q > 2048)
             << c.id;
       }},
      {"model layouts (pow2_cache, neox_v)", &SampleSpace::model_layout_cases,
       [](const Task&, bool) { return size_t(2); },
       [](const Task&, const CaseSpec& c) {
         EXPECT_TRUE(c.layout == "pow2_cache" || c.layout == "neox_v") << c.id;
         EXPECT_TRUE(names(c.id, "/layout=" + c.layout + "/")) << c.id;
         EXPECT_LE(c.shape.flops(false), kModelCaseMaxFlops) << c.id;
         const Call call = test::call_of(c.shape, c.layout, c.scale);
         if (c.layout == "pow2_cache") {
           EXPECT_TRUE(preallocated_cache(call)) << c.id;
         } else {
           EXPECT_TRUE(interleaved_v(call) && c.shape.heads_q == c.shape.heads_kv) << c.id;
         }
       }},
  };
  return all;
}

// The repo's gates.json with the kinds from `k` on off.
GatesConfig without_from(size_t k) {
  GatesConfig g = test::repo_gates_before_round31_close();
  for (size_t later = k; later < kinds().size(); ++later) g.sampled.*kinds()[later].on = false;
  return g;
}

// Each kind in turn, the kinds after it off: each tier of every pinned run (fp8 included) is the
// tier without the kind and the kind's cases more at its end, every earlier case keeping its id
// and seed. Prints the most GFLOP each kind adds to a cheap and a deep tier, and the cases of gate
// seed 2025 fp16-d64 (the GPU suite's run).
TEST(HackerRound30OpenClose, EachKindIsAppendedAfterEveryOtherCase) {
  const std::vector<Kind>& all = kinds();
  double total[2] = {0, 0};
  for (size_t k = 0; k < all.size(); ++k) {
    const GatesConfig with = without_from(k + 1), without = without_from(k);
    double most[2] = {0, 0};
    test::each_run_with_and_without(with, without,
                                    [&](const Task& t, const std::string& run, bool deep,
                                        const std::vector<CaseSpec>& cases, const std::vector<CaseSpec>& before) {
                                      ASSERT_GE(cases.size(), before.size()) << run;
                                      EXPECT_EQ(cases.size() - before.size(), all[k].count(t, deep))
                                          << all[k].name << " " << run;
                                      const double sum = expect_appended_last(
                                          run, deep, cases, before, [&](const CaseSpec& c) { all[k].check(t, c); });
                                      most[deep] = std::max(most[deep], sum);
                                    });
    std::cout << fmt::format("{}: at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n", all[k].name, most[0] / 1e9,
                             most[1] / 1e9);
    total[0] += most[0];
    total[1] += most[1];
  }
  std::cout << fmt::format("all four: at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n", total[0] / 1e9,
                           total[1] / 1e9);
  EXPECT_LE(total[0], 4.3e9) << "the cheap tier's budget for the second close";
}

// The fill of a beam prefill: every odd sequence repeats the one before whole, Q, K and V, through
// the host mirror of the worker's fill (Q takes the shared prefix rows under "repeat_batch" only),
// and a case without the kind keeps Q's own draws.
TEST(HackerRound30OpenClose, RepeatBatchRepeatsWholeSequences) {
  CaseSpec c;
  c.shape = parse_shape("3x4x2x5x9x64", 64);
  c.seed = 30;
  c.layout = "bshd";
  c.massive_sampled = true;
  c.values = kRepeatBatch;
  c.shared_prefix = 9;
  EXPECT_EQ(tensor_fills(c).q.prefix_rows, 9u);
  WorkerJob job;
  job.mode = "reference";
  job.task = parse_task("fp16-d64");
  job.cases = {c};
  EXPECT_EQ(worker_job_from_json(to_json(job)).cases.at(0).values, kRepeatBatch);  // the worker takes the kind
  const test::Mirror m(c, false);
  for (int h = 0; h < 4; ++h)
    for (int d = 0; d < 64; d += 7) {
      for (int s = 0; s < 5; ++s) {
        EXPECT_EQ(m.q(1, h, s, d), m.q(0, h, s, d));
        EXPECT_NE(m.q(2, h, s, d), m.q(1, h, s, d));
      }
      for (int s = 0; s < 9; ++s) {
        EXPECT_EQ(m.k(1, h / 2, s, d), m.k(0, h / 2, s, d));
        EXPECT_EQ(m.v(1, h / 2, s, d), m.v(0, h / 2, s, d));
      }
    }
  c.values.clear();
  EXPECT_EQ(tensor_fills(c).q.prefix_rows, 0u);
  const test::Mirror plain(c, false);
  EXPECT_NE(plain.q(1, 0, 4, 0), plain.q(0, 0, 4, 0));
}

// The new layouts' strides, and the op takes them (deploy/src/plan.cpp plan_call's checks).
TEST(HackerRound30OpenClose, TheOpTakesTheModelLayouts) {
  const Shape decode = parse_shape("3x8x2x1x1000x128", 128);
  const CaseLayout cache = case_layout(decode, "pow2_cache");
  EXPECT_EQ(pow2_cache_rows(decode), int64_t(1024) << ((1000 + 3) % 5));
  EXPECT_EQ(cache.k.stride[0], pow2_cache_rows(decode) * 2 * 128);
  EXPECT_TRUE(preallocated_cache(test::call_of(decode, "pow2_cache", 0)));
  for (const int keys : {1, 255, 256, 4095}) {
    const int64_t rows = pow2_cache_rows(parse_shape(fmt::format("2x4x4x1x{}x64", keys), 64));
    EXPECT_TRUE(rows > keys && rows >= 256 && pow2(rows)) << keys;
  }
  const Shape mha = parse_shape("2x6x6x300x300x128", 128);
  EXPECT_TRUE(interleaved_v(test::call_of(mha, "neox_v", 0)));
  const CaseLayout neox = case_layout(mha, "neox_v");
  EXPECT_EQ(neox.v.offset, 2 * 128);
  // GQA's form [B, S, Hkv, (g + 2) D]: V after the group's g query heads and its K.
  const CaseLayout gqa = case_layout(parse_shape("2x8x2x300x300x128", 128), "neox_v");
  EXPECT_EQ(gqa.v.stride[1], 6 * 128);
  EXPECT_EQ(gqa.v.stride[2], 2 * 6 * 128);
  EXPECT_EQ(gqa.v.offset, 5 * 128);
  for (const auto& [dims, layout] : {std::pair{"3x8x2x1x1000x128", "pow2_cache"},
                                     {"4x32x32x300x300x128", "pow2_cache"},
                                     {"2x6x6x300x300x128", "neox_v"},
                                     {"2x8x2x300x300x128", "neox_v"}}) {
    const Shape s = parse_shape(dims, 128);
    const CaseLayout l = case_layout(s, layout);
    evo_attn_call call = test::op_call(dims, false, EVO_ATTN_BF16, 0);
    evo_attn_tensor* const tensors[4] = {&call.q, &call.k, &call.v, &call.o};
    const TensorPlacement* const placed[4] = {&l.q, &l.k, &l.v, &l.o};
    for (int i = 0; i < 4; ++i)
      for (int d = 0; d < 3; ++d) tensors[i]->stride[d] = placed[i]->stride[d];
    EXPECT_TRUE(test::op_takes(call)) << dims << " " << layout;
  }
}

// Per fp16 and bf16 pinned run, with both closes: the cases of each tier that run the path.
using Condition = std::function<bool(const Call&)>;
std::vector<Catch> catches(const Condition& path, const char* name) {
  return call_catches(test::repo_gates_before_round31_close(), path, name);
}

// beam_search_prefill, read through the host mirror of the fill: the beam prefill in every tier of
// all 21 runs (besides round 30's three accidents of the shared forms, /shared=qk and qkv).
TEST(HackerRound30OpenClose, BeamSearchPrefillIsCaughtByTheBeamPrefill) {
  const std::vector<Catch> runs =
      test::pinned_catches(test::repo_gates_before_round31_close(), beam_case, "beam_search_prefill");
  EXPECT_EQ(caught_runs(runs, false), span(0, 21));
  EXPECT_EQ(caught_runs(runs, true), span(0, 21));
  test::expect_every_catch_names_one_of(runs, {"/model=beam_prefill", "/shared=qk"});
  EXPECT_TRUE(names(runs[6].cheap, "/model=beam_prefill")) << runs[6].cheap;
  EXPECT_TRUE(names(runs[6].deep, "/model=beam_prefill")) << runs[6].deep;
}

// training_step_four_kv_heads: the deep tier's GQA training step in all 21 runs; no cheap tier (the
// step is past its max_flops).
TEST(HackerRound30OpenClose, TrainingStepOverFourKvHeadsIsCaughtInTheDeepTier) {
  const std::vector<Catch> runs = catches(training_wide_kv, "training_step_four_kv_heads");
  EXPECT_EQ(caught_runs(runs, false), std::vector<size_t>{});
  EXPECT_EQ(caught_runs(runs, true), span(0, 21));
  expect_every_catch_names(runs, "/model=training_step_gqa_");
}

// phi4_heads_batched_past_2k_keys: the 14 unmasked runs' tiers as the first close had them, and now
// the deep tier of the 7 causal runs by Phi-4's heads on a prefill past 2048 keys.
TEST(HackerRound30OpenClose, PhiFourOnACausalTaskIsCaughtInTheDeepTier) {
  const std::vector<Catch> runs = catches(phi4_batched, "phi4_heads_batched_past_2k");
  EXPECT_EQ(caught_runs(runs, false), span(0, 14));
  EXPECT_EQ(caught_runs(runs, true), span(0, 21));
  expect_every_catch_names(runs, "/model=phi_4_");
  for (size_t i = 14; i < 21; ++i) EXPECT_TRUE(names(runs[i].deep, "/model=phi_4_kv_heads_prefill")) << runs[i].deep;
}

// preallocated_cache_pow2 and gpt_neox_interleaved_v: the model layouts in every tier of all 21 runs,
// and no other case.
TEST(HackerRound30OpenClose, PowerOfTwoCacheAndInterleavedVAreCaughtByTheModelLayouts) {
  const std::vector<Catch> cache = catches(preallocated_cache, "preallocated_cache_pow2");
  EXPECT_EQ(caught_runs(cache, false), span(0, 21));
  EXPECT_EQ(caught_runs(cache, true), span(0, 21));
  expect_every_catch_names(cache, "/layout=pow2_cache/");
  const std::vector<Catch> neox = catches(interleaved_v, "gpt_neox_interleaved_v");
  EXPECT_EQ(caught_runs(neox, false), span(0, 21));
  EXPECT_EQ(caught_runs(neox, true), span(0, 21));
  expect_every_catch_names(neox, "/layout=neox_v/");
}

}  // namespace
}  // namespace evo::hacker_round30_open_close
