#include "policy/sample_space.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "common/evo_domain.h"
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

double flops(const json& f, const std::string& where) {
  if (!f.is_number() || !(f.get<double>() >= 1e6) || f.get<double>() > 1e14)
    throw usage_error(where + ": must be a number from 1e6 to 1e14");
  return f.get<double>();
}

std::string text(const json& v, const std::string& where) {
  if (!v.is_string()) throw usage_error(fmt::format("{}: must be a string", where));
  return v.get<std::string>();
}

}  // namespace

namespace {

double scale_at(double factor, ScaleChoice::Kind kind, int head_dim) {
  if (kind == ScaleChoice::per_sqrt_d) return factor / std::sqrt(double(head_dim));
  if (kind == ScaleChoice::per_d) return factor / double(head_dim);
  return factor;
}

// One point: "F", "F/sqrt(D)" or "F/D"; factor 0 when malformed.
std::pair<double, ScaleChoice::Kind> scale_point(const std::string& t) {
  std::string num = t;
  ScaleChoice::Kind kind = ScaleChoice::constant;
  if (t.size() > 8 && t.compare(t.size() - 8, 8, "/sqrt(D)") == 0) {
    kind = ScaleChoice::per_sqrt_d;
    num = t.substr(0, t.size() - 8);
  } else if (t.size() > 2 && t.compare(t.size() - 2, 2, "/D") == 0) {
    kind = ScaleChoice::per_d;
    num = t.substr(0, t.size() - 2);
  }
  try {
    size_t used = 0;
    const double f = std::stod(num, &used);
    return {used == num.size() ? f : 0.0, kind};
  } catch (const std::exception&) {
    return {0.0, kind};
  }
}

}  // namespace

double ScaleChoice::value(int head_dim) const { return scale_at(factor, kind, head_dim); }
double ScaleChoice::upper(int head_dim) const {
  return range ? scale_at(hi_factor, hi_kind, head_dim) : value(head_dim);
}

ScaleChoice parse_scale(const std::string& t, const std::string& where) {
  ScaleChoice s;
  s.text = t;
  const auto dots = t.find("..");
  std::tie(s.factor, s.kind) = scale_point(t.substr(0, dots));
  if (dots != std::string::npos) {
    s.range = true;
    std::tie(s.hi_factor, s.hi_kind) = scale_point(t.substr(dots + 2));
  }
  bool inside = s.factor > 0 && std::isfinite(s.factor) && s.hi_factor > 0 && std::isfinite(s.hi_factor);
  for (int d : kEvoDomainHeadDims)
    inside = inside && s.upper(d) <= kEvoDomainMaxScale && (!s.range || s.value(d) < s.upper(d));
  if (!inside)
    throw usage_error(
        fmt::format("{}: bad scale '{}': use a number, 'F/sqrt(D)' or 'F/D' in (0, {}] at every head "
                    "dim, or a range 'LO..HI' of two of them with LO below HI (the op's input domain, "
                    "common/evo_domain.h)",
                    where, t, kEvoDomainMaxScale));
  return s;
}

bool known_case_layout(const std::string& n) {
  return n == "bhsd" || n == "bshd" || n == "packed_qkv" || n == "mixed" || n == "kv_cache" || n == "strided";
}

const char* sample_dim_name(int dim) {
  static const char* names[kSampleDims] = {"layouts",       "alignments",     "batch",    "heads",  "seq_q",  "seq_kv",
                                           "seq_q_residue", "seq_kv_residue", "diagonal", "scales", "inputs", "junk"};
  return dim >= 0 && dim < kSampleDims ? names[dim] : "?";
}

