// The screen's evaluation plan (search/fidelity.h says what a screen is): the `small` gate set
// with the first seed, every benchmark shape timed with fewer samples, hangs killed sooner.
#pragma once

#include "run/plan.h"
#include "search/fidelity.h"

namespace evo {

// The screen's plan (see search/fidelity.h) over the benchmark sets `bench` (the full
// evaluation's), and the request it is made from.
PlanRequest screen_plan_request(const GatesConfig& gates, const Task& task, const std::vector<std::string>& bench);
EvalPlan screen_plan(const GatesConfig& gates, const Task& task, const std::vector<std::string>& bench);

}  // namespace evo
