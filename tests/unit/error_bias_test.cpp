// The error's bias (gates/correctness.h OutputCheck::bias): an output rounded toward zero sits a
// fixed fraction of an fp16 step below |ref| everywhere, while its relative L2 stays under every
// tolerance; rounding to nearest averages out. The bias is recorded for every check and enforced
// only where gates.json sets `bias` (hacker round 19: o_round_toward_zero.cu).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/errors.h"
#include "gates/correctness.h"
#include "gpu/device_check.h"
#include "policy/config.h"
#include "support/test_support.h"

namespace evo::error_bias {
namespace {

// Every finite non-negative fp16 value, ascending with its bits.
const std::vector<float>& fp16_values() {
  static const std::vector<float> v = [] {
    std::vector<float> out;
    for (uint16_t b = 0; b <= 0x7BFF; ++b) out.push_back(half_bits_to_float(b));
    return out;
  }();
  return v;
}

// x as fp16 bits, to nearest (ties to the lower value: rare enough here) or toward zero.
uint16_t to_fp16(float x, bool toward_zero) {
  const auto& v = fp16_values();
  const float a = std::abs(x);
  size_t i = size_t(std::upper_bound(v.begin(), v.end(), a) - v.begin()) - 1;  // v[i] <= a
  if (!toward_zero && i + 1 < v.size() && v[i + 1] - a < a - v[i]) ++i;
  return uint16_t(i) | (x < 0 ? 0x8000 : 0);
}

struct Outputs {
  std::string nearest, toward_zero, ref;
};

// n reference values ~ N(0, 1) (an attention output's size) in fp32, and the fp16 output both ways.
Outputs outputs(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> ref(n);
  std::vector<uint16_t> rn(n), rz(n);
  for (size_t i = 0; i < n; ++i) {
    ref[i] = normal(rng);
    rn[i] = to_fp16(ref[i], false);
    rz[i] = to_fp16(ref[i], true);
  }
  auto bytes = [](const void* p, size_t size) { return std::string(static_cast<const char*>(p), size); };
  return {bytes(rn.data(), 2 * n), bytes(rz.data(), 2 * n), bytes(ref.data(), 4 * n)};
}

TEST(ErrorBias, TruncationIsBiasedTowardZeroAndRoundingToNearestIsNot) {
  const Outputs o = outputs(1 << 16, 7);
  const Tolerance recorded{0.003, 0.003, 0.001, 0.0};  // bias 0: measured, not enforced
  const OutputCheck rn = check_output(o.nearest, o.ref, DType::fp16, recorded);
  const OutputCheck rz = check_output(o.toward_zero, o.ref, DType::fp16, recorded);
  EXPECT_TRUE(rn.pass) << rn.reason;
  EXPECT_TRUE(rz.pass) << rz.reason << ": the relative L2 alone does not see it";
  EXPECT_LT(rz.rel_l2, 0.001);
  // Toward zero loses half a step on average: 2^-11 to 2^-12 of |x| (fp16 keeps 11 bits).
  EXPECT_LT(rz.bias, -1.5e-4) << "toward zero";
  EXPECT_GT(rz.bias, -5e-4);
  EXPECT_LT(std::abs(rn.bias), 1e-5) << "to nearest averages out over 65 536 elements";
  EXPECT_EQ(check_json(rz)["bias"].get<double>(), rz.bias) << "every check records its bias";

  const Tolerance enforced{0.003, 0.003, 0.001, 1e-4};
  EXPECT_TRUE(check_output(o.nearest, o.ref, DType::fp16, enforced).pass);
  const OutputCheck caught = check_output(o.toward_zero, o.ref, DType::fp16, enforced);
  EXPECT_FALSE(caught.pass);
  EXPECT_NE(caught.reason.find("errors biased toward zero"), std::string::npos) << caught.reason;

  // Under kBiasMinElements the bound is not applied: a bias there is mostly noise.
  const Outputs small = outputs(kBiasMinElements - 1, 7);
  EXPECT_TRUE(check_output(small.toward_zero, small.ref, DType::fp16, enforced).pass);
}

// 16 query rows of 1024 columns: the 16 384 elements below, for naming a failing element.
Shape output_shape() {
  Shape s;
  s.seq_q = s.seq_kv = 16;
  s.head_dim = 1024;
  return s;
}

TEST(ErrorBias, TheGpuCountsCarryTheSameBiasAndOlderReportsLackIt) {
  const Shape kOutputShape = output_shape();
  const Outputs o = outputs(1 << 14, 11);
  const Tolerance enforced{0.003, 0.003, 0.001, 1e-4};
  const OutputCheck host = check_output(o.toward_zero, o.ref, DType::fp16, enforced);
  DeviceCheckFacts f;  // what the worker's compare kernel sums, for the same output
  f.n = 1 << 14;
  const auto* out = reinterpret_cast<const uint16_t*>(o.toward_zero.data());
  const auto* ref = reinterpret_cast<const float*>(o.ref.data());
  for (size_t i = 0; i < f.n; ++i) {
    const double v = half_bits_to_float(out[i]), r = ref[i];
    f.err2 += (v - r) * (v - r);
    f.ref2 += r * r;
    f.max_abs = std::max(f.max_abs, std::abs(v - r));
    if (r != 0) f.signed_err += r > 0 ? v - r : r - v;
    f.abs_ref += std::abs(r);
  }
  std::string error;
  const auto back = device_check_from_json(to_json(f), error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(back->signed_err, f.signed_err);
  const OutputCheck gpu = check_counts(*back, enforced, kOutputShape);
  EXPECT_NEAR(gpu.bias, host.bias, 1e-12);
  EXPECT_EQ(gpu.pass, host.pass);

  nlohmann::json older = to_json(f);
  older.erase("signed_err");
  older.erase("abs_ref");
  const auto old = device_check_from_json(older, error);
  ASSERT_TRUE(old) << error;
  EXPECT_EQ(old->abs_ref, 0.0);
  EXPECT_TRUE(check_counts(*old, enforced, kOutputShape).pass) << "no sums: no bias";

  nlohmann::json bad = to_json(f);
  bad["signed_err"] = "x";
  EXPECT_FALSE(device_check_from_json(bad, error));
  EXPECT_NE(error.find("signed_err"), std::string::npos) << error;
}

TEST(ErrorBias, GatesJsonSetsItPerDtypeAndInputAndRefusesANegativeBound) {
  const GatesConfig g = test::repo_gates();
  EXPECT_EQ(g.tolerance(parse_task("fp16-d64"), "normal").bias, 0.0) << "recorded only until the GPU calibrates it";
  std::string text = test::read_text(test::source_root() / "gates/gates.json");
  const std::string at = "\"rel_l2\": 0.001,";
  ASSERT_NE(text.find(at), std::string::npos);
  text.replace(text.find(at), at.size(), at + " \"bias\": -1,");
  std::string why;
  EXPECT_EQ(test::exit_code_of([&] { parse_gates_config(text, "gates.json"); }, &why), kExitUsage);
  EXPECT_NE(why.find("tolerances.fp16.bias"), std::string::npos) << why;
}

}  // namespace
}  // namespace evo::error_bias