namespace {

struct CaseSwitch {
  const char* name;
  bool SampleSpace::*field;
};

// In the order the sampler appends their kinds (run/sampler.cpp draw_tier).
constexpr CaseSwitch kCaseSwitches[] = {
    {"value_cases", &SampleSpace::value_cases},
    {"scale_cases", &SampleSpace::scale_cases},
    {"fused_qkv_cases", &SampleSpace::fused_qkv_cases},
    {"whole_cache_model_cases", &SampleSpace::whole_cache_model_cases},
    {"long_value_cases", &SampleSpace::long_value_cases},
    {"training_step_cases", &SampleSpace::training_step_cases},
    {"batched_model_cases", &SampleSpace::batched_model_cases},
    {"gemma_27b_cases", &SampleSpace::gemma_27b_cases},
    {"long_fused_qkv_cases", &SampleSpace::long_fused_qkv_cases},
    {"bhsd_long_value_cases", &SampleSpace::bhsd_long_value_cases},
    {"padded_decode_cases", &SampleSpace::padded_decode_cases},
    {"beam_prefill_cases", &SampleSpace::beam_prefill_cases},
    {"gqa_training_step_cases", &SampleSpace::gqa_training_step_cases},
    {"phi4_prefill_cases", &SampleSpace::phi4_prefill_cases},
    {"model_layout_cases", &SampleSpace::model_layout_cases},
    {"model_ranges", &SampleSpace::model_ranges},
    {"released_heads_cases", &SampleSpace::released_heads_cases},
    {"model_range_ends", &SampleSpace::model_range_ends},
    {"tensor_parallel_shards", &SampleSpace::tensor_parallel_shards},
    {"fixed_length_steps", &SampleSpace::fixed_length_steps},
    {"fixed_length_calls", &SampleSpace::fixed_length_calls},
    {"joint_attention_calls", &SampleSpace::joint_attention_calls},
    {"view_layout_cases", &SampleSpace::view_layout_cases},
    {"kv_packed_cases", &SampleSpace::kv_packed_cases},
    {"whole_window_calls", &SampleSpace::whole_window_calls},
    {"vision_tower_calls", &SampleSpace::vision_tower_calls},
    {"long_gqa_prefill_cases", &SampleSpace::long_gqa_prefill_cases},
    {"bhsd_two_kv_heads", &SampleSpace::bhsd_two_kv_heads},  // the BHSD long value case's heads
};

bool SampleSpace::*case_switch(const std::string& name) {
  for (const CaseSwitch& c : kCaseSwitches)
    if (name == c.name) return c.field;
  return nullptr;
}

}  // namespace

SampleSpace SampleSpace::for_tier(const CoverageTier& tier) const {
  SampleSpace s = *this;
  for (const auto& [name, on] : tier.switches) s.*case_switch(name) = on;
  if (!tier.lengths.empty()) s.lengths = tier.lengths;
  if (tier.max_tensor_elements > 0) s.max_tensor_elements = tier.max_tensor_elements;
  if (tier.max_flops > 0) s.max_flops = tier.max_flops;
  s.scales.insert(s.scales.end(), tier.extra_scales.begin(), tier.extra_scales.end());
  return s;
}

std::vector<int> SampleSpace::sizes() const {
  return {int(layouts.size()),   int(alignments.size()), int(batch.size()),    int(heads.size()),
          int(lengths.size()),   int(lengths.size()),    int(residues.size()), int(residues.size()),
          int(diagonals.size()), int(scales.size()),     int(inputs.size()),   int(junk.size())};
}

Residue residue_of(const std::string& n) {
  if (n == "x64") return Residue::x64;
  if (n == "x8") return Residue::x8;
  if (n == "x4") return Residue::x4;
  return n == "x2" ? Residue::x2 : Residue::odd;
}
bool has_residue(int v, Residue r) {
  if (r == Residue::x64) return v % 64 == 0;
  if (r == Residue::x8) return v % 8 == 0 && v % 64 != 0;
  if (r == Residue::x4) return v % 8 == 4;  // hacker round 12: a 4-key (or 4-row) tail
  if (r == Residue::x2) return v % 4 == 2;
  return v % 2 == 1;
}
Diagonal diagonal_of(const std::string& n) {
  return n == "lt" ? Diagonal::lt : n == "eq" ? Diagonal::eq : Diagonal::gt;
}

