#include "compile/compile_record.h"

#include "store/record.h"

namespace evo {

using nlohmann::json;

json resources_json(const PtxasResources& r) {
  return {{"registers", r.registers},
          {"spill_stores", r.spill_stores},
          {"spill_loads", r.spill_loads},
          {"stack_bytes", r.stack_bytes},
          {"static_smem", r.static_smem},
          {"barriers", r.barriers},
          {"wgmma_serialized", r.wgmma_serialized}};
}

json launch_json(const LaunchGeometry& g) {
  json j = {{"threads", g.threads},
            {"smem_bytes", g.smem_bytes},
            {"rows_per_cta", g.rows_per_cta},
            {"cluster_x", g.cluster_x},
            {"persistent", g.persistent}};
  if (g.kv_splits_max > 1 || g.pack_gqa) {  // split-KV kernels only: other records stay as they were
    j["kv_splits_max"] = g.kv_splits_max;
    j["kv_block"] = g.kv_block;
    j["pack_gqa"] = g.pack_gqa;
  }
  return j;
}

RecordCompile compile_part(const CompileResult& r) {
  RecordCompile c;
  c.cache_key = r.key;
  c.cached = r.cached;
  c.seconds = r.seconds;
  c.extra = {{"options", r.options},
             {"resources", r.resources ? resources_json(*r.resources) : json(nullptr)},
             {"launch", r.launch ? launch_json(*r.launch) : json(nullptr)},
             {"technique", r.technique ? json(*r.technique) : json(nullptr)},
             {"technique_error", r.technique_error.empty() ? json(nullptr) : json(r.technique_error)}};
  if (!r.code_sha256.empty()) c.extra["code_sha256"] = r.code_sha256;  // what runs (novelty on code)
  return c;
}

RecordGate resource_gate_part(const Verdict& v) {
  RecordGate g;
  // The gate runs only on a cubin: before that (constraints, compile, ...) it was not reached.
  if (v.outcome != Outcome::ok && v.outcome != Outcome::resources && v.outcome != Outcome::technique) {
    g.extra["pass"] = nullptr;
    g.reason = "not reached";
    return g;
  }
  const bool failed = v.outcome == Outcome::resources;
  g.pass = !failed;
  g.reason = failed ? v.reason : "";
  return g;
}

Record compile_record(const Candidate& c, const CompileResult& r, const std::string& nvrtc_version) {
  Record rec = candidate_record(c);
  rec.kind = "compile";
  rec.time = utc_now_iso8601();
  rec.env = RecordEnv{};
  rec.env->nvrtc = nvrtc_version;
  rec.compile = compile_part(r);
  rec.outcome = r.verdict.outcome;
  rec.reason = r.verdict.reason;
  rec.gates = RecordGates{};
  rec.gates->resources = resource_gate_part(r.verdict);
  return rec;
}

}  // namespace evo
