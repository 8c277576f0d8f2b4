// Hacker round 14 (issue 29 item 5, docs/safety.md 3g, lab/hack14/README.md): what the gate's
// draws, views and junk still held fixed. Each test reads the draws back (seeds pinned) or the
// junk the worker writes, and fails on round 13's gate: GQA head counts were 0, 1 or 2 (mod 4) and
// no KV head count was 4, the in-flight cases were GQA only, every seq-major view had its batch
// stride H head strides, no case put a KV head 2^31 elements past the first, and e4m3 non-finite
// junk was one NaN code, and every launch at a split case's split count had the case's shape.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/evo_launch.h"
#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "gpu/launch_draws.h"
#include "policy/config.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together, and rounds share helper
// names (PinnedRun, kSplitControl, ...).
namespace evo::hacker_round14 {
namespace {

struct PinnedRun {
  Task task;
  std::string name;
  std::vector<CaseSpec> cases;
};

// Both tiers' cases of every pinned run (test::kPinnedTasks x test::kPinnedSeeds), each named
// "<task> <tier> seed <seed>"; drawn once for the whole file.
const std::vector<PinnedRun>& both_tier_runs() {
  static const std::vector<PinnedRun> runs = [] {
    const GatesConfig g = test::repo_gates();
    std::vector<PinnedRun> out;
    for (const char* task : test::kPinnedTasks)
      for (uint32_t seed : test::kPinnedSeeds) {
        const Task t = parse_task(task);
        out.push_back({t, fmt::format("{} cheap seed {}", task, seed), draw_sampled_cases(g, t, seed)});
        out.push_back({t, fmt::format("{} deep seed {}", task, seed), draw_deep_cases(g, t, seed)});
      }
    return out;
  }();
  return runs;
}

bool in_flight(const CaseSpec& c) { return c.id.find("/in_flight/") != std::string::npos; }

// gqa_heads_in_quads.cu: GQA query heads four to a CTA, a tail of 3 dropped. Every run draws a GQA
// case (1 < Hkv < Hq) with Hq = 3 (mod 4) (27/3, 15/5; before, GQA counts were 0, 1 or 2 mod 4 and
// only MQA's 71/1 was 3), and one with four KV heads (32/4, 28/4: round 13's leftover).
TEST(HackerRound14, EveryRunDrawsGqaHeadCountsOfThreeModFourAndFourKvHeads) {
  for (const PinnedRun& run : both_tier_runs()) {
    int odd_tail = 0, four_kv = 0;
    for (const CaseSpec& c : run.cases) {
      const Shape& s = c.shape;
      if (s.heads_kv <= 1 || s.heads_kv >= s.heads_q) continue;
      odd_tail += s.heads_q % 4 == 3;
      four_kv += s.heads_kv == 4;
    }
    EXPECT_GE(odd_tail, 1) << run.name << ": no GQA case with Hq = 3 (mod 4)";
    EXPECT_GE(four_kv, 1) << run.name << ": no GQA case with 4 KV heads";
  }
}

// q_prescaled_in_place_mha.cu: an input changed in place and restored on one head class's path
// only. The in-flight cases (two launches truly concurrent, sharing Q, then K and V) have every
// head class: MHA, GQA and MQA, each with both shares (before: two GQA shapes).
TEST(HackerRound14, EveryTierRunsEveryHeadClassInFlightWithBothShares) {
  for (const PinnedRun& run : both_tier_runs()) {
    std::set<std::string> seen;
    for (const CaseSpec& c : run.cases) {
      if (!in_flight(c)) continue;
      const Shape& s = c.shape;
      const char* kind = s.heads_kv == s.heads_q ? "mha" : s.heads_kv == 1 ? "mqa" : "gqa";
      seen.insert(std::string(kind) + ":" + c.streams_share);
    }
    for (const char* want : {"mha:q", "mha:kv", "gqa:q", "gqa:kv", "mqa:q", "mqa:kv"})
      EXPECT_TRUE(seen.count(want)) << run.name << ": no in-flight case " << want;
  }
}

// A view of several batches with its batch inside the row (batch stride below the row stride)
// whose batch slot holds more than its `heads` heads: its batch stride is not H head strides.
bool batch_slot_wider_than_heads(const TensorPlacement& p, int batch, int heads) {
  return batch > 1 && p.stride[0] < p.stride[2] && p.stride[0] != int64_t(heads) * p.stride[1];
}

// seq_major_batch_from_heads.cu: a seq-major view's batch offset taken as b x H head strides.
// kv_cache's Q is a slice of a fused seq-major projection [S, B + 1, Hq + 2 Hkv, D + pad], with
// several batches in every run of both tiers (before: every seq-major view drawn had its batch
// stride H head strides, and no view had its batch innermost).
TEST(HackerRound14, EveryRunHasASeqMajorViewWhoseBatchSlotHoldsMoreThanItsHeads) {
  for (const PinnedRun& run : both_tier_runs()) {
    int n = 0;
    for (const CaseSpec& c : run.cases) {
      const Shape& s = c.shape;
      const CaseLayout l = case_layout(s, c.layout, run.task.input_bytes(), run.task.output_bytes(), c.seed);
      n += batch_slot_wider_than_heads(l.q, s.batch, s.heads_q) ||
           batch_slot_wider_than_heads(l.k, s.batch, s.heads_kv) ||
           batch_slot_wider_than_heads(l.v, s.batch, s.heads_kv) ||
           batch_slot_wider_than_heads(l.o, s.batch, s.heads_q);
    }
    EXPECT_GE(n, 1) << run.name << ": no seq-major view whose batch stride is not H head strides";
  }
}

// kv_head_offset_int32.cu: a KV head's offset kept in 32 bits. The deep tier's far set has a shape
// of one batch and two KV heads whose K and V heads lie 2^31 elements apart (far_heads), also as
// a decode step (before: the far set moved batches and one sequence's rows only).
TEST(HackerRound14, TheDeepTierPutsAKvHead2p31ElementsPastTheFirst) {
  const GatesConfig g = test::repo_gates();
  for (const char* task : test::kPinnedTasks) {
    const Task t = parse_task(task);
    const EvalPlan deep = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u, true});
    int prefill = 0, decode = 0;
    for (const CaseSpec& c : deep.deep_cases) {
      const Shape& s = c.shape;
      const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes());
      const int64_t k_reach = (s.heads_kv - 1) * l.k.stride[1], v_reach = (s.heads_kv - 1) * l.v.stride[1];
      if (std::min(k_reach, v_reach) < (int64_t(1) << 31)) continue;
      ++(s.seq_q <= 16 ? decode : prefill);
      EXPECT_TRUE(c.device_check.on) << c.id;
      EXPECT_NE(c.id.find("/far/"), std::string::npos) << c.id;
    }
    EXPECT_GE(prefill, 1) << task << ": no deep case with a KV head 2^31 elements past the first";
    EXPECT_GE(decode, 1) << task << ": no decode step over such KV heads";
  }
}

