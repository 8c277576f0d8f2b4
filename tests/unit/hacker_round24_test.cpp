// Hacker round 24 (issue 29 item 5, lab/hack24/README.md): what catches each try, read back from the
// draws (seeds pinned) and the plans, and a host model of one try's float division. Four tries:
// two paths keyed on Q and K at one address (shared_qk_short_half_chunks.cu,
// shared_qk_base_takes_q_len.cu), one keyed on K and V one view at a decode step
// (shared_kv_decode_half_chunks.cu) and one index split past 2^24 rows (flat_row_float_div.cu).
// The first three were holes at the round's end; closed after it by the shared forms
// (run/sampler.h kSharedShortMinKeys: each view met in the other class of a length or regime, and
// Q a prefix of K's view), which the tests below pin in every run.
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

// Whether a case passes one address as Q and K (the views "qk", "qkv" and the prefixes); no other
// case does: packed_qkv puts K Hq heads past Q, a two-stream case shares Q between two problems.
bool q_is_k(const CaseSpec& c) { return k_at_q(layout_shared(c.layout)); }

// A case where a path that skips every other 32-key chunk loses keys: a row over more than 32
// visible keys of a V that varies.
bool skipping_chunks_shows(const CaseSpec& c, bool causal) { return c.v_std > 0 && c.shape.visible_kv(causal) > 32; }

// shared_qk_short_half_chunks.cu skips every other chunk where p.q == p.k and Skv < 256: it needs
// a case with Q and K one view over 33 to 255 keys. Round 23's rule (shared_case_informative) drew
// every shared case over 256 keys or more, so no pinned run of either tier had one (the hole).
// Closed (append_shared_forms): every run of both tiers, every task, has "qk:short" and
// "qkv:short" cases (Sq = Skv = 33 to 255, V that varies; 3 to 16 sequences since hacker round
// 25) and a "qk:short:one" (one sequence) beside the qk and qkv cases of 256 keys or more, so each
// view keyed on p.q == p.k is met at both lengths, deterministically.
TEST(HackerRound24, QAndKOneViewMeetBothLengthsInEveryRun) {
  int runs = 0, q_is_k_cases = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    ++runs;
    std::map<std::string, std::string> lengths;  // view -> "short" and/or "long" seen
    for (const CaseSpec& c : cases) {
      if (!q_is_k(c)) continue;
      ++q_is_k_cases;
      const std::string view = layout_shared(c.layout);
      if (q_prefix(view)) continue;
      const bool is_short = c.shape.seq_kv < kSharedMinKeys;
      lengths[view] += is_short ? "short " : "long ";
      if (is_short) {
        EXPECT_TRUE(skipping_chunks_shows(c, t.causal)) << run << ": " << c.id;
        EXPECT_GE(c.shape.seq_kv, kSharedShortMinKeys) << run << ": " << c.id;
        EXPECT_NE(c.id.find("/shared=" + view + ":short"), std::string::npos) << c.id;
      } else {
        EXPECT_TRUE(shared_case_informative(c, t.causal)) << run << ": " << c.id;
      }
    }
    EXPECT_EQ(lengths["qk"], "long short short ") << run << ": shared_qk_short_half_chunks passes qk";
    EXPECT_EQ(lengths["qkv"], "long short ") << run << ": shared_qk_short_half_chunks passes qkv";
  });
  EXPECT_EQ(runs, 56);
  EXPECT_EQ(q_is_k_cases, 7 * 56) << "qk, qkv, qk:short, qkv:short, qk_prefix, qkv_prefix and qk:short:one a tier";
}

