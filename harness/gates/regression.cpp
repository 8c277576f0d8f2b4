#include "gates/regression.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <set>

#include "core/errors.h"
#include "core/shape.h"
#include "core/task.h"
#include "store/json_fields.h"
#include "store/population.h"

namespace evo {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

RatioInterval interval_from_log(double log_ratio, double log_se, double confidence, int terms) {
  RatioInterval r;
  r.ratio = std::exp(log_ratio);
  r.log_se = log_se;
  r.terms = terms;
  if (!std::isfinite(log_se)) {
    r.lo = 0;
    r.hi = kInf;
    return r;
  }
  const double half = z_two_sided(confidence) * log_se;
  r.lo = std::exp(log_ratio - half);
  r.hi = std::exp(log_ratio + half);
  return r;
}

}  // namespace

double log_median_se(const MedianSample& s) {
  if (s.n < 2 || !(s.median_us > 0) || !(s.stdev_us >= 0) || !std::isfinite(s.stdev_us)) return kInf;
  return std::sqrt(std::numbers::pi / 2) * s.stdev_us / (std::sqrt(double(s.n)) * s.median_us);
}

double z_two_sided(double confidence) {
  if (!(confidence > 0 && confidence < 1))
    throw usage_error(fmt::format("regression confidence {} must lie strictly between 0 and 1", confidence));
  // Solve erfc(z / sqrt 2) = 1 - confidence by bisection: erfc is monotone, and 200 halvings of
  // [0, 40] reach double precision, so no approximation formula needs trusting.
  const double tail = 1 - confidence;
  double lo = 0, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erfc(mid / std::numbers::sqrt2) > tail ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

RatioInterval ratio_interval(const MedianSample& numerator, const MedianSample& denominator, double confidence) {
  if (!(numerator.median_us > 0) || !(denominator.median_us > 0)) return interval_from_log(0, kInf, confidence, 1);
  const double se = std::hypot(log_median_se(numerator), log_median_se(denominator));
  return interval_from_log(std::log(numerator.median_us / denominator.median_us), se, confidence, 1);
}

RatioInterval geomean_ratio_interval(const std::vector<std::pair<MedianSample, MedianSample>>& pairs,
                                     double confidence) {
  if (pairs.empty()) return interval_from_log(0, kInf, confidence, 0);
  double sum_log = 0, sum_var = 0;
  for (const auto& [a, b] : pairs) {
    if (!(a.median_us > 0) || !(b.median_us > 0)) return interval_from_log(0, kInf, confidence, int(pairs.size()));
    sum_log += std::log(a.median_us / b.median_us);
    const double sa = log_median_se(a), sb = log_median_se(b);
    sum_var += sa * sa + sb * sb;
  }
  const double k = double(pairs.size());
  return interval_from_log(sum_log / k, std::sqrt(sum_var) / k, confidence, int(pairs.size()));
}

std::string_view to_string(RegressionLabel label) {
  switch (label) {
    case RegressionLabel::same: return "SAME";
    case RegressionLabel::fast: return "FAST";
    case RegressionLabel::slow: return "SLOW";
    case RegressionLabel::ambiguous: return "AMBIGUOUS";
  }
  return "AMBIGUOUS";
}

RegressionLabel classify(const RatioInterval& r, double min_effect) {
  if (!(min_effect >= 0)) throw usage_error(fmt::format("regression min_effect {} must not be negative", min_effect));
  if (!(r.lo > 0) || !std::isfinite(r.hi)) return RegressionLabel::ambiguous;
  const double margin = std::log1p(min_effect);
  const double lo = std::log(r.lo), hi = std::log(r.hi);
  if (lo > margin) return RegressionLabel::slow;
  if (hi < -margin) return RegressionLabel::fast;
  if (lo >= -margin && hi <= margin) return RegressionLabel::same;
  return RegressionLabel::ambiguous;
}

RegressionCheck check_regression(const MedianSample& current, const MedianSample& baseline,
                                 const RegressionConfig& config) {
  RegressionCheck c;
  c.interval = ratio_interval(current, baseline, config.confidence);
  c.label = classify(c.interval, config.min_effect);
  return c;
}

// ---------------------------------------------------------------------------------------------
// Baseline file

using nlohmann::json;

namespace {

// Field readers that name the file and the field when it is wrong.
struct FieldReader {
  const json& j;
  std::string where;  // "baselines/h200.json: entries[3]"

  [[noreturn]] void fail(const char* key, const char* expected) const {
    throw usage_error(fmt::format("{}.{}: missing or not {}", where, key, expected));
  }
  std::string text(const char* key) const {
    if (!j.contains(key) || !j[key].is_string() || j[key].get<std::string>().empty()) fail(key, "a non-empty string");
    return j[key];
  }
  double positive(const char* key) const {
    if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() > 0) || !std::isfinite(j[key].get<double>()))
      fail(key, "a positive number");
    return j[key];
  }
  double non_negative(const char* key) const {
    if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() >= 0) || !std::isfinite(j[key].get<double>()))
      fail(key, "a number >= 0");
    return j[key];
  }
  int integer(const char* key, int min) const {
    if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<long>() < min)
      fail(key, min == 0 ? "an integer >= 0" : "an integer >= 1");
    return j[key];
  }
  json object(const char* key) const {
    if (!j.contains(key) || !j[key].is_object()) fail(key, "an object");
    return j[key];
  }
};

