#include "run/eval_phases.h"

#include <fmt/format.h>

#include <future>
#include <map>

#include "core/paths.h"

namespace evo {

using nlohmann::json;

void EvalPhases::on_event(const WorkerEvent& ev) {
  const auto now = std::chrono::steady_clock::now();
  if (!process_start_s_) process_start_s_ = std::chrono::duration<double>(now - start_).count();
  if (ev.kind == WorkerEventKind::phase && ev.phase == "gate" && !ev.case_id.empty()) {
    open_case_ = ev.case_id;
    open_case_start_ = now;
  } else if (ev.kind == WorkerEventKind::case_done && !open_case_.empty() && ev.case_id == open_case_) {
    case_s_[open_case_] = std::chrono::duration<double>(now - open_case_start_).count();
    open_case_.clear();
  }
  if (ev.kind != WorkerEventKind::done || !ev.fields.contains("clock") || !ev.fields["clock"].is_object()) return;
  // The worker runs candidate code: keep only plain non-negative numbers under short names.
  for (const auto& [k, v] : ev.fields["clock"].items())
    if (v.is_number() && v.get<double>() >= 0 && k.size() <= 32 && worker_.size() < 32) worker_[k] = v.get<double>();
}

OutputCheck EvalPhases::check(const std::string& out_path, const std::string& ref_path, DType dtype,
                              const Tolerance& tol) {
  const auto t0 = std::chrono::steady_clock::now();
  auto ref = std::async(std::launch::async, [&] { return read_file(ref_path); });
  const std::string out = read_file(out_path);
  const std::string reference = ref.get();
  const auto t1 = std::chrono::steady_clock::now();
  OutputCheck oc = check_output(out, reference, dtype, tol);
  read_s_ += std::chrono::duration<double>(t1 - t0).count();
  compare_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  return oc;
}

std::optional<double> EvalPhases::case_seconds(const std::string& case_id) const {
  auto it = case_s_.find(case_id);
  if (it == case_s_.end()) return std::nullopt;
  return it->second;
}

PhaseDetail EvalPhases::detail() const {
  PhaseDetail d{{"process_start_s", process_start_s_}};
  for (const auto& [k, v] : worker_.items()) d["worker_" + k] = v.get<double>();
  d["parent_read_s"] = read_s_;
  d["parent_compare_s"] = compare_s_;
  return d;
}

std::string phase_means(const std::vector<Record>& records) {
  std::map<std::string, double> sum;
  size_t n = 0;
  for (const Record& r : records) {
    if (!r.phases || !r.phases->detail) continue;
    ++n;
    for (const auto& [k, v] : *r.phases->detail)
      if (v) sum[k] += *v;
  }
  if (n == 0) return "";
  std::string out;
  // Worker phases in the order they happen, then what is inside them, then the parent's.
  // (post_check: records from before timing integrity, whose post-timing launch had its phase.)
  const char* order[] = {"process_start_s",     "worker_init_s",    "worker_load_s",     "worker_gate_s",
                         "worker_await_s",      "worker_timing_s",  "worker_fill_s",     "worker_verify_s",
                         "worker_post_check_s", "worker_hash_s",    "worker_readback_s", "worker_write_s",
                         "parent_read_s",       "parent_compare_s", "record_s"};
  for (const char* k : order) {
    auto it = sum.find(k);
    if (it == sum.end()) continue;
    std::string name = it->first.substr(0, it->first.size() - 2);
    if (name.rfind("worker_", 0) == 0) name = name.substr(7);
    out += fmt::format("{}{} {:.3f}", out.empty() ? "" : ", ", name, it->second / double(n));
  }
  return fmt::format("per candidate, mean s over {}: {}", n, out);
}

}  // namespace evo
