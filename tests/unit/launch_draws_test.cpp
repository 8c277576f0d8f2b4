// Unannounced verification (gpu/launch_draws.h, docs/safety.md §3f) and the inputs it tries
// (run/sampler.cpp): the pre-fill before every kind of launch is drawn per worker (ordinary
// values, zeros or stale non-finite content, each before every kind);
// which warm-up launches are verified differs between workers and reaches late launches; the
// host's unwritten marks need both launches to have left their pre-fills; every run's sampled
// plan has two-stream cases, stride-gap cases (strides above dense, the reference reading them)
// and both junk kinds. Seeds pinned.
#include "gpu/launch_draws.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "gpu/worker_device.h"
#include "policy/config.h"
#include "run/sampler.h"
#include "support/test_support.h"

namespace evo {
namespace {

const LaunchKind kKinds[] = {LaunchKind::gate_first,  LaunchKind::gate_second,  LaunchKind::warm_up,
                             LaunchKind::timed,       LaunchKind::probe_repeat, LaunchKind::isolated,
                             LaunchKind::shape_check, LaunchKind::concurrent};

TEST(LaunchDraws, ThePrefillBeforeEveryKindOfLaunchIsOrdinaryZeroOrStale) {
  LaunchDraws draws(20261127);
  int kept = 0, random_before_timed = 0;
  std::map<LaunchKind, int> zeros, stale;
  int stale_inf = 0, stale_nan = 0;
  for (LaunchKind kind : kKinds)
    for (int n = 0; n < 64; ++n) {
      const Prefill f = draws.prefill(kind);
      if (f.keep_previous) {
        // Only a timed sample's O holds an output of other inputs (fresh inputs every sample).
        EXPECT_EQ(kind, LaunchKind::timed);
        ++kept;
        continue;
      }
      if (kind == LaunchKind::timed) ++random_before_timed;
      if (f.stddev == 0) {  // zeroed memory: evo_fill writes mean 0 + (+-0) = +0.0
        ++zeros[kind];
        continue;
      }
      if (f.stale_bits) {  // random bit patterns (hacker round 5): tests/unit/hacker_round5_test.cpp
        ++stale[kind];
        continue;
      }
      if (std::isnan(f.stddev)) {  // stale NaN bits: a guard against Inf alone lets them through
        ++stale[kind], ++stale_nan;
        for (uint64_t i = 0; i < 4096; ++i) ASSERT_TRUE(std::isnan(prefill_value(f, i * 7919))) << "element " << i;
        continue;
      }
      if (f.stddev == LaunchDraws::kStaleSpread) {  // stale bits: Inf in fp16 (rounds past 65504)
        ++stale[kind], ++stale_inf;
        int past_fp16 = 0;
        for (uint64_t i = 0; i < 4096; ++i) past_fp16 += !(std::fabs(prefill_value(f, i * 7919)) <= 65504.f);
        EXPECT_GT(past_fp16, 4000) << "nearly every element of a stale pre-fill is Inf once rounded to fp16";
        continue;
      }
      EXPECT_GE(f.stddev, 0.1f);
      EXPECT_LE(f.stddev, 2.0f);
      EXPECT_NE(f.nonce, 0u) << "counter 0 is the fixed cases' inputs";
      for (uint64_t i = 0; i < 4096; ++i) {
        const float x = prefill_value(f, i * 7919);
        ASSERT_TRUE(std::isfinite(x)) << "element " << i;
        ASSERT_LT(std::fabs(x), 6.5f * f.stddev) << "element " << i;  // Box-Muller's bound, far below fp16's max
      }
    }
  EXPECT_GT(kept, 0) << "a timed sample sometimes keeps the previous output";
  EXPECT_GT(random_before_timed, 0) << "and sometimes gets random values";
  // About one pre-fill in LaunchDraws::kZeroOdds is all zeros, before every kind of launch: a
  // kernel that skips rows whose output is already zero is seen (skips_zeroed_rows.cu).
  for (LaunchKind kind : kKinds) EXPECT_GT(zeros[kind], 0) << "no zero pre-fill before launch kind " << int(kind);
  // And about one in LaunchDraws::kStaleOdds of the rest is stale non-finite content, before
  // every kind of launch: a kernel that merges into O as O * 0 + new is seen to turn it into NaN
  // (merges_stale_o.cu, hacker round 3).
  for (LaunchKind kind : kKinds) EXPECT_GT(stale[kind], 0) << "no stale pre-fill before launch kind " << int(kind);
  // Both kinds of stale bits (hacker round 4: merges_stale_o_inf_guard.cu replaces Inf by 0 first).
  EXPECT_GT(stale_inf, 0) << "no stale Inf pre-fill";
  EXPECT_GT(stale_nan, 0) << "no stale NaN pre-fill";
  EXPECT_EQ(draws.launches(), 8u * 64u);
}

// A split workspace's partials hold stale content before every launch, NaN or finite, drawn with
// the pre-fill (a package reuses one workspace across calls; hacker round 3's
// split_skips_empty_partial.cu read a fresh zero as an empty split's partial).
TEST(LaunchDraws, StalePartialsAreNaNOrFiniteDrawnPerLaunch) {
  LaunchDraws draws(29);
  int nan = 0, finite = 0;
  for (int n = 0; n < 64; ++n) {
    const uint32_t bits = stale_partial_bits(draws.prefill(LaunchKind::timed));
    float x;
    std::memcpy(&x, &bits, 4);
    if (std::isnan(x)) {
      ++nan;
    } else {
      ++finite;
      EXPECT_GE(x, 1.f);
      EXPECT_LE(x, 64.f);
    }
  }
  EXPECT_GT(nan, 0);
  EXPECT_GT(finite, 0);
}

// A gate case's second launch runs over the split workspace its first left, as a package's next
// call does (hacker round 8); every other launch finds stale partials drawn for it.
TEST(LaunchDraws, OnlyAGateCasesSecondLaunchKeepsThePartials) {
  LaunchDraws draws(31);
  for (int n = 0; n < 16; ++n) {
    EXPECT_TRUE(draws.prefill(LaunchKind::gate_second).keep_partials);
    for (auto k : {LaunchKind::gate_first, LaunchKind::warm_up, LaunchKind::timed, LaunchKind::concurrent})
      EXPECT_FALSE(draws.prefill(k).keep_partials);
  }
}

// "finite" junk has 16-byte rows of large magnitude among its ordinary ones (a spare KV row holds
// some nine times in ten at D = 64): a kernel that takes its max over a cache's spare rows before
// masking them underflows every real score there (max_over_masked_keys.cu, hacker round 3).
TEST(LaunchDraws, FiniteJunkHasRowsOfLargeMagnitude) {
  const FillParams f = finite_junk_fill();
  ASSERT_GT(f.outlier_every, 0u);
  EXPECT_LE(f.outlier_every, 4u);
  EXPECT_GE(f.outlier_scale * f.stddev, 1e3f) << "a large row must dwarf any score a real key gives";
  EXPECT_LT(f.outlier_scale * f.stddev * 16.f, 65504.f) << "and stay finite in fp16 (16 sigma: never Inf)";
  EXPECT_TRUE(junk_bytes("finite", 2).varied) << "finite junk is these values, not one byte";
}

TEST(LaunchDraws, TwoPrefillsOfAGateCaseDiffer) {
  LaunchDraws draws(7);
  const Prefill a = draws.prefill(LaunchKind::gate_first), b = draws.prefill(LaunchKind::gate_second);
  int same = 0;
  for (uint64_t i = 0; i < 10000; ++i) same += prefill_value(a, i) == prefill_value(b, i);
  EXPECT_EQ(same, 0);
}

// A worker's launches: 70 gate launches, then the warm-ups and samples of three shapes.
std::set<uint64_t> verified_warm_ups(uint64_t key) {
  LaunchDraws draws(key);
  std::set<uint64_t> out;
  for (int i = 0; i < 70; ++i) draws.prefill(i % 2 ? LaunchKind::gate_second : LaunchKind::gate_first);
  for (int shape = 0; shape < 3; ++shape) {
    for (int w = 0; w < 200; ++w) {
      draws.prefill(LaunchKind::warm_up);
      if (draws.verify(LaunchKind::warm_up)) out.insert(draws.launches());
    }
    for (int t = 0; t < 11; ++t) {
      draws.prefill(LaunchKind::timed);
      EXPECT_TRUE(draws.verify(LaunchKind::timed)) << "every timed sample is verified";
    }
  }
  return out;
}

TEST(LaunchDraws, TheVerifiedSetDiffersBetweenWorkersAndIncludesLateLaunches) {
  const std::set<uint64_t> a = verified_warm_ups(1), b = verified_warm_ups(2);
  EXPECT_NE(a, b);
  for (const auto* s : {&a, &b}) {
    ASSERT_FALSE(s->empty());
    EXPECT_GT(*s->rbegin(), 500u) << "a verified launch after hundreds in the same process";
    EXPECT_GT(s->size(), 600u / LaunchDraws::kWarmUpOdds / 2) << "about one warm-up in " << LaunchDraws::kWarmUpOdds;
    EXPECT_LT(s->size(), 600u / LaunchDraws::kWarmUpOdds * 2);
  }
}

std::string halves(std::initializer_list<uint16_t> v) {
  std::string s(v.size() * 2, '\0');
  size_t i = 0;
  for (uint16_t x : v) std::memcpy(s.data() + 2 * i++, &x, 2);
  return s;
}

TEST(LaunchDraws, OnlyElementsBothLaunchesLeftAloneAreMarkedUnwritten) {
  // Element 0 written (same value both times); 1 left alone both times; 2 left alone where the
  // pre-fills agree (not provable, the reference comparison judges it); 3 left alone once only.
  const UnwrittenEvidence first{halves({0x1111, 0x2222, 0x3333, 0x4444}), halves({0x0101, 0x2222, 0x3333, 0x4444})};
  const UnwrittenEvidence second{halves({0x5555, 0x6666, 0x3333, 0x7777}), halves({0x0101, 0x6666, 0x3333, 0x0202})};
  EXPECT_EQ(mark_unwritten(first, second), halves({0x0101, kPoisonBits, 0x3333, 0x4444}));
}

TEST(SampledDomain, EveryRunHasTwoStreamStrideGapAndBothJunkCases) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  ASSERT_GT(g.sampled.two_streams, 0);
  for (const char* task : {"fp16-d64", "bf16-d128", "fp16-d128-causal", "fp8-d64"})
    for (uint32_t seed : {0u, 1u, 7u, 12345u}) {
      const Task t = parse_task(task);
      int two = 0, in_flight = 0, strided = 0;
      std::set<std::string> junk;
      for (const CaseSpec& c : draw_sampled_cases(g, t, seed)) {
        junk.insert(c.junk);
        EXPECT_NE(c.id.find("/junk=" + c.junk + "/"), std::string::npos) << c.id << ": the name records the junk";
        if (c.two_streams) {
          ++(c.id.find("/in_flight/") == std::string::npos ? two : in_flight);
          EXPECT_NE(c.id.find("/streams=2"), std::string::npos) << c.id;
        }
        if (base_layout(c.layout) != "strided") continue;
        ++strided;
        // Every batch and head stride above dense; the reference and the checks read these.
        const Shape& s = c.shape;
        const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes());
        const int64_t d = s.head_dim;
        // Q heads outermost [H, B, S + 5, D + pad] (hacker round 7), rows after each head's batches;
        // a Q prefix of K's view (shared=qk_prefix, qkv_prefix: hacker round 24) has K's strides.
        EXPECT_GT(l.q.stride[0], int64_t(s.seq_q) * d) << c.id;
        if (!q_prefix(layout_shared(c.layout))) {
          EXPECT_GT(l.q.stride[1], l.q.stride[0] * s.batch) << c.id;
        } else {
          EXPECT_EQ(l.q.stride[1], l.k.stride[1]) << c.id;
        }
        EXPECT_GT(l.k.stride[1], int64_t(s.seq_kv) * d) << c.id << ": a KV cache with capacity";
        // V heads outermost too (hacker round 11), rows after each sequence and each head's batches
        // (a shared=kv or qkv_prefix case's V is K's view).
        EXPECT_GT(l.v.stride[0], int64_t(s.seq_kv) * d) << c.id;
        if (layout_shared(c.layout) != "kv" && layout_shared(c.layout) != kQPrefixOfKV) {
          EXPECT_GT(l.v.stride[1], l.v.stride[0] * s.batch) << c.id;
        }
        EXPECT_GT(l.o.stride[2], int64_t(s.heads_q) * d) << c.id << ": O inside a bigger buffer";
        EXPECT_GT(l.o.stride[0], l.o.stride[2] * s.seq_q) << c.id;
      }
      EXPECT_EQ(two, g.sampled.two_streams) << task << " seed " << seed;
      EXPECT_EQ(in_flight, 2 * int(g.sampled.in_flight.size())) << task << " seed " << seed;
      EXPECT_GT(strided, 0) << task << " seed " << seed;
      EXPECT_EQ(junk, (std::set<std::string>{"finite", "nonfinite"})) << task << " seed " << seed;
    }
}

