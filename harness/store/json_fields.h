// Reading fields of records, populations and baselines without trusting their types: they come
// from other machines' logs (evo merge), so a wrong type costs that record its place, never
// the command. One set of readers for store/, report/ and gates/.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace evo {

inline std::string string_or(const nlohmann::json& j, const char* key, const std::string& fallback = "") {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}

inline nlohmann::json object_or_null(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_object() ? j[key] : nlohmann::json(nullptr);
}

// A number field, or `fallback` when it is missing or not a number.
inline double number_or(const nlohmann::json& j, const char* key, double fallback) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

// A finite number field, or nullopt.
inline std::optional<double> finite_number(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  const double v = j[key].get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

// The GPU model a record was measured on (env.gpu_key), or "" (compile records, foreign logs).
inline std::string record_gpu_key(const nlohmann::json& r) { return string_or(object_or_null(r, "env"), "gpu_key"); }

// True only for a boolean field that is true.
inline bool flag(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

// The order that decides which of two records of one candidate counts: later time, then the
// greater run id (the population rules).
// Record::newer_than (store/typed_record.h) and newer_record are this one rule.
inline bool newer_by_time_then_run(const std::string& time_a, const std::string& run_a, const std::string& time_b,
                                   const std::string& run_b) {
  if (time_a != time_b) return time_a > time_b;
  return run_a > run_b;
}
inline bool newer_record(const nlohmann::json& a, const nlohmann::json& b) {
  return newer_by_time_then_run(string_or(a, "time"), string_or(a, "run_id"), string_or(b, "time"),
                                string_or(b, "run_id"));
}

}  // namespace evo
