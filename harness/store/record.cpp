#include "store/record.h"

#include <algorithm>

#include <ctime>

#include "core/sha256.h"

namespace evo {

using nlohmann::json;

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string utc_now_compact() {
  std::string s = utc_now_iso8601();
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == '-' || c == ':'; }), s.end());
  return s;
}

json candidate_json(const Candidate& c) {
  json params = json::object();
  for (const auto& [k, v] : c.params) params[k] = v;
  return {{"candidate_id", c.id()},
          {"variant", c.variant->id},
          {"stage", c.variant->stage},
          {"parent", c.variant->parent ? json(*c.variant->parent) : json(nullptr)},
          {"source_path", c.variant->path.string()},
          {"source_sha256", sha256_hex(c.variant->source)},
          {"params", params},
          {"task", c.task.name()},
          {"arch", c.arch}};
}

json resources_json(const PtxasResources& r) {
  return {{"registers", r.registers},     {"spill_stores", r.spill_stores}, {"spill_loads", r.spill_loads},
          {"stack_bytes", r.stack_bytes}, {"static_smem", r.static_smem},   {"barriers", r.barriers},
          {"wgmma_serialized", r.wgmma_serialized}};
}

json launch_json(const LaunchGeometry& g) {
  return {{"threads", g.threads},     {"smem_bytes", g.smem_bytes}, {"rows_per_cta", g.rows_per_cta},
          {"cluster_x", g.cluster_x}, {"persistent", g.persistent}};
}

json compile_json(const CompileResult& r) {
  return {{"cache_key", r.key},
          {"cached", r.cached},
          {"seconds", r.seconds},
          {"options", r.options},
          {"resources", r.resources ? resources_json(*r.resources) : json(nullptr)},
          {"launch", r.launch ? launch_json(*r.launch) : json(nullptr)}};
}

json resource_gate_json(const Verdict& v) {
  // The gate runs only on a cubin: before that (constraints, compile, ...) it was not reached.
  if (v.outcome != Outcome::ok && v.outcome != Outcome::resources)
    return {{"pass", nullptr}, {"reason", "not reached"}};
  const bool failed = v.outcome == Outcome::resources;
  return {{"pass", !failed}, {"reason", failed ? v.reason : ""}};
}

json compile_record(const Candidate& c, const CompileResult& r, const std::string& nvrtc_version) {
  json j = candidate_json(c);
  j["schema_version"] = kRecordSchemaVersion;
  j["kind"] = "compile";
  j["time"] = utc_now_iso8601();
  j["env"] = {{"nvrtc", nvrtc_version}};
  j["compile"] = compile_json(r);
  j["outcome"] = std::string(to_string(r.verdict.outcome));
  j["reason"] = r.verdict.reason;
  j["gates"] = {{"resources", resource_gate_json(r.verdict)}};
  return j;
}

std::string validate_record(const json& j) {
  if (!j.is_object()) return "not a JSON object";
  if (!j.contains("schema_version") || !j["schema_version"].is_string()) return "missing schema_version";
  const std::string v = j["schema_version"];
  if (v.rfind("1.", 0) != 0) return "schema_version " + v + " is not 1.x";
  for (const char* k : {"kind", "variant", "task", "outcome", "candidate_id", "source_sha256", "time"})
    if (!j.contains(k) || !j[k].is_string()) return std::string("field '") + k + "' missing or not a string";
  if (!j.contains("stage") || !j["stage"].is_number_integer()) return "field 'stage' missing or not an integer";
  if (!j.contains("params") || !j["params"].is_object()) return "field 'params' missing or not an object";
  if (!outcome_from_string(j["outcome"].get<std::string>())) return "unknown outcome '" + j["outcome"].get<std::string>() + "'";
  if (j.contains("timing") && !j["timing"].is_array()) return "field 'timing' is not a list";
  if (j.contains("fitness") && !j["fitness"].is_null() && !j["fitness"].is_object()) return "field 'fitness' is not an object";
  return "";
}

}  // namespace evo
