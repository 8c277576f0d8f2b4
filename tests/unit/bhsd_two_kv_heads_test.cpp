// The BHSD long value case at two KV heads (policy/sample_space.h bhsd_two_kv_heads): a launch
// gives a dim of size 1 the stride D (evo_launch_stride), so at one KV head a BHSD cache's head
// stride reaches no kernel, and round 30's K outlier channels over a BHSD cache went uncaught in 14
// of 21 pinned runs' cheap tiers. The tests check that the switch moves that case alone, what it
// costs, and that the try is caught again in every pinned run.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/pinned_runs.h"
#include "support/round30_paths.h"
#include "support/test_support.h"
#include "support/value_paths.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::bhsd_two_kv_heads {
namespace {

using test::Catch;
using test::round30::caught_runs;
using test::round30::expect_every_catch_names;
using test::round30::names;
using test::round30::span;

GatesConfig without_switch() {
  GatesConfig g = test::repo_gates();
  g.sampled.bhsd_two_kv_heads = false;
  return g;
}

// Every tier of every pinned run (fp8 included): the same cases with the switch and without, but
// the BHSD long value case of one KV head, which keeps its seed, id prefix, keys, rows and group at
// two KV heads. Prints the cases moved and the most GFLOP one costs.
TEST(BhsdTwoKvHeads, OnlyTheOneKvHeadBhsdCaseMoves) {
  size_t moved = 0;
  double most = 0;
  test::each_run_with_and_without(test::repo_gates(), without_switch(),
                                  [&](const Task&, const std::string& run, bool, const std::vector<CaseSpec>& cases,
                                      const std::vector<CaseSpec>& before) {
                                    ASSERT_EQ(cases.size(), before.size()) << run;
                                    for (size_t i = 0; i < cases.size(); ++i) {
                                      const CaseSpec &c = cases[i], &b = before[i];
                                      EXPECT_EQ(c.seed, b.seed) << run << ": " << c.id;
                                      if (c.id == b.id) continue;
                                      ++moved;
                                      EXPECT_TRUE(names(c.id, "/layout=bhsd/") && names(c.id, "/long_cache_wide_group"))
                                          << run << ": " << c.id;
                                      EXPECT_EQ(b.shape.heads_kv, 1) << b.id;
                                      EXPECT_EQ(c.shape.heads_kv, 2) << c.id;
                                      EXPECT_EQ(c.shape.heads_q, 2 * b.shape.heads_q) << c.id;
                                      EXPECT_EQ(c.shape.seq_q, b.shape.seq_q) << c.id;
                                      EXPECT_EQ(c.shape.seq_kv, b.shape.seq_kv) << c.id;
                                      most = std::max(most, c.shape.flops(false));
                                    }
                                  });
  std::cout << fmt::format("bhsd_two_kv_heads: {} cases moved, at most {:.3g} GFLOP each\n", moved, most / 1e9);
  EXPECT_GT(moved, 0u);
  EXPECT_LE(most, 2.2e9) << "a causal prefill of 544 tokens, 14 query heads at D 128";
}

// Every BHSD long value case of every 16-bit pinned run has two KV heads or more.
TEST(BhsdTwoKvHeads, EveryBhsdLongValueCaseHasTwoKvHeads) {
  size_t seen = 0;
  test::each_run_of_both_tiers([&](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    for (const CaseSpec& c : cases)
      if (names(c.id, "/layout=bhsd/") && names(c.id, "/long_cache_wide_group")) {
        ++seen;
        EXPECT_GE(c.shape.heads_kv, 2) << run << ": " << c.id;
      }
  });
  EXPECT_EQ(seen, 42u) << "one a tier of the 21 fp16 and bf16 runs";
}

// Round 30's K outlier channels over a BHSD cache: caught by that case in both tiers of every fp16
// and bf16 pinned run again (7 cheap and 5 deep without the switch).
TEST(BhsdTwoKvHeads, KOutlierChannelsOverABhsdCacheIsCaughtInEveryRun) {
  const auto path = test::value_path(test::round30::bhsd_long, test::outlier_channels);
  const std::vector<Catch> runs = test::pinned_catches(test::repo_gates(), path, "k_outlier_channels_bhsd_cache");
  EXPECT_EQ(caught_runs(runs, false), span(0, 21));
  EXPECT_EQ(caught_runs(runs, true), span(0, 21));
  expect_every_catch_names(runs, "/long_cache_wide_group");
  const std::vector<Catch> before = test::pinned_catches(without_switch(), path, "k_outlier_channels_bhsd_cache");
  EXPECT_EQ(caught_runs(before, false), (std::vector<size_t>{2, 3, 4, 6, 7, 9, 10}));
  EXPECT_EQ(caught_runs(before, true), (std::vector<size_t>{2, 4, 7, 10, 11}));
}

}  // namespace
}  // namespace evo::bhsd_two_kv_heads