// shared_qk_base_takes_q_len.cu takes Skv := Sq where p.q == p.k: it needs Q and K at one address
// with Sq < Skv (Q a prefix view of K). Before, every such case had Sq = Skv and Hq = Hkv (the
// hole). Closed: every run of both tiers has one qk_prefix case (Q the first 1 to 255 rows of K's
// view of 256 or more keys, Hq = Hkv, V that varies); without the causal mask every row sees every
// key, so the keys past Sq that the try drops show. Under the top-left mask row i sees keys 0 to i
// < Sq, so the try is exact there (nothing to catch).
TEST(HackerRound24, EveryRunHasAQPrefixOfK) {
  int runs = 0, caught = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    ++runs;
    int prefixes = 0;
    for (const CaseSpec& c : cases) {
      if (q_is_k(c) && !q_prefix(layout_shared(c.layout))) {
        EXPECT_EQ(c.shape.seq_q, c.shape.seq_kv) << run << ": " << c.id;
        EXPECT_EQ(c.shape.heads_q, c.shape.heads_kv) << run << ": " << c.id;
      }
      if (!q_prefix(layout_shared(c.layout))) continue;
      ++prefixes;
      EXPECT_LT(c.shape.seq_q, c.shape.seq_kv) << run << ": " << c.id;
      EXPECT_GE(c.shape.seq_kv, kSharedMinKeys) << run << ": " << c.id;
      EXPECT_EQ(c.shape.heads_q, c.shape.heads_kv) << run << ": " << c.id;
      EXPECT_GT(c.v_std, 0) << run << ": " << c.id;
      EXPECT_NE(c.id.find("/shared=" + layout_shared(c.layout)), std::string::npos) << c.id;
      // One base: K's view starts at Q's, Q has K's strides (case_layout); qkv_prefix: V's too.
      const CaseLayout l = case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
      EXPECT_EQ(l.q.offset, l.k.offset) << c.id;
      for (int i = 0; i < 3; ++i) EXPECT_EQ(l.q.stride[i], l.k.stride[i]) << c.id;
      const bool v_too = layout_shared(c.layout) == kQPrefixOfKV;
      if (v_too) {
        EXPECT_EQ(l.v.offset, l.q.offset) << c.id;
        for (int i = 0; i < 3; ++i) EXPECT_EQ(l.v.stride[i], l.q.stride[i]) << c.id;
        EXPECT_LE(c.shape.seq_q, kSharedDecodeRows) << c.id << ": Q, K and V one view at a decode step";
        continue;
      }
      caught += !t.causal && t.dtype != DType::fp8 && c.v_std > 0;
    }
    EXPECT_EQ(prefixes, 2) << run << ": a qk_prefix and a qkv_prefix case";
  });
  EXPECT_EQ(runs, 56);
  EXPECT_EQ(caught, 28) << "both tiers of the 14 fp16-d64 and bf16-d128 runs";
  Shape prefix;  // Q the first 100 rows of K's view
  prefix.seq_q = 100;
  prefix.seq_kv = 300;
  EXPECT_THROW(case_layout(prefix, "bhsd+qk"), std::exception) << "a view shared with Q needs Sq = Skv";
  const CaseLayout l = case_layout(prefix, "bhsd@48+qk_prefix", 2, 2, 12345);
  EXPECT_EQ(l.q.offset, l.k.offset);
  EXPECT_EQ(l.q.stride[1], 300 * 64) << "K's head stride: 300 rows";
  EXPECT_EQ(l.q.offset * 2 % 256, tensor_alignment(48, 0, 12345)) << "Q keeps its class, K starts there";
  EXPECT_GE(l.q.buffer_elements, l.q.offset + prefix.elements(1, 300)) << "K's whole view from Q's base";
  Shape equal = prefix;
  equal.seq_q = 300;
  EXPECT_THROW(case_layout(equal, "bhsd+qk_prefix"), std::exception) << "a prefix is shorter than K";
  const CaseLayout all = case_layout(prefix, "kv_cache@16+qkv_prefix", 2, 2, 7);
  EXPECT_TRUE(all.q.offset == all.v.offset && all.q.stride[2] == all.v.stride[2]) << "V is K's view too";
  prefix.heads_q = 2;
  EXPECT_THROW(case_layout(prefix, "bhsd+qk_prefix"), std::exception) << "Hq = Hkv";
  EXPECT_THROW(case_layout(prefix, "bhsd+qkv_prefix"), std::exception) << "Hq = Hkv";
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
// Before, only the one kv case a tier could be one (qkv has Sq = Skv), by its source's odds: 6 of
// the 14 fp16-d64 and bf16-d128 runs over both tiers. Closed (append_shared_forms): a second kv
// case a tier in the regime the first is not in, so every run of both tiers, every task, has a K =
// V decode step (Sq <= 16, 256 keys or more) and a K = V prefill (Sq over 16 and 256 visible keys
// or more); and with Q too, a qkv_prefix decode step beside the qkv and qkv:short prefills. Since
// hacker round 25 the kv form has a twin at one sequence (kv:decode:one or kv:prefill:one) and
// kv:mla is a decode step too. Under the top-left causal mask a decode step sees 16 keys or fewer
// (the trick changes nothing), so the fp16 and bf16 tasks without the mask are the ones that catch
// it.
bool ends_with(const std::string& id, const std::string& tail) {
  return id.size() >= tail.size() && id.compare(id.size() - tail.size(), tail.size(), tail) == 0;
}
TEST(HackerRound24, KAndVOneViewMeetBothRegimesInEveryRun) {
  int runs = 0, caught = 0, forms_decode = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    ++runs;
    int decode = 0, prefill = 0, kv_cases = 0;
    bool seen = false;
    int qkv_decode = 0, qkv_prefill = 0;  // Q, K and V one view (qkv, qkv:short, qkv_prefix)
    for (const CaseSpec& c : cases) {
      const std::string view = layout_shared(c.layout);
      if (view == "qkv" || view == kQPrefixOfKV) {
        const bool step = c.shape.seq_q <= kSharedDecodeRows && c.shape.seq_kv >= kSharedMinKeys;
        ++(step ? qkv_decode : qkv_prefill);
        seen = seen || (step && skipping_chunks_shows(c, t.causal));
      }
      if (view != "kv") continue;
      ++kv_cases;
      EXPECT_GT(c.v_std, 0) << run << ": " << c.id;
      EXPECT_GE(c.shape.seq_kv, kSharedMinKeys) << run << ": " << c.id;
      if (c.shape.seq_q <= kSharedDecodeRows) {
        ++decode;
        seen = seen || skipping_chunks_shows(c, t.causal);
        forms_decode += ends_with(c.id, "/shared=kv:decode");
        if (ends_with(c.id, "/shared=kv")) std::cout << run << ": the kv case is a decode step\n";
      } else {
        ++prefill;
        EXPECT_GE(c.shape.visible_kv(t.causal), kSharedMinKeys) << run << ": " << c.id;
      }
    }
    EXPECT_EQ(kv_cases, 4) << run << ": kv, its other regime, kv:mla and the other regime at one sequence";
    EXPECT_EQ(decode + prefill, 4) << run;
    EXPECT_GE(decode, 2) << run << ": shared_kv_decode_half_chunks's regime, kv:mla among them";
    EXPECT_GE(prefill, 1) << run;
    EXPECT_EQ(qkv_decode, 1) << run << ": qkv_prefix";
    EXPECT_EQ(qkv_prefill, 2) << run << ": qkv and qkv:short";
    EXPECT_EQ(seen, !t.causal) << run;
    caught += seen && t.dtype != DType::fp8;
  });
  EXPECT_EQ(runs, 56);
  EXPECT_EQ(caught, 28) << "both tiers of the 14 fp16-d64 and bf16-d128 runs";
  // The tiers whose kv case is a decode step (hacker round 24's six: fp16-d64 cheap seeds 0, 12345,
  // 1511791795, 4294967295, deep fp16-d64 seed 7 and bf16-d128 seed 0; and fp8-d64 cheap seed
  // 2025) take kv:prefill, the other 49 kv:decode.
  EXPECT_EQ(forms_decode, 49) << "7 of the 56 tiers' kv case is a decode step";
}

