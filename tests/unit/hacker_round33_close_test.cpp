// The close of hacker round 33's KV-packed hole (run/view_layout_cases.h append_kv_packed_cases): K
// and V views of flash-attn's MHA inference cache [B, C, 2, Hkv, D] in both tiers. The tests check
// that every earlier case keeps its id and seed, what the close costs, that the case takes the try's
// path as the launch passes it, and which pinned runs' tiers catch the try.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "run/sampler.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/pinned_runs.h"
#include "support/round30_paths.h"
#include "support/round31_paths.h"
#include "support/round33_paths.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round33_close {
namespace {

using test::round30::names;

// Every tier of every pinned run (fp8 included) with the close and without: every earlier case keeps
// its id and seed; each tier adds one KV-packed case within 2^30 FLOPs that takes the try's path.
TEST(HackerRound33Close, EveryEarlierCaseKeepsItsSeed) {
  double most = 0;
  test::each_run_with_and_without(
      test::repo_gates_before_round33_holes_close(), test::repo_gates_before_round33_close(),
      [&](const Task& t, const std::string& run, bool deep, const std::vector<CaseSpec>& cases,
          const std::vector<CaseSpec>& before) {
        ASSERT_EQ(cases.size(), before.size() + 1) << run;
        const double sum = test::round30::expect_appended_last(run, deep, cases, before, [&](const CaseSpec& c) {
          EXPECT_EQ(c.layout, "kv_packed") << c.id;
          EXPECT_TRUE(
              names(c.id, t.causal ? "/model=flash_attn_kv_cache_prefill" : "/model=flash_attn_kv_cache_decode"))
              << c.id;
          EXPECT_LE(c.shape.flops(false), kModelCaseMaxFlops) << c.id;
          EXPECT_TRUE(test::round33::kv_packed(test::call_of(c.shape, c.layout, c.scale, t.causal))) << c.id;
        });
        most = std::max(most, sum);
      });
  std::cout << fmt::format("round 33's close: at most {:.3g} GFLOP more a tier\n", most / 1e9);
}

// The KV-packed try: caught by that case in both tiers of all 21 fp16 and bf16 pinned runs.
TEST(HackerRound33Close, KvPackedCache) {
  const std::vector<test::Catch> runs =
      test::round30::call_catches(test::repo_gates(), test::round33::kv_packed, "kv_packed");
  test::round30::expect_every_catch_names(runs, "/layout=kv_packed/");
  test::round31::expect_runs(runs, test::round30::span(0, 21), test::round30::span(0, 21),
                             "sampled/205/1x16x4x2x1833x64:bshd/", "deep/371/3x9x3x1x1757x64:bshd/");
  std::cout << "kv_packed at 2025: " << runs[6].cheap << "\n  " << runs[6].deep << "\n";
}

}  // namespace
}  // namespace evo::hacker_round33_close
