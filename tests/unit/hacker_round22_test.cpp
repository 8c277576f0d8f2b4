// Hacker round 22 (issue 29 item 5, lab/hack22/README.md): what catches each try, read back from the
// draws (seeds pinned) and from host models of the check. Three rules main did not have: range
// scales near the listed points (near_point_scale), Q's massive band in either half of the head
// (massive_q_band_high) and the bias bound on small cases whose bias stands out of its noise
// (bias_enforced). On main no range scale lay within 1% of a point, K's large band always sat in
// [D/2, D) and no case under 4 096 elements was held to the bias bound, so the tests of those
// rules below fail there.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "gates/correctness.h"
#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "policy/config.h"
#include "run/sampler.h"
#include "store/records.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round22 {
namespace {

// The worker's rule for massive channels (worker_device.h Problem::fill), as round 20's test has it.
bool draws_massive_channels(const Task& t, const CaseSpec& c) {
  return massive_channels(c) && t.dtype != DType::fp8 && layout_shared(c.layout).empty() && !c.two_streams;
}

std::vector<double> listed_points(const GatesConfig& g, int head_dim) {
  std::vector<double> out;
  for (const ScaleChoice& p : g.sampled.scales)
    if (!p.range) out.push_back(p.value(head_dim));
  return out;
}

// scale_snap_near_points.cu's rule: a scale within 1% of a listed point becomes the point (0 when
// none is that near, or when the scale is the point itself: the try changes nothing there).
double snapped_point(const std::vector<double>& points, double scale) {
  for (double p : points)
    if (std::abs(scale / p - 1) < 0.01 && scale != p) return p;
  return 0;
}

// Attention on the host: `rows` query rows of Q, K ~ N(0, qk_std^2), V ~ N(0, 1), D = `d`.
std::vector<double> attention(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                              int rows, int keys, int d, double scale) {
  std::vector<double> o(size_t(rows) * d, 0.0);
  std::vector<double> s(static_cast<size_t>(keys), 0.0);
  for (int i = 0; i < rows; ++i) {
    double m = -INFINITY, l = 0;
    for (int j = 0; j < keys; ++j) {
      double dot = 0;
      for (int c = 0; c < d; ++c) dot += q[size_t(i) * d + c] * k[size_t(j) * d + c];
      s[size_t(j)] = dot * scale;
      m = std::max(m, s[size_t(j)]);
    }
    for (int j = 0; j < keys; ++j) {
      const double p = std::exp(s[size_t(j)] - m);
      l += p;
      for (int c = 0; c < d; ++c) o[size_t(i) * d + c] += p * v[size_t(j) * d + c];
    }
    for (int c = 0; c < d; ++c) o[size_t(i) * d + c] /= l;
  }
  return o;
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& ref) {
  double e = 0, r = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    e += (a[i] - ref[i]) * (a[i] - ref[i]);
    r += ref[i] * ref[i];
  }
  return std::sqrt(e / r);
}

struct Problem {
  std::vector<double> q, k, v;
  int rows, keys, d;
};

Problem draw_problem(double qk_std, int rows, int keys, int d, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Problem p{{}, {}, {}, rows, keys, d};
  for (int i = 0; i < rows * d; ++i) p.q.push_back(qk_std * normal(rng));
  for (int i = 0; i < keys * d; ++i) p.k.push_back(qk_std * normal(rng));
  for (int i = 0; i < keys * d; ++i) p.v.push_back(normal(rng));
  return p;
}

// The relative L2 error of computing at scale `other` instead of `scale` (host model, 32 rows).
double scale_error(double qk_std, int keys, int d, double scale, double other, unsigned seed) {
  const Problem p = draw_problem(qk_std, 32, keys, d, seed);
  return rel_l2(attention(p.q, p.k, p.v, p.rows, p.keys, p.d, other),
                attention(p.q, p.k, p.v, p.rows, p.keys, p.d, scale));
}

