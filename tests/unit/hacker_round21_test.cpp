// Hacker round 21 (issue 29 item 5, lab/hack21/README.md): V's offset bands are no longer in every
// (b, KV head) sequence, read back from the draws (seeds pinned). A rule main did not have (its host
// function, v_offset_sequence, is new): on main every sequence carried the bands, so no case below
// existed and an overflow guard decided by batch 0's KV head 0 was exact everywhere
// (fp16_overflow_guard_head0.cu).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "gpu/input_fill.h"
#include "policy/config.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round21 {
namespace {

uint64_t v_sequences(const CaseSpec& c) { return uint64_t(c.shape.batch) * uint64_t(c.shape.heads_kv); }

// Whether sequence 0 (batch 0, KV head 0) lacks the offset while another sequence has it: a guard
// decided once from sequence 0's V leaves that sequence's bands unguarded.
bool head0_misleads(const CaseSpec& c) {
  const uint64_t n = v_sequences(c);
  if (n < 2 || v_offset_sequence(kVOffsetDropEvery, 0, n, c.seed)) return false;
  for (uint64_t s = 1; s < n; ++s)
    if (v_offset_sequence(kVOffsetDropEvery, s, n, c.seed)) return true;
  return false;
}

// The rule: every case keeps its drawn sequence, and about one sequence in four loses the offset.
TEST(HackerRound21, VOffsetLeavesOneSequenceInFourAndNeverAll) {
  uint64_t dropped = 0, total = 0;
  for (unsigned seed = 0; seed < 512; ++seed)
    for (uint64_t n : {1ull, 2ull, 3ull, 8ull, 48ull}) {
      uint64_t kept = 0;
      for (uint64_t s = 0; s < n; ++s) kept += v_offset_sequence(kVOffsetDropEvery, s, n, seed);
      EXPECT_GE(kept, 1u) << "seed " << seed << ", " << n << " sequences: none keeps the offset";
      EXPECT_TRUE(v_offset_sequence(kVOffsetDropEvery, v_offset_kept_sequence(n, seed), n, seed));
      dropped += n - kept;
      total += n;
    }
  const double share = double(dropped) / double(total);
  EXPECT_GT(share, 0.18);
  EXPECT_LT(share, 0.25);
  for (uint64_t s = 0; s < 8; ++s) EXPECT_TRUE(v_offset_sequence(0, s, 8, 3)) << "every = 0: the offset everywhere";
  EXPECT_EQ(sizeof(FillParams), 24u) << "FillParams mirrors EvoFill (support_kernels.cu), mean_every included";
}

// The fp16 runs of both tiers draw offset cases whose sums overflow fp16 where sequence 0 has no
// offset and another sequence has one: v_offset over >= 512 near-uniform keys (sums near 256 per
// key) or large_o over >= 8 keys (16 384 per key). fp16_overflow_guard_head0.cu rounds those
// sequences' band sums to Inf. By odds (one sequence in four dropped): 27 of the 28 pinned fp16
// runs have one; fp16-d128-causal cheap seed 1 has none.
TEST(HackerRound21, Fp16RunsHaveAnOverflowingOffsetThatSequenceZeroLacks) {
  int least_v_offset = 1 << 30, least_large_o = 1 << 30, runs = 0, lacking = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    if (t.dtype != DType::fp16) return;
    int v_offset = 0, large_o = 0;
    for (const CaseSpec& c : cases) {
      if (c.v_mean == 0 || !head0_misleads(c)) continue;
      const int keys = t.causal ? std::min(c.shape.seq_q, c.shape.seq_kv) : c.shape.seq_kv;  // the last row's
      v_offset += c.inputs == "v_offset" && keys >= 512;
      large_o += c.inputs == "large_o" && keys >= 8;
    }
    ++runs;
    if (v_offset + large_o == 0) {
      ++lacking;
      std::cout << run << ": no overflowing offset case whose sequence 0 lacks it\n";
    }
    least_v_offset = std::min(least_v_offset, v_offset);
    least_large_o = std::min(least_large_o, large_o);
  });
  EXPECT_EQ(runs, 28);
  EXPECT_LE(lacking, 1) << "fp16 runs without an offset case that misleads head 0";
  std::cout << fmt::format(
      "fp16 runs: {} of {} lack a case that misleads head 0; at least {} v_offset and {} large_o\n", lacking, runs,
      least_v_offset, least_large_o);
}

}  // namespace
}  // namespace evo::hacker_round21