namespace {

// A list of distinct names, each one of `known`.
std::vector<std::string> names_from(const json& j, const std::string& key, const std::vector<std::string>& known,
                                    const std::string& w) {
  std::vector<std::string> out;
  for (const auto& v : nonempty_list(j, key, w)) {
    const std::string n = text(v, w + "." + key);
    if (std::find(known.begin(), known.end(), n) == known.end() || std::find(out.begin(), out.end(), n) != out.end())
      throw usage_error(fmt::format("{}.{}: '{}' is unknown or repeated: use {}", w, key, n, fmt::join(known, ", ")));
    out.push_back(n);
  }
  return out;
}

// [{"name": N, "range": [lo, hi]}, ...] with names distinct.
std::vector<NamedRange> ranges_from(const json& j, const std::string& key, int max, const std::string& w) {
  std::vector<NamedRange> out;
  for (const auto& e : nonempty_list(j, key, w)) {
    NamedRange r;
    r.name = text(member(e, "name", w + "." + key), w + "." + key + ".name");
    const std::string rw = w + "." + key + "." + r.name;
    std::tie(r.lo, r.hi) = range(member(e, "range", rw), 1, max, rw + ".range");
    for (const auto& o : out)
      if (o.name == r.name) throw usage_error(fmt::format("{}.{}: name '{}' is repeated", w, key, r.name));
    out.push_back(r);
  }
  return out;
}

HeadConfig head_config(const std::string& t, const std::string& w) {
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
  if (c.heads_q < 1 || c.heads_q > kEvoDomainMaxHeadsQ || c.heads_kv < 1 || c.heads_q % c.heads_kv != 0)
    throw usage_error(fmt::format("{}.heads: bad entry '{}': use 'Hq/Hkv' with Hkv dividing Hq (Hq <= {})", w, t,
                                  kEvoDomainMaxHeadsQ));
  return c;
}

std::vector<HeadClass> head_classes(const json& j, const std::string& w) {
  std::vector<HeadClass> out;
  for (const auto& e : nonempty_list(j, "heads", w)) {
    HeadClass h;
    h.name = text(member(e, "name", w + ".heads"), w + ".heads.name");
    for (const auto& c : nonempty_list(e, "configs", w + ".heads." + h.name))
      h.configs.push_back(head_config(text(c, w + ".heads." + h.name), w));
    out.push_back(h);
  }
  return out;
}

int dim_by_name(const json& v, const std::string& w) {
  const std::string n = text(v, w);
  for (int d = 0; d < kSampleDims; ++d)
    if (n == sample_dim_name(d)) return d;
  throw usage_error(fmt::format("{}: unknown dimension '{}'", w, n));
}

CoverageTier tier(const json& j, const std::string& w) {
  CoverageTier t;
  if (j.contains("triples"))
    for (const auto& tr : member(j, "triples", w)) {
      if (!tr.is_array() || tr.size() != 3) throw usage_error(w + ".triples: each entry lists three dimensions");
      std::array<int, 3> d{};
      for (size_t i = 0; i < 3; ++i) d[i] = dim_by_name(tr[i], w + ".triples");
      if (d[0] == d[1] || d[1] == d[2] || d[0] == d[2])
        throw usage_error(w + ".triples: a triple names three different dimensions");
      t.triples.push_back(d);
    }
  if (j.contains("random_cases")) t.random_cases = int(integer(j.at("random_cases"), 0, 1000, w + ".random_cases"));
  if (j.contains("min_cases")) t.min_cases = int(integer(j.at("min_cases"), 0, 1000, w + ".min_cases"));
  if (j.contains("lengths")) t.lengths = ranges_from(j, "lengths", int(kEvoDomainMaxSeq), w);
  if (j.contains("max_tensor_elements"))
    t.max_tensor_elements = integer(j.at("max_tensor_elements"), 1, kEvoDomainMaxSpan, w + ".max_tensor_elements");
  if (j.contains("max_flops")) t.max_flops = flops(j.at("max_flops"), w + ".max_flops");
  if (j.contains("extra_scales"))
    for (const auto& v : nonempty_list(j, "extra_scales", w))
      t.extra_scales.push_back(parse_scale(text(v, w + ".extra_scales"), w + ".extra_scales"));
  for (const CaseSwitch& c : kCaseSwitches)
    if (j.contains(c.name)) {
      if (!j.at(c.name).is_boolean()) throw usage_error(w + "." + c.name + ": must be true or false");
      t.switches[c.name] = j.at(c.name).get<bool>();
    }
  return t;
}

std::vector<int> alignments(const json& j, const std::string& w) {
  std::vector<int> out;
  for (const auto& v : nonempty_list(j, "alignments", w)) {
    const int a = int(integer(v, kEvoDomainAlignBytes, 256, w + ".alignments"));
    if (a % kEvoDomainAlignBytes != 0)
      throw usage_error(fmt::format("{}.alignments: use multiples of {} from {} to 256 (bytes)", w,
                                    kEvoDomainAlignBytes, kEvoDomainAlignBytes));
    out.push_back(a);
  }
  return out;
}

// `key` of `j` into `out` when present (a switch whose default the caller's field holds).
void optional_bool(const json& j, const char* key, const std::string& w, bool& out) {
  if (!j.contains(key)) return;
  if (!j.at(key).is_boolean()) throw usage_error(w + "." + key + ": must be true or false");
  out = j.at(key).get<bool>();
}

}  // namespace