// The rule: three in four of a range's cases near a point inside it (half of those near 1/sqrt(D)),
// p (1 +- u) with u in [0.1%, 1%]; the rest as before (more than 1% from every point); always
// inside the range.
TEST(HackerRound22, RangesDrawMostOfTheirScalesNearAListedPoint) {
  const GatesConfig g = test::repo_gates();
  for (int d : {64, 128}) {
    const std::vector<double> points = listed_points(g, d);
    for (const ScaleChoice& sc : g.sampled.scales) {
      if (!sc.range) continue;
      const double lo = sc.value(d), hi = sc.upper(d);
      const bool has_point = std::any_of(points.begin(), points.end(), [&](double p) { return p >= lo && p <= hi; });
      int near = 0, far = 0;
      std::map<double, int> near_by_point;
      SplitMix rng{uint64_t(d) * 977};
      for (int i = 0; i < 4000; ++i) {
        const double x = std::exp(std::log(lo) + rng.unit() * (std::log(hi) - std::log(lo)));
        const double y = near_point_scale(g.sampled, sc, d, x);
        EXPECT_GE(y, lo);
        EXPECT_LE(y, hi);
        if (y == x) {
          ++far;
          continue;
        }
        ++near;
        double best = INFINITY, at = 0;
        for (double p : points)
          if (std::abs(y / p - 1) < best) best = std::abs(y / p - 1), at = p;
        EXPECT_GE(best, kNearPointMin * 0.999) << sc.text << ": " << y << " is a whitelist's point";
        EXPECT_LE(best, kNearPointMax * 1.001) << sc.text << ": " << y;
        ++near_by_point[at];
      }
      if (!has_point) {
        EXPECT_EQ(near, 0) << sc.text << " (D " << d << ") holds no listed point";
        continue;
      }
      EXPECT_GT(near, 2800) << sc.text << " (D " << d << ")";
      EXPECT_GT(far, 850) << sc.text << " (D " << d << ")";
      EXPECT_GT(near_by_point[1 / std::sqrt(double(d))], 1300) << sc.text << ": 1/sqrt(D) in half the near draws";
      for (double p : points) {
        if (p >= lo && p <= hi) {
          EXPECT_GT(near_by_point[p], 100) << sc.text << " near " << p << " (D " << d << ")";
        }
      }
    }
  }
}

// scale_snap_near_points.cu: the fp16 runs of both tiers hold a case whose scale lies within 1% of
// a listed point (not on it) on normal, large_logits or large_v, whose snapped scale moves O past
// twice fp16's rel_l2 (0.001) in a host model of the case (32 rows, up to 256 of its keys). On main
// no such case existed (every range scale more than 1% from every point). By odds: 26 of the 28
// pinned runs (every deep run); fp16-d64 cheap seed 1511791795 and fp16-d128-causal cheap seed 1
// have none (their range cases on normal and large_v see one or two keys, where any scale is
// nearly exact, and their large_logits ones move O by under 2e-3).
TEST(HackerRound22, Fp16RunsHaveANearPointCaseThatASnapMoves) {
  const GatesConfig g = test::repo_gates();
  int runs = 0, lacking = 0, most = 0, near_inv_sqrt_d = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    if (t.dtype != DType::fp16) return;
    const std::vector<double> points = listed_points(g, t.head_dim);
    int moved = 0;
    bool inv_sqrt_d = false;
    for (const CaseSpec& c : cases) {
      const double p = snapped_point(points, c.scale);
      if (p == 0 || c.v_mean != 0 || c.q_mean != 0 || c.outlier_every != 0 || c.k_sink != 0) continue;
      const int keys = std::min(c.shape.visible_kv(t.causal), 256);
      if (keys < 8 || scale_error(c.qk_std, keys, t.head_dim, c.scale, p, c.seed) < 2e-3) continue;
      ++moved;
      inv_sqrt_d |= std::abs(p * std::sqrt(double(t.head_dim)) - 1) < 1e-9;
    }
    ++runs;
    near_inv_sqrt_d += inv_sqrt_d;
    most = std::max(most, moved);
    if (moved == 0) {
      ++lacking;
      std::cout << run << ": no case near a listed scale that a 1% snap moves past 2e-3\n";
    }
  });
  EXPECT_EQ(runs, 28);
  EXPECT_LE(lacking, 2) << "by odds: 2 of 28 pinned runs lack one";
  std::cout << fmt::format(
      "{} of {} fp16 runs of both tiers hold a case near a listed scale that a 1% snap moves past 2e-3 (up to {} "
      "in a run); {} of them one near 1/sqrt(D)\n",
      runs - lacking, runs, most, near_inv_sqrt_d);
}

