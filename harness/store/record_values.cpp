#include "store/record_values.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

namespace evo {

using nlohmann::json;

namespace {

enum class Bound { positive, non_negative };

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// A measured quantity: null (not measured) or a finite number within `bound`.
std::string quantity_error(const json& v, const std::string& name, Bound bound) {
  if (v.is_null()) return "";
  const char* need = bound == Bound::positive ? "a finite number > 0" : "a finite number >= 0";
  if (!v.is_number() || v.is_boolean())
    return fmt::format("field '{}' is {}, not a number: it must be {}", name, v.dump(), need);
  const double x = v.get<double>();
  const bool ok = std::isfinite(x) && (bound == Bound::positive ? x > 0 : x >= 0);
  return ok ? "" : fmt::format("field '{}' is {}: it must be {}", name, v.dump(), need);
}

// A count: null or an integer >= 0.
std::string count_error(const json& v, const std::string& name) {
  if (v.is_null() || (v.is_number_integer() && v.get<long long>() >= 0)) return "";
  return fmt::format("field '{}' is {}: it must be an integer >= 0", name, v.dump());
}

// The statistics of one timed shape: every "*_us" time and the rates are non-negative. A median
// of 0 is what evo itself records for a timing trick that skipped its launches (outcome
// integrity, 2026-11-27 on the H200); the fitness, which ranks kernels, must be positive.
// Nested parts (integrity, whose gains may be negative) are left to their readers.
std::string timing_entry_error(const json& t, size_t i) {
  const std::string at = fmt::format("timing[{}]", i);
  if (!t.is_object()) return fmt::format("field '{}' is not an object", at);
  for (const auto& [key, v] : t.items()) {
    const std::string name = at + "." + key;
    std::string bad;
    if (ends_with(key, "_us") || key == "tflops" || key == "gbps" || key == "rse")
      bad = quantity_error(v, name, Bound::non_negative);
    else if (key == "n")
      bad = count_error(v, name);
    if (!bad.empty()) return bad;
  }
  return "";
}

std::string fitness_error(const json& f) {
  for (const char* key : {"geomean_median_us", "geomean_p90_us"})
    if (f.contains(key))
      if (auto bad = quantity_error(f[key], std::string("fitness.") + key, Bound::positive); !bad.empty()) return bad;
  if (f.contains("shapes")) return count_error(f["shapes"], "fitness.shapes");
  return "";
}

// Wall times of an evaluation's phases: "*_s" fields, and every value of phases.detail.
std::string phases_error(const json& p) {
  for (const auto& [key, v] : p.items()) {
    if (key == "detail" && v.is_object()) {
      for (const auto& [part, seconds] : v.items())
        if (auto bad = quantity_error(seconds, "phases.detail." + part, Bound::non_negative); !bad.empty()) return bad;
    } else if (ends_with(key, "_s")) {
      if (auto bad = quantity_error(v, "phases." + key, Bound::non_negative); !bad.empty()) return bad;
    }
  }
  return "";
}

}  // namespace

std::string record_values_error(const json& r) {
  if (r.contains("timing") && r["timing"].is_array())
    for (size_t i = 0; i < r["timing"].size(); ++i)
      if (auto bad = timing_entry_error(r["timing"][i], i); !bad.empty()) return bad;
  if (r.contains("fitness") && r["fitness"].is_object())
    if (auto bad = fitness_error(r["fitness"]); !bad.empty()) return bad;
  if (r.contains("gpu_seconds"))
    if (auto bad = quantity_error(r["gpu_seconds"], "gpu_seconds", Bound::non_negative); !bad.empty()) return bad;
  if (r.contains("phases") && r["phases"].is_object())
    if (auto bad = phases_error(r["phases"]); !bad.empty()) return bad;
  if (r.contains("compile") && r["compile"].is_object() && r["compile"].contains("seconds"))
    return quantity_error(r["compile"]["seconds"], "compile.seconds", Bound::non_negative);
  return "";
}

}  // namespace evo
