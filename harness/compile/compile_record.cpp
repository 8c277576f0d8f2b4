#include "compile/compile_record.h"

#include "store/record.h"

namespace evo {

using nlohmann::json;

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
          {"launch", r.launch ? launch_json(*r.launch) : json(nullptr)},
          {"technique", r.technique ? json(*r.technique) : json(nullptr)},
          {"technique_error", r.technique_error.empty() ? json(nullptr) : json(r.technique_error)}};
}

json resource_gate_json(const Verdict& v) {
  // The gate runs only on a cubin: before that (constraints, compile, ...) it was not reached.
  if (v.outcome != Outcome::ok && v.outcome != Outcome::resources && v.outcome != Outcome::technique)
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

}  // namespace evo
