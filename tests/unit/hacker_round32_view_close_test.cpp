// The close of hacker round 32's two open holes (run/view_layout_cases.h): Q alone a view of a fused
// projection (GPT-2 verifying draft tokens over a cache) and a head-major cache of a power of two of
// rows a head (gpt-fast at two sequences or more), each drawn where its strides reach a kernel. The
// tests check that every earlier case keeps its id and seed, what the close costs, that each case
// takes its try's path as the launch passes it, and which pinned runs' tiers catch each try.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "run/sampler.h"
#include "run/view_layout_cases.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/pinned_runs.h"
#include "support/round30_paths.h"
#include "support/round31_paths.h"
#include "support/round32_paths.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round32_view_close {
namespace {

using test::Catch;
using test::round30::call_catches;
using test::round30::expect_every_catch_names;
using test::round30::names;
using test::round30::span;
using test::round31::expect_runs;
using namespace test::round32;  // the round's paths

// Every tier of every pinned run (fp8 included) with the close and without: every earlier case keeps
// its id and seed; each tier adds the two views, each within 2^30 FLOPs, and each takes its try's
// path with the strides the launch passes. Prints the most GFLOP the close adds to a tier.
TEST(HackerRound32ViewClose, EveryEarlierCaseKeepsItsSeed) {
  double most = 0;
  test::each_run_with_and_without(
      test::repo_gates_before_round33_close(), test::repo_gates_before_round32_view_close(),
      [&](const Task& t, const std::string& run, bool deep, const std::vector<CaseSpec>& cases,
          const std::vector<CaseSpec>& before) {
        ASSERT_EQ(cases.size(), before.size() + 2) << run;
        const double sum = test::round30::expect_appended_last(run, deep, cases, before, [&](const CaseSpec& c) {
          EXPECT_LE(c.shape.flops(false), kModelCaseMaxFlops) << c.id;
          const test::Call call = test::call_of(c.shape, c.layout, c.scale, t.causal);
          if (c.layout == "fused_q") {
            EXPECT_TRUE(names(c.id, t.causal ? "/model=gpt_2_fused_q_prefill" : "/model=gpt_2_fused_q_verify")) << c.id;
            EXPECT_GE(c.shape.seq_q, kVerifyRows[0]) << c.id;
            EXPECT_TRUE(fused_q_alone(call)) << c.id;
          } else {
            EXPECT_EQ(c.layout, "pow2_cache_bhsd") << c.id;
            EXPECT_GE(c.shape.batch, 2) << c.id;
            EXPECT_GE(c.shape.heads_kv, 2) << c.id;
            EXPECT_TRUE(bhsd_pow2_cache(call)) << c.id;
          }
        });
        most = std::max(most, sum);
      });
  std::cout << fmt::format("round 32's view close: at most {:.3g} GFLOP more a tier\n", most / 1e9);
  EXPECT_LE(most, 2 * kModelCaseMaxFlops);
}

// Per fp16 and bf16 pinned run, with the close: the runs whose tiers take each try's path.
std::vector<Catch> catches(const std::function<bool(const test::Call&)>& path, const char* name) {
  return call_catches(test::repo_gates_before_round33_close(), path, name);
}

TEST(HackerRound32ViewClose, FusedQAlone) {
  const std::vector<Catch> runs = catches(fused_q_alone, "fused_q_alone");
  expect_every_catch_names(runs, "/layout=fused_q/");
  expect_runs(runs, span(0, 21), span(0, 21), "sampled/203/2x2x1x8x921x64/", "deep/369/1x6x2x13x3579x64/");
  EXPECT_TRUE(names(runs[6].cheap, "/model=gpt_2_fused_q_verify")) << runs[6].cheap;
  std::cout << "fused_q at 2025: " << runs[6].cheap << "\n  " << runs[6].deep << "\n";
}

TEST(HackerRound32ViewClose, HeadMajorPowerOfTwoCache) {
  const std::vector<Catch> runs = catches(bhsd_pow2_cache, "bhsd_pow2_cache");
  expect_every_catch_names(runs, "/layout=pow2_cache_bhsd/");
  expect_runs(runs, span(0, 21), span(0, 21), "sampled/204/2x4x4x2x3861x64:bshd/", "deep/370/2x3x3x4x1043x64:bshd/");
  EXPECT_TRUE(names(runs[6].cheap, "/model=gpt_fast_pow2_cache_decode")) << runs[6].cheap;
  std::cout << "pow2_cache_bhsd at 2025: " << runs[6].cheap << "\n  " << runs[6].deep << "\n";
}

}  // namespace
}  // namespace evo::hacker_round32_view_close
