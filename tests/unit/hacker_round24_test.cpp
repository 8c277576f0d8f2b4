// Hacker round 24 (issue 29 item 5, lab/hack24/README.md): what catches each try, read back from the
// draws (seeds pinned) and the plans, and a host model of one try's float division. Four tries:
// two paths keyed on Q and K at one address (shared_qk_short_half_chunks.cu,
// shared_qk_base_takes_q_len.cu), one keyed on K and V one view at a decode step
// (shared_kv_decode_half_chunks.cu) and one index split past 2^24 rows (flat_row_float_div.cu).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "gpu/case_layout.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round24 {
namespace {

// Whether a case passes one address as Q and K (the views "qk" and "qkv"); no other case does:
// packed_qkv puts K Hq heads past Q, a two-stream case shares Q between two problems.
bool q_is_k(const CaseSpec& c) {
  const std::string s = layout_shared(c.layout);
  return s == "qk" || s == "qkv";
}

// shared_qk_short_half_chunks.cu skips every other chunk where p.q == p.k and Skv < 256: it needs
// a case with Q and K one view over 33 to 255 keys. Round 23's rule (shared_case_informative)
// draws every shared case over 256 keys or more, so no pinned run of either tier has one: the try
// is a hole. This fails once any run draws a short case with Q and K one view.
TEST(HackerRound24, NoSharedCaseIsShort) {
  int runs = 0, q_is_k_cases = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    ++runs;
    for (const CaseSpec& c : cases) {
      if (!q_is_k(c)) continue;
      ++q_is_k_cases;
      EXPECT_GE(c.shape.seq_kv, 256) << run << ": shared_qk_short_half_chunks is caught on " << c.id;
      EXPECT_GE(c.shape.visible_kv(t.causal), kSharedMinKeys) << run << ": " << c.id;
    }
  });
  EXPECT_EQ(runs, 56);
  EXPECT_EQ(q_is_k_cases, 2 * 56) << "one qk and one qkv case a tier";
}

// shared_qk_base_takes_q_len.cu takes Skv := Sq where p.q == p.k: it needs Q and K at one address
// with Sq < Skv (Q a prefix view of K). Every such case of every pinned run has Sq = Skv and Hq =
// Hkv (the sampler makes a view shared with Q one shape): the try is a hole.
TEST(HackerRound24, QAndKAtOneAddressHaveOneLength) {
  int runs = 0;
  test::each_run_of_both_tiers([&](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    ++runs;
    for (const CaseSpec& c : cases)
      if (q_is_k(c)) {
        EXPECT_EQ(c.shape.seq_q, c.shape.seq_kv) << run << ": shared_qk_base_takes_q_len is caught on " << c.id;
        EXPECT_EQ(c.shape.heads_q, c.shape.heads_kv) << run << ": " << c.id;
      }
  });
  EXPECT_EQ(runs, 56);
  Shape prefix;  // Q the first 100 rows of K's view: no layout places it
  prefix.seq_q = 100;
  prefix.seq_kv = 300;
  EXPECT_THROW(case_layout(prefix, "bhsd+qk"), std::exception) << "a view shared with Q needs Sq = Skv";
}

// flat_row_float_div.cu: bh = trunc(rn(float(r) / float(Sq))) for the flat row r = bh * Sq + i, the
// host's float arithmetic (IEEE single, round to nearest: __ll2float_rn, __fdiv_rn). The quotient
// errs only near a multiple of Sq (|r - k Sq| <= ulp(r) + 1: float(r) moves r by ulp(r) / 2 at
// most, the quotient's rounding Sq times ulp(k) / 2 <= ulp(r) / 2), so the rows within twice the
// largest row's ulp plus 2 of each multiple past 2^22 are tried. A wrong bh is seen where the row's batch or KV head
// changes (other keys) or the mask moves (causal: a negative row sees no key, NaN), on V that varies.
struct Split {
  bool errs = false, seen = false;
};
Split float_split(const CaseSpec& c, const Task& t) {
  const Shape& s = c.shape;
  const int64_t sq = s.seq_q, rows = int64_t(s.batch) * s.heads_q * sq;
  Split out;
  if (rows <= (int64_t(1) << 22)) return out;
  const int ratio = std::max(1, s.heads_q / std::max(1, s.heads_kv));
  const int64_t w = 2 * (int64_t(1) << std::max(0, int(std::ceil(std::log2(double(rows)))) - 24)) + 2;
  for (int64_t k = std::max<int64_t>(1, ((int64_t(1) << 22) - w) / sq); k * sq - w < rows; ++k)
    for (int64_t r = std::max<int64_t>(0, k * sq - w); r < std::min(rows, k * sq + w); ++r) {
      const volatile float num = float(r), den = float(sq);
      const volatile float q = num / den;
      const int64_t bh = int64_t(q), exact = r / sq;
      if (bh == exact) continue;
      out.errs = true;
      const bool other_keys =
          bh / s.heads_q != exact / s.heads_q || (bh % s.heads_q) / ratio != (exact % s.heads_q) / ratio;
      out.seen = out.seen || (c.v_std > 0 && (other_keys || t.causal));
      if (out.seen) return out;
    }
  return out;
}

