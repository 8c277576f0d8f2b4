// Hacker round 13 (issue 29 item 5, docs/safety.md 3g, lab/hack13/README.md): what the gate's
// draws, fills and primer still held fixed. Each test reads the draws back (seeds pinned) or
// replays the arithmetic a try relies on, and fails on round 12's gate: MHA head counts were 0 or
// 1 (mod 4), a decode step (Sq = 1) was no value of any dimension, no head configuration showed a
// reciprocal division with too few bits, a split case's primer split as the case does, and
// non-finite junk was one NaN pattern.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/evo_launch.h"
#include "compile/call_state.h"
#include "core/shape.h"
#include "gpu/input_fill.h"
#include "gpu/launch_draws.h"
#include "policy/config.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together, and rounds share helper
// names (PinnedRun, kSplitControl, ...).
namespace evo::hacker_round13 {
namespace {

const GatesConfig& gates() {
  static const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  return g;
}

struct PinnedRun {
  std::string name;
  std::vector<CaseSpec> cases;
};

// Both tiers' cases of every pinned run (the tasks and seeds of the earlier rounds' tests), each
// named "<task> <tier> seed <seed>"; drawn once for the whole file.
const std::vector<PinnedRun>& both_tier_runs() {
  static const std::vector<PinnedRun> runs = [] {
    std::vector<PinnedRun> out;
    for (const char* task : {"fp16-d64", "bf16-d128", "fp16-d128-causal", "fp8-d64"})
      for (uint32_t seed : {0u, 1u, 7u, 12345u, 1511791795u, 4294967295u, 2025u}) {
        out.push_back(
            {fmt::format("{} cheap seed {}", task, seed), draw_sampled_cases(gates(), parse_task(task), seed)});
        out.push_back({fmt::format("{} deep seed {}", task, seed), draw_deep_cases(gates(), parse_task(task), seed)});
      }
    return out;
  }();
  return runs;
}

bool deep(const PinnedRun& r) { return r.name.find(" deep ") != std::string::npos; }
bool gqa(const CaseSpec& c) { return c.shape.heads_kv < c.shape.heads_q; }

// mha_heads_in_quads.cu: MHA heads four to a CTA, a tail of 3 taken as a pair or a single. Every
// run draws MHA head counts in every class mod 8 (before: 25, 12, 32, 256 and, through shared=qk
// from 71/1, by odds 71: classes 0, 1, 4 and sometimes 7).
TEST(HackerRound13, EveryRunDrawsEveryMhaHeadCountModEight) {
  for (const PinnedRun& run : both_tier_runs()) {
    std::set<int> classes;
    for (const CaseSpec& c : run.cases)
      if (c.shape.heads_q == c.shape.heads_kv) classes.insert(c.shape.heads_q % 8);
    EXPECT_EQ(classes.size(), 8u) << run.name << ": MHA head counts in " << classes.size() << " classes mod 8";
  }
}

// gqa_decode_drops_quad.cu: a decode step (Sq = 1) is a length class of its own, so it pairs with
// every value of every other dimension in every run: each key residue here. The deep tier's triple
// Sq class x heads x Skv residue puts a GQA or MQA decode step over Skv = 4 (mod 8) in every run.
TEST(HackerRound13, EveryRunDecodesOverEveryKeyResidue) {
  int cheap_gqa_quad = 0, cheap_runs = 0;
  for (const PinnedRun& run : both_tier_runs()) {
    std::map<std::string, int> seen;
    for (const CaseSpec& c : run.cases) {
      if (c.shape.seq_q != 1) continue;
      const int kv = c.shape.seq_kv;
      seen[kv % 64 == 0 ? "x64" : kv % 8 == 0 ? "x8" : kv % 8 == 4 ? "x4" : kv % 4 == 2 ? "x2" : "odd"]++;
      seen["named sq=one"] += c.id.find("/sq=one:") != std::string::npos;
      seen["GQA over Skv = 4 (mod 8)"] += gqa(c) && kv % 8 == 4;
    }
    for (const char* what : {"x64", "x8", "x4", "x2", "odd", "named sq=one"})
      EXPECT_GE(seen[what], 1) << run.name << ": no decode step (Sq = 1) with " << what;
    if (deep(run))
      EXPECT_GE(seen["GQA over Skv = 4 (mod 8)"], 1) << run.name << ": no GQA decode step over Skv = 4 (mod 8)";
    else
      cheap_runs += 1, cheap_gqa_quad += seen["GQA over Skv = 4 (mod 8)"] > 0;
  }
  std::cout << "cheap runs with a GQA decode step over Skv = 4 (mod 8): " << cheap_gqa_quad << " of " << cheap_runs
            << " (by odds; every deep run by its triple)\n";
}

// Rounding a positive normal float to `bits` mantissa bits, to nearest even: fp16's 10, bf16's 7
// (every 1 / ratio here is a normal number of both).
float round_mantissa(float x, int bits) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const int drop = 23 - bits;
  u = (u + (1u << (drop - 1)) - 1 + ((u >> drop) & 1)) & ~((1u << drop) - 1);
  std::memcpy(&x, &u, 4);
  return x;
}

// The ways a kernel computes a query head's KV head h / ratio without a division: a fixed-point
// reciprocal of k bits rounded up or to nearest, or a float reciprocal in fp16, bf16 or fp32.
std::vector<std::pair<std::string, std::function<int(int, int)>>> reciprocal_divisions() {
  std::vector<std::pair<std::string, std::function<int(int, int)>>> out;
  for (int k = 6; k <= 24; ++k) {
    out.emplace_back(fmt::format("ceil {} bits", k),
                     [k](int h, int r) { return int((int64_t(h) * (((int64_t(1) << k) + r - 1) / r)) >> k); });
    out.emplace_back(fmt::format("nearest {} bits", k),
                     [k](int h, int r) { return int((int64_t(h) * (((int64_t(1) << k) + r / 2) / r)) >> k); });
  }
  for (int bits : {10, 7, 23})
    out.emplace_back(fmt::format("float reciprocal of {} mantissa bits", bits), [bits](int h, int r) {
      const volatile float inv = round_mantissa(1.0f / float(r), bits);  // one rounding of the product
      return int(float(h) * inv);
    });
  return out;
}

bool wrong_on(const std::function<int(int, int)>& div, int heads_q, int heads_kv) {
  const int ratio = heads_q / heads_kv;
  for (int h = 0; h < heads_q; ++h)
    if (div(h, ratio) != h / ratio) return true;
  return false;
}

// gqa_ratio_recip12.cu, gqa_ratio_magic_div15.cu: every such division that is wrong on some head
// configuration the op accepts (Hq <= 256, Hkv dividing it) is wrong on one every run draws. Before:
// the ceiled reciprocals of 11 to 15 bits and the fp32 reciprocal (41 * fl(1/41) rounds to
// 0.99999994) were exact on every drawn configuration.
TEST(HackerRound13, EveryReciprocalDivisionWrongSomewhereIsWrongOnADrawnConfig) {
  for (const auto& [name, div] : reciprocal_divisions()) {
    bool somewhere = false;
    for (int hq = 2; hq <= 256 && !somewhere; ++hq)
      for (int hkv = 1; hkv < hq && !somewhere; ++hkv) somewhere = hq % hkv == 0 && wrong_on(div, hq, hkv);
    if (!somewhere) continue;
    for (const PinnedRun& run : both_tier_runs()) {
      std::set<std::pair<int, int>> configs;
      for (const CaseSpec& c : run.cases)
        if (gqa(c)) configs.insert({c.shape.heads_q, c.shape.heads_kv});
      bool drawn = false;
      for (const auto& [hq, hkv] : configs) drawn = drawn || wrong_on(div, hq, hkv);
      EXPECT_TRUE(drawn) << run.name << ": h / ratio by a " << name << " is wrong in the domain, right on every draw";
    }
  }
  // The two tries: Falcon-180B's 232/8 and ratio 6 (12/2, 96/16) show them.
  const auto all = reciprocal_divisions();
  auto by_name = [&](const std::string& n) {
    for (const auto& [name, div] : all)
      if (name == n) return div;
    return std::function<int(int, int)>();
  };
  EXPECT_TRUE(wrong_on(by_name("ceil 12 bits"), 232, 8));
  EXPECT_TRUE(wrong_on(by_name("nearest 15 bits"), 12, 2));
  EXPECT_FALSE(wrong_on(by_name("nearest 15 bits"), 24, 8)) << "2^15 / 3 rounds up: ratio 3 is exact at 15 bits";
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

// split_slot_flag_never_cleared.cu: how many slots of a case's split rows that wrote nothing (a
// causal row whose visible keys end before the split's blocks) hold, where the trick reads its flag
// (the first floats of the slot's O partial), a partial row a primer with `primer` splits wrote.
long long foreign_slots(const EvoShape& s, int splits, int primer) {
  const long long q_tiles = evo_q_tiles(kSplitControl, s), tiles = evo_tiles(kSplitControl, s);
  const long long row_bytes = 4LL * s.head_dim;
  const long long o_case = evo_workspace_layout(tiles, splits, 16, s.head_dim).o_offset;
  const long long o_primer = evo_workspace_layout(tiles, primer, 16, s.head_dim).o_offset;
  if ((o_case - o_primer) % row_bytes) return 0;
  std::vector<std::vector<uint32_t>> mine, theirs;
  for (long long t = 0; t < q_tiles; ++t) {
    mine.push_back(written_rows(s, splits, t));
    theirs.push_back(written_rows(s, primer, t));
  }
  long long found = 0;
  for (long long tile = 0; tile < tiles; ++tile) {
    const long long rows = std::min(16LL, (s.heads_q / s.heads_kv) * s.seq_q - (tile % q_tiles) * 16);
    for (int sp = 0; sp < splits; ++sp)
      for (long long r = 0; r < rows; ++r) {
        if (mine[size_t(tile % q_tiles)][size_t(sp)] >> r & 1) continue;
        const long long j = ((tile * splits + sp) * 16 + r) + (o_case - o_primer) / row_bytes;
        if (j < 0 || j >= tiles * primer * 16) continue;
        const long long pt = j / (primer * 16), ps = j / 16 % primer, pr = j % 16;
        found += theirs[size_t(pt % q_tiles)][size_t(ps)] >> pr & 1;
      }
  }
  return found;
}

// The primer's split count is another one than the case's: every count it may draw leaves written
// partials where the causal suite's fixed split cases (the small set's 1x1x1x680x777, 1x2x1x300x700
// and 1x1x1x500x600; before a call with a tile for a third of the SMs ran unsplit, 1x1x1x1000x1000
// and mission's 1x8x8x512x512) have split rows that wrote nothing. Round 12's primer split as the case: none.
TEST(HackerRound13, APrimerOfAnotherSplitCountLeavesPartialsWhereEmptySplitRowsRead) {
  int split_cases = 0;
  for (const std::string& set : gates().gate_sets)
    for (const std::string& text : gates().shape_sets.at(set)) {
      const Shape sh = parse_shape(text, 64);
      const EvoShape s{sh.batch, sh.heads_q, sh.heads_kv, sh.seq_q, sh.seq_kv, 64, 1};
      const int splits = evo_num_splits(kSplitControl, s, kH200Sms, kH200SmemPerSm);
      if (splits <= 1) continue;
      ++split_cases;
      EXPECT_EQ(foreign_slots(s, splits, splits), 0) << text << ": the case's own split count leaves none";
      const long long most = std::min<long long>(kSplitControl.kv_splits_max, evo_kv_blocks(kSplitControl, s));
      long long fewest = -1;
      for (int primer = 2; primer <= most; ++primer) {
        if (primer == splits) continue;
        const long long n = foreign_slots(s, splits, primer);
        EXPECT_GT(n, 0) << text << ": a primer of " << primer << " splits (the case " << splits << ")";
        fewest = fewest < 0 ? n : std::min(fewest, n);
      }
      std::cout << text << ": " << splits << " splits; a primer of any other count leaves at least " << fewest
                << " written partial rows where split rows of the case that wrote nothing read\n";
    }
  EXPECT_GE(split_cases, 2);
}

// LaunchDraws::primer_splits: any count from 2 to the smaller of kv_splits_max and the KV blocks
// but the case's, drawn; the case's count only when there is no other. A second primer at the
// case's count follows (gpu/worker.cpp prime_split_workspace); it writes no slot the case leaves
// unwritten, so the first one's partials stay there.
TEST(HackerRound13, APrimerSplitsAnyOtherWayTheKernelAndTheBlocksAllow) {
  LaunchDraws draws(99);
  std::map<int, int> seen;
  for (int i = 0; i < 4000; ++i) ++seen[draws.primer_splits(6, 64, 16)];
  EXPECT_EQ(seen.size(), 14u) << "2 to 16 but 6";
  EXPECT_EQ(seen.count(6), 0u);
  EXPECT_EQ(seen.begin()->first, 2);
  EXPECT_EQ(seen.rbegin()->first, 16);
  for (int i = 0; i < 100; ++i) {
    const int s = draws.primer_splits(3, 4, 1000);
    EXPECT_TRUE(s == 2 || s == 4) << s;
  }
  EXPECT_EQ(draws.primer_splits(2, 64, 2), 2) << "no other count";
  // The second primer (the case's own count, for round 9's memo keyed on the call) keeps what the
  // first left, and the case's first launch what the second left.
  (void)draws.prefill(LaunchKind::gate_second);
  EXPECT_FALSE(draws.prefill(LaunchKind::gate_primer).keep_partials) << "the first primer finds stale partials";
  EXPECT_TRUE(draws.prefill(LaunchKind::gate_primer).keep_partials);
  EXPECT_TRUE(draws.prefill(LaunchKind::gate_first).keep_partials);
}

// reads_v_past_skv_nan_guard.cu: non-finite junk in fp16 and bf16 padding is NaN and infinities of
// both signs (before: the byte 0xFF, one NaN pattern), every element, as vary_padding writes it.
TEST(HackerRound13, NonFiniteJunkHoldsNaNAndInfinitiesOfBothSigns) {
  EXPECT_TRUE(junk_bytes("nonfinite", 2).infinities);
  EXPECT_FALSE(junk_bytes("finite", 2).infinities);
  EXPECT_FALSE(junk_bytes("", 2).infinities);
  const FillParams f = nonfinite_junk_fill();
  for (unsigned seed : {1u, 7u, 2025u}) {
    int nan_rows = 0, pos = 0, neg = 0, finite = 0, first_row_inf = 0;
    for (uint64_t row = 0; row < 1000; ++row) {
      const bool nan_row = fill_outlier_row(f.outlier_every, row, seed);
      nan_rows += nan_row;
      for (uint64_t e = 0; e < 8; ++e) {  // 8 fp16 or bf16 elements in a 16-byte row; V is tensor 6
        float x = f.mean + evo_normal_host(row * 8 + e, seed, 6, f.stddev);
        if (nan_row) x *= f.outlier_scale;
        finite += std::isfinite(x);
        pos += x == std::numeric_limits<float>::infinity();
        neg += x == -std::numeric_limits<float>::infinity();
        first_row_inf += row < 8 && std::isinf(x);
      }
    }
    EXPECT_EQ(finite, 0) << "seed " << seed;
    EXPECT_GT(pos, 1000) << "seed " << seed;
    EXPECT_GT(neg, 1000) << "seed " << seed;
    EXPECT_GT(nan_rows, 400) << "seed " << seed;
    EXPECT_LT(nan_rows, 600) << "seed " << seed;
    EXPECT_GT(first_row_inf, 0) << "seed " << seed << ": a D = 64 V row of padding holds an infinity";
  }
}

// decode_gqa_pack_64_rows.cu: every run has a GQA decode call (Sq <= 16) whose group's rows,
// ratio x Sq, pass one tile of 64.
TEST(HackerRound13, EveryRunHasGqaDecodeCallsPastOne64RowTile) {
  for (const PinnedRun& run : both_tier_runs()) {
    int n = 0;
    for (const CaseSpec& c : run.cases)
      n += gqa(c) && c.shape.seq_q <= 16 && (c.shape.heads_q / c.shape.heads_kv) * c.shape.seq_q > 64;
    EXPECT_GE(n, 1) << run.name;
  }
}

// fp8_v_descale_from_k.cu: K's and V's descales (amax / 448 each) differ by their spreads; the
// fixed cases' large_logits has K 3 times V, and every fp8 run draws V 100 times K (large_v) and
// K 0.05 with V near 256 (v_offset).
TEST(HackerRound13, Fp8RunsGiveKAndVDescalesFarApart) {
  bool fixed = false;
  for (const InputDistribution& in : gates().inputs) fixed = fixed || in.qk_std >= 3 * in.v_std;
  EXPECT_TRUE(fixed) << "a fixed input distribution with K's spread 3 times V's";
  for (const PinnedRun& run : both_tier_runs()) {
    if (run.name.rfind("fp8-d64", 0) != 0) continue;
    std::set<std::string> inputs;
    for (const CaseSpec& c : run.cases)
      if (c.v_std >= 20 * c.qk_std || c.qk_std >= 3 * c.v_std) inputs.insert(c.inputs);
    EXPECT_TRUE(inputs.count("large_v") && inputs.count("v_offset")) << run.name;
  }
}

// first_launch_init_path.cu: a worker's first launch is the first fixed gate case's first, which
// is verified; a kernel that does not split gets no primer before it.
TEST(HackerRound13, TheFirstLaunchOfAWorkerIsAVerifiedFixedCase) {
  PlanRequest req;
  req.task = parse_task("fp16-d64");
  req.gate_sets = gates().gate_sets;
  req.seeds = gates().seeds;
  req.gate_seed = 2025;
  const EvalPlan plan = make_plan(gates(), req);
  ASSERT_FALSE(plan.gate_cases.empty());
  const CaseSpec& first = plan.gate_cases.front();
  EXPECT_FALSE(is_sampled_case(first.id)) << first.id;
  EXPECT_FALSE(first.two_streams);
  const EvoLaunch scalar{128, 0, 4, 1, 0, 2, 0, 0, 0};  // the scalar control: no kv_splits_max
  const EvoShape s{first.shape.batch,
                   first.shape.heads_q,
                   first.shape.heads_kv,
                   first.shape.seq_q,
                   first.shape.seq_kv,
                   first.shape.head_dim,
                   0};
  EXPECT_EQ(evo_num_splits(scalar, s, 132, 233472), 1) << "no primer before it";
  LaunchDraws draws(2025);
  (void)draws.prefill(LaunchKind::gate_first);
  EXPECT_TRUE(draws.verify(LaunchKind::gate_first));
}

// cold_l2_skips_tail.cu: a timed launch can be told from a gate launch (L2 is flushed before each
// timed sample only), so every timed sample must be checked, and a would-be elite that reads a
// clock is refused by the deep gate's static check.
TEST(HackerRound13, EveryTimedSampleIsVerifiedAndAClockReadRefused) {
  LaunchDraws draws(13);
  for (int i = 0; i < 1000; ++i) {
    (void)draws.prefill(LaunchKind::timed);
    EXPECT_TRUE(draws.verify(LaunchKind::timed));
  }
  EXPECT_GE(gates().timing.rows_per_sample, 128);
  EXPECT_GE(gates().timing.min_samples, 10);
  const std::string sass = ".text.evo_attn_fwd:\n        /*0100*/                   CS2R R4, SR_CLOCKLO ;\n";
  const auto why = carried_state(sass, {"", ".nv.constant0.evo_attn_fwd"});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("reads a clock"), std::string::npos) << *why;
}

}  // namespace
}  // namespace evo::hacker_round13
