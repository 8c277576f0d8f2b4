#include "evolve/admission.h"

#include <algorithm>

#include "store/json_fields.h"

namespace evo {

using nlohmann::json;

namespace {
double spread_of(const json& fitness) {
  const double med = number_or(fitness, "geomean_median_us", 0), p90 = number_or(fitness, "geomean_p90_us", 0);
  return med > 0 && p90 > med ? p90 / med - 1.0 : 0.0;
}
}  // namespace

Admission admit(const json& fitness, const std::vector<json>& elites, int slots) {
  Admission a;
  const double f = number_or(fitness, "geomean_median_us", 0);
  if (!fitness.is_object() || f <= 0) return {"none", "", 0};
  if (elites.size() < size_t(slots)) return {"enter", "", 0};
  // The elite it would push out is the last one; to take its place the candidate must beat it
  // by more than either measurement's spread.
  const json& last = elites.back();
  const json ef = object_or_null(last, "fitness");
  a.against = string_or(last, "candidate_id");
  a.spread = std::max({0.005, spread_of(fitness), spread_of(ef)});
  const double e = number_or(ef, "geomean_median_us", 0);
  if (f < e * (1.0 - a.spread))
    a.decision = "displace";
  else if (f < e)
    a.decision = "tie";
  else
    a.decision = "below";
  return a;
}

}  // namespace evo
