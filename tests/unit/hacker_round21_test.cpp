// Hacker round 21 (issue 29 item 5, lab/hack21/README.md): V's offset bands are no longer in every
// (b, KV head) sequence, read back from the draws (seeds pinned). A rule main did not have (its host
// function, v_offset_sequence, is new): on main every sequence carried the bands, so no case below
// existed and an overflow guard decided by batch 0's KV head 0 was exact everywhere
// (fp16_overflow_guard_head0.cu). Two of the round's open holes closed after it, in the fills:
// massive Q and K channels on normal's sampled cases (k_clamped_unless_large_v.cu) and an fp16
// input of small V (o_flush_fp16_subnormals.cu), each checked on the draws and on a host model of
// the gate's check (an honest kernel passes, the try fails).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "gates/correctness.h"
#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "policy/config.h"
#include "run/plan.h"
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
  EXPECT_EQ(sizeof(FillParams), 40u) << "FillParams mirrors EvoFill (support_kernels.cu), mean_every, prefix_rows, "
                                        "pair_every, grid_scale and prefix_group included";
}

// The fp16 runs of both tiers draw offset cases whose sums overflow fp16 where sequence 0 has no
// offset and another sequence has one: v_offset over >= 512 near-uniform keys (sums near 256 per
// key) or large_o over >= 8 keys (16 384 per key). fp16_overflow_guard_head0.cu rounds those
// sequences' band sums to Inf. By odds (one sequence in four dropped): 27 of the 28 pinned fp16
// runs had one (fp16-d128-causal cheap seed 1 none); 28 of 28 since small_v redrew the fp16 runs.
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

// --- A host model of one case and the gate's check of it (gates/correctness.h check_output) ---

// x rounded to fp16 (to nearest even, subnormals kept, as __float2half_rn): its bits.
uint16_t fp16_bits(double x) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  if (a >= 65520.0) return sign | 0x7C00;
  if (a < std::ldexp(1.0, -14)) return sign | uint16_t(std::nearbyint(std::ldexp(a, 24)));  // steps of 2^-24
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  double m = std::nearbyint(std::ldexp(a, 11 - e));
  if (m == 2048) m = 1024, ++e;
  if (e + 14 >= 31) return sign | 0x7C00;
  return uint16_t(sign | (e + 14) << 10 | (int(m) - 1024));
}
double fp16(double x) { return half_bits_to_float(fp16_bits(x)); }

double normal_draw(SplitMix& r) {
  const double u = r.unit(), v = r.unit();
  return std::sqrt(-2 * std::log(1 - u)) * std::cos(2 * M_PI * v);
}

// One (b, head) sequence of a case: `rows` queries over `keys` keys at head dim `dim`, Q, K and V
// rounded to fp16 as the worker's fill stores them.
struct Sequence {
  int rows = 0, keys = 0, dim = 0;
  std::vector<double> q, k, v;
};

// Q and K of std `qk`, V of std `v_std`; with `massive`, the worker's massive bands on Q and K
// (fill_massive_channels: Q x 4096 and K / 4096 on band 0, the reverse on band 1, fp16).
Sequence draw_sequence(uint64_t seed, int rows, int keys, int dim, double v_std, bool massive) {
  Sequence s{rows, keys, dim, {}, {}, {}};
  SplitMix r{seed};
  const auto bands = massive_channel_bands(unsigned(seed), dim);
  const double big = massive_channel_scale(false);
  auto spread = [&](bool is_q, int d) {
    if (!massive) return 1.0;
    for (int b = 0; b < 2; ++b)
      if (d >= bands[size_t(b)].begin && d < bands[size_t(b)].end) return (b == 0) == is_q ? big : 1 / big;
    return 1.0;
  };
  for (int i = 0; i < rows * dim; ++i) s.q.push_back(fp16(normal_draw(r) * spread(true, i % dim)));
  for (int i = 0; i < keys * dim; ++i) s.k.push_back(fp16(normal_draw(r) * spread(false, i % dim)));
  for (int i = 0; i < keys * dim; ++i) s.v.push_back(fp16(normal_draw(r) * v_std));
  return s;
}

