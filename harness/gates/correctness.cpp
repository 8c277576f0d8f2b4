#include "gates/correctness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gpu/worker_protocol.h"

namespace evo {

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3FF) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | mant << 13;
  } else {
    bits = sign | (exp + 112) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_bits_to_float(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

OutputCheck check_output(const std::string& out, const std::string& ref, DType dtype, const Tolerance& tol) {
  OutputCheck c;
  c.n = out.size() / 2;
  if (out.size() % 2 != 0 || ref.size() != c.n * 4) {
    c.reason = fmt::format("output has {} bytes, the reference {} elements", out.size(), ref.size() / 4);
    return c;
  }
  const auto* o = reinterpret_cast<const uint16_t*>(out.data());
  const auto* r = reinterpret_cast<const float*>(ref.data());
  double err2 = 0, ref2 = 0, signed_err = 0, abs_ref = 0;
  for (size_t i = 0; i < c.n; ++i) {
    if (o[i] == kPoisonBits) {
      ++c.unwritten;
      continue;
    }
    const double v = dtype == DType::fp16 ? half_bits_to_float(o[i]) : bf16_bits_to_float(o[i]);
    if (!std::isfinite(v)) {
      ++c.nonfinite;
      continue;
    }
    const double d = std::abs(v - double(r[i]));
    c.max_abs = std::max(c.max_abs, d);
    if (d > tol.atol + tol.rtol * std::abs(double(r[i]))) ++c.bad;
    err2 += d * d;
    ref2 += double(r[i]) * r[i];
    if (r[i] != 0) signed_err += r[i] > 0 ? v - double(r[i]) : double(r[i]) - v;  // as evo_compare_one
    abs_ref += std::abs(double(r[i]));
  }
  conclude(c, err2, ref2, signed_err, abs_ref, tol);
  return c;
}

OutputCheck check_counts(const DeviceCheckFacts& f, const Tolerance& tol, const Shape& shape) {
  OutputCheck c;
  c.n = f.n;
  c.unwritten = f.unwritten;
  c.nonfinite = f.nonfinite;
  c.bad = f.bad;
  c.max_abs = f.max_abs;
  conclude(c, f.err2, f.ref2, f.signed_err, f.abs_ref, tol.for_keys(shape.seq_kv));
  if (f.first_fail >= 0 && !c.reason.empty()) {  // where: the dimension a wrong kernel got wrong
    int64_t i = f.first_fail;
    const int64_t d = i % shape.head_dim, s = (i /= shape.head_dim) % shape.seq_q,
                  h = (i /= shape.seq_q) % shape.heads_q;
    c.reason += fmt::format("; first at b={} h={} s={} d={} (element {})", i / shape.heads_q, h, s, d, f.first_fail);
  }
  return c;
}

bool bias_enforced(size_t checked, double signed_err, double err2) {
  return checked >= kBiasMinElements || (err2 > 0 && std::abs(signed_err) >= kBiasSigmas * std::sqrt(err2));
}

// The verdict over the counts, in the order of their severity; one line.
void conclude(OutputCheck& c, double err2, double ref2, double signed_err, double abs_ref, const Tolerance& tol) {
  c.rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : (err2 > 0 ? INFINITY : 0);
  c.bias = abs_ref > 0 ? signed_err / abs_ref : 0;
  const size_t checked = c.n - std::min(c.n, c.unwritten + c.nonfinite);
  if (c.unwritten)
    c.reason = fmt::format("{} of {} output elements never written (poison left)", c.unwritten, c.n);
  else if (c.nonfinite)
    c.reason = fmt::format("{} of {} output elements are NaN/Inf", c.nonfinite, c.n);
  else if (c.bad)
    c.reason = fmt::format("{} of {} elements beyond atol {:g} + rtol {:g}·|ref| (max abs error {:.3g})", c.bad, c.n,
                           tol.atol, tol.rtol, c.max_abs);
  else if (c.rel_l2 > tol.rel_l2)
    c.reason = fmt::format("relative L2 error {:.3g} above {:g}", c.rel_l2, tol.rel_l2);
  else if (tol.bias > 0 && bias_enforced(checked, signed_err, err2) && std::abs(c.bias) > tol.bias)
    c.reason = fmt::format("errors biased {}: mean signed error {:.3g} of |ref| beyond {:g}",
                           c.bias < 0 ? "toward zero" : "away from zero", c.bias, tol.bias);
  c.pass = c.reason.empty();
}

nlohmann::json check_json(const OutputCheck& c) {
  return {{"pass", c.pass},
          {"max_abs", c.max_abs},
          {"rel_l2", std::isfinite(c.rel_l2) ? nlohmann::json(c.rel_l2) : nlohmann::json(nullptr)},
          {"bias", std::isfinite(c.bias) ? nlohmann::json(c.bias) : nlohmann::json(nullptr)},
          {"bad", c.bad},
          {"unwritten", c.unwritten},
          {"nonfinite", c.nonfinite},
          {"n", c.n},
          {"reason", c.reason}};
}

}  // namespace evo