// fp8_v_past_skv_nan_byte_guard.cu: a masked V over-read with the byte 0xFF taken as 0. e4m3's
// non-finite padding holds both of its NaN codes, 0x7F and 0xFF, element by element (before:
// 0xFF throughout); fp16 and bf16 keep round 13's NaN and +-Inf rows; finite junk has no word.
TEST(HackerRound14, E4m3NonFiniteJunkHoldsBothNaNCodes) {
  const JunkBytes e4m3 = junk_bytes("nonfinite", 1);
  ASSERT_NE(e4m3.padding_word, 0u);
  std::set<unsigned> codes;
  for (int i = 0; i < 4; ++i) {
    const unsigned byte = (e4m3.padding_word >> (8 * i)) & 0xFFu;
    EXPECT_EQ(byte & 0x7Fu, 0x7Fu) << "byte " << i << " is not an e4m3 NaN";
    codes.insert(byte);
  }
  EXPECT_EQ(codes, (std::set<unsigned>{0x7Fu, 0xFFu}));
  EXPECT_EQ(junk_bytes("nonfinite", 2).padding_word, 0u) << "fp16 and bf16: NaN and +-Inf rows";
  EXPECT_TRUE(junk_bytes("nonfinite", 2).infinities);
  EXPECT_EQ(junk_bytes("finite", 1).padding_word, 0u);
  EXPECT_EQ(junk_bytes("", 1).padding_word, 0u);
}

