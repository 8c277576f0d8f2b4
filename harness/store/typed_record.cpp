#include "store/typed_record.h"

#include <cstdlib>

#include "core/param_json.h"
#include "store/json_fields.h"
#include "store/record.h"
#include "store/record_values.h"
#include "store/typed_record_io.h"

namespace evo {

using nlohmann::json;

namespace {

using namespace record_io;

RecordEnv read_env(json j) {
  RecordEnv e;
  take(j, "gpu", e.gpu);
  take(j, "gpu_key", e.gpu_key);
  take(j, "nvrtc", e.nvrtc);
  take(j, "evo", e.evo);
  take(j, "host", e.host);
  take(j, "cc", e.cc);
  take(j, "sms", e.sms);
  take(j, "driver", e.driver);
  take(j, "gpu_uuid", e.gpu_uuid);
  take(j, "device", e.device);
  e.extra = std::move(j);
  return e;
}

json write_env(const RecordEnv& e) {
  json j = e.extra;
  put(j, "gpu", e.gpu);
  put(j, "gpu_key", e.gpu_key);
  put(j, "nvrtc", e.nvrtc);
  put(j, "evo", e.evo);
  put(j, "host", e.host);
  put(j, "cc", e.cc);
  put(j, "sms", e.sms);
  put(j, "driver", e.driver);
  put(j, "gpu_uuid", e.gpu_uuid);
  put(j, "device", e.device);
  return j;
}

RecordCompile read_compile(json j) {
  RecordCompile c;
  take(j, "cache_key", c.cache_key);
  take(j, "cached", c.cached);
  take(j, "seconds", c.seconds);
  c.extra = std::move(j);
  return c;
}

json write_compile(const RecordCompile& c) {
  json j = c.extra;
  put(j, "cache_key", c.cache_key);
  put(j, "cached", c.cached);
  put(j, "seconds", c.seconds);
  return j;
}

TimingEntry read_timing(json j) {
  TimingEntry t;
  take(j, "shape", t.shape);
  take(j, "set", t.set);
  take(j, "median_us", t.median_us);
  take(j, "p10_us", t.p10_us);
  take(j, "p90_us", t.p90_us);
  take(j, "stdev_us", t.stdev_us);
  take(j, "n", t.n);
  take(j, "rse", t.rse);
  take(j, "tflops", t.tflops);
  take_part(j, "integrity", t.integrity, read_integrity);
  t.extra = std::move(j);
  return t;
}

json write_timing(const TimingEntry& t) {
  json j = t.extra;
  put(j, "shape", t.shape);
  put(j, "set", t.set);
  put(j, "median_us", t.median_us);
  put(j, "p10_us", t.p10_us);
  put(j, "p90_us", t.p90_us);
  put(j, "stdev_us", t.stdev_us);
  put(j, "n", t.n);
  put(j, "rse", t.rse);
  put(j, "tflops", t.tflops);
  if (t.integrity) j["integrity"] = write_integrity(*t.integrity);
  return j;
}

// phases.detail: read when every value is a number or null, else left as it is.
void take_detail(json& phases, std::optional<PhaseDetail>& out) {
  auto it = phases.find("detail");
  if (it == phases.end() || !it->is_object()) return;
  PhaseDetail d;
  for (const auto& [name, seconds] : it->items()) {
    if (!seconds.is_null() && !seconds.is_number()) return;
    d[name] = seconds.is_null() ? std::nullopt : std::optional<double>(seconds.get<double>());
  }
  out = std::move(d);
  phases.erase(it);
}

RecordPhases read_phases(json j) {
  RecordPhases p;
  take(j, "compile_s", p.compile_s);
  take(j, "gpu_s", p.gpu_s);
  take(j, "sanitizer_s", p.sanitizer_s);
  take(j, "deep_gate_s", p.deep_gate_s);
  take_detail(j, p.detail);
  p.extra = std::move(j);
  return p;
}

json write_phases(const RecordPhases& p) {
  json j = p.extra;
  put(j, "compile_s", p.compile_s);
  put(j, "gpu_s", p.gpu_s);
  put(j, "sanitizer_s", p.sanitizer_s);
  put(j, "deep_gate_s", p.deep_gate_s);
  if (p.detail) {
    json d = json::object();
    for (const auto& [name, seconds] : *p.detail) d[name] = seconds ? json(*seconds) : json(nullptr);
    j["detail"] = std::move(d);
  }
  return j;
}

// What every record must carry, in validate_record's order and words.
std::string required_fields_error(const json& j) {
  if (!j.is_object()) return "not a JSON object";
  if (!j.contains("schema_version") || !j["schema_version"].is_string()) return "missing schema_version";
  const std::string v = j["schema_version"];
  if (v.rfind("1.", 0) != 0) return "schema_version " + v + " is not 1.x";
  for (const char* k : {"kind", "variant", "task", "outcome", "candidate_id", "source_sha256", "time"})
    if (!j.contains(k) || !j[k].is_string()) return std::string("field '") + k + "' missing or not a string";
  if (!j.contains("stage") || !j["stage"].is_number_integer()) return "field 'stage' missing or not an integer";
  if (!j.contains("params") || !j["params"].is_object()) return "field 'params' missing or not an object";
  if (!params_from_json(j["params"]))
    return "field 'params' is " + j["params"].dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 200) +
           ": every tunable must be an integer";
  if (!outcome_from_string(j["outcome"].get<std::string>()))
    return "unknown outcome '" + j["outcome"].get<std::string>() + "'";
  if (j.contains("timing") && !j["timing"].is_array()) return "field 'timing' is not a list";
  if (j.contains("fitness") && !j["fitness"].is_null() && !j["fitness"].is_object())
    return "field 'fitness' is not an object";
  return record_values_error(j);
}

// Moves a required string (checked by required_fields_error) into `out`.
void take_required(json& j, const char* key, std::string& out) {
  out = j[key].get<std::string>();
  j.erase(key);
}

}  // namespace

