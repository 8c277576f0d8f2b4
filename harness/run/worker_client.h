// The parent's side of a worker: starts `evo __worker JOB` in its own process group (behind a
// wrapper such as compute-sanitizer when given), reads its events under a per-phase watchdog,
// and turns a death or a silence into a verdict.
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/outcome.h"
#include "core/subprocess.h"
#include "gpu/worker_events.h"
#include "gpu/worker_protocol.h"
#include "policy/config.h"

namespace evo {

class WorkerClient {
 public:
  // `wrapper`: argv put before `evo __worker JOB` (e.g. compute-sanitizer and its flags).
  WorkerClient(const WorkerJob& job, const std::filesystem::path& work_dir, const Limits& limits,
               const std::vector<std::string>& wrapper = {});

  // The next event, or nullopt when the worker ended (then `failure()` says how, if it was
  // not a clean "done") or went silent past the current phase's limit (killed: timeout).
  // A line that is not a well-formed event ends the worker with a crash verdict (nullopt).
  std::optional<WorkerEvent> next_event();
  // The parent found an event that breaks the protocol (an unknown case, a foreign output
  // file): kills the worker and records a crash verdict naming `why`.
  void reject(const std::string& why);
  // The parent has its verdict (gates.json verdict.stop_at_first_failure): kills the worker
  // without recording a failure of its own.
  void stop();
  void send(const std::string& line) { child_->write_line(line); }
  const std::optional<Verdict>& failure() const { return failure_; }
  // How the process ended, once it has (after next() returned nullopt or a done/error event).
  const std::optional<ExitStatus>& exit_status() const { return exit_status_; }
  std::string phase() const { return phase_; }
  double seconds() const;  // wall time since start

 private:
  double limit_for(const std::string& phase) const;
  std::map<std::string, double> gate_case_s_;  // case id -> its watchdog limit (run/large_cases.h)
  std::unique_ptr<ChildProcess> child_;
  std::filesystem::path stderr_path_;
  Limits limits_;
  std::string phase_ = "start", phase_detail_;
  std::optional<Verdict> failure_;
  std::optional<ExitStatus> exit_status_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace evo