// The split control (tests/adversarial/control_split_kv.cu) at D = 64: 128 threads, 57 600 bytes of
// shared memory, tiles of 16 packed rows, up to 64 splits of 64-key blocks; the H200's 132 SMs.
const EvoLaunch kSplitControl{128, 57600, 16, 1, 0, 2, 64, 64, 1};
constexpr int kH200Sms = 132, kH200SmemPerSm = 233472;

// The rows (bit r) of query tile `qtile` that split s of `splits` writes a partial for: split_tile's
// partition of the tile's KV blocks, a row counted where one of its visible keys is in the split.
std::vector<uint32_t> written_rows(const EvoShape& s, int splits, long long qtile) {
  const long long group = s.heads_q / s.heads_kv, r0 = qtile * 16, rows = std::min(16LL, group * s.seq_q - r0);
  const long long kv_end = s.causal ? std::min(s.seq_kv, (r0 + rows - 1) / group + 1) : s.seq_kv;
  const long long nblk = (kv_end + 63) / 64;
  std::vector<uint32_t> out(size_t(splits), 0);
  for (int sp = 0; sp < splits; ++sp) {
    const long long blk0 = sp * nblk / splits, nb = (sp + 1) * nblk / splits - blk0;
    for (long long r = 0; r < rows; ++r) {
      const long long visible = s.causal ? std::min(s.seq_kv, (r0 + r) / group + 1) : s.seq_kv;
      if (nb > 0 && blk0 * 64 < visible) out[size_t(sp)] |= 1u << r;
    }
  }
  return out;
}

// split_flag_keyed_on_splits.cu: how many slots of the case `s`'s split rows that wrote nothing hold,
// where the trick reads its flag (the first floats of the slot's O partial, at the same bytes), a
// partial row that a primer of shape `p` at the case's split count wrote (its tiles, its layout).
long long foreign_slots(const EvoShape& s, const EvoShape& p, int splits) {
  const long long q_tiles = evo_q_tiles(kSplitControl, s), tiles = evo_tiles(kSplitControl, s);
  const long long p_q_tiles = evo_q_tiles(kSplitControl, p), p_tiles = evo_tiles(kSplitControl, p);
  const long long row_bytes = 4LL * s.head_dim;
  const long long shift = (evo_workspace_layout(tiles, splits, 16, s.head_dim).o_offset -
                           evo_workspace_layout(p_tiles, splits, 16, s.head_dim).o_offset);
  if (shift % row_bytes) return 0;
  std::vector<std::vector<uint32_t>> mine, theirs;
  for (long long t = 0; t < q_tiles; ++t) mine.push_back(written_rows(s, splits, t));
  for (long long t = 0; t < p_q_tiles; ++t) theirs.push_back(written_rows(p, splits, t));
  long long found = 0;
  for (long long tile = 0; tile < tiles; ++tile) {
    const long long rows = std::min(16LL, (s.heads_q / s.heads_kv) * s.seq_q - (tile % q_tiles) * 16);
    for (int sp = 0; sp < splits; ++sp)
      for (long long r = 0; r < rows; ++r) {
        if (mine[size_t(tile % q_tiles)][size_t(sp)] >> r & 1) continue;
        const long long j = (tile * splits + sp) * 16 + r + shift / row_bytes;
        if (j < 0 || j >= p_tiles * splits * 16) continue;
        const long long pt = j / (splits * 16), ps = j / 16 % splits, pr = j % 16;
        found += theirs[size_t(pt % p_q_tiles)][size_t(ps)] >> pr & 1;
      }
  }
  return found;
}