// A kernel's output of the sequence: scores in fp32 (K read through `k_read`), P = exp(s - max)
// rounded to fp16 as a tensor-core P.V takes it, sums in fp32, O through `store` to fp16 bits.
// `reference`: every step in double, no rounding, O as the fp32 the reference kernel writes.
template <class KRead, class Store>
std::string attend(const Sequence& s, double scale, bool reference, KRead k_read, Store store) {
  std::string out;
  std::vector<double> score(size_t(s.keys));
  for (int i = 0; i < s.rows; ++i) {
    double m = -INFINITY;
    for (int j = 0; j < s.keys; ++j) {
      double dot = 0;
      float dot32 = 0;
      for (int d = 0; d < s.dim; ++d) {
        const double q = s.q[size_t(i * s.dim + d)], k = k_read(s.k[size_t(j * s.dim + d)]);
        dot += q * k;
        dot32 = std::fma(float(q), float(k), dot32);
      }
      score[size_t(j)] = reference ? dot * scale : double(dot32 * float(scale));
      m = std::max(m, score[size_t(j)]);
    }
    std::vector<double> o(size_t(s.dim), 0.0);
    double l = 0;
    for (int j = 0; j < s.keys; ++j) {
      const double p = reference ? std::exp(score[size_t(j)] - m) : fp16(double(std::exp(float(score[size_t(j)] - m))));
      l = reference ? l + p : double(float(l) + float(p));
      for (int d = 0; d < s.dim; ++d) {
        const double pv = p * s.v[size_t(j * s.dim + d)];
        o[size_t(d)] = reference ? o[size_t(d)] + pv : double(float(o[size_t(d)]) + float(pv));
      }
    }
    for (int d = 0; d < s.dim; ++d) {
      const double x = reference ? o[size_t(d)] / l : double(float(o[size_t(d)]) / float(l));
      if (reference) {
        const float f = float(x);
        out.append(reinterpret_cast<const char*>(&f), 4);
      } else {
        const uint16_t h = store(x);
        out.append(reinterpret_cast<const char*>(&h), 2);
      }
    }
  }
  return out;
}

std::string reference_of(const Sequence& s, double scale) {
  return attend(
      s, scale, true, [](double k) { return k; }, [](double) { return uint16_t(0); });
}
std::string honest_of(const Sequence& s, double scale) {
  return attend(
      s, scale, false, [](double k) { return k; }, [](double x) { return fp16_bits(x); });
}

// --- k_clamped_unless_large_v.cu: massive Q and K channels on normal's sampled cases ---

// Whether the worker draws massive channels for this case (worker_device.h Problem::fill).
bool draws_massive_channels(const Task& t, const CaseSpec& c) {
  return massive_channels(c) && t.dtype != DType::fp8 && layout_shared(c.layout).empty() && !c.two_streams;
}

// The rule: a sampled case of normal (Q, K and V of std 1, no mean) draws them as large_v does; a
// fixed case of normal does not (its references and records stay comparable), nor any input of
// a mean, a sink, outlier rows or Q and K of another spread. On main massive_channels was false
// for normal in every case: this test fails there.
TEST(HackerRound21, SampledNormalCasesDrawMassiveChannelsFixedOnesDoNot) {
  const GatesConfig g = test::repo_gates();
  for (const auto& [name, in] : g.distributions)
    for (bool sampled : {false, true}) {
      CaseSpec c;
      c.shape.head_dim = 64;
      c.massive_sampled = sampled;
      set_inputs(c, in, in.v_mean);
      EXPECT_EQ(massive_channels(c), name == "large_v" || (sampled && name == "normal"))
          << name << (sampled ? " (sampled)" : " (fixed)");
    }
  // The plan of a run: every fixed case (gate sets, the deep tier's fixed sets and far cases,
  // benchmark and post-timing cases) of normal keeps ordinary channels; the sampled ones do not.
  // (The in-flight cases, on two streams, never draw them: worker_device.h.)
  const Task t = parse_task("fp16-d64");
  const EvalPlan p = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 7u, true});
  std::set<std::string> drawn;  // the covering rows' cases of both tiers
  for (const auto& tier : {draw_sampled_cases(g, t, 7u), draw_deep_cases(g, t, 7u)})
    for (const CaseSpec& c : tier)
      if (c.id.find("/in_flight/") == std::string::npos) drawn.insert(c.id);
  int fixed_normal = 0, sampled_normal = 0;
  auto look = [&](const CaseSpec& c) {
    // Round 28's value cases lay one pattern each: only "massive_*" has massive channels.
    if (c.inputs != "normal" || !c.values.empty()) return;
    const bool sampled = drawn.count(c.id) > 0;
    EXPECT_EQ(massive_channels(c), sampled) << c.id;
    (sampled ? sampled_normal : fixed_normal) += 1;
  };
  for (const CaseSpec& c : p.gate_cases) look(c);
  for (const CaseSpec& c : p.deep_cases) look(c);
  for (const BenchSpec& b : p.bench) {
    EXPECT_FALSE(massive_channels(b.timed)) << b.id;
    EXPECT_FALSE(b.fresh.inputs == "normal" && massive_channels(b.fresh)) << b.id;
  }
  EXPECT_GT(fixed_normal, 0);
  EXPECT_GT(sampled_normal, 0);
}

