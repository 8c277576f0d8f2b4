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
#include "gpu/timing_facts.h"

namespace evo {

enum class WorkerEventKind { phase, device, case_done, await, timing, post_done, done, error };

std::string_view to_string(WorkerEventKind k);
std::optional<WorkerEventKind> worker_event_kind_from_string(std::string_view s);

struct WorkerEvent {
  WorkerEventKind kind = WorkerEventKind::done;
  std::string phase;                             // phase: init, reference, load, gate, timing, ...
  std::string case_id;                           // phase (reference, gate), case_done
  std::string bench;                             // phase (timing), timing, post_done
  std::string out;                               // case_done, post_done: the file the output was written to
  std::optional<DeviceCheckFacts> device_check;  // case_done of a case checked on the GPU, post_done (no `out`)
  std::optional<TimingFacts> integrity;          // timing: what the loop checked (gpu/timing_facts.h)
  std::optional<bool> deterministic, inputs_intact, guards_intact;  // case_done, post_done
  // case_done of a split kernel's case: its workspace's tile counters read 0 after every launch
  // (evo_launch.h's contract; hacker round 7: a count kept there is state between calls).
  std::optional<bool> counters_zero;
  // case_done of a split kernel's case: the second launch, over the workspace the first left,
  // left it as it found it (hacker round 8: a count kept in the partials is state between calls).
  std::optional<bool> workspace_repeat_same;
  std::optional<double> us;     // post_done: the checked launch's time
  bool pruned = false;          // timing: the worker stopped timing this candidate early
  std::string outcome, reason;  // error
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

// The worker's side: one constructor per event it sends (gpu/worker.cpp emits only these,
// through encode_worker_event), so what it reports is named by type, not spelled by hand.
WorkerEvent worker_event(WorkerEventKind kind);  // await, done
WorkerEvent phase_event(std::string phase, std::string case_id = "", std::string bench = "");
// The device's facts (name, cc, sms, l2_bytes, driver, SM clocks) as the worker read them.
WorkerEvent device_event(nlohmann::json facts);
WorkerEvent case_done_event(std::string case_id, std::string out, std::optional<bool> deterministic = {},
                            std::optional<bool> inputs_intact = {}, std::optional<bool> guards_intact = {},
                            std::optional<bool> counters_zero = {}, std::optional<bool> workspace_repeat_same = {});
// The worker's time_shape adds the statistics to `fields`, and `pruned` when it stopped early.
WorkerEvent timing_event(std::string bench);
// A benchmark shape's launch on fresh inputs of its post-timing distribution, every element
// compared on the GPU: the timed sample at the drawn index, or a pruned shape's one launch.
WorkerEvent post_done_event(std::string bench, const FullCheck& check, bool guards_intact);
WorkerEvent error_event(std::string outcome, std::string reason);

}  // namespace evo
