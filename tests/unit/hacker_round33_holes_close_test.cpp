// The close of hacker round 33's three length holes and of its full-window try's reliance on the
// benchmark's long shapes (run/whole_call_cases.h): a whole window of 4096 rows at one head in both
// tiers, the vision towers' fixed lengths and a GQA prefill past 8192 tokens in the deep tier. The
// tests check that every earlier case keeps its id and seed, what the close costs a tier, and for
// each of the four tries which pinned runs' tiers catch it before the close and after, by which case
// at gate seed 2025 fp16-d64 (the GPU suite's run).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "run/sampler.h"
#include "run/whole_call_cases.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/pinned_runs.h"
#include "support/round30_paths.h"
#include "support/round31_paths.h"
#include "support/round33_paths.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round33_holes_close {
namespace {

using test::Catch;
using test::round30::call_catches;
using test::round30::names;
using test::round30::span;
using test::round31::expect_runs;

bool names_a_new_kind(const std::string& id) {
  if (names(id, "/model=whole_window_4096") || names(id, "/model=llama_3_8b_tp4_long_prefill") ||
      names(id, "/model=vit_grid_"))
    return true;
  return std::any_of(std::begin(kVisionTowers), std::end(kVisionTowers),
                     [&](const VisionTower& t) { return names(id, std::string("/model=") + t.name); });
}

// Every tier of every pinned run (fp8 included) with the close and without: every earlier case keeps
// its id and seed; the cheap tier adds the whole window alone (8.6 GFLOP at D 128), the deep tier
// the window, the six towers and the long GQA prefill (by construction at most 8.6 + 52.6 + 300
// GFLOP at D 128: 3.62e11), each with Sq = Skv at the task's head dim.
TEST(HackerRound33HolesClose, EveryEarlierCaseKeepsItsSeed) {
  double cheap = 0, deep = 0;
  test::each_run_with_and_without(test::repo_gates(), test::repo_gates_before_round33_holes_close(),
                                  [&](const Task& t, const std::string& run, bool is_deep,
                                      const std::vector<CaseSpec>& cases, const std::vector<CaseSpec>& before) {
                                    ASSERT_EQ(cases.size(), before.size() + (is_deep ? 8 : 1)) << run;
                                    const double sum = test::round30::expect_appended_last(
                                        run, is_deep, cases, before, [&](const CaseSpec& c) {
                                          EXPECT_TRUE(names_a_new_kind(c.id)) << c.id;
                                          EXPECT_EQ(c.shape.seq_q, c.shape.seq_kv) << c.id;
                                          EXPECT_EQ(c.shape.head_dim, t.head_dim) << c.id;
                                          EXPECT_LE(c.shape.flops(false), is_deep ? 3e11 : 8.6e9) << c.id;
                                        });
                                    (is_deep ? deep : cheap) = std::max(is_deep ? deep : cheap, sum);
                                  });
  std::cout << fmt::format("round 33's holes close: at most {:.3g} GFLOP more a cheap tier, {:.3g} a deep tier\n",
                           cheap / 1e9, deep / 1e9);
  EXPECT_LE(cheap, 8.6e9);
  EXPECT_LE(deep, 3.62e11);
}

// The GPU suite's cheap tier (tests/gpu/adversarial_test.cpp: --shapes small,mission,ragged
// --bench mission,long-smoke --seeds 0,1): no benchmark shape past 2048 rows.
GatesConfig as_gpu_suite(GatesConfig g) {
  g.gate_sets = {"small", "mission", "ragged"};
  g.benchmark_sets = {"mission", "long-smoke"};
  g.seeds = {0, 1};
  return g;
}
using Condition = bool (*)(const test::Call&);
std::vector<Catch> before(const Condition path, const char* name) {
  return call_catches(as_gpu_suite(test::repo_gates_before_round33_holes_close()), path, name);
}
std::vector<Catch> after(const Condition path, const char* name) {
  return call_catches(as_gpu_suite(test::repo_gates()), path, name);
}

// A whole context window: before, under the GPU suite's benchmark sets, the deep tier alone (its
// frontier shapes; the cheap tier met it only through the default benchmark's long shapes); after,
// both tiers of all 21 runs, the cheap tier by the whole window of 4096 rows.
TEST(HackerRound33HolesClose, FullContextWindowUnderTheGpuSuitesSets) {
  using test::round33::full_context_window;
  expect_runs(before(full_context_window, "full_context_window before"), {}, span(0, 21), "",
              "deep/frontier/1x32x32x32768x32768x64/");
  const std::vector<Catch> runs = after(full_context_window, "full_context_window");
  expect_runs(runs, span(0, 21), span(0, 21), "sampled/206/1x1x1x4096x4096x64/", "deep/372/1x1x1x4096x4096x64/");
  for (const Catch& k : runs) EXPECT_TRUE(names(k.cheap, "/model=whole_window_4096")) << k.run << ": " << k.cheap;
  std::cout << "full_context_window at 2025: " << runs[6].cheap << "\n  " << runs[6].deep << "\n";
}

// A U-Net's 64 x 64 latent self-attention (unmasked MHA, 4096 x 4096): before, admitted by both
// tiers; after, both tiers of the 14 unmasked runs (a causal task runs no unmasked call), by the
// whole window alone.
TEST(HackerRound33HolesClose, LatentSelfAttention) {
  using test::round33::latent_64x64_self;
  expect_runs(before(latent_64x64_self, "latent_64x64_self before"), {}, {}, "", "");
  const std::vector<Catch> runs = after(latent_64x64_self, "latent_64x64_self");
  expect_runs(runs, span(0, 14), span(0, 14), "sampled/206/1x1x1x4096x4096x64/", "deep/372/1x1x1x4096x4096x64/");
  test::expect_every_catch_names_one_of(runs, {"/model=whole_window_4096"});
}

// CLIP ViT-L/14-336's 577 tokens: before, admitted by both tiers; after, the deep tier of all 21
// runs by that tower's case (and the drawn grid where it draws 24 x 24).
TEST(HackerRound33HolesClose, ClipVisionTower) {
  using test::round33::clip_336_tokens;
  expect_runs(before(clip_336_tokens, "clip_336_tokens before"), {}, {}, "", "");
  const std::vector<Catch> runs = after(clip_336_tokens, "clip_336_tokens");
  expect_runs(runs, {}, span(0, 21), "", "deep/374/1x16x16x577x577x64/");
  test::expect_every_catch_names_one_of(runs, {"/model=clip_vit_l14_336_577_tokens", "/model=vit_grid_24x24_cls"});
}

// A GQA prefill past 8192 tokens: before, admitted by both tiers; after, the deep tier of all 21
// runs by the long GQA prefill alone (no cheap tier holds one: 1x2x1x8193x8193x64 is past its
// max_flops).
TEST(HackerRound33HolesClose, LongGqaPrefill) {
  using test::round33::long_gqa_prefill;
  expect_runs(before(long_gqa_prefill, "long_gqa_prefill before"), {}, {}, "", "");
  const std::vector<Catch> runs = after(long_gqa_prefill, "long_gqa_prefill");
  expect_runs(runs, {}, span(0, 21), "", "deep/379/1x8x2x10542x10542x64:bshd/");
  test::expect_every_catch_names_one_of(runs, {"/model=llama_3_8b_tp4_long_prefill"});
}

}  // namespace
}  // namespace evo::hacker_round33_holes_close