// Every fp16 and bf16 run of both tiers (pinned seeds) draws normal cases with massive channels at
// a scale where the scores move weights (>= 1/sqrt(D) / 2) over 2 keys or more: V there is N(0, 1),
// so no element of its first row reaches 16 (a 16-sigma draw), and K's massive band (std 4096 in
// fp16, 65 536 in bf16) passes 256 in ~95 % of its elements: k_clamped_unless_large_v.cu clamps
// it. On main no normal case drew them.
TEST(HackerRound21, EveryFp16AndBf16RunDrawsMassiveChannelsWithOrdinaryV) {
  int least = 1 << 30, runs = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    if (t.dtype == DType::fp8) return;
    int moving = 0;
    for (const CaseSpec& c : cases) {
      if (c.inputs != "normal" || !draws_massive_channels(t, c)) continue;
      EXPECT_EQ(c.v_std, 1.0) << c.id;
      if (c.scale >= 0.5 / std::sqrt(double(t.head_dim)) && c.shape.seq_kv >= 2) ++moving;
    }
    ++runs;
    EXPECT_GE(moving, 2) << run << ": normal cases with massive channels that move weights";
    least = std::min(least, moving);
  });
  EXPECT_EQ(runs, 42);
  std::cout << fmt::format(
      "every fp16 and bf16 run: at least {} normal cases with massive channels that move weights\n", least);
}

// On a host model of such a case (fp16, D = 64, 256 keys, scale 1/sqrt(D), the seed pinned): an
// honest kernel (fp32 scores and sums, P in fp16, O rounded to nearest) passes normal's tolerance,
// and the try (K clamped to +-256, as no V element reaches 16) fails it.
TEST(HackerRound21, MassiveChannelsWithOrdinaryVPassAnHonestKernelAndCatchTheClamp) {
  const GatesConfig g = test::repo_gates();
  const Task t = parse_task("fp16-d64");
  const int keys = 256;
  const Tolerance tol = g.tolerance(t, "normal").for_keys(keys);
  const Sequence s = draw_sequence(21, 16, keys, 64, 1.0, true);
  double k_max = 0, v_max = 0;
  for (double k : s.k) k_max = std::max(k_max, std::fabs(k));
  for (double v : s.v) v_max = std::max(v_max, std::fabs(v));
  EXPECT_GT(k_max, 256.0);
  EXPECT_LT(k_max, 65504.0) << "finite in fp16";
  EXPECT_LT(v_max, 16.0) << "no V element the try reads as large";
  const double scale = 1 / std::sqrt(64.0);
  const std::string ref = reference_of(s, scale);
  const OutputCheck honest = check_output(honest_of(s, scale), ref, DType::fp16, tol);
  EXPECT_TRUE(honest.pass) << honest.reason;
  const std::string clamped = attend(
      s, scale, false, [](double k) { return std::clamp(k, -256.0, 256.0); }, [](double x) { return fp16_bits(x); });
  const OutputCheck tried = check_output(clamped, ref, DType::fp16, tol);
  EXPECT_FALSE(tried.pass);
  std::cout << fmt::format("massive channels, ordinary V: honest rel L2 {:.3g}, K clamped at 256: {}\n", honest.rel_l2,
                           tried.reason);
}