TEST(HackerRound24, FloatDivisionIsExactBelow2p22Rows) {
  // r = k * Sq - 1 just under a multiple: exact while r is small, wrong once ulp(k) / 2 passes 1 / Sq.
  CaseSpec c;
  c.v_std = 1;
  c.shape.batch = 1;
  c.shape.heads_q = c.shape.heads_kv = 64;
  c.shape.seq_q = c.shape.seq_kv = 65536;  // 2^22 rows
  EXPECT_FALSE(float_split(c, parse_task("fp16-d64")).errs);
  c.shape.batch = 16;  // 2^26 rows: a prefill of 16 x 64 heads x 64k tokens
  EXPECT_TRUE(float_split(c, parse_task("fp16-d64")).seen);
}

// Every case of the plan of each pinned run (cheap: the fixed gate sets and the sampled cases;
// deep: its drawn and fixed cases), read by the model above. Printed per run; the counts pin what
// the README states.
TEST(HackerRound24, FlatRowFloatDivisionMeetsTheGate) {
  const GatesConfig g = test::repo_gates();
  int runs = 0, cheap_caught = 0, deep_caught = 0, bench_rows_past = 0;
  int64_t cheap_most_rows = 0;
  test::each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    if (t.dtype == DType::fp8) return;  // the try is fp16 and bf16
    ++runs;
    const EvalPlan p = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true});
    std::string cheap, deep;
    int64_t most_rows = 0;
    for (const CaseSpec& c : p.gate_cases) {
      cheap_most_rows = std::max(cheap_most_rows, int64_t(c.shape.batch) * c.shape.heads_q * c.shape.seq_q);
      if (cheap.empty() && float_split(c, t).seen) cheap = c.id;
    }
    for (const CaseSpec& c : p.deep_cases) {
      most_rows = std::max(most_rows, int64_t(c.shape.batch) * c.shape.heads_q * c.shape.seq_q);
      if (deep.empty() && float_split(c, t).seen) deep = c.id;
    }
    for (const BenchSpec& b : p.bench)
      bench_rows_past += int64_t(b.timed.shape.batch) * b.timed.shape.heads_q * b.timed.shape.seq_q > (1 << 22);
    std::cout << fmt::format("{} seed {}: deep's most rows {} (2^{:.1f}); cheap {}; deep {}\n", task, seed, most_rows,
                             std::log2(double(std::max<int64_t>(most_rows, 1))), cheap.empty() ? "admits" : cheap,
                             deep.empty() ? "admits" : deep);
    cheap_caught += !cheap.empty();
    deep_caught += !deep.empty() || !cheap.empty();
    EXPECT_NE(deep.find("deep/huge/8129x"), std::string::npos) << task << " seed " << seed << ": " << deep;
  });
  EXPECT_EQ(runs, 21);
  std::cout << fmt::format(
      "cheap catches {} of {} (its most rows {}), both tiers {} of {}, benchmark shapes past "
      "2^22 rows: {}\n",
      cheap_caught, runs, cheap_most_rows, deep_caught, runs, bench_rows_past);
  EXPECT_EQ(cheap_caught, 0) << "no cheap case passes 2^22 rows";
  EXPECT_LE(cheap_most_rows, int64_t(1) << 22);
  EXPECT_EQ(deep_caught, 21) << "the deep tier's fixed huge set, 8129 x H x 129 rows (2^25 or 2^26)";
  EXPECT_EQ(bench_rows_past, 0);
}

// shared_kv_decode_half_chunks.cu skips every other chunk where p.k == p.v and Sq <= 16: it needs a
// case with K and V one view, a decode step, over more than 32 visible keys of a V that varies.
// Only the kv case has p.k == p.v at Sq <= 16 (qkv has Sq = Skv >= 256), and it keeps its
// source's Sq, so a run meets the try only by odds; under the top-left causal mask a decode step
// sees 16 keys or fewer (the trick changes nothing there), so the fp16 and bf16 tasks without the
// mask are the ones read. Pinned: which runs catch it, by tier.
TEST(HackerRound24, KvCaseIsADecodeStepInSomeRuns) {
  std::map<std::string, std::string> caught;  // "<task> seed <seed>" -> the tiers that catch it
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    if (t.causal || t.dtype == DType::fp8) return;
    const std::string key = run.substr(0, run.find(' ')) + run.substr(run.find(" seed"));
    std::string& tiers = caught[key];
    for (const CaseSpec& c : cases) {
      if (layout_shared(c.layout) != "kv" && layout_shared(c.layout) != "qkv") continue;
      if (c.shape.seq_q <= 16 && c.shape.visible_kv(t.causal) > 32 && c.v_std > 0)
        tiers += run.find(" cheap ") != std::string::npos ? "cheap " : "deep ";
    }
  });
  ASSERT_EQ(caught.size(), 14u);
  int both = 0, cheap = 0;
  for (const auto& [run, tiers] : caught) {
    std::cout << run << ": " << (tiers.empty() ? "admits" : tiers) << "\n";
    both += !tiers.empty();
    cheap += tiers.find("cheap") != std::string::npos;
  }
  EXPECT_EQ(both, 6) << "caught in 6 of 14 runs over both tiers";
  EXPECT_EQ(cheap, 4) << "the cheap tier in 4: fp16-d64 seeds 0, 12345, 1511791795, 4294967295";
  EXPECT_TRUE(caught["fp16-d64 seed 1"].empty() && caught["bf16-d128 seed 7"].empty())
      << "fp16-d64 seed 1 and bf16-d128 seed 7 admit it in both tiers";
}

}  // namespace
}  // namespace evo::hacker_round24