// What the shared forms cost: eight cases a tier (qk:short, qkv:short, kv:decode or kv:prefill,
// qk_prefix, qkv_prefix; since hacker round 25 kv:mla, qk:short:one and kv:decode:one or
// kv:prefill:one), appended after every other case (so every other case keeps its index and name),
// and small beside the tier: their FLOPs (4 B Hq Sq Skv D, before the mask) against the tier's.
constexpr size_t kForms = 8;
bool is_form(const CaseSpec& c) {
  for (const char* form :
       {"/shared=qk:short", "/shared=qkv:short", "/shared=kv:decode", "/shared=kv:prefill", "/shared=kv:mla"})
    if (c.id.find(form) != std::string::npos) return true;
  return q_prefix(layout_shared(c.layout));
}
// The batch a form draws (hacker round 25): one for the ":one" twins; past 2 for the others, up to
// 8 at a decode step and 16 otherwise.
void expect_form_batch(const CaseSpec& c) {
  if (ends_with(c.id, ":one")) {
    EXPECT_EQ(c.shape.batch, 1) << c.id;
    return;
  }
  EXPECT_GE(c.shape.batch, kSharedFormMinBatch) << c.id;
  EXPECT_LE(c.shape.batch, c.shape.seq_q <= kSharedDecodeRows ? kSharedDecodeMaxBatch : kSharedFormMaxBatch) << c.id;
}
TEST(HackerRound24, SharedFormsAreSmallCasesAtTheEnd) {
  double worst_share = 0, most_flops = 0, most_cheap = 0, most_deep = 0;
  int64_t most_rows = 0;
  std::map<std::string, double> most_by_form;  // a form's label ("kv:mla") -> its most FLOPs in a run
  test::each_run_of_both_tiers([&](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    ASSERT_GE(cases.size(), kForms) << run;
    // Hacker round 27's model calls (run/model_cases.h) come after the forms.
    const size_t end =
        size_t(std::find_if(cases.begin(), cases.end(),
                            [](const CaseSpec& c) { return c.id.find("/model=") != std::string::npos; }) -
               cases.begin());
    double all = 0, forms = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const CaseSpec& c = cases[i];
      const double f =
          4.0 * c.shape.batch * c.shape.heads_q * double(c.shape.seq_q) * c.shape.seq_kv * c.shape.head_dim;
      all += f;
      EXPECT_EQ(is_form(c), i < end && i + kForms >= end)
          << run << ": the forms are the tier's last eight before its model calls: " << c.id;
      if (!is_form(c)) continue;
      forms += f;
      most_flops = std::max(most_flops, f);
      double& by_form = most_by_form[c.id.substr(c.id.rfind("/shared=") + 8)];
      by_form = std::max(by_form, f);
      most_rows = std::max(most_rows, int64_t(c.shape.batch) * c.shape.heads_q * c.shape.seq_q);
      expect_form_batch(c);
      EXPECT_LE(std::max(c.shape.seq_q, c.shape.seq_kv), kSharedFormMaxKeys) << c.id;
      EXPECT_EQ(c.id.rfind(run.find(" deep ") != std::string::npos ? "deep/" : "sampled/", 0), 0u) << c.id;
    }
    worst_share = std::max(worst_share, forms / all);
    double& most = run.find(" deep ") != std::string::npos ? most_deep : most_cheap;
    most = std::max(most, forms);
  });
  std::cout << fmt::format(
      "shared forms: at most {:.2g} of a tier's FLOPs, {:.3g} GFLOP and {} query rows a case; the eight "
      "together at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n",
      worst_share, most_flops / 1e9, most_rows, most_cheap / 1e9, most_deep / 1e9);
  for (const auto& [form, f] : most_by_form) std::cout << fmt::format("  {}: at most {:.3g} GFLOP\n", form, f / 1e9);
  EXPECT_LT(worst_share, 0.1);
  EXPECT_LE(most_flops, kSharedFormMaxFlops) << "the heads cut to keep every form small, in every run";
}

}  // namespace
}  // namespace evo::hacker_round24
