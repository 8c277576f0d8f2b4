#include "policy/sample_space.h"

#include <fmt/format.h>

#include <cmath>

#include "core/errors.h"

namespace evo {

using nlohmann::json;

namespace {

// By value, not by reference: callers pass temporary strings ("a" + where), and a returned
// reference next to temporary arguments is what GCC 13's -Wdangling-reference flags. The
// copies are of small config objects, read once.
json member(const json& j, const std::string& key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw usage_error(fmt::format("{}: missing field '{}'", where, key));
  return j.at(key);
}

int64_t integer(const json& v, int64_t lo, int64_t hi, const std::string& where) {
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    throw usage_error(fmt::format("{}: must be an integer from {} to {}", where, lo, hi));
  return v.get<int64_t>();
}

// [lo, hi] with lo <= hi, both in [min, max].
std::pair<int, int> range(const json& v, int min, int max, const std::string& where) {
  if (!v.is_array() || v.size() != 2) throw usage_error(fmt::format("{}: must be [lo, hi]", where));
  const int lo = int(integer(v[0], min, max, where)), hi = int(integer(v[1], min, max, where));
  if (lo > hi) throw usage_error(fmt::format("{}: lo {} is above hi {}", where, lo, hi));
  return {lo, hi};
}

json nonempty_list(const json& j, const std::string& key, const std::string& where) {
  json v = member(j, key, where);
  if (!v.is_array() || v.empty()) throw usage_error(fmt::format("{}: '{}' must be a non-empty list", where, key));
  return v;
}

std::string text(const json& v, const std::string& where) {
  if (!v.is_string()) throw usage_error(fmt::format("{}: must be a string", where));
  return v.get<std::string>();
}

}  // namespace

double ScaleChoice::value(int head_dim) const {
  if (kind == per_sqrt_d) return factor / std::sqrt(double(head_dim));
  if (kind == per_d) return factor / double(head_dim);
  return factor;
}

ScaleChoice parse_scale(const std::string& t, const std::string& where) {
  ScaleChoice s;
  s.text = t;
  std::string num = t;
  if (t.size() > 8 && t.compare(t.size() - 8, 8, "/sqrt(D)") == 0) {
    s.kind = ScaleChoice::per_sqrt_d;
    num = t.substr(0, t.size() - 8);
  } else if (t.size() > 2 && t.compare(t.size() - 2, 2, "/D") == 0) {
    s.kind = ScaleChoice::per_d;
    num = t.substr(0, t.size() - 2);
  } else {
    s.kind = ScaleChoice::constant;
  }
  try {
    size_t used = 0;
    s.factor = std::stod(num, &used);
    if (used != num.size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    s.factor = 0;
  }
  if (!(s.factor > 0) || !std::isfinite(s.factor) || s.factor > 100)
    throw usage_error(fmt::format("{}: bad scale '{}': use a number in (0, 100], 'F/sqrt(D)' or 'F/D'", where, t));
  return s;
}

bool known_case_layout(const std::string& n) {
  return n == "bhsd" || n == "bshd" || n == "packed_qkv" || n == "mixed" || n == "kv_cache";
}

SampleSpace parse_sample_space(const json& j, const std::string& w) {
  SampleSpace s;
  if (!j.is_object()) throw usage_error(w + ": must be an object");
  s.enabled = true;
  s.cases = int(integer(member(j, "cases", w), 1, 64, w + ".cases"));
  s.max_tensor_elements = integer(member(j, "max_tensor_elements", w), 1, int64_t(1) << 28, w + ".max_tensor_elements");
  const json f = member(j, "max_flops", w);
  if (!f.is_number() || !(f.get<double>() >= 1e6) || f.get<double>() > 1e13)
    throw usage_error(w + ".max_flops: must be a number from 1e6 to 1e13");
  s.max_flops = f.get<double>();
  std::tie(s.batch_lo, s.batch_hi) = range(member(j, "batch", w), 1, 1024, w + ".batch");
  for (const auto& h : nonempty_list(j, "heads", w)) {
    const std::string t = text(h, w + ".heads");
    const auto slash = t.find('/');
    HeadConfig c;
    try {
      size_t a = 0, b = 0;
      c.heads_q = std::stoi(t.substr(0, slash), &a);
      c.heads_kv = slash == std::string::npos ? 0 : std::stoi(t.substr(slash + 1), &b);
      if (a != slash || b != t.size() - slash - 1) c.heads_kv = 0;
    } catch (const std::exception&) {
      c.heads_kv = 0;
    }
    if (c.heads_q < 1 || c.heads_q > 256 || c.heads_kv < 1 || c.heads_q % c.heads_kv != 0)
      throw usage_error(fmt::format("{}.heads: bad entry '{}': use 'Hq/Hkv' with Hkv dividing Hq (Hq <= 256)", w, t));
    s.heads.push_back(c);
  }
  for (const auto& l : nonempty_list(j, "lengths", w)) {
    LengthClass c;
    c.name = text(member(l, "name", w + ".lengths"), w + ".lengths.name");
    const std::string lw = w + ".lengths." + c.name;
    std::tie(c.seq_q_lo, c.seq_q_hi) = range(member(l, "seq_q", lw), 1, 1 << 16, lw + ".seq_q");
    std::tie(c.seq_kv_lo, c.seq_kv_hi) = range(member(l, "seq_kv", lw), 1, 1 << 16, lw + ".seq_kv");
    s.lengths.push_back(c);
  }
  for (const auto& l : nonempty_list(j, "layouts", w)) {
    s.layouts.push_back(text(l, w + ".layouts"));
    if (!known_case_layout(s.layouts.back()))
      throw usage_error(fmt::format("{}.layouts: unknown layout '{}': use bhsd, bshd, packed_qkv, mixed or kv_cache", w,
                                    s.layouts.back()));
  }
  for (const auto& v : nonempty_list(j, "scales", w))
    s.scales.push_back(parse_scale(text(v, w + ".scales"), w + ".scales"));
  for (const auto& v : nonempty_list(j, "inputs", w)) s.inputs.push_back(text(v, w + ".inputs"));
  return s;
}

}  // namespace evo