MedianSample sample_of(const json& t) {
  MedianSample s;
  s.median_us = t["median_us"].get<double>();
  s.stdev_us = t.contains("stdev_us") && t["stdev_us"].is_number() ? t["stdev_us"].get<double>() : NAN;
  s.n = t.contains("n") && t["n"].is_number_integer() ? t["n"].get<int>() : 0;
  return s;
}

}  // namespace

GateBaseline parse_baseline(const std::string& text, const std::string& origin, std::string* warning) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw usage_error(origin + ": not a JSON object (a gate baseline, docs/records.md)");
  const FieldReader top{j, origin};
  const std::string version = top.text("schema_version");
  if (version.rfind("1.", 0) != 0)
    throw usage_error(fmt::format("{}: schema_version {} is not supported (this evo reads 1.x)", origin, version));
  if (version != kBaselineSchemaVersion && warning)
    *warning = fmt::format("{}: schema_version {} is newer than this evo's {}; unknown fields are ignored", origin,
                           version, kBaselineSchemaVersion);
  if (top.text("kind") != "gate-baseline")
    throw usage_error(fmt::format("{}.kind: is '{}', expected 'gate-baseline'", origin, j["kind"].get<std::string>()));
  GateBaseline b;
  b.gpu = top.text("gpu");
  b.time = string_or(j, "time");
  if (!j.contains("entries") || !j["entries"].is_array()) top.fail("entries", "a list");
  if (j["entries"].empty())
    throw usage_error(origin + ".entries: empty; a gate with nothing to compare would pass anything");
  std::map<std::pair<std::string, std::string>, size_t> seen;
  for (size_t i = 0; i < j["entries"].size(); ++i) {
    const json& e = j["entries"][i];
    const std::string where = fmt::format("{}: entries[{}]", origin, i);
    if (!e.is_object()) throw usage_error(where + ": not an object");
    const FieldReader f{e, where};
    BaselineEntry entry;
    entry.task = f.text("task");
    Task task;
    try {
      task = parse_task(entry.task);
    } catch (const EvoError& err) {
      throw usage_error(fmt::format("{}.task: {}", where, err.what()));
    }
    entry.stage = f.integer("stage", 0);
    entry.variant = f.text("variant");
    entry.params = f.object("params");
    entry.candidate_id = f.text("candidate_id");
    entry.shape = f.text("shape");
    try {
      validate_shape(parse_shape(entry.shape, task.head_dim), task.head_dim);
    } catch (const EvoError& err) {
      throw usage_error(fmt::format("{}.shape: {}", where, err.what()));
    }
    entry.sample.median_us = f.positive("median_us");
    entry.p10_us = f.positive("p10_us");
    entry.p90_us = f.positive("p90_us");
    entry.sample.stdev_us = f.non_negative("stdev_us");
    entry.sample.n = f.integer("n", 1);
    auto [it, fresh] = seen.emplace(std::make_pair(entry.task, entry.shape), i);
    if (!fresh)
      throw usage_error(fmt::format("{}: ({}, {}) is also entries[{}]; a baseline holds one entry per (task, shape)",
                                    where, entry.task, entry.shape, it->second));
    b.entries.push_back(std::move(entry));
  }
  return b;
}

