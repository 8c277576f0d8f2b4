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
ParamSet params_of(const Variant& v, const ParamSet& params) {
  ParamSet p;
  for (const auto& t : v.params)
    for (const auto& [name, value] : params)
      if (name == t.name) p.emplace_back(name, value);
  return p;
}

}  // namespace

std::vector<Observation> elite_observations(const std::vector<Elite>& elites, const Stage& stage) {
  std::vector<Observation> out;
  for (const auto& e : elites) {
    const Variant* v = variant_of(stage, e.variant);
    if (!v) continue;
    out.push_back({v, params_of(*v, e.params), Fidelity::full, "ok", e.fitness_us(), 0, e.candidate_id.value_or("")});
  }
  return out;
}

std::vector<Observation> observations_of(const std::vector<Record>& records, const Stage& stage, Fidelity fidelity) {
  std::vector<Observation> out;
  for (const auto& r : records) {
    const Variant* v = variant_of(stage, r.variant);
    if (!v) continue;
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