namespace record_io {

Fitness read_fitness(json j) {
  Fitness f;
  take(j, "geomean_median_us", f.geomean_median_us);
  take(j, "geomean_p90_us", f.geomean_p90_us);
  take(j, "shapes", f.shapes);
  take(j, "complete", f.complete);
  f.extra = std::move(j);
  return f;
}

json write_fitness(const Fitness& f) {
  json j = f.extra;
  put(j, "geomean_median_us", f.geomean_median_us);
  put(j, "geomean_p90_us", f.geomean_p90_us);
  put(j, "shapes", f.shapes);
  put(j, "complete", f.complete);
  return j;
}

}  // namespace record_io

GateCheck read_gate_check(json j) { return read_check(std::move(j)); }
TimingEntry read_timing_entry(json j) { return read_timing(std::move(j)); }

std::optional<SchemaVersion> SchemaVersion::parse(const std::string& text) {
  const size_t dot = text.find('.');
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  char* end = nullptr;
  SchemaVersion v;
  v.major = int(std::strtol(text.c_str(), &end, 10));
  if (end != text.c_str() + dot) return std::nullopt;
  v.minor = int(std::strtol(text.c_str() + dot + 1, &end, 10));
  if (end == text.c_str() + dot + 1 || *end != '\0') return std::nullopt;
  return v;
}

std::string SchemaVersion::text() const { return std::to_string(major) + "." + std::to_string(minor); }

std::string Record::gpu_key() const { return env && env->gpu_key ? *env->gpu_key : ""; }

bool Record::newer_than(const Record& other) const {
  return newer_by_time_then_run(time, run_id.value_or(""), other.time, other.run_id.value_or(""));
}

RecordRead read_record(const json& in) {
  RecordRead out;
  if (auto bad = required_fields_error(in); !bad.empty()) return {std::nullopt, bad, ""};
  const std::string version = in["schema_version"];
  auto schema = SchemaVersion::parse(version);
  if (!schema) return {std::nullopt, "schema_version " + version + " is not major.minor", ""};
  const SchemaVersion mine = *SchemaVersion::parse(kRecordSchemaVersion);
  if (schema->minor > mine.minor)
    out.warning = "schema_version " + version + " is newer than this evo's " + kRecordSchemaVersion;
  json j = in;
  Record r;
  r.schema = *schema;
  j.erase("schema_version");
  take_required(j, "kind", r.kind);
  take_required(j, "candidate_id", r.candidate_id);
  take_required(j, "variant", r.variant);
  take_required(j, "task", r.task);
  take_required(j, "time", r.time);
  take_required(j, "source_sha256", r.source_sha256);
  r.outcome = *outcome_from_string(j["outcome"].get<std::string>());
  r.stage = j["stage"].get<int>();
  r.params = *params_from_json(j["params"]);
  for (const char* k : {"outcome", "stage", "params"}) j.erase(k);
  take(j, "run_id", r.run_id);
  take(j, "parent", r.parent);
  take(j, "source_path", r.source_path);
  take(j, "arch", r.arch);
  take(j, "origin", r.origin);
  take(j, "benchmark", r.benchmark);
  take(j, "reason", r.reason);
  take(j, "pruned", r.pruned);
  take(j, "gpu_seconds", r.gpu_seconds);
  take(j, "gate_seed", r.gate_seed);
  take(j, "shard", r.shard);
  take_strings(j, "warnings", r.warnings);
  take_part(j, "phases", r.phases, read_phases);
  take_part(j, "env", r.env, read_env);
  take_part(j, "compile", r.compile, read_compile);
  take_part(j, "gates", r.gates, read_gates);
  take_part(j, "fitness", r.fitness, read_fitness);
  take_list(j, "timing", r.timing, read_timing);
  r.extra = std::move(j);
  out.record = std::move(r);
  return out;
}

json write_record(const Record& r) {
  json j = r.extra;
  // The version as it was read (a foreign minor stays what it was), as written by this evo else.
  j["schema_version"] = r.schema.text();
  j["kind"] = r.kind;
  j["candidate_id"] = r.candidate_id;
  j["variant"] = r.variant;
  j["task"] = r.task;
  j["time"] = r.time;
  j["source_sha256"] = r.source_sha256;
  j["stage"] = r.stage;
  j["params"] = params_json(r.params);
  j["outcome"] = std::string(to_string(r.outcome));
  put(j, "run_id", r.run_id);
  put(j, "parent", r.parent);
  put(j, "source_path", r.source_path);
  put(j, "arch", r.arch);
  put(j, "origin", r.origin);
  put(j, "benchmark", r.benchmark);
  put(j, "reason", r.reason);
  put(j, "pruned", r.pruned);
  put(j, "gpu_seconds", r.gpu_seconds);
  put(j, "gate_seed", r.gate_seed);
  put(j, "shard", r.shard);
  put(j, "warnings", r.warnings);
  if (r.phases) j["phases"] = write_phases(*r.phases);
  if (r.env) j["env"] = write_env(*r.env);
  if (r.compile) j["compile"] = write_compile(*r.compile);
  if (r.gates) j["gates"] = write_gates(*r.gates);
  if (r.fitness) j["fitness"] = write_fitness(*r.fitness);
  put_list(j, "timing", r.timing, write_timing);
  return j;
}

}  // namespace evo