// --- o_flush_fp16_subnormals.cu: an fp16 input of small V (small_v) ---

// The flush: an honest kernel whose outputs under 2^-14 are written as 0.
std::string flushed_of(const Sequence& s, double scale) {
  return attend(
      s, scale, false, [](double k) { return k; },
      [](double x) { return std::fabs(x) < std::ldexp(1.0, -14) ? uint16_t(0) : fp16_bits(x); });
}

// small_v: Q and K as normal's, V of std 0.01 (outputs 1e-2 over one key to ~3e-5 over 131 072
// uniform ones, a share of them under 2^-14 everywhere), fp16 tasks only, its tolerance the
// dtype's with atol scaled by V's spread (0.003 x 0.01), so the check judges the error relative to
// V as it does on normal (the errors of an honest kernel scale with V but for fp16's subnormal
// steps, 2^-24, a thousandth of atol).
TEST(HackerRound21, SmallVIsAnFp16InputWithAtolScaledByItsV) {
  const GatesConfig g = test::repo_gates();
  ASSERT_TRUE(g.distributions.count("small_v"));
  const InputDistribution& in = g.distributions.at("small_v");
  EXPECT_TRUE(in.applies_to("fp16"));
  EXPECT_FALSE(in.applies_to("bf16"));
  EXPECT_FALSE(in.applies_to("fp8"));
  EXPECT_EQ(in.qk_std, 1.0);
  EXPECT_EQ(in.v_std, 0.01);
  EXPECT_EQ(in.v_mean, 0.0);
  const Task t = parse_task("fp16-d64");
  const Tolerance &dtype = g.tolerance(t), &tol = g.tolerance(t, "small_v");
  EXPECT_DOUBLE_EQ(tol.atol, dtype.atol * in.v_std);
  EXPECT_LT(tol.atol, std::ldexp(1.0, -14) / 2) << "a flushed output of 2^-15 to 2^-14 is beyond atol";
  EXPECT_EQ(tol.rtol, dtype.rtol);
  EXPECT_EQ(tol.rel_l2, dtype.rel_l2) << "fp16's own relative L2";
  EXPECT_NE(std::find(g.sampled.inputs.begin(), g.sampled.inputs.end(), "small_v"), g.sampled.inputs.end());
}

// Every fp16 run of both tiers (pinned seeds) draws small_v with every scale of the space (the
// covering array pairs inputs with scales); bf16 and fp8 runs never. Each cheap fp16 run has a
// small_v case over 256 keys or more (the last row's) at a scale <= 1/sqrt(D), where most outputs
// sit near 1e-3 or under (the host model below: the flush fails there by atol and relative L2).
// On main no run drew small_v: this test fails there.
TEST(HackerRound21, EveryFp16RunDrawsSmallVWithEveryScale) {
  const GatesConfig g = test::repo_gates();
  int least = 1 << 30, most = 0, runs = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    int n = 0, long_rows = 0;
    std::set<std::string> scales;
    for (const CaseSpec& c : cases) {
      if (c.inputs != "small_v") continue;
      ++n;
      const size_t at = c.id.find("/scale=") + 7;
      const std::string scale = c.id.substr(at, c.id.find("/small_v", at) - at);
      scales.insert(scale.substr(0, scale.find(':')));
      const int keys = t.causal ? std::min(c.shape.seq_q, c.shape.seq_kv) : c.shape.seq_kv;
      long_rows += keys >= 256 && c.scale <= 1 / std::sqrt(double(t.head_dim)) * 1.0001;
    }
    if (t.dtype != DType::fp16) {
      EXPECT_EQ(n, 0) << run;
      return;
    }
    EXPECT_GE(scales.size(), g.sampled.scales.size())
        << run << ": small_v with every scale (the deep tier has one more)";
    if (run.find(" cheap ") != std::string::npos) {
      ++runs;
      EXPECT_GE(long_rows, 1) << run << ": small_v over 256 keys or more at a scale <= 1/sqrt(D)";
      least = std::min(least, n);
      most = std::max(most, n);
    }
  });
  EXPECT_EQ(runs, 14);
  std::cout << fmt::format("every cheap fp16 run: {} to {} small_v cases, every scale\n", least, most);
}

