// Hacker round 30's close (lab/hack30/README.md "Closed after the round"): five kinds of case
// appended to both tiers after every other case, each from a stream of its own and behind a
// sampled.* switch of its own, each drawing per run the dimension a close would otherwise fix.
// The tests check that every earlier case keeps its id and seed with each kind added, what each
// kind is, what it costs, and which pinned runs' tiers now catch each closed try (support/
// round30_paths.h: the kernels' own tests on the call).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "run/model_cases.h"
#include "run/sampler.h"
#include "run/value_cases.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/pinned_runs.h"
#include "support/round30_paths.h"
#include "support/test_support.h"
#include "support/value_paths.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round30_close {
namespace {

using test::Call;
using test::Catch;
using namespace test::round30;  // the round's paths and run readers

// The repo's gates.json with round 30's second close off: the tiers as this close drew them (the
// second close's cases come after, hacker_round30_open_close_test.cpp).
GatesConfig first_close() {
  GatesConfig g = test::repo_gates();
  test::without_round30_second_close(g);
  return g;
}

// The close's kinds in the order draw_tier appends them, each with its switch.
using Switch = bool SampleSpace::*;
struct Kind {
  const char* name;
  Switch on;
  // How many cases of the kind a tier of the task gets, and a check of each.
  std::function<size_t(const Task&)> count;
  std::function<void(const Task&, const CaseSpec&)> check;
};

// A count the kind's own draws set (the batched calls: one per model_shapes decode step whose cut
// shortened its cache and that fits; the Domain test asserts each tier meets the kind).
constexpr size_t kDrawn = size_t(-1);
size_t none_when_causal(const Task& t) { return t.causal ? 0 : kDrawn; }

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = {
      {"batched whole-cache model calls", &SampleSpace::batched_model_cases, none_when_causal,
       [](const Task&, const CaseSpec& c) {
         EXPECT_TRUE(names(c.id, "/cache=whole/batch=")) << c.id;
         EXPECT_TRUE(c.shape.batch >= kBatchedModelBatch[0] && c.shape.batch <= kBatchedModelBatch[1]) << c.id;
         EXPECT_TRUE(c.shape.seq_q <= kSharedDecodeRows && c.shape.seq_kv > kValueCaseMaxKeys) << c.id;
         EXPECT_LE(c.shape.flops(false), kBatchedModelMaxFlops) << c.id;
       }},
      {"Gemma 27B calls", &SampleSpace::gemma_27b_cases, [](const Task&) { return size_t(1); },
       [](const Task& t, const CaseSpec& c) {
         EXPECT_TRUE(c.shape.heads_q == 32 && c.shape.heads_kv == 16 && c.shape.seq_kv > 512) << c.id;
         EXPECT_EQ(c.shape.batch >= 2, !t.causal) << c.id;
         EXPECT_TRUE(names(c.id, "/model=gemma_") && names(c.id, "/model_scale=gemma_")) << c.id;
         EXPECT_TRUE(c.scale == 1 / std::sqrt(144.0) || c.scale == 1 / std::sqrt(168.0)) << c.id;
       }},
      {"fused-buffer prefills past 512 tokens", &SampleSpace::long_fused_qkv_cases,
       [](const Task&) { return size_t(1); },
       [](const Task&, const CaseSpec& c) {
         EXPECT_TRUE(names(c.id, "/shared=fused") && c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q > 512) << c.id;
         EXPECT_LE(c.shape.flops(false), kModelCaseMaxFlops) << c.id;
       }},
      {"long value cases over a BHSD cache", &SampleSpace::bhsd_long_value_cases,
       [](const Task& t) { return size_t(t.dtype == DType::fp8 ? 0 : 1); },
       [](const Task&, const CaseSpec& c) {
         EXPECT_TRUE(names(c.id, "/long_cache_wide_group") && c.values.rfind("massive_", 0) == 0) << c.id;
         EXPECT_TRUE(c.shape.layout == Layout::bhsd && c.layout == "bhsd" && c.shape.seq_kv > 512) << c.id;
         EXPECT_GE(c.shape.heads_kv, 2) << c.id;  // bhsd_two_kv_heads: twice the heads where it drew one
         EXPECT_LE(c.shape.flops(false), 2 * kModelCaseMaxFlops) << c.id;
       }},
      {"padded decode batches", &SampleSpace::padded_decode_cases,
       [](const Task& t) { return size_t(t.causal ? 0 : 1); },
       [](const Task&, const CaseSpec& c) {
         EXPECT_TRUE(names(c.id, "/model=padded_decode_batch")) << c.id;
         EXPECT_TRUE(c.shape.batch >= 32 && c.shape.batch <= 64 && c.shape.batch % 8 == 0 && c.shape.seq_q == 1 &&
                     c.shape.seq_kv >= 2048 && c.shape.heads_q > c.shape.heads_kv)
             << c.id;
       }},
  };
  return all;
}