// The in-flight cases (run/sampler.cpp): a drawn two-stream case may be large enough that its
// first grid fills the GPU and the second starts as it drains, so no row of one ever ran beside
// its like-numbered row of the other, and a counter per row in a global or a Q scaled in place
// and restored was admitted on the H200 (2026-11-29). Every tier of every task has, for each
// share, a case whose two grids fit an H200's 132 SMs at one CTA of 64 query rows each and whose
// rows each read at least 1 024 keys.
TEST(SampledDomain, EveryTierRunsSmallLongRowedGridsInFlightForEachShare) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  ASSERT_FALSE(g.sampled.in_flight.empty());
  for (const char* task : {"fp16-d64", "bf16-d128", "fp16-d128-causal", "fp8-d64"})
    for (uint32_t seed : {0u, 7u}) {
      const Task t = parse_task(task);
      for (const auto& cases : {draw_sampled_cases(g, t, seed), draw_deep_cases(g, t, seed)}) {
        std::set<std::string> shares;
        for (const CaseSpec& c : cases) {
          if (c.id.find("/in_flight/") == std::string::npos) continue;
          ASSERT_TRUE(c.two_streams) << c.id;
          shares.insert(c.streams_share);
          const Shape& s = c.shape;
          const auto tiles = [&](int rows) { return int64_t(s.batch) * s.heads_q * ((rows + 63) / 64); };
          EXPECT_LE(tiles(s.seq_q) + tiles((s.seq_q + 1) / 2), 132) << c.id << ": both grids resident";
          EXPECT_GE(s.seq_kv, 1024) << c.id << ": rows long enough to overlap";
          EXPECT_EQ(s.head_dim, t.head_dim) << c.id;
        }
        EXPECT_EQ(shares, (std::set<std::string>{"q", "kv"})) << task << " seed " << seed;
      }
    }
}

