#include "run/worker_client.h"

#include <fmt/format.h>

#include "core/paths.h"
#include "run/large_cases.h"
#include "store/atomic_file.h"

namespace evo {

namespace fs = std::filesystem;
using nlohmann::json;

WorkerClient::WorkerClient(const WorkerJob& job, const fs::path& work_dir, const Limits& limits,
                           const std::vector<std::string>& wrapper)
    : stderr_path_(work_dir / "worker.stderr"), limits_(limits), start_(std::chrono::steady_clock::now()) {
  const fs::path job_file = work_dir / "job.json";
  write_file_atomic(job_file, to_json(job).dump());
  std::vector<std::string> argv = wrapper;
  for (std::string a : {evo_executable().string(), std::string("__worker"), job_file.string()}) argv.push_back(a);
  for (const CaseSpec& c : job.cases) gate_case_s_[c.id] = gate_case_limit_s(c, job.task, limits);
  child_ = std::make_unique<ChildProcess>(argv, stderr_path_.string());
}

double WorkerClient::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double WorkerClient::limit_for(const std::string& phase) const {
  if (phase == "gate") {  // sized by the case's work
    const auto it = gate_case_s_.find(phase_detail_);
    return it == gate_case_s_.end() ? limits_.gate_case_s : it->second;
  }
  if (phase == "timing" || phase == "post_check" || phase == "reference") return limits_.timing_shape_s;
  return limits_.load_s;  // start, init, load, and the wait for the parent's answer
}

void WorkerClient::reject(const std::string& why) {
  if (finished_) return;
  // The worker runs candidate code: a line that breaks the protocol is treated like any other
  // way of dying, and costs the candidate a crash verdict, never the parent.
  failure_ = Verdict{Outcome::crash, "worker broke the protocol: " + why};
  stop();
}

void WorkerClient::stop() {
  if (finished_) return;
  child_->kill_group();
  exit_status_ = child_->wait();
  finished_ = true;
}

std::optional<WorkerEvent> WorkerClient::next_event() {
  if (finished_) return std::nullopt;
  const double limit = limit_for(phase_);
  auto line = child_->read_line(std::chrono::milliseconds(long(limit * 1000)));
  if (line) {
    DecodedWorkerEvent decoded = decode_worker_event(*line);
    if (!decoded.event) {
      reject(decoded.error);
      return std::nullopt;
    }
    WorkerEvent& ev = *decoded.event;
    if (ev.kind == WorkerEventKind::phase) {
      phase_ = ev.phase;
      phase_detail_ = ev.case_id.empty() ? ev.bench : ev.case_id;
    }
    if (ev.kind == WorkerEventKind::done) {
      finished_ = true;
      exit_status_ = child_->wait();
    }
    if (ev.kind == WorkerEventKind::error) {
      auto o = outcome_from_string(ev.outcome.empty() ? "runtime" : ev.outcome);
      if (o == Outcome::ok) o = Outcome::runtime;  // an error event never passes a candidate
      failure_ = Verdict{o.value_or(Outcome::runtime),
                         ev.reason + (phase_detail_.empty() ? "" : " (during " + phase_ + " " + phase_detail_ + ")")};
      finished_ = true;
      exit_status_ = child_->wait();
    }
    return std::move(ev);
  }
  finished_ = true;
  const std::string where = phase_ + (phase_detail_.empty() ? "" : " " + phase_detail_);
  if (child_->last_read_timed_out()) {
    child_->mark_timed_out();
    child_->kill_group();
    exit_status_ = child_->wait();
    failure_ = Verdict{Outcome::timeout, fmt::format("no progress for {:g} s during {}: worker killed", limit, where)};
    return std::nullopt;
  }
  ExitStatus st = child_->wait();
  exit_status_ = st;
  std::string tail;
  if (fs::exists(stderr_path_)) {
    tail = read_file(stderr_path_);
    if (tail.size() > 300) tail = tail.substr(tail.size() - 300);
    for (char& ch : tail)
      if (ch == '\n' || ch == '\r') ch = ' ';
  }
  failure_ = Verdict{Outcome::crash,
                     fmt::format("worker {} during {}{}", st.describe(), where, tail.empty() ? "" : ": " + tail)};
  return std::nullopt;
}

}  // namespace evo
