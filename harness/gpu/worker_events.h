// Worker -> parent events, one JSON object per stdout line. The worker runs candidate code in
// its address space, so the parent treats every line as untrusted: decode_worker_event checks
// each field it will use and names what is wrong; a line that does not decode ends the worker
// with a `crash` verdict (run/worker_client.cpp), never an exception in the parent.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "gpu/device_check.h"

namespace evo {

enum class WorkerEventKind { phase, device, case_done, await, timing, post_done, done, error };

std::string_view to_string(WorkerEventKind k);
std::optional<WorkerEventKind> worker_event_kind_from_string(std::string_view s);

struct WorkerEvent {
  WorkerEventKind kind = WorkerEventKind::done;
  std::string phase;    // phase: init, reference, load, gate, timing, post_check, ...
  std::string case_id;  // phase (reference, gate), case_done
  std::string bench;    // phase (timing, post_check), timing, post_done
  std::string out;      // case_done, post_done: the file the output was written to
  std::optional<DeviceCheckFacts> device_check;  // case_done of a case checked on the GPU (no `out`)
  std::optional<bool> deterministic, inputs_intact, guards_intact;  // case_done, post_done
  std::optional<double> us;       // post_done: the fresh launch's time
  bool pruned = false;            // timing: the worker stopped timing this candidate early
  std::string outcome, reason;    // error
  // The whole object as sent: timing statistics and device facts pass into the record as they
  // are (their names are the record's names, docs/records.md).
  nlohmann::json fields = nlohmann::json::object();
};

struct DecodedWorkerEvent {
  std::optional<WorkerEvent> event;
  std::string error;  // set when `event` is empty: what is wrong with the line, in one line
};

DecodedWorkerEvent decode_worker_event(std::string_view line);
// The line the worker writes for `e` (fields, overwritten by the typed members that are set).
std::string encode_worker_event(const WorkerEvent& e);

}  // namespace evo