// The rule: Q's large band is v_offset_bands' first position in about half the cases and its second
// in the rest; K's the other one; the two never meet.
TEST(HackerRound22, MassiveBandsTakeEitherHalfOfTheHead) {
  for (int d : {64, 128}) {
    int q_high = 0;
    for (unsigned seed = 0; seed < 4000; ++seed) {
      const auto b = massive_channel_bands(seed, d);
      const auto v = v_offset_bands(unsigned(seed ^ kMassiveChannelSalt), d, 0.f);
      const bool high = massive_q_band_high(seed);
      q_high += high;
      EXPECT_EQ(b[0].begin, high ? v[1].begin : v[0].begin);
      EXPECT_EQ(b[1].begin, high ? v[0].begin : v[1].begin);
      EXPECT_EQ(high, b[0].begin >= d / 2) << "Q's large band in [D/2, D) exactly when drawn so";
      EXPECT_TRUE(b[0].end <= b[1].begin || b[1].end <= b[0].begin);
    }
    EXPECT_GT(q_high, 1800);
    EXPECT_LT(q_high, 2200);
  }
}

// k_clamped_256_low_half.cu and q_clamped_512_high_half.cu: every fp16 and bf16 run of both tiers
// draws massive-channel cases (two keys or more, scale >= 1e-3: the clamps erase the band's D/4
// products, a logit error of std ~ scale sqrt(D/4), 4e-3 at 1e-3 and D 64) whose K band lies in
// [0, D/2) and whose Q band in [D/2, D). On main none did (K's band was always the second).
TEST(HackerRound22, EveryRunHasLargeKInTheLowerHalfAndLargeQInTheUpper) {
  int runs = 0, least = 1 << 30;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    if (t.dtype == DType::fp8) return;
    int swapped = 0;
    for (const CaseSpec& c : cases) {
      if (!draws_massive_channels(t, c) || c.scale < 1e-3 || c.shape.seq_kv < 2) continue;
      const auto b = massive_channel_bands(c.seed, t.head_dim);  // [0] Q large, [1] K large
      swapped += b[1].end <= t.head_dim / 2 && b[0].begin >= t.head_dim / 2;
    }
    ++runs;
    EXPECT_GE(swapped, 1) << run << ": no massive case with K large below D/2 and Q large above";
    least = std::min(least, swapped);
  });
  EXPECT_EQ(runs, 42);
  std::cout << fmt::format("every fp16 and bf16 run: at least {} massive case(s) with K large in [0, D/2)\n", least);
}

