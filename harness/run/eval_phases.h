// Where one candidate's evaluation time went: the worker's process start (spawn to its first
// event), the worker's own clock (init, load, gate, await, timing, and inside them fill and
// verify (the timing loop's new inputs and GPU checks), hash, readback, write; sent in its `done`
// event), and the parent's side (reading output and
// reference files, comparing them; appending the record and refreshing populations). Kept in
// the record's `phases.detail`; `evo run` prints the means, so a throughput loss with several
// GPUs can be pinned on the phase that stretched.
#pragma once
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/task.h"
#include "gates/correctness.h"
#include "gpu/worker_events.h"
#include "policy/config.h"
#include "store/typed_record.h"

namespace evo {

class EvalPhases {
 public:
  EvalPhases() : start_(std::chrono::steady_clock::now()) {}
  void on_event(const WorkerEvent& ev);  // the first event ends the process start
  // Reads a worker's output and its reference (at once: each can be hundreds of MB) and
  // compares them, timing both parts.
  OutputCheck check(const std::string& out_path, const std::string& ref_path, DType dtype, const Tolerance& tol);
  PhaseDetail detail() const;  // the record's phases.detail
  // Seconds from the worker's `phase gate <case>` event to that case's `case_done`: the worker's
  // time on one gate case (the parent compares a case while the worker goes on to the next), so
  // a gate's cost can be pinned on the cases that carry it. Null for a case never timed so.
  std::optional<double> case_seconds(const std::string& case_id) const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::string open_case_;  // the gate case the worker announced last and has not finished
  std::chrono::steady_clock::time_point open_case_start_;
  std::map<std::string, double> case_s_;
  std::optional<double> process_start_s_;
  double read_s_ = 0, compare_s_ = 0;
  nlohmann::json worker_ = nlohmann::json::object();  // from the worker, so numbers only
};

// "start 0.05 s, init 0.41 s, …, parent read 0.12 s, compare 0.09 s, record 0.01 s": the mean
// of every phase over the records that have `phases.detail`; empty when none has.
std::string phase_means(const std::vector<Record>& records);

}  // namespace evo
