#include "report/compare_parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "core/errors.h"
#include "core/outcome.h"
#include "core/paths.h"
#include "core/shape.h"
#include "core/task.h"
#include "report/compare_parts.h"
#include "store/json_fields.h"
#include "store/population.h"
#include "store/record.h"
#include "store/records.h"

namespace evo::compare_parts {

TaskFacts task_facts(const std::string& name) {
  TaskFacts f;
  f.dtype = name.substr(0, name.find('-'));
  try {
    f.task = parse_task(name);
  } catch (const EvoError&) {
  }
  return f;
}

namespace {
// A figure of a record only when it is a finite number.
std::optional<double> finite(const std::optional<double>& v) { return v && std::isfinite(*v) ? v : std::nullopt; }
}  // namespace

std::optional<ShapeFigures> figures_from_timing(const TimingEntry& t, const TaskFacts& facts,
                                                std::optional<double> ceiling) {
  const auto median = finite(t.median_us);
  if (!t.shape || !median || *median <= 0) return std::nullopt;
  ShapeFigures f;
  f.shape = *t.shape;
  f.sample.median_us = *median;
  f.sample.stdev_us = finite(t.stdev_us).value_or(NAN);
  f.sample.n = t.n ? int(*t.n) : 0;
  f.p10_us = finite(t.p10_us).value_or(*median);
  f.p90_us = finite(t.p90_us).value_or(*median);
  f.rse = finite(t.rse);
  // FLOPs from the shape (Shape::flops, the one definition evo uses), so ours and the peers'
  // TFLOPS count the same work; the record's own figure only when the task is unknown here.
  f.tflops = finite(t.tflops);
  if (facts.task) {
    try {
      const Shape s = parse_shape(f.shape, facts.task->head_dim);
      f.tflops = s.flops(facts.task->causal) / (*median * 1e6);
    } catch (const EvoError&) {
    }
  }
  if (f.tflops && ceiling) f.ceiling_share = *f.tflops / *ceiling;
  f.clock_before_mhz = finite_number(t.extra, "sm_clock_before_mhz");
  f.clock_after_mhz = finite_number(t.extra, "sm_clock_after_mhz");
  return f;
}

std::vector<ShapeFigures> timing_figures(const Record& r, const TaskFacts& facts, std::optional<double> ceiling) {
  std::vector<ShapeFigures> out;
  if (!r.timing) return out;
  for (const auto& t : *r.timing)
    if (auto f = figures_from_timing(t, facts, ceiling)) out.push_back(*f);
  return out;
}

const ShapeFigures* find_shape(const std::vector<ShapeFigures>& list, const std::string& shape) {
  for (const auto& f : list)
    if (f.shape == shape) return &f;
  return nullptr;
}

double geomean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double s = 0;
  for (double x : v) s += std::log(x);
  return std::exp(s / double(v.size()));
}

// Geomean of a_i / b_i over the shapes both measured.
std::optional<RatioInterval> common_ratio(const std::vector<ShapeFigures>& a, const std::vector<ShapeFigures>& b,
                                          double confidence) {
  std::vector<std::pair<MedianSample, MedianSample>> pairs;
  for (const auto& fa : a)
    if (const ShapeFigures* fb = find_shape(b, fa.shape)) pairs.emplace_back(fa.sample, fb->sample);
  if (pairs.empty()) return std::nullopt;
  return geomean_ratio_interval(pairs, confidence);
}

std::string peer_label(const std::string& name) {
  if (name == "pytorch-sdpa-flash") return "PyTorch flash";
  if (name == "pytorch-sdpa-cudnn") return "cuDNN";
  if (name == "pytorch-sdpa-efficient") return "PyTorch efficient";
  if (name == "cudnn-fp8-sdpa") return "cuDNN FP8";       // scripts/peers_cudnn_fp8.py
  if (name == "flash-attn-4") return "FlashAttention-4";  // scripts/peers_fa4.py
  return name;
}

// Columns left to right: FA2 (PyTorch flash), cuDNN, FA4 beside them, the slower fallbacks last.
int peer_rank(const std::string& name) {
  if (name == "pytorch-sdpa-flash") return 0;
  if (name == "pytorch-sdpa-cudnn" || name == "cudnn-fp8-sdpa") return 1;
  if (name == "flash-attn-4") return 2;
  if (name == "pytorch-sdpa-efficient") return 3;
  return 4;
}

// ", sampled 12/12 (seed S)" when the gate drew sampled cases (records before it did not).
std::string sampled_summary_text(const RecordGates& gates) {
  if (!gates.sampled || !gates.sampled->seed || *gates.sampled->seed < 0) return "";
  const SampledGateSummary& s = *gates.sampled;
  return fmt::format(", sampled {}/{} (seed {})", s.passed.value_or(0), s.cases.value_or(0), *s.seed);
}

