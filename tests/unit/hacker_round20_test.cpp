// Hacker round 20 (issue 29 item 5, lab/hack20/README.md): the fills' two new rules, read back from
// the draws (seeds pinned). V's offset bands at any column: the vector test fails on main (every band
// started at a multiple of 8 columns). Massive Q and K channels: a rule main did not have (its host
// functions, massive_channels and massive_channel_bands, are new).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "policy/config.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round20 {
namespace {

// Whether the worker draws massive channels for this case (worker_device.h Problem::fill): the
// input's rule, on fp16 and bf16 tasks, in a case that shares no view and runs on one stream.
bool draws_massive_channels(const Task& t, const CaseSpec& c) {
  return massive_channels(c) && t.dtype != DType::fp8 && layout_shared(c.layout).empty() && !c.two_streams;
}

// Of gates.json's inputs exactly large_v draws them in every case (V of std 100, no mean anywhere;
// normal only in a sampled case since hacker round 21), and its two bands are D/4 channels each,
// disjoint, inside the row, at any column.
TEST(HackerRound20, OnlyLargeVDrawsMassiveChannelsOnTwoDisjointBands) {
  const GatesConfig g = test::repo_gates();
  for (const auto& [name, in] : g.distributions) {
    CaseSpec c;
    c.shape.head_dim = 64;
    set_inputs(c, in, in.v_mean);
    EXPECT_EQ(massive_channels(c), name == "large_v") << name;
  }
  // What the worker fills: Q's spread times the scale on band 0 and divided on band 1, K's the
  // other way, so each band's products keep Q's spread times K's (the scores' distribution).
  CaseSpec c;
  c.shape.head_dim = 128;
  c.seed = 20;
  set_inputs(c, g.distributions.at("large_v"), 0);
  const TensorFills f = tensor_fills(c);
  std::map<std::pair<unsigned, int>, float> spread;  // (tensor, band start) -> stddev
  fill_massive_channels(c, f, true, [&](unsigned t, const ColumnBand& b, const FillParams& fp, uint64_t) {
    spread[{t, b.begin}] = fp.stddev;
    EXPECT_EQ(b.end - b.begin, 32);
  });
  const auto bands = massive_channel_bands(c.seed, 128);
  ASSERT_EQ(spread.size(), 4u);
  EXPECT_EQ((spread[{0u, bands[0].begin}]), 65536.f * f.q.stddev) << "Q massive on band 0";
  EXPECT_EQ((spread[{1u, bands[1].begin}]), 65536.f * f.k.stddev) << "K massive on band 1";
  for (int b : {0, 1})
    EXPECT_FLOAT_EQ((spread[{0u, bands[size_t(b)].begin}] * spread[{1u, bands[size_t(b)].begin}]),
                    f.q.stddev * f.k.stddev);
  EXPECT_EQ(massive_channel_scale(false), 4096.f);  // x 5.77 sigma: 23 600, a third of fp16's 65 504
  EXPECT_GT(massive_channel_scale(true), 65504.f);  // bf16: past fp16's range from one sigma
  for (int d : {64, 128}) {
    std::map<int, int> starts;
    int apart = 0;
    for (unsigned seed = 0; seed < 4000; ++seed) {
      const auto b = massive_channel_bands(seed, d);
      EXPECT_EQ(b[0].end - b[0].begin, d / 4);
      EXPECT_EQ(b[1].end - b[1].begin, d / 4);
      // Q's band in either half since hacker round 22 (massive_q_band_high): the lower one's start
      const ColumnBand& low = b[0].begin < b[1].begin ? b[0] : b[1];
      const ColumnBand& high = b[0].begin < b[1].begin ? b[1] : b[0];
      EXPECT_GE(low.begin, 0);
      EXPECT_LE(high.end, d);
      EXPECT_LE(low.end, high.begin) << "Q's and K's massive bands never meet";
      ++starts[low.begin];
      apart += low.begin != v_offset_bands(seed, d, 1.f)[0].begin;
    }
    EXPECT_EQ(int(starts.size()), d / 4 + 1) << "every start from 0 to D/4";
    EXPECT_GT(apart, 3000) << "salted: not V's bands";
  }
}

// k_clamped_256.cu, q_clamped_512.cu, bf16_k_through_fp16.cu, bf16_q_guard_channel0.cu,
// q_small_vector_skipped.cu: every fp16 and bf16 run of both tiers draws large_v cases with massive
// channels at a scale where the scores move weights (>= 1/sqrt(D) / 2: a clamp's or a skip's change
// of a few units x scale is tenths of a nat) over more than one key, and on bf16 one whose Q band
// leaves channel 0 ordinary.
TEST(HackerRound20, EveryFp16AndBf16RunDrawsMassiveChannels) {
  int least = 1 << 30, kv_from_large_v = 0, runs = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    if (t.dtype == DType::fp8) {
      for (const CaseSpec& c : cases) EXPECT_FALSE(draws_massive_channels(t, c)) << run << ": " << c.id;
      return;
    }
    int moving = 0, channel0_ordinary = 0;
    for (const CaseSpec& c : cases) {
      if (c.id.find("/shared=kv") != std::string::npos && c.inputs == "large_v") ++kv_from_large_v;
      if (!draws_massive_channels(t, c)) continue;
      // Since hacker round 21 normal's sampled cases draw them too (HackerRound21's own tests).
      EXPECT_TRUE(c.inputs == "large_v" || c.inputs == "normal") << run << ": " << c.id;
      if (c.inputs != "large_v") continue;
      if (c.scale < 0.5 / std::sqrt(double(t.head_dim)) || c.shape.seq_kv < 2) continue;
      ++moving;
      channel0_ordinary += massive_channel_bands(c.seed, t.head_dim)[0].begin > 0;
    }
    ++runs;
    EXPECT_GE(moving, 2) << run << ": large_v's massive channels at a scale >= 1/sqrt(D)/2 over 2 keys or more";
    if (t.dtype == DType::bf16) {
      EXPECT_GE(channel0_ordinary, 1) << run << ": a massive Q band that leaves channel 0 ordinary";
    }
    least = std::min(least, moving);
  });
  std::cout << fmt::format(
      "every fp16 and bf16 run: at least {} large_v cases with massive channels that move weights; {} of {} runs "
      "also make their K and V one view from large_v (K then holds V's values, std 100: k_clamped_256 by odds on "
      "main)\n",
      least, kv_from_large_v, runs);
}