json baseline_json(const GateBaseline& b) {
  json entries = json::array();
  for (const auto& e : b.entries)
    entries.push_back({{"task", e.task},
                       {"stage", e.stage},
                       {"variant", e.variant},
                       {"params", e.params},
                       {"candidate_id", e.candidate_id},
                       {"shape", e.shape},
                       {"median_us", e.sample.median_us},
                       {"p10_us", e.p10_us},
                       {"p90_us", e.p90_us},
                       {"stdev_us", e.sample.stdev_us},
                       {"n", e.sample.n}});
  return {{"schema_version", kBaselineSchemaVersion},
          {"kind", "gate-baseline"},
          {"gpu", b.gpu},
          {"time", b.time},
          {"entries", entries}};
}

GateBaseline baseline_from_records(const std::vector<json>& records, const std::string& gpu,
                                   const std::vector<std::string>& tasks) {
  std::vector<json> runs;
  std::set<std::string> gpus;
  for (const auto& r : records)
    if (string_or(r, "kind") == "run" && !record_gpu_key(r).empty()) {
      runs.push_back(r);
      gpus.insert(record_gpu_key(r));
    }
  GateBaseline b;
  if (!gpu.empty()) {
    b.gpu = gpu;
  } else if (gpus.size() == 1) {
    b.gpu = *gpus.begin();
  } else if (gpus.empty()) {
    throw usage_error("no run records with a GPU (env.gpu_key) to write a baseline from");
  } else {
    throw usage_error(
        fmt::format("the records come from several GPUs ({}): choose one with --gpu", fmt::join(gpus, ", ")));
  }
  for (const auto& t : tasks) parse_task(t);
  for (const auto& [key, pop] : derive_populations(runs)) {
    if (pop.gpu != b.gpu) continue;
    const std::string task = pop.task;
    if (!tasks.empty() && std::find(tasks.begin(), tasks.end(), task) == tasks.end()) continue;
    int top = -1;
    for (const auto& [stage, elites] : pop.stages)
      if (!elites.empty()) top = std::max(top, stage);
    if (top < 0) continue;
    const Elite elite = stage_elites(pop, top).front();
    const json* record = nullptr;
    for (const auto& r : runs)
      if (record_gpu_key(r) == b.gpu && string_or(r, "candidate_id") == elite.candidate_id.value_or("") &&
          string_or(r, "time") == elite.time.value_or("") && string_or(r, "run_id") == elite.run_id.value_or(""))
        record = &r;
    if (!record) continue;
    b.time = std::max(b.time, string_or(*record, "time"));
    for (const auto& t : record->value("timing", json::array())) {
      if (!t.is_object() || !t.contains("median_us") || !t["median_us"].is_number()) continue;
      BaselineEntry e;
      e.task = task;
      e.stage = top;
      e.variant = (*record)["variant"];
      e.params = (*record)["params"];
      e.candidate_id = (*record)["candidate_id"];
      e.shape = string_or(t, "shape");
      e.sample = sample_of(t);
      if (!std::isfinite(e.sample.stdev_us) || e.sample.n < 1)
        throw usage_error(fmt::format("record {} ({}, {}) has no stdev_us / n for {}: it cannot be a baseline",
                                      e.candidate_id, e.variant, task, e.shape));
      e.p10_us = t.contains("p10_us") && t["p10_us"].is_number() ? t["p10_us"].get<double>() : e.sample.median_us;
      e.p90_us = t.contains("p90_us") && t["p90_us"].is_number() ? t["p90_us"].get<double>() : e.sample.median_us;
      b.entries.push_back(std::move(e));
    }
  }
  if (b.entries.empty())
    throw usage_error(fmt::format("no elite with a complete fitness for GPU {}{} in the records: nothing to write",
                                  b.gpu, tasks.empty() ? "" : fmt::format(" and task(s) {}", fmt::join(tasks, ", "))));
  return b;
}

}  // namespace evo