// Each kind in turn, the kinds after it off: each tier of every pinned run (fp8 included) is the
// tier without the kind and the kind's cases more at its end, every earlier case keeping its id
// and seed. Prints the most GFLOP each kind adds to a cheap and a deep tier.
TEST(HackerRound30Close, EachKindIsAppendedAfterEveryOtherCase) {
  const std::vector<Kind>& all = kinds();
  for (size_t k = 0; k < all.size(); ++k) {
    GatesConfig with = first_close();
    for (size_t later = k + 1; later < all.size(); ++later) with.sampled.*all[later].on = false;
    GatesConfig without = with;
    without.sampled.*all[k].on = false;
    double most[2] = {0, 0};
    test::each_run_with_and_without(with, without,
                                    [&](const Task& t, const std::string& run, bool deep,
                                        const std::vector<CaseSpec>& cases, const std::vector<CaseSpec>& before) {
                                      ASSERT_GE(cases.size(), before.size()) << run;
                                      const size_t added = cases.size() - before.size();
                                      const size_t want = all[k].count(t);
                                      if (want != kDrawn) {
                                        EXPECT_EQ(added, want) << all[k].name << " " << run;
                                      }
                                      const double sum = expect_appended_last(
                                          run, deep, cases, before, [&](const CaseSpec& c) { all[k].check(t, c); });
                                      most[deep] = std::max(most[deep], sum);
                                    });
    std::cout << fmt::format("{}: at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n", all[k].name, most[0] / 1e9,
                             most[1] / 1e9);
  }
}

// Per fp16 and bf16 pinned run, with the close: the cases of each tier that run the path.
using Condition = std::function<bool(const Call&)>;
std::vector<Catch> catches(const Condition& path, const char* name) { return call_catches(first_close(), path, name); }

// The tiers that catch each closed try, and the id token every catching case carries.
void expect_caught(const std::vector<Catch>& runs, const std::vector<size_t>& cheap, const std::vector<size_t>& deep,
                   const std::string& token) {
  EXPECT_EQ(caught_runs(runs, false), cheap);
  EXPECT_EQ(caught_runs(runs, true), deep);
  expect_every_catch_names(runs, token);
}

// phi4_heads_batched_past_2k_keys: Phi-4's 40 over 10 over its 4096 keys at 2 or 3 sequences in
// every tier of the 14 unmasked runs (at D 128 too: 0.13 to 0.19 GFLOP, within 2^28); not the 7
// causal runs (a row past 2048 visible keys is a prefill past 2048 tokens, past the bounds).
TEST(HackerRound30Close, PhiFourBatchedIsCaughtByTheBatchedWholeCacheCalls) {
  const std::vector<Catch> runs = catches(phi4_batched, "phi4_heads_batched_past_2k");
  expect_caught(runs, span(0, 14), span(0, 14), "/model=phi_4_decode");
}

// gemma_27b_heads_32_over_16 and model_scale_past_512_keys: the Gemma call in every tier of all
// 21 runs, and no other case.
TEST(HackerRound30Close, GemmaHeadsAndItsScalePast512KeysAreCaughtByTheGemmaCall) {
  expect_caught(catches(gemma_27b_heads, "gemma_27b_heads"), span(0, 21), span(0, 21), "/model=gemma_");
  expect_caught(catches(model_scale_long, "model_scale_long"), span(0, 21), span(0, 21), "/model=gemma_");
}

// fused_qkv_past_512_tokens: the fused prefill past 512 tokens in every tier of all 21 runs.
TEST(HackerRound30Close, FusedQkvPast512TokensIsCaughtByTheLongFusedPrefill) {
  expect_caught(catches(fused_long, "fused_long"), span(0, 21), span(0, 21), "/shared=fused");
}

// k_outlier_channels_bhsd_cache, read through the host mirror of the fill: the massive long value
// case over a BHSD cache in every tier of all 21 runs.
TEST(HackerRound30Close, KOutlierChannelsOverABhsdCacheIsCaughtByTheBhsdLongValueCase) {
  const std::vector<Catch> runs = test::pinned_catches(
      first_close(), test::value_path(bhsd_long, test::outlier_channels), "k_outlier_channels_bhsd_cache");
  // Every run with the case at two KV heads (bhsd_two_kv_heads_test.cpp: at one, the launch hides the
  // head stride, and 7 cheap and 5 deep tiers caught it).
  expect_caught(runs, span(0, 21), span(0, 21), "/long_cache_wide_group");
}

// padded_decode_batch: now in the cheap tier of the 14 unmasked runs too (the causal 7 cannot be
// wrong: a decode step's row sees one key).
TEST(HackerRound30Close, PaddedDecodeBatchIsCaughtInTheCheapTier) {
  const std::vector<Catch> runs = catches(padded_decode, "padded_decode_batch");
  EXPECT_EQ(caught_runs(runs, false), span(0, 14));
  EXPECT_EQ(caught_runs(runs, true), span(0, 14));
  for (const Catch& k : runs)
    for (const auto& id : k.cheap_ids) EXPECT_TRUE(names(id, "/model=padded_decode_batch")) << k.run << ": " << id;
}

}  // namespace
}  // namespace evo::hacker_round30_close