// fp16_overflow_guard_vec8.cu: every fp16 run of both tiers has a case whose V band starts inside an
// 8-column vector and whose band sums pass 65 504: large_o (+-16 384, std 100) over 8 keys or more,
// or v_offset (+-256, Q and K std 0.05: near-uniform weights) over 512 keys or more. On main every
// band started at a multiple of 8 columns: none did.
TEST(HackerRound20, EveryFp16RunHasAnOverflowingBandThatCutsAVector) {
  std::map<std::string, int> least;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    if (t.dtype != DType::fp16) return;
    int large_o = 0, offset = 0;
    for (const CaseSpec& c : cases) {
      if (c.v_mean == 0) continue;
      const auto bands = v_offset_bands(c.seed, t.head_dim, float(c.v_mean));
      if (bands[0].begin % 8 == 0) continue;
      const int keys = t.causal ? std::min(c.shape.seq_q, c.shape.seq_kv) : c.shape.seq_kv;  // the last row's
      large_o += c.inputs == "large_o" && keys >= 8;
      offset += c.inputs == "v_offset" && keys >= 512;
    }
    EXPECT_GE(large_o + offset, 1) << run << ": no overflowing V band that cuts an 8-column vector";
    least["large_o"] = least.count("large_o") ? std::min(least["large_o"], large_o) : large_o;
    least["v_offset"] = least.count("v_offset") ? std::min(least["v_offset"], offset) : offset;
  });
  std::cout << fmt::format("every fp16 run: at least {} large_o and {} v_offset cases with a cut vector\n",
                           least["large_o"], least["v_offset"]);
}

}  // namespace
}  // namespace evo::hacker_round20
