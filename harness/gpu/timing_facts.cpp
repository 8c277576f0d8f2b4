#include "gpu/timing_facts.h"

#include <cmath>

namespace evo {

using nlohmann::json;

namespace {

constexpr size_t kMaxProbes = 64;

bool fail(std::string& error, const std::string& what) {
  error = "timing integrity: " + what;
  return false;
}

bool integer(const json& j, const char* key, long long lo, long long hi, long long& out, std::string& error) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<long long>() < lo || j[key].get<long long>() > hi)
    return fail(error, std::string(key) + " is not an integer in range");
  out = j[key].get<long long>();
  return true;
}

bool flag(const json& j, const char* key, bool& out, std::string& error) {
  if (!j.contains(key) || !j[key].is_boolean()) return fail(error, std::string(key) + " is not a boolean");
  out = j[key].get<bool>();
  return true;
}

bool one_of(const json& j, const char* key, std::initializer_list<const char*> names, std::string& out,
            std::string& error) {
  if (j.contains(key) && j[key].is_string())
    for (const char* n : names)
      if (j[key].get<std::string>() == n) {
        out = n;
        return true;
      }
  return fail(error, std::string(key) + " is not one of its names");
}

bool times(const json& j, const char* key, std::vector<double>& out, std::string& error) {
  if (!j.contains(key) || !j[key].is_array() || j[key].size() > kMaxProbes)
    return fail(error, std::string(key) + " is not a short list of times");
  for (const auto& v : j[key]) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      return fail(error, std::string(key) + " holds a time that is not a finite non-negative number");
    out.push_back(v.get<double>());
  }
  return true;
}

bool facts(const json& j, const char* key, DeviceCheckFacts& out, std::string& error) {
  if (!j.contains(key)) return fail(error, std::string(key) + " is missing");
  auto f = device_check_from_json(j[key], error);
  if (!f) return false;
  out = *f;
  return true;
}

}  // namespace

json to_json(const FullCheck& c) {
  return {{"sample", c.sample},
          {"why", c.why},
          {"inputs", c.inputs},
          {"us", c.us},
          {"inputs_intact", c.inputs_intact},
          {"facts", to_json(c.facts)}};
}

json to_json(const TimingFacts& f) {
  json full = json::array();
  for (const auto& c : f.full) full.push_back(to_json(c));
  json j = {{"samples", f.samples},
            {"rows_per_sample", f.rows_per_sample},
            {"rows_checked", f.rows_checked},
            {"warm_up_verified", f.warm_up_verified},
            {"rows", to_json(f.rows)},
            {"full", full},
            {"probe_fresh_us", f.probe_fresh_us},
            {"probe_repeat_us", f.probe_repeat_us},
            {"inputs_intact", f.inputs_intact},
            {"guards_intact", f.guards_intact},
            {"failure", nullptr},
            {"isolated", f.isolated ? to_json(*f.isolated) : json(nullptr)}};
  if (f.failure)
    j["failure"] = {{"sample", f.failure->sample},
                    {"what", f.failure->what},
                    {"inputs", f.failure->inputs},
                    {"facts", to_json(f.failure->facts)}};
  return j;
}

std::optional<FullCheck> full_check_from_json(const json& j, std::string& error) {
  FullCheck c;
  long long sample = 0;
  if (!j.is_object()) return fail(error, "a full check is not an object"), std::nullopt;
  if (!integer(j, "sample", -1, 1 << 20, sample, error) ||
      !one_of(j, "why", {"last", "drawn", "isolated", "shape"}, c.why, error) ||
      !flag(j, "inputs_intact", c.inputs_intact, error) || !facts(j, "facts", c.facts, error))
    return std::nullopt;
  if (!j.contains("inputs") || !j["inputs"].is_string() || j["inputs"].get<std::string>().size() > 64)
    return fail(error, "inputs is not a distribution name"), std::nullopt;
  if (!j.contains("us") || !j["us"].is_number() || !std::isfinite(j["us"].get<double>()) || j["us"].get<double>() < 0)
    return fail(error, "us is not a time"), std::nullopt;
  c.sample = int(sample);
  c.inputs = j["inputs"].get<std::string>();
  c.us = j["us"].get<double>();
  return c;
}

std::optional<TimingFacts> timing_facts_from_json(const json& j, std::string& error) {
  TimingFacts f;
  long long samples = 0, rows = 0, checked = 0;
  if (!j.is_object()) return fail(error, "not an object"), std::nullopt;
  if (!integer(j, "samples", 0, 1 << 20, samples, error) || !integer(j, "rows_per_sample", 0, 1 << 20, rows, error) ||
      !integer(j, "rows_checked", 0, 1LL << 50, checked, error) || !facts(j, "rows", f.rows, error) ||
      !times(j, "probe_fresh_us", f.probe_fresh_us, error) || !times(j, "probe_repeat_us", f.probe_repeat_us, error) ||
      !flag(j, "inputs_intact", f.inputs_intact, error) || !flag(j, "guards_intact", f.guards_intact, error))
    return std::nullopt;
  if (f.probe_fresh_us.size() != f.probe_repeat_us.size())
    return fail(error, "probe_fresh_us and probe_repeat_us differ in length"), std::nullopt;
  long long warm_verified = 0;  // workers before unannounced verification: absent
  if (j.contains("warm_up_verified") && !integer(j, "warm_up_verified", 0, 1 << 20, warm_verified, error))
    return std::nullopt;
  f.warm_up_verified = int(warm_verified);
  f.samples = int(samples);
  f.rows_per_sample = int(rows);
  f.rows_checked = uint64_t(checked);
  if (!j.contains("full") || !j["full"].is_array() || j["full"].size() > 8)
    return fail(error, "full is not a short list"), std::nullopt;
  for (const auto& c : j["full"]) {
    auto check = full_check_from_json(c, error);
    if (!check) return std::nullopt;
    f.full.push_back(std::move(*check));
  }
  if (j.contains("failure") && !j["failure"].is_null()) {
    const json& x = j["failure"];
    SampleFailure s;
    long long sample = 0;
    if (!x.is_object() || !integer(x, "sample", 0, 1 << 20, sample, error) ||
        !one_of(x, "what", {"rows", "full", "inputs", "probe", "warm_up"}, s.what, error) ||
        !facts(x, "facts", s.facts, error))
      return error.empty() ? (fail(error, "failure is malformed"), std::nullopt) : std::nullopt;
    if (!x.contains("inputs") || !x["inputs"].is_string() || x["inputs"].get<std::string>().size() > 64)
      return fail(error, "failure.inputs is not a distribution name"), std::nullopt;
    s.inputs = x["inputs"].get<std::string>();
    s.sample = int(sample);
    f.failure = std::move(s);
  }
  if (j.contains("isolated") && !j["isolated"].is_null()) {
    auto iso = full_check_from_json(j["isolated"], error);
    if (!iso) return std::nullopt;
    f.isolated = std::move(*iso);
  }
  return f;
}

}  // namespace evo