// On a host model (fp16, D = 64, seeds pinned) over 1 to 131 072 keys at scale 1/sqrt(D) and
// 1e-5/D (uniform weights): an honest kernel (fp32 scores and sums, P in fp16, O rounded to nearest,
// subnormals kept) passes small_v's tolerance everywhere, its relative L2 (fp16's steps of 2^-24
// under 2^-14) at most ~5.3e-4 over 131 072 uniform keys; the flush fails from 16 keys on. Over
// one key O is a V row, so the flush fails only where one of the case's D x B x Hkv distinct
// values lies between atol and 2^-14 (0.25 % of them): by odds, printed (here one sequence's 64).
TEST(HackerRound21, SmallVPassesAnHonestKernelAndCatchesTheFlush) {
  const GatesConfig g = test::repo_gates();
  const Task t = parse_task("fp16-d64");
  double worst = 0;
  for (int keys : {1, 16, 256, 4096, 16384, 131072})
    for (double scale : {1 / std::sqrt(64.0), 1e-5 / 64}) {
      const int rows = std::clamp(262144 / keys, 2, 256);
      const Tolerance tol = g.tolerance(t, "small_v").for_keys(keys);
      const Sequence s = draw_sequence(uint64_t(keys) * 31 + (scale < 0.01), rows, keys, 64, 0.01, false);
      const std::string ref = reference_of(s, scale);
      const OutputCheck honest = check_output(honest_of(s, scale), ref, DType::fp16, tol);
      EXPECT_TRUE(honest.pass) << keys << " keys, scale " << scale << ": " << honest.reason;
      worst = std::max(worst, honest.rel_l2);
      const OutputCheck flushed = check_output(flushed_of(s, scale), ref, DType::fp16, tol);
      if (keys > 1) {
        EXPECT_FALSE(flushed.pass) << keys << " keys, scale " << scale << ": the flush passes";
      }
      std::cout << fmt::format("small_v, {} keys x {} rows, scale {:.3g}: honest rel L2 {:.3g}; flush: {}\n", keys,
                               rows, scale, honest.rel_l2, flushed.pass ? "passes" : flushed.reason);
    }
  EXPECT_LT(worst, 0.7 * g.tolerance(t, "small_v").rel_l2) << "an honest kernel's margin";
}

// o_round_toward_zero_past_64k_keys.cu: fp16 outputs rounded toward zero only past 65 536 keys
// (about -3.4e-4 of |ref|). With the reference's sums in double, the shipped fp16 kernels' bias on
// normal, large_logits, outlier_rows and large_v stayed within 0.66 of a bound flat to 65 536 keys
// (H200, 2026-12-01, lab/notes/reference-sums.md), so those inputs grow their bound only past
// there: every pinned fp16 deep plan has a case past 65 536 keys of one of them, over at least
// kBiasMinElements outputs, whose bound leaves the truncation a margin of a quarter for an honest
// bias of the other sign (the fixed frontier row of outlier_rows over 131 072 keys among them).
TEST(HackerRound21, EveryFp16DeepPlanBoundsTheBiasPast64kKeys) {
  const GatesConfig g = test::repo_gates();
  constexpr double kTruncation = 3.4e-4;
  test::each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    if (t.dtype != DType::fp16) return;
    int bounded = 0;
    for (const CaseSpec& c : make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true}).deep_cases) {
      const bool ordinary =
          c.inputs == "normal" || c.inputs == "large_logits" || c.inputs == "outlier_rows" || c.inputs == "large_v";
      const Shape& s = c.shape;
      const size_t outputs = size_t(s.batch) * size_t(s.heads_q) * size_t(s.seq_q) * size_t(s.head_dim);
      if (!ordinary || s.seq_kv <= 65536 || outputs < kBiasMinElements) continue;
      const double bound = g.tolerance(t, c.inputs).for_keys(s.seq_kv).bias;
      bounded += bound > 0 && bound <= 0.75 * kTruncation;
    }
    EXPECT_GE(bounded, 1) << task << " deep seed " << seed << ": a bounded ordinary case past 65 536 keys";
  });
}

}  // namespace
}  // namespace evo::hacker_round21
