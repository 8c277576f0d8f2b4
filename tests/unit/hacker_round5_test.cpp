// Hacker round 5 (issue 29 item 5, docs/safety.md 3g): the fixed rules round 5's tries keyed on,
// each replaced by a draw, read back from what the worker is given (seeds pinned):
//  - K's, V's and O's alignment classes drawn per case (gpu/case_layout.h tensor_alignment):
//    k_align_mod64_from_q.cu, k_aligned_when_q_aligned.cu;
//  - stale pre-fills of random bit patterns (gpu/launch_draws.h Prefill::stale_bits):
//    merges_stale_o_first_element.cu, merges_stale_o_canonical_nan.cu;
//  - a V offset on two drawn bands of columns, of opposite signs (gpu/input_fill.h
//    v_offset_bands): fp16_overflow_guard_column0.cu, fp16_overflow_guard_sign_of_v0.cu;
//  - a seq-major K in layout mixed (gpu/case_layout.cpp): kv_batch_stride_at_least_seq.cu;
//  - a split workspace's stale partials varied word by word (stale_partial_word):
//    split_combine_skips_uniform_slot.cu.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "gpu/launch_draws.h"
#include "policy/config.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together, and rounds share helper
// names (PinnedRun, kSplitControl, ...).
namespace evo::hacker_round5 {
namespace {

float f16_to_float(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const float sign = h & 0x8000 ? -1.f : 1.f;
  if (e == 31) return m ? std::nanf("") : sign * INFINITY;
  return sign * std::ldexp(float(e ? m + 1024 : m), (e ? e : 1) - 25);
}

TEST(HackerRound5, EveryRunDrawsTheAlignmentsAndStrideOrderRound5FoundMissing) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  for (const char* task : test::kPinnedTasks)
    for (uint32_t seed : test::kPinnedSeeds) {
      const Task t = parse_task(task);
      std::map<std::string, bool> seen;
      for (const CaseSpec& c : draw_sampled_cases(g, t, seed)) {
        const Shape& s = c.shape;
        // What the worker places (Problem::allocate draws by the case's seed).
        const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
        const int64_t q = l.q.offset * t.input_bytes() % 256, k = l.k.offset * t.input_bytes() % 256;
        for (const TensorPlacement* p : {&l.q, &l.k, &l.v})
          EXPECT_EQ(p->offset * t.input_bytes() % 16, 0) << c.id << ": every pointer 16-byte aligned";
        // Q keeps the case's alignment; at align 256 since hacker round 6 a drawn multiple of 32,
        // at the others since round 7 the case's class mod 64 (bits 6-7 drawn).
        if (layout_alignment(c.layout) == 256) {
          EXPECT_EQ(q % 32, 0) << c.id;
        } else {
          EXPECT_EQ(q % 64, layout_alignment(c.layout) % 64) << c.id << ": Q keeps the case's class mod 64";
        }
        if (layout_shared(c.layout) != "qk") {
          seen["K's class mod 64 not Q's"] |= k % 64 != q % 64;
          seen["Q 256-byte aligned, K not"] |= q == 0 && k != 0;
          seen["all four 256-byte aligned"] |=
              q == 0 && k == 0 && l.v.offset * t.input_bytes() % 256 == 0 && l.o.offset * t.output_bytes() % 256 == 0;
        }
        seen["a seq-major K (batch stride below the row stride), B > 1"] |=
            s.batch > 1 && s.heads_kv > 1 && l.k.stride[0] < l.k.stride[2] && l.k.stride[1] < l.k.stride[0];
      }
      EXPECT_EQ(seen.size(), 4u) << task << " seed " << seed;
      for (const auto& [what, yes] : seen) EXPECT_TRUE(yes) << task << " seed " << seed << ": no case with " << what;
    }
}

// Draw 0 is round 4's rule (the classes the sampler's covering rows are read back by); a draw
// moves K, V and O, and Q only at align 256 (hacker round 6), and keeps every class a multiple
// of 16.
TEST(HackerRound5, DrawnClassesKeepQAndTheDomain) {
  std::set<int> k_classes_at_256, k_mod64_at_16;
  for (int t = 0; t < 4; ++t)
    for (int a : {16, 48, 208, 256}) EXPECT_EQ(tensor_alignment(a, t, 0), tensor_alignment(a, t));
  for (uint32_t n = 1; n < 600; ++n)
    for (int a : {16, 48, 208, 256}) {
      const uint32_t draw = n * 0x9E3779B9u;  // case seeds: every bit varies
      if (a != 256) {
        EXPECT_EQ(tensor_alignment(a, 0, draw) % 64, a % 64);  // bits 6-7 drawn since round 7
      }
      for (int t = 1; t < 4; ++t) EXPECT_EQ(tensor_alignment(a, t, draw) % 16, 0);
      k_classes_at_256.insert(tensor_alignment(256, 1, draw) % 256);
      k_mod64_at_16.insert(tensor_alignment(16, 1, draw) % 64);
    }
  EXPECT_GT(k_classes_at_256.count(0), 0u) << "K aligned at align 256 in some cases";
  EXPECT_GE(k_classes_at_256.size(), 8u) << "and in many other classes";
  EXPECT_EQ(k_mod64_at_16, (std::set<int>{0, 16, 32, 48})) << "every class mod 64 at align 16";
}

// A third of the stale pre-fills are random 16-bit patterns: within one row of 64 elements,
// finite and NaN elements side by side, NaNs of more than one pattern and both signs.
TEST(HackerRound5, StalePrefillsMixBitPatternsWithinARow) {
  LaunchDraws draws(20261129);
  int bits = 0, inf = 0, nan = 0, mixed_rows = 0, rows = 0;
  std::set<uint16_t> nan_patterns;
  for (int n = 0; n < 2048; ++n) {
    const Prefill f = draws.prefill(n % 2 ? LaunchKind::gate_second : LaunchKind::timed);
    if (f.keep_previous) continue;
    if (std::isnan(f.stddev)) ++nan;
    if (f.stddev == LaunchDraws::kStaleSpread) ++inf;
    if (!f.stale_bits) continue;
    ++bits;
    for (uint64_t row = 0; row < 64; ++row, ++rows) {
      const bool first_finite = std::isfinite(f16_to_float(prefill_bits(f, row * 64)));
      bool later_nan = false;
      for (uint64_t d = 0; d < 64; ++d) {
        const uint16_t b = prefill_bits(f, row * 64 + d);
        if (!std::isnan(f16_to_float(b))) continue;
        nan_patterns.insert(b);
        later_nan |= d > 0;
      }
      mixed_rows += first_finite && later_nan;
    }
  }
  EXPECT_GT(bits, 0);
  EXPECT_GT(inf, 0);
  EXPECT_GT(nan, 0);
  EXPECT_GT(mixed_rows * 4, rows) << "a row whose first element is finite holds a NaN further on";
  EXPECT_GT(nan_patterns.size(), 16u) << "NaNs of many payloads";
  EXPECT_TRUE(nan_patterns.count(0x7FFF) == 0 || nan_patterns.size() > 1) << "not only the canonical NaN";
  bool negative_nan = false;
  for (uint16_t b : nan_patterns) negative_nan |= (b & 0x8000) != 0;
  EXPECT_TRUE(negative_nan);
}

// The finite stale partials differ word by word (a slot's max and sum are never one pattern),
// stay near the drawn value (a plausible max or sum) and finite.
TEST(HackerRound5, FiniteStalePartialsDifferWordByWord) {
  LaunchDraws draws(29);
  int finite = 0;
  for (int n = 0; n < 64; ++n) {
    const Prefill f = draws.prefill(LaunchKind::timed);
    if (stale_partial_bits(f) == 0xFFFFFFFFu) continue;
    ++finite;
    const FillParams fp = stale_partial_fill(f);
    for (uint64_t w = 0; w < 512; w += 2) {
      const uint32_t m = stale_partial_word(f, w), l = stale_partial_word(f, w + 1);
      EXPECT_NE(m, l) << "slot " << w / 2;
      float x;
      std::memcpy(&x, &m, 4);
      ASSERT_TRUE(std::isfinite(x));
      EXPECT_LT(std::fabs(x - fp.mean), 7 * fp.stddev);
    }
  }
  EXPECT_GT(finite, 0);
}

// A V offset's two bands: disjoint, within D, of both signs; column 0 outside both in some cases
// and inside the first in others. Since hacker round 20 a band starts at any column, inside a
// 16-byte vector in most cases (fp16_overflow_guard_vec8.cu), at a multiple of 8 in others.
TEST(HackerRound5, VOffsetSitsOnTwoBandsOfBothSigns) {
  for (int d : {64, 128}) {
    std::set<bool> column0_biased, vector_aligned;
    for (unsigned seed = 0; seed < 256; ++seed) {
      const auto bands = v_offset_bands(seed, d, -256.f);
      EXPECT_EQ(bands[0].mean, -256.f);
      EXPECT_EQ(bands[1].mean, 256.f);
      for (const ColumnBand& b : bands) {
        vector_aligned.insert(b.begin % 8 == 0);
        EXPECT_EQ(b.end - b.begin, d / 4);
        EXPECT_LE(b.end, d);
      }
      EXPECT_LE(bands[0].end, bands[1].begin);
      column0_biased.insert(bands[0].begin == 0);
    }
    EXPECT_EQ(column0_biased.size(), 2u) << "D " << d;
    EXPECT_EQ(vector_aligned.size(), 2u) << "D " << d;
  }
}

// Every fp16 and bf16 run has a V offset case whose sums pass fp16's range with column 0 outside
// the bands, so a guard decided by column 0 is seen to skip the large columns.
TEST(HackerRound5, EveryRunHasAVOffsetCaseWithColumn0Unbiased) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  for (const char* task : {"fp16-d64", "bf16-d128", "fp16-d128-causal"})
    for (uint32_t seed : test::kPinnedSeeds) {
      const Task t = parse_task(task);
      bool unbiased = false;
      int cases = 0;
      for (const CaseSpec& c : draw_sampled_cases(g, t, seed)) {
        if (c.v_mean == 0) continue;
        ++cases;
        // The longest row's unnormalised sum past fp16's range, column 0 outside both bands.
        const int keys = t.causal ? std::min(c.shape.seq_q, c.shape.seq_kv) : c.shape.seq_kv;
        unbiased |=
            std::fabs(c.v_mean) * keys > 65504 && v_offset_bands(c.seed, t.head_dim, float(c.v_mean))[0].begin != 0;
      }
      EXPECT_GT(cases, 0) << task << " seed " << seed;
      EXPECT_TRUE(unbiased) << task << " seed " << seed;
    }
}

}  // namespace
}  // namespace evo::hacker_round5
