// The close of hacker round 31's three narrowed holes (lab/hack32/README.md "Close of round 31's
// narrowed holes"): round 31's close drew each kind over the model's range, but one draw a tier lands
// on one value of it. SampleSpace::model_range_ends appends, in the deep tier (gates.json's cheap
// tier turns it off), the end of three kinds' ranges a tier's draw missed: pow2_cache at one
// sequence, Phi-4 on one prompt past 2048 tokens and a Gemma prefill past 544 tokens, on every task
// (run/batch_cases.h append_model_range_end_cases). The tests check that every earlier case keeps its
// id and seed, what the close costs, and which pinned runs' tiers now catch each try
// (support/round31_paths.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "run/batch_cases.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/pinned_runs.h"
#include "support/round30_paths.h"
#include "support/round31_paths.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round31_narrowed_close {
namespace {

using test::Catch;
using test::round30::call_catches;
using test::round30::expect_every_catch_names;
using test::round30::names;
using test::round30::span;
using namespace test::round31;  // the round's paths

// Every tier of every pinned run (fp8 included) with the close and without: the cheap tier is the
// same case for case; the deep tier keeps every earlier case (id and seed) and appends at most the
// three range ends, each within its cap. Prints the most GFLOP the close adds to a deep tier.
// Round 32's close, after it, is off on both sides (HackerRound32Close checks its own).
TEST(HackerRound31NarrowedClose, EveryEarlierCaseKeepsItsSeed) {
  double most = 0;
  size_t added_most = 0;
  test::each_run_with_and_without(
      test::repo_gates_before_round32_close(), test::repo_gates_before_round31_narrowed_close(),
      [&](const Task&, const std::string& run, bool deep, const std::vector<CaseSpec>& cases,
          const std::vector<CaseSpec>& before) {
        ASSERT_GE(cases.size(), before.size()) << run;
        for (size_t i = 0; i < before.size(); ++i) {
          EXPECT_EQ(cases[i].seed, before[i].seed) << run << ": " << cases[i].id;
          EXPECT_EQ(cases[i].id, before[i].id) << run;
        }
        if (!deep) {
          EXPECT_EQ(cases.size(), before.size()) << run << ": the cheap tier adds nothing";
          return;
        }
        EXPECT_LE(cases.size() - before.size(), 3u) << run;
        double added = 0;
        for (size_t i = before.size(); i < cases.size(); ++i) {
          const CaseSpec& c = cases[i];
          added += c.shape.flops(false);
          EXPECT_EQ(c.shape.batch, 1) << c.id;
          if (names(c.id, "/range_end=one_sequence")) {
            EXPECT_TRUE(names(c.id, "/layout=pow2_cache/")) << c.id;
            EXPECT_LE(c.shape.flops(false), kModelCaseMaxFlops) << c.id;
          } else if (names(c.id, "/range_end=one_prompt")) {
            EXPECT_TRUE(names(c.id, "/model=phi_4_kv_heads_prefill")) << c.id;
            EXPECT_GT(c.shape.seq_q, 2048) << c.id;
            EXPECT_LE(c.shape.flops(false), std::max(kPhi4OnePromptMaxFlops, 4.0 * 40 * 2049 * 2049 * c.shape.head_dim))
                << c.id;
          } else {
            EXPECT_TRUE(names(c.id, "/model_scale=gemma_") && names(c.id, "/range_end=past_544_rows")) << c.id;
            EXPECT_GT(c.shape.seq_q, 544) << c.id;
            EXPECT_LE(c.shape.flops(false), kGemmaLongPrefillMaxFlops) << c.id;
          }
        }
        added_most = std::max(added_most, cases.size() - before.size());
        most = std::max(most, added);
      });
  std::cout << fmt::format(
      "round 31's narrowed close: at most {} cases, {:.3g} GFLOP more a deep tier, none a cheap one\n", added_most,
      most / 1e9);
  EXPECT_EQ(added_most, 3u);
  EXPECT_LE(most, 1.2e11) << "the Phi-4 prompt (86 GFLOP at D 128) and the Gemma prefill (34)";
}

// The op takes each range end's model call (plan_call's checks): Phi-4 on a 4k prompt, Gemma 3 27B
// on a 1k prompt, a Llama 2 decode step at batch 1 over a cache of 4096 rows (HackerRound31's).
TEST(HackerRound31NarrowedClose, TheOpTakesEachRangeEnd) {
  for (const char* dims : {"1x40x10x4096x4096x128", "1x32x16x1024x1024x128", "1x32x32x1x1000x128"})
    for (const bool causal : {false, true}) EXPECT_TRUE(test::op_takes(test::op_call(dims, causal, EVO_ATTN_BF16, 0)));
}

// Per fp16 and bf16 pinned run, with the close: the first case of each tier that runs each try's
// path, and the first at gate seed 2025 fp16-d64 (the 7th run).
std::vector<Catch> catches(const std::function<bool(const test::Call&)>& path, const char* name) {
  return call_catches(test::repo_gates(), path, name);
}

TEST(HackerRound31NarrowedClose, PowerOfTwoCacheAtOneSequence) {
  const std::vector<Catch> runs = catches(pow2_cache_one_sequence, "pow2_cache_one_sequence");
  expect_every_catch_names(runs, "/layout=pow2_cache/");
  // No case: a launch gives a dim of size 1 the stride D (test::as_launched), so at one sequence the
  // try's path is never taken, through the op as on the gate. The range end `deep/350` was predicted
  // to catch it at gate seed 2025 and admitted it on the H200 (2026-12-03): a void try, not a hole.
  expect_runs(runs, {}, {}, "", "");
}

TEST(HackerRound31NarrowedClose, PhiFourOnOnePrompt) {
  const std::vector<Catch> runs = catches(phi4_one_prompt, "phi4_one_prompt");
  expect_every_catch_names(runs, "/model=phi_4_kv_heads_prefill");
  expect_runs(runs, {}, span(0, 21), "", "deep/351/1x40x10x2107x2107x64:bshd/");
  EXPECT_TRUE(names(runs[6].deep, "/range_end=one_prompt")) << runs[6].deep;
  for (size_t i = 7; i < 14; ++i) EXPECT_TRUE(names(runs[i].deep, "/1x40x10x2049x2049x128:bshd/")) << runs[i].deep;
}

TEST(HackerRound31NarrowedClose, ModelScalePast544Rows) {
  const std::vector<Catch> runs = catches(model_scale_long_prefill, "model_scale_long_prefill");
  expect_every_catch_names(runs, "/model_scale=gemma_");
  expect_runs(runs, {}, span(0, 21), "", "deep/352/1x32x16x1021x1021x64:bshd/");
  EXPECT_TRUE(names(runs[6].deep, "/model_scale=gemma_2_27b/range_end=past_544_rows")) << runs[6].deep;
}

}  // namespace
}  // namespace evo::hacker_round31_narrowed_close