// The clamps and the flushes on a host model of a massive-channel case (fp16, D 64, 256 keys, Q's
// large band [0, 16), K's [32, 48), and swapped): the flushes move O past twice fp16's rel_l2 at
// scales 1/sqrt(D) and 1/D, the half-clamps at 1/sqrt(D), 1/D and 1e-3 where the swapped bands put
// the large values in their half, and not at all on main's bands.
TEST(HackerRound22, ClampsAndFlushesMoveAMassiveCase) {
  const int d = 64, keys = 256, rows = 32;
  const float big = massive_channel_scale(false);
  auto massive = [&](bool q_high) {
    Problem p = draw_problem(1.0, rows, keys, d, 22);
    const int q0 = q_high ? 32 : 0, k0 = q_high ? 0 : 32;
    for (int i = 0; i < rows; ++i)
      for (int c = 0; c < 16; ++c) p.q[size_t(i) * d + q0 + c] *= big, p.q[size_t(i) * d + k0 + c] /= big;
    for (int j = 0; j < keys; ++j)
      for (int c = 0; c < 16; ++c) p.k[size_t(j) * d + k0 + c] *= big, p.k[size_t(j) * d + q0 + c] /= big;
    return p;
  };
  auto error = [&](const Problem& p, const std::function<double(bool, int, double)>& read, double scale) {
    std::vector<double> q = p.q, k = p.k;
    for (size_t i = 0; i < q.size(); ++i) q[i] = read(true, int(i % d), q[i]);
    for (size_t i = 0; i < k.size(); ++i) k[i] = read(false, int(i % d), k[i]);
    return rel_l2(attention(q, k, p.v, rows, keys, d, scale), attention(p.q, p.k, p.v, rows, keys, d, scale));
  };
  const double sub = std::ldexp(1.0, -14);
  auto k_low_clamp = [&](bool is_q, int c, double x) { return !is_q && c < d / 2 ? std::clamp(x, -256.0, 256.0) : x; };
  auto q_high_clamp = [&](bool is_q, int c, double x) { return is_q && c >= d / 2 ? std::clamp(x, -512.0, 512.0) : x; };
  auto q_flush = [&](bool is_q, int, double x) { return is_q && std::abs(x) < sub ? 0.0 : x; };
  auto k_flush = [&](bool is_q, int, double x) { return !is_q && std::abs(x) < sub ? 0.0 : x; };
  const double s = 1 / std::sqrt(double(d));
  for (bool q_high : {false, true}) {
    const Problem p = massive(q_high);
    // main's bands (Q low, K high): the half-clamps change nothing; the swapped bands: far past
    for (double scale : {s, 1.0 / d, 1e-3}) {
      EXPECT_EQ(error(p, k_low_clamp, scale) > 2e-3, q_high) << "K clamped below D/2, scale " << scale;
      EXPECT_EQ(error(p, q_high_clamp, scale) > 2e-3, q_high) << "Q clamped from D/2, scale " << scale;
      EXPECT_EQ(error(p, k_low_clamp, scale), q_high ? error(p, k_low_clamp, scale) : 0.0);
    }
    for (double scale : {s, 1.0 / d}) {
      EXPECT_GT(error(p, q_flush, scale), 2e-3) << "Q flushed, scale " << scale;
      EXPECT_GT(error(p, k_flush, scale), 2e-3) << "K flushed, scale " << scale;
    }
  }
}

// x in fp16 bits, to nearest or toward zero, through fp16's finite values (as error_bias_test.cpp).
uint16_t to_fp16(float x, bool toward_zero) {
  static const std::vector<float> values = [] {
    std::vector<float> out;
    for (uint16_t b = 0; b <= 0x7BFF; ++b) out.push_back(half_bits_to_float(b));
    return out;
  }();
  const float a = std::abs(x);
  size_t i = size_t(std::upper_bound(values.begin(), values.end(), a) - values.begin()) - 1;
  if (!toward_zero && i + 1 < values.size() && values[i + 1] - a < a - values[i]) ++i;
  return uint16_t(i) | (x < 0 ? 0x8000 : 0);
}

// A small case's outputs (~N(0, 0.05^2): a short row's average of V), fp16 to nearest or toward
// zero, and their fp32 reference.
OutputCheck small_check(size_t n, bool toward_zero, const Tolerance& tol, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 0.05f);
  std::vector<float> ref(n);
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = to_fp16(ref[i] = normal(rng), toward_zero);
  return check_output(std::string(reinterpret_cast<const char*>(out.data()), 2 * n),
                      std::string(reinterpret_cast<const char*>(ref.data()), 4 * n), DType::fp16, tol);
}

