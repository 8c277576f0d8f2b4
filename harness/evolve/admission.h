// Noise-aware admission: a candidate displaces an elite only when it is faster beyond the
// measured spread (the larger of the two fitness spreads, p90 over median, at least 0.5 %).
// Faster within the spread is a tie: recorded, but it does not take the elite's place.
#pragma once
#include <string>
#include <vector>

#include "store/population.h"

namespace evo {

struct Admission {
  std::string decision;  // "enter" (free slot), "displace", "tie", "below", "none" (no fitness)
  std::string against;   // the elite's candidate id it was compared with
  double spread = 0;     // relative
};

// `stage_elites`: the population's entries (store/population.h), best first.
Admission admit(const Fitness& fitness, const std::vector<Elite>& stage_elites, int slots);

}  // namespace evo