// Which gate cases hash O's bytes outside its elements before and after each launch (hacker
// round 5: round 4's o_zeroes_row_slack.cu zeroed a token-major O row's slack, another tensor's
// memory in a model): every case whose O has such bytes, in every run. A dense O has none (its
// buffer is its elements: nothing to hash); the strided layout's O row has a spare head, and the
// slack the trick writes lies inside O's buffer and outside every element of O.
TEST(SampledDomain, EveryRunChecksOStrideGapsWhereOHasThem) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  for (const char* task : {"fp16-d64", "bf16-d128", "fp16-d128-causal", "fp8-d64"})
    for (uint32_t seed : {0u, 1u, 7u, 12345u}) {
      const Task t = parse_task(task);
      int slack = 0;
      for (const CaseSpec& c : draw_sampled_cases(g, t, seed)) {
        const CaseLayout l = case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes());
        worker_device::Problem p(t);
        p.shape = c.shape;
        p.o.bytes = size_t(l.o.buffer_elements) * size_t(t.output_bytes());
        const bool gaps = l.o.buffer_elements > c.shape.elements(c.shape.heads_q, c.shape.seq_q);
        EXPECT_EQ(p.o_has_gaps(), gaps) << c.id;
        if (layout_alignment(c.layout) || base_layout(c.layout) == "strided") {
          EXPECT_TRUE(p.o_has_gaps()) << c.id;
        }
        if (base_layout(c.layout) != "strided") continue;
        // o_zeroes_row_slack's writes: row (b, 0, i) from Hq * head stride to the row stride.
        const Shape& s = c.shape;
        const int64_t first = l.o.offset + int64_t(s.heads_q) * l.o.stride[1], end = l.o.offset + l.o.stride[2];
        ASSERT_LT(first, end) << c.id;
        EXPECT_LE(end + (s.batch - 1) * l.o.stride[0] + (s.seq_q - 1) * l.o.stride[2], l.o.buffer_elements) << c.id;
        ++slack;
      }
      EXPECT_GT(slack, 0) << task << " seed " << seed << ": a case whose O rows have slack";
    }
}

}  // namespace
}  // namespace evo
