#include "gpu/worker_events.h"

#include <array>
#include <utility>

namespace evo {

using nlohmann::json;

namespace {

constexpr std::array<std::pair<WorkerEventKind, std::string_view>, 8> kKinds{{
    {WorkerEventKind::phase, "phase"},
    {WorkerEventKind::device, "device"},
    {WorkerEventKind::case_done, "case_done"},
    {WorkerEventKind::await, "await"},
    {WorkerEventKind::timing, "timing"},
    {WorkerEventKind::post_done, "post_done"},
    {WorkerEventKind::done, "done"},
    {WorkerEventKind::error, "error"},
}};

// Reads an optional field of one JSON type into `out`; false (with `error` set) when present
// with another type.
template <typename T>
bool optional_field(const json& j, const char* key, std::optional<T>& out, std::string& error) {
  if (!j.contains(key) || j[key].is_null()) return true;
  const json& v = j[key];
  const bool ok = std::is_same_v<T, bool> ? v.is_boolean() : v.is_number();
  if (!ok) {
    error = std::string("field '") + key + "' has the wrong type";
    return false;
  }
  out = v.get<T>();
  return true;
}

bool string_field(const json& j, const char* key, bool required, std::string& out, std::string& error) {
  if (!j.contains(key)) {
    if (required) error = std::string("field '") + key + "' is missing";
    return !required;
  }
  if (!j[key].is_string()) {
    error = std::string("field '") + key + "' is not a string";
    return false;
  }
  out = j[key].get<std::string>();
  return true;
}

// Which string fields each kind must carry, so no reader downstream meets a missing one.
bool read_strings(const json& j, WorkerEvent& e, std::string& error) {
  using K = WorkerEventKind;
  const K k = e.kind;
  return string_field(j, "phase", k == K::phase, e.phase, error) &&
         string_field(j, "case", k == K::case_done, e.case_id, error) &&
         string_field(j, "bench", k == K::timing || k == K::post_done, e.bench, error) &&
         string_field(j, "out", (k == K::case_done || k == K::post_done) && !j.contains("device_check"), e.out,
                      error) &&
         string_field(j, "outcome", false, e.outcome, error) && string_field(j, "reason", false, e.reason, error);
}

}  // namespace

std::string_view to_string(WorkerEventKind k) {
  for (const auto& [kind, name] : kKinds)
    if (kind == k) return name;
  return "unknown";
}

std::optional<WorkerEventKind> worker_event_kind_from_string(std::string_view s) {
  for (const auto& [kind, name] : kKinds)
    if (name == s) return kind;
  return std::nullopt;
}

DecodedWorkerEvent decode_worker_event(std::string_view line) {
  DecodedWorkerEvent d;
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return {std::nullopt, "not a JSON object"};
  if (!j.contains("event") || !j["event"].is_string()) return {std::nullopt, "no 'event' string"};
  auto kind = worker_event_kind_from_string(j["event"].get<std::string>());
  if (!kind) return {std::nullopt, "unknown event '" + j["event"].get<std::string>().substr(0, 64) + "'"};
  WorkerEvent e;
  e.kind = *kind;
  std::optional<bool> pruned;
  if (!read_strings(j, e, d.error) || !optional_field(j, "deterministic", e.deterministic, d.error) ||
      !optional_field(j, "inputs_intact", e.inputs_intact, d.error) ||
      !optional_field(j, "guards_intact", e.guards_intact, d.error) ||
      !optional_field(j, "counters_zero", e.counters_zero, d.error) ||
      !optional_field(j, "workspace_repeat_same", e.workspace_repeat_same, d.error) ||
      !optional_field(j, "us", e.us, d.error) || !optional_field(j, "pruned", pruned, d.error))
    return {std::nullopt, d.error + " in a '" + std::string(to_string(e.kind)) + "' event"};
  if (e.kind == WorkerEventKind::post_done && !e.us) return {std::nullopt, "a 'post_done' event without 'us'"};
  if (j.contains("device_check")) {
    e.device_check = device_check_from_json(j["device_check"], d.error);
    if (!e.device_check || (e.kind != WorkerEventKind::case_done && e.kind != WorkerEventKind::post_done))
      return {std::nullopt, (d.error.empty() ? "device_check outside a case_done or post_done" : d.error) + " in a '" +
                                std::string(to_string(e.kind)) + "' event"};
  }
  if (j.contains("integrity")) {
    e.integrity = timing_facts_from_json(j["integrity"], d.error);
    if (!e.integrity || e.kind != WorkerEventKind::timing)
      return {std::nullopt, (d.error.empty() ? "integrity outside a timing event" : d.error) + " in a '" +
                                std::string(to_string(e.kind)) + "' event"};
  }
  if (e.kind == WorkerEventKind::timing && j.contains("stats") && !j["stats"].is_object())
    return {std::nullopt, "field 'stats' is not an object in a 'timing' event"};
  e.pruned = pruned.value_or(false);
  e.fields = std::move(j);
  d.event = std::move(e);
  return d;
}

std::string encode_worker_event(const WorkerEvent& e) {
  json j = e.fields.is_object() ? e.fields : json::object();
  j["event"] = std::string(to_string(e.kind));
  auto put = [&](const char* key, const std::string& v) {
    if (!v.empty()) j[key] = v;
  };
  put("phase", e.phase);
  put("case", e.case_id);
  put("bench", e.bench);
  put("out", e.out);
  put("outcome", e.outcome);
  put("reason", e.reason);
  if (e.deterministic) j["deterministic"] = *e.deterministic;
  if (e.inputs_intact) j["inputs_intact"] = *e.inputs_intact;
  if (e.guards_intact) j["guards_intact"] = *e.guards_intact;
  if (e.counters_zero) j["counters_zero"] = *e.counters_zero;
  if (e.workspace_repeat_same) j["workspace_repeat_same"] = *e.workspace_repeat_same;
  if (e.us) j["us"] = *e.us;
  if (e.device_check) j["device_check"] = to_json(*e.device_check);
  if (e.integrity) j["integrity"] = to_json(*e.integrity);
  if (e.pruned) j["pruned"] = true;
  return j.dump();
}

WorkerEvent worker_event(WorkerEventKind kind) {
  WorkerEvent e;
  e.kind = kind;
  return e;
}

WorkerEvent phase_event(std::string phase, std::string case_id, std::string bench) {
  WorkerEvent e = worker_event(WorkerEventKind::phase);
  e.phase = std::move(phase);
  e.case_id = std::move(case_id);
  e.bench = std::move(bench);
  return e;
}

WorkerEvent device_event(json facts) {
  WorkerEvent e = worker_event(WorkerEventKind::device);
  e.fields = std::move(facts);
  return e;
}

WorkerEvent case_done_event(std::string case_id, std::string out, std::optional<bool> deterministic,
                            std::optional<bool> inputs_intact, std::optional<bool> guards_intact,
                            std::optional<bool> counters_zero, std::optional<bool> workspace_repeat_same) {
  WorkerEvent e = worker_event(WorkerEventKind::case_done);
  e.case_id = std::move(case_id);
  e.out = std::move(out);
  e.deterministic = deterministic;
  e.inputs_intact = inputs_intact;
  e.guards_intact = guards_intact;
  e.counters_zero = counters_zero;
  e.workspace_repeat_same = workspace_repeat_same;
  return e;
}

WorkerEvent timing_event(std::string bench) {
  WorkerEvent e = worker_event(WorkerEventKind::timing);
  e.bench = std::move(bench);
  return e;
}

WorkerEvent post_done_event(std::string bench, const FullCheck& check, bool guards_intact) {
  WorkerEvent e = worker_event(WorkerEventKind::post_done);
  e.bench = std::move(bench);
  e.us = check.us;
  e.inputs_intact = check.inputs_intact;
  e.guards_intact = guards_intact;
  e.device_check = check.facts;
  e.fields = {{"sample", check.sample}, {"why", check.why}};  // which launch (the record's post-timing check)
  return e;
}

WorkerEvent error_event(std::string outcome, std::string reason) {
  WorkerEvent e = worker_event(WorkerEventKind::error);
  e.outcome = std::move(outcome);
  e.reason = std::move(reason);
  return e;
}

}  // namespace evo
