#include "evolve/evolve_record.h"

#include <fmt/format.h>

namespace evo {

using nlohmann::json;

namespace {

// Takes key out of `rest` into `out` when it has the type; otherwise it stays in `rest`.
void take(json& rest, const char* key, std::string& out) {
  if (rest.contains(key) && rest[key].is_string()) out = rest[key].get<std::string>(), rest.erase(key);
}
template <typename T>
void take_number(json& rest, const char* key, T& out) {
  if (rest.contains(key) && rest[key].is_number()) out = rest[key].get<T>(), rest.erase(key);
}

}  // namespace

EvolveEntry read_evolve_entry(const json& j) {
  EvolveEntry e;
  json rest = j.is_object() ? j : json::object();
  take(rest, "run", e.run);
  take(rest, "generator", e.generator);
  take(rest, "parent", e.parent);
  take(rest, "rationale", e.rationale);
  take(rest, "operator", e.op);
  take(rest, "island", e.island);
  take(rest, "phase", e.phase);
  take(rest, "admission", e.admission);
  take(rest, "compared_with", e.compared_with);
  if (rest.contains("generation") && rest["generation"].is_number_integer())
    e.generation = rest["generation"].get<int>(), rest.erase("generation");
  double spread = 0;
  if (rest.contains("admission_spread") && rest["admission_spread"].is_number()) {
    take_number(rest, "admission_spread", spread);
    e.admission_spread = spread;
  }
  e.extra = std::move(rest);
  return e;
}

json write_evolve_entry(const EvolveEntry& e) {
  json j = {{"run", e.run},       {"generation", e.generation}, {"generator", e.generator},
            {"parent", e.parent}, {"rationale", e.rationale},   {"operator", e.op}};
  if (!e.island.empty()) j["island"] = e.island;
  if (!e.phase.empty()) j["phase"] = e.phase;
  if (!e.admission.empty()) j["admission"] = e.admission;
  if (e.admission_spread) j["admission_spread"] = *e.admission_spread;
  if (!e.compared_with.empty()) j["compared_with"] = e.compared_with;
  for (auto& [k, v] : e.extra.items())
    if (!j.contains(k)) j[k] = v;
  return j;
}

std::optional<EvolveEntry> evolve_entry(const Record& r) {
  if (!r.extra.contains("evolve") || !r.extra["evolve"].is_object()) return std::nullopt;
  return read_evolve_entry(r.extra["evolve"]);
}

void set_evolve_entry(Record& r, const EvolveEntry& e) { r.extra["evolve"] = write_evolve_entry(e); }

std::vector<Record> typed_records(const std::vector<json>& records) {
  std::vector<Record> out;
  out.reserve(records.size());
  for (const auto& j : records)
    if (auto read = read_record(j); read.record) out.push_back(std::move(*read.record));
  return out;
}

double fitness_us(const Record& r) {
  return r.fitness && r.fitness->geomean_median_us ? *r.fitness->geomean_median_us : 0.0;
}

bool reached_gpu(Outcome o) {
  return o != Outcome::constraints && o != Outcome::compile && o != Outcome::resources && o != Outcome::technique &&
         o != Outcome::unsupported;
}

std::string evolve_run(const Record& r) {
  const auto e = evolve_entry(r);
  return e ? e->run : "";
}

std::string params_text(const std::optional<ParamSet>& params) { return params ? param_set_text(*params) : ""; }

json write_verdict(const ProposalVerdict& v) {
  json j = {{"parent", v.parent}, {"rationale", v.rationale}};
  if (!v.candidate_id.empty()) j["candidate_id"] = v.candidate_id;
  if (!v.variant.empty()) j["variant"] = v.variant;
  if (v.params) j["params"] = params_json(*v.params);
  if (!v.source_sha256.empty()) j["source_sha256"] = v.source_sha256;
  if (v.outcome) j["outcome"] = std::string(to_string(*v.outcome));
  j["reason"] = v.reason;
  if (!v.same_code_as.empty()) j["same_code_as"] = v.same_code_as;
  if (v.screen_us) j["screen_us"] = *v.screen_us;
  if (v.fitness_us) j["fitness_us"] = *v.fitness_us;
  if (v.pruned) j["pruned"] = *v.pruned;
  if (!v.admission.empty()) j["admission"] = v.admission;
  if (v.gpu_seconds) j["gpu_seconds"] = *v.gpu_seconds;
  return j;
}

ProposalVerdict read_verdict(const json& j) {
  ProposalVerdict v;
  if (!j.is_object()) return v;
  json rest = j;
  take(rest, "candidate_id", v.candidate_id);
  take(rest, "variant", v.variant);
  take(rest, "source_sha256", v.source_sha256);
  take(rest, "parent", v.parent);
  take(rest, "rationale", v.rationale);
  take(rest, "reason", v.reason);
  take(rest, "same_code_as", v.same_code_as);
  take(rest, "admission", v.admission);
  if (rest.contains("params") && rest["params"].is_object()) {
    v.params = ParamSet{};
    for (auto& [k, x] : rest["params"].items())
      if (x.is_number_integer()) v.params->emplace_back(k, x.get<long>());
  }
  if (rest.contains("outcome") && rest["outcome"].is_string())
    v.outcome = outcome_from_string(rest["outcome"].get<std::string>());
  for (auto [key, slot] : {std::pair{"fitness_us", &v.fitness_us}, std::pair{"screen_us", &v.screen_us},
                           std::pair{"gpu_seconds", &v.gpu_seconds}})
    if (rest.contains(key) && rest[key].is_number()) *slot = rest[key].get<double>();
  if (rest.contains("pruned") && rest["pruned"].is_boolean()) v.pruned = rest["pruned"].get<bool>();
  return v;
}

}  // namespace evo
