#include "evolve/admission.h"

#include <algorithm>

namespace evo {

namespace {
double spread_of(double median, double p90) { return median > 0 && p90 > median ? p90 / median - 1.0 : 0.0; }
}  // namespace

Admission admit(const Fitness& fitness, const std::vector<Elite>& elites, int slots) {
  Admission a;
  const double f = fitness.geomean_median_us.value_or(0);
  if (f <= 0) return {"none", "", 0};
  if (elites.size() < size_t(slots)) return {"enter", "", 0};
  // The elite it would push out is the last one; to take its place the candidate must beat it
  // by more than either measurement's spread.
  const Elite& last = elites.back();
  const double e = last.fitness_us();
  a.against = last.candidate_id.value_or("");
  a.spread = std::max(
      {0.005, spread_of(f, fitness.geomean_p90_us.value_or(0)), spread_of(e, last.fitness.geomean_p90_us.value_or(0))});
  if (f < e * (1.0 - a.spread))
    a.decision = "displace";
  else if (f < e)
    a.decision = "tie";
  else
    a.decision = "below";
  return a;
}

}  // namespace evo