// split_flag_keyed_on_splits.cu: round 13's never-cleared flag with the split count in it. A split
// case's second primer runs at the case's split count over another shape (LaunchDraws::
// primer_lengths: fewer query rows and keys through the same buffers), as an earlier call the package
// split alike leaves the workspace; on the gate's fixed causal split cases (the small set's
// 1x1x1x680x777, 1x2x1x300x700 and 1x1x1x500x600 since a call with a tile for a third of the SMs
// runs unsplit; before, 1x1x1x1000x1000, mission's 1x8x8x512x512 and ragged's 2x8x2x1000x777) its
// draws leave flagged partials where the case's empty split rows read. Round 13's primers, at another count or the
// case's own shape: none at the case's count.
TEST(HackerRound14, APrimerOfAnotherShapeAtTheCasesSplitCountLeavesPartialsWhereEmptySplitRowsRead) {
  const GatesConfig g = test::repo_gates();
  LaunchDraws draws(0x14);
  constexpr int kDraws = 200;
  double all_miss = 1;
  int split_cases = 0;
  for (const std::string& set : g.gate_sets)
    for (const std::string& text : g.shape_sets.at(set)) {
      const Shape sh = parse_shape(text, 64);
      const EvoShape s{sh.batch, sh.heads_q, sh.heads_kv, sh.seq_q, sh.seq_kv, 64, 1};
      const int splits = evo_num_splits(kSplitControl, s, kH200Sms, kH200SmemPerSm);
      if (splits <= 1) continue;
      ++split_cases;
      EXPECT_EQ(foreign_slots(s, s, splits), 0) << text << ": the case's own shape leaves none";
      int caught = 0;
      for (int i = 0; i < kDraws; ++i) {
        const auto [q, kv] = draws.primer_lengths(sh, splits, 64, true);
        EvoShape p = s;
        p.seq_q = q, p.seq_kv = kv;
        EXPECT_GE(evo_kv_blocks(kSplitControl, p), splits) << text << ": primer " << q << "x" << kv;
        caught += foreign_slots(s, p, splits) > 0;
      }
      all_miss *= 1.0 - double(caught) / kDraws;
      std::cout << text << ": " << splits << " splits; " << caught << " of " << kDraws
                << " primer shapes leave flagged partials where its empty split rows read\n";
    }
  EXPECT_GE(split_cases, 2);
  std::cout << "odds that every fixed split case misses: " << all_miss << "\n";
  EXPECT_LT(all_miss, 1e-3);
}

// LaunchDraws::primer_lengths: each length up to the case's, never both the case's where another
// shape keeps as many KV blocks as splits; the case's own only when none does.
TEST(HackerRound14, APrimerOfAnotherShapeKeepsAsManyBlocksAsSplits) {
  LaunchDraws draws(7);
  const Shape s = parse_shape("1x8x8x512x512xD", 64);
  std::set<std::pair<int, int>> seen;
  for (int i = 0; i < 2000; ++i) {
    const auto [q, kv] = draws.primer_lengths(s, 3, 64, true);
    EXPECT_TRUE(q >= 129 && q <= 512 && kv >= 129 && kv <= 512) << q << "x" << kv;
    EXPECT_FALSE(q == 512 && kv == 512);
    seen.insert({q, kv});
  }
  EXPECT_GT(seen.size(), 1000u) << "drawn, not fixed";
  const Shape one = parse_shape("1x1x1x1x129xD", 64);
  for (int i = 0; i < 100; ++i) EXPECT_LE(draws.primer_lengths(one, 2, 64, false).second, 129);
  const Shape tight = parse_shape("1x1x1x65x65xD", 64);
  EXPECT_EQ(draws.primer_lengths(tight, 2, 64, true), std::make_pair(65, 65)) << "no other shape has 2 blocks";
}

// What the round's draws cost: cheap and deep cases a run over the pinned runs (round 13: 86-97
// cheap, 262-276 deep), and the deep plan's cases at gate seed 2025 with its fixed sets.
TEST(HackerRound14, PrintsTheCasesARunDraws) {
  std::map<std::string, std::pair<size_t, size_t>> range;  // tier -> (fewest, most)
  for (const PinnedRun& run : both_tier_runs()) {
    const std::string tier = run.name.find(" deep ") != std::string::npos ? "deep" : "cheap";
    auto [it, fresh] = range.try_emplace(tier, run.cases.size(), run.cases.size());
    it->second.first = std::min(it->second.first, run.cases.size());
    it->second.second = std::max(it->second.second, run.cases.size());
  }
  for (const auto& [tier, r] : range) {
    std::cout << tier << " cases a run: " << r.first << "-" << r.second << "\n";
    EXPECT_GT(r.first, 0u);
  }
  const GatesConfig g = test::repo_gates();
  for (const char* task : test::kPinnedTasks) {
    const EvalPlan deep = make_plan(g, {parse_task(task), g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u, true});
    std::cout << task << " deep plan at gate seed 2025: " << deep.deep_cases.size() << " cases\n";
  }
}

}  // namespace
}  // namespace evo::hacker_round14