SampleSpace parse_sample_space(const json& j, const std::string& w) {
  SampleSpace s;
  if (!j.is_object()) throw usage_error(w + ": must be an object");
  s.enabled = true;
  s.max_tensor_elements =
      integer(member(j, "max_tensor_elements", w), 1, kEvoDomainMaxSpan, w + ".max_tensor_elements");
  s.max_flops = flops(member(j, "max_flops", w), w + ".max_flops");
  s.batch = ranges_from(j, "batch", int(kEvoDomainMaxBatch), w);
  s.heads = head_classes(j, w);
  s.lengths = ranges_from(j, "lengths", int(kEvoDomainMaxSeq), w);
  s.residues = names_from(j, "residues", {"x64", "x8", "x4", "x2", "odd"}, w);
  s.diagonals = names_from(j, "diagonals", {"lt", "eq", "gt"}, w);
  s.layouts = names_from(j, "layouts", {"bhsd", "bshd", "packed_qkv", "mixed", "kv_cache", "strided"}, w);
  s.junk = names_from(j, "junk", {"finite", "nonfinite"}, w);
  if (j.contains("shared")) s.shared = names_from(j, "shared", {"qk", "kv", "qv", "qkv"}, w);
  if (j.contains("two_streams")) s.two_streams = int(integer(j.at("two_streams"), 0, 64, w + ".two_streams"));
  if (j.contains("in_flight")) {
    if (!j.at("in_flight").is_array()) throw usage_error(w + ".in_flight: must be a list of BxHqxHkvxSqxSkvxD shapes");
    for (const auto& v : j.at("in_flight")) s.in_flight.push_back(text(v, w + ".in_flight"));
  }
  s.alignments = alignments(j, w);
  for (const auto& v : nonempty_list(j, "scales", w))
    s.scales.push_back(parse_scale(text(v, w + ".scales"), w + ".scales"));
  for (const auto& v : nonempty_list(j, "inputs", w)) s.inputs.push_back(text(v, w + ".inputs"));
  optional_bool(j, "device_check", w, s.device_check);
  for (const CaseSwitch& c : kCaseSwitches) optional_bool(j, c.name, w, s.*c.field);
  s.cheap = tier(member(j, "cheap", w), w + ".cheap");
  s.deep = tier(member(j, "deep", w), w + ".deep");
  return s;
}

}  // namespace evo
