// Per-regime elites (core/regime.h): for each regime of a task, the fastest admitted kernel over
// the regime's measured shapes, and the dispatch rule `evo export` follows. A pure function of
// the records, like the population it is part of (populations/<gpu>/<task>.json, "regimes").
//
// Every admitted record that passed the full gate counts (store/population.cpp picks them; a
// quick look or a screen does not), whatever its benchmark set: a candidate re-measured on the
// `regimes` shape set (gates.json) adds those shapes to the times of its default benchmark
// record. Per shape, a candidate's newest record gives its time. A candidate competes in a
// regime only with a time on every shape of it that any candidate was timed on, so a regime's
// winner is chosen over one set of shapes (geometric mean of the medians). A winner that beats
// the task's default kernel (its population's fastest elite) only within the winner's own p90
// is a tie, and the default kernel keeps the regime: fewer kernels, no switch on noise. A
// regime no admitted record has a shape of dispatches to the default kernel, marked unmeasured.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "core/regime.h"

namespace evo {

// `records`: the admitted run records of one (gpu, task), any benchmark, several per candidate.
// `population`: that task's default-benchmark population (its fastest rank-1 elite is the
// default kernel). Returns {"rule", "default", "table": [one entry per regime, in kAllRegimes
// order]}; docs/records.md describes the fields.
nlohmann::json derive_regimes(const std::vector<const nlohmann::json*>& records, const nlohmann::json& population,
                              const RegimeRule& rule = {});

// The rule as the population writes it, and back (a missing or malformed one: nullopt).
nlohmann::json regime_rule_json(const RegimeRule& rule);
std::optional<RegimeRule> regime_rule_from_json(const nlohmann::json& j);

// The fastest rank-1 elite over the stages of a population (the default kernel), or null.
nlohmann::json fastest_elite(const nlohmann::json& population);

}  // namespace evo