// o_round_toward_zero_small_calls.cu: the fixed small shapes the gate runs on every candidate hold
// under 4 096 outputs at both head dims (on normal and large_logits), and there truncation's bias
// stands far out of its noise, so the bound holds it; rounding to nearest passes at every size. On
// main (bias enforced from 4 096 elements only) every truncated case below passed. (Truncation's
// z is about 0.7 sqrt(n) on outputs of mixed sizes: 64 outputs, 1x1x1x1x300 at D 64, stay near
// 5.5 sigma; 768, 1x4x1x3x1000, near 19.)
TEST(HackerRound22, SmallCasesAreHeldToTheBiasBoundWhereTheBiasStandsOut) {
  const GatesConfig g = test::repo_gates();
  for (const char* task : {"fp16-d64", "fp16-d128"}) {
    const Task t = parse_task(task);
    int small = 0;
    for (const Shape& s : g.shapes(g.gate_sets, t))
      small += int64_t(s.batch) * s.heads_q * s.seq_q * s.head_dim < int64_t(kBiasMinElements);
    EXPECT_GE(small, 2) << task << ": fixed gate shapes under 4 096 outputs";
  }
  EXPECT_NE(
      std::find_if(g.inputs.begin(), g.inputs.end(), [](const InputDistribution& in) { return in.name == "normal"; }),
      g.inputs.end());
  const Tolerance normal = g.tolerance(parse_task("fp16-d64"), "normal");
  ASSERT_GT(normal.bias, 0);
  for (size_t n : {size_t(256), size_t(768), size_t(2048), kBiasMinElements - 1}) {
    for (unsigned seed = 1; seed <= 5; ++seed) {
      const OutputCheck rz = small_check(n, true, normal, seed), rn = small_check(n, false, normal, seed);
      EXPECT_FALSE(rz.pass) << n << " elements, seed " << seed << ": bias " << rz.bias;
      EXPECT_NE(rz.reason.find("errors biased toward zero"), std::string::npos) << rz.reason;
      EXPECT_LT(rz.rel_l2, normal.rel_l2) << "only the bias sees it";
      EXPECT_TRUE(rn.pass) << n << " elements, seed " << seed << ": " << rn.reason;
    }
  }
  // The noise rule itself: errors of one sign stand out, errors of mixed signs do not.
  EXPECT_TRUE(bias_enforced(64, 64 * 1e-4, 64 * 1e-8));   // 64 equal errors: sqrt(64) = 8 sigma
  EXPECT_FALSE(bias_enforced(25, 25 * 1e-4, 25 * 1e-8));  // 5 sigma
  EXPECT_FALSE(bias_enforced(1000, 3e-4, 1000 * 1e-8));   // 0.1 sigma
  EXPECT_TRUE(bias_enforced(kBiasMinElements, 0, 1));     // from 4 096 elements: always, as before
}

// Honest records: no ok fp16 or bf16 check under 4 096 elements carries a bias past its bound (its
// key count's) that could stand 6 sigma out (|bias| / rel_l2 x sqrt(n) bounds the noise ratio), so
// the new rule rejects no honest check on record.
TEST(HackerRound22, NoHonestSmallCheckOnRecordWouldFailTheBound) {
  const GatesConfig g = test::repo_gates();
  const RecordSet rs = read_records(test::source_root() / "results");
  std::map<std::string, size_t> small;
  std::function<void(const Task&, const nlohmann::json&)> walk = [&](const Task& task, const nlohmann::json& x) {
    if (x.is_array())
      for (const auto& v : x) walk(task, v);
    if (!x.is_object()) return;
    if (x.contains("bias") && x["bias"].is_number() && x.contains("rel_l2") && x["rel_l2"].is_number() &&
        x.contains("shape") && x.contains("inputs") && x.value("n", 0) > 0 && x.value("n", 0) < int(kBiasMinElements)) {
      const Shape shape = parse_shape(x["shape"].get<std::string>(), task.head_dim);
      const Tolerance tol = g.tolerance(task, x["inputs"].get<std::string>()).for_keys(shape.seq_kv);
      if (tol.bias > 0) {
        ++small[task.name().substr(0, 4)];
        const double bias = std::abs(x["bias"].get<double>()), rel = x["rel_l2"].get<double>();
        const double sigmas = rel > 0 ? bias / rel * std::sqrt(double(x.value("n", 0))) : (bias > 0 ? INFINITY : 0);
        EXPECT_FALSE(bias > tol.bias && sigmas >= kBiasSigmas)
            << task.name() << " " << x.value("case", "?") << ": bias " << bias << " bound " << tol.bias;
      }
    }
    for (const auto& [k, v] : x.items()) walk(task, v);
  };
  for (const auto& r : rs.records) {
    const std::string task = r.value("task", "");
    if (r.value("outcome", "") != "ok" || (task.rfind("fp16", 0) != 0 && task.rfind("bf16", 0) != 0)) continue;
    walk(parse_task(task), r["gates"]);
  }
  EXPECT_GE(small["fp16"], 100u) << "the records carry small checks' bias";
  for (const auto& [dtype, n] : small) std::cout << "honest " << dtype << " checks under 4 096 elements: " << n << "\n";
}