// `sanitized`: the latest record of the same candidate that ran under --sanitize, if `r` did
// not (an `evo gate` re-measure, say): the verdict belongs to the compiled code, not the run.
// `deep_gated`, likewise, the latest that ran the deep tier: the summary names the tier.
std::string gates_summary(const Record& r, const Record* sanitized, const Record* deep_gated) {
  const RecordGates gates = r.gates.value_or(RecordGates{});
  auto count = [&](const std::optional<RecordGate>& gate, int& passed, int& total, double& max_rel) {
    if (!gate || !gate->checks) return;
    for (const GateCheck& c : *gate->checks) {
      ++total;
      passed += c.pass.value_or(false);
      if (auto rel = finite(c.rel_l2)) max_rel = std::max(max_rel, *rel);
    }
  };
  int pass = 0, total = 0, post_pass = 0, post_total = 0;
  double max_rel = 0;
  count(gates.correctness, pass, total, max_rel);
  count(gates.post_timing, post_pass, post_total, max_rel);
  std::string det = "det ?";
  if (gates.determinism && gates.determinism->extra.contains("pass"))  // there, but not a boolean
    det = "det FAIL";
  if (gates.determinism && gates.determinism->pass) det = *gates.determinism->pass ? "det ok" : "det FAIL";
  // evo run --sanitize leaves its verdict (the part's "sanitizer"); older records and non-elites have none.
  std::string san = "not sanitized";
  if (gates.sanitizer) {
    san = gates.sanitizer->passed() ? "sanitizer ok" : "sanitizer FAIL";
  } else if (sanitized && sanitized->gates && sanitized->gates->sanitizer) {
    san = std::string(sanitized->gates->sanitizer->passed() ? "sanitizer ok" : "sanitizer FAIL") + " (run " +
          sanitized->run_id.value_or("") + ")";
  }
  std::string tier = "cheap tier only";
  if (const Record* d = gates.deep ? &r : deep_gated) {
    int deep_pass = 0, deep_total = 0;
    double deep_rel = 0;
    count(d->gates->deep, deep_pass, deep_total, deep_rel);
    tier = fmt::format("deep tier {}/{}", deep_pass, deep_total) +
           (d == &r ? "" : " (run " + d->run_id.value_or("") + ")");
  }
  return fmt::format("{}/{} + post {}/{}{}, {}, max rel L2 {:.1e}, {}, {}", pass, total, post_pass, post_total,
                     sampled_summary_text(gates), det, max_rel, san, tier);
}

std::optional<long> integer(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return long(j[key].get<double>());
}

void fill_resources(const Record& r, StageRow& row) {
  const json compile = r.compile ? r.compile->extra : json::object();
  const json res = compile.is_object() ? compile.value("resources", json()) : json();
  const json launch = compile.is_object() ? compile.value("launch", json()) : json();
  row.registers = integer(res, "registers");
  const auto stores = integer(res, "spill_stores"), loads = integer(res, "spill_loads");
  if (stores || loads) row.spill_bytes = stores.value_or(0) + loads.value_or(0);
  if (const json t = compile.is_object() ? compile.value("technique", json()) : json(); t.is_object())
    for (const auto& [key, count] : t.items())
      if (count.is_number_integer() && count.get<long>() > 0)
        row.technique += fmt::format("{}{} {}", row.technique.empty() ? "" : ", ", key, count.get<long>());
  const auto static_smem = integer(res, "static_smem"), dynamic_smem = integer(launch, "smem_bytes");
  if (static_smem || dynamic_smem) row.smem_bytes = static_smem.value_or(0) + dynamic_smem.value_or(0);
}

std::string ratio_text(double r) { return fmt::format("{:.2f}", r); }

std::string us_text(double us) {
  if (us < 10) return fmt::format("{:.2f}", us);
  if (us < 1000) return fmt::format("{:.1f}", us);
  return fmt::format("{:.0f}", us);
}

std::string signed_percent(double fraction) {
  std::string s = fmt::format("{:+.1f}", fraction * 100);
  if (s == "-0.0") s = "+0.0";
  return s + " %";
}

std::string who(const StageRow& s) { return fmt::format("stage {} ({})", s.stage, s.variant); }

std::string params_text(const json& params) {
  if (!params.is_object() || params.empty()) return "-";
  std::string s;
  for (const auto& [k, v] : params.items())
    s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v.is_string() ? v.get<std::string>() : v.dump());
  return s;
}

// Seconds since the epoch of a record time "YYYY-MM-DDTHH:MM:SSZ"; nullopt when it does not read.
std::optional<long long> epoch_seconds(const std::string& iso) {
  std::tm tm{};
  std::istringstream in(iso);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  return static_cast<long long>(timegm(&tm));
}

// With `near` empty the latest record; otherwise the one nearest in time to `near`, so that a
// stage is held against the peers of its own device call when they ran there (a speed ratio from
// one run: run-to-run drift of the same cuDNN kernel reached 9 % between two H200 calls). Equal
// distances, or times that do not read, go to the later record.
std::map<std::string, const Record*> peers_for_shape(const std::string& shape, const std::vector<const Record*>& peers,
                                                     const std::string& near) {
  const std::optional<long long> target = near.empty() ? std::nullopt : epoch_seconds(near);
  auto distance = [&](const Record& p) -> std::optional<long long> {
    const auto t = epoch_seconds(p.time);
    if (!target || !t) return std::nullopt;
    return std::llabs(*t - *target);
  };
  std::map<std::string, const Record*> chosen;
  for (const Record* p : peers) {
    bool mentions = string_or(p->extra, "shape") == shape;
    if (p->timing)
      for (const auto& t : *p->timing) mentions |= t.shape.value_or("") == shape;
    if (!mentions) continue;
    const std::string name = p->variant.substr(5);
    auto it = chosen.find(name);
    if (it == chosen.end()) {
      chosen[name] = p;
      continue;
    }
    const auto d_new = distance(*p), d_old = distance(*it->second);
    const bool closer = d_new && d_old && *d_new != *d_old ? *d_new < *d_old : !it->second->newer_than(*p);
    if (closer) it->second = p;
  }
  return chosen;
}

}  // namespace evo::compare_parts
