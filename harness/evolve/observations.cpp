#include "evolve/observations.h"

#include "evolve/evolve_record.h"
#include "store/json_fields.h"

namespace evo {

namespace {

const Variant* variant_of(const Stage& stage, const std::string& id) {
  for (const auto& v : stage.variants)
    if (v.id == id) return &v;
  return nullptr;
}

// In the variant's order, so a promotion is the same candidate as its screen.
ParamSet params_of(const Variant& v, const nlohmann::json& params) {
  ParamSet p;
  for (const auto& t : v.params)
    if (params.is_object() && params.contains(t.name) && params[t.name].is_number_integer())
      p.emplace_back(t.name, params[t.name].get<long>());
  return p;
}

}  // namespace

std::vector<Observation> elite_observations(const std::vector<nlohmann::json>& elites, const Stage& stage) {
  std::vector<Observation> out;
  for (const auto& e : elites) {
    const Variant* v = variant_of(stage, string_or(e, "variant"));
    if (!v) continue;
    out.push_back({v, params_of(*v, e.value("params", nlohmann::json::object())), Fidelity::full, "ok",
                   number_or(object_or_null(e, "fitness"), "geomean_median_us", 0), 0, string_or(e, "candidate_id")});
  }
  return out;
}

std::vector<Observation> observations_of(const std::vector<Record>& records, const Stage& stage, Fidelity fidelity) {
  std::vector<Observation> out;
  for (const auto& r : records) {
    const Variant* v = variant_of(stage, r.variant);
    if (!v || !r.params.is_object()) continue;
    Observation o;
    o.variant = v;
    o.params = params_of(*v, r.params);
    const auto entry = evolve_entry(r);
    const std::string phase = entry ? entry->phase : "";
    o.fidelity = phase == "screen" ? Fidelity::screen : phase == "full" ? Fidelity::full : fidelity;
    o.outcome = std::string(to_string(r.outcome));
    o.value_us = fitness_us(r);
    o.gpu_s = r.gpu_seconds.value_or(0);
    o.candidate_id = r.candidate_id;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace evo