// The shared prefix (closes kv_shared_prefix_by_two_rows.cu): odd batches' first rows of K and V
// are the batch before's, Q's are not, and every part of the fill carries the rule (the massive
// bands are fills of their own over K's columns).
TEST(HackerRound22, OddBatchesRepeatThePrefixOfKAndVOnly) {
  EXPECT_TRUE(shared_prefix_row(5, 1, 0));
  EXPECT_TRUE(shared_prefix_row(5, 3, 4));
  EXPECT_FALSE(shared_prefix_row(5, 1, 5)) << "past the prefix the rows differ";
  EXPECT_FALSE(shared_prefix_row(5, 0, 0)) << "even batches keep their own draws";
  EXPECT_FALSE(shared_prefix_row(5, 2, 1));
  EXPECT_FALSE(shared_prefix_row(0, 1, 0)) << "no prefix";

  CaseSpec c;
  c.shape.batch = 2;
  c.shape.seq_kv = 64;
  c.shape.head_dim = 64;
  c.massive_sampled = true;  // normal's massive channels: K's bands are filled apart
  c.shared_prefix = 5;
  const TensorFills f = tensor_fills(c);
  EXPECT_EQ(f.q.prefix_rows, 0u);
  EXPECT_EQ(f.k.prefix_rows, 5u);
  EXPECT_EQ(f.v.prefix_rows, 5u);
  ASSERT_TRUE(massive_channels(c));
  int k_bands = 0;
  fill_massive_channels(c, f, false, [&](unsigned tensor, const ColumnBand&, const FillParams& fp, uint64_t) {
    EXPECT_EQ(fp.prefix_rows, tensor == 1 ? 5u : 0u) << "tensor " << tensor;
    k_bands += tensor == 1;
  });
  EXPECT_EQ(k_bands, 2);
}

// Every pinned run of both tiers, every task, holds a case whose batch 1 repeats batch 0's first
// rows of K and V (two or more) and then differs where a query row sees it: a kernel that takes
// such a sequence for batch 0's reads batch 0's keys past the prefix there. On main no case did.
TEST(HackerRound22, EveryRunHasASecondBatchThatSharesAPrefixAndThenDiffers) {
  int runs = 0, least = 1 << 30;
  size_t eligible = 0, prefixed = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    int seen = 0;
    for (const CaseSpec& c : cases) {
      if (c.shape.batch < 2 || c.shape.seq_kv < 3 || c.two_streams) continue;
      if (c.id.find("/in_flight/") != std::string::npos || c.layout.find('+') != std::string::npos) continue;
      if (c.values == kRepeatBatch || repeat_interleave_group(c.values) != 0)
        continue;  // round 30's and 31's beam prefill: whole sequences, not a prefix
      ++eligible;
      if (c.shared_prefix == 0) continue;
      ++prefixed;
      EXPECT_GE(c.shared_prefix, 2) << c.id;
      EXPECT_LT(c.shared_prefix, c.shape.seq_kv) << c.id;
      EXPECT_NE(c.id.find(fmt::format("/prefix={}", c.shared_prefix)), std::string::npos) << c.id;
      seen += c.shape.visible_kv(t.causal) > c.shared_prefix;
    }
    ++runs;
    EXPECT_GE(seen, 1) << run << ": no case whose batch 1 shares a prefix with batch 0 and then differs";
    least = std::min(least, seen);
  });
  EXPECT_EQ(runs, 56);
  EXPECT_GT(prefixed * 3, eligible) << "about one eligible case in two";
  EXPECT_LT(prefixed * 3, eligible * 2);
  std::cout << fmt::format("every run: at least {} case(s) with a shared prefix; {} of {} eligible cases\n", least,
                           prefixed, eligible);
}

}  // namespace
}  // namespace evo::hacker_round22
