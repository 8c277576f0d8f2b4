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
#include <optional>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "core/regime.h"

namespace evo {

struct Record;
struct Elite;
class StrictFields;

// A chosen kernel's newest time on one shape, over every benchmark set (the run that timed it).
struct RegimeKernelTime {
  std::string shape, run_id;
  double median_us = 0, p90_us = 0;
  std::optional<double> graph_us, back_to_back_us;  // launch-bound shapes only
};

// A kernel some regime dispatches to: what `evo export` compiles and ships.
struct RegimeKernel {
  std::string candidate_id, variant, source_sha256;
  int stage = 0;
  ParamSet params;
  std::optional<std::string> source_path, arch, compile_key;  // null in the file when unknown
  nlohmann::json launch;                                      // compile.launch as recorded, or null
  long long max_checked_elements = 0;                         // the largest tensor of any gate case it passed
  // The SM count of the GPU every record of it ran on (persistent and split-KV grids follow it);
  // absent when unknown (older files) or when its records disagree.
  std::optional<long long> gated_sms;
  std::vector<RegimeKernelTime> timing;
  nlohmann::json extra = nlohmann::json::object();  // fields of a newer minor version
};

// One regime's row: its shapes, the fastest kernel timed on all of them, and the choice.
struct RegimeChoice {
  Regime regime = Regime::decode;
  std::string condition;  // the rule in words: "16 < Sq <= 1024, B*Hq < 128"
  std::vector<std::string> shapes;
  long long candidates = 0;                                 // kernels timed on every shape of the regime
  std::optional<std::string> kernel;                        // the candidate id dispatched to (none: no elite at all)
  std::string choice;                                       // "fastest", "default (tie)", "default (unmeasured)"
  std::optional<std::string> fastest;                       // the fastest kernel, when one was timed on the shapes
  std::optional<double> geomean_median_us, geomean_p90_us;  // the chosen kernel's
  std::optional<double> fastest_geomean_median_us, fastest_geomean_p90_us;  // the fastest's
  std::optional<double> default_geomean_median_us;                          // the default kernel's, when it was a rival
  nlohmann::json extra = nlohmann::json::object();
};

struct RegimeTable {
  RegimeRule rule;
  std::optional<std::string> default_kernel;  // candidate id of the fastest stage's rank 1
  std::vector<RegimeKernel> kernels;          // each chosen kernel once, in candidate-identity order
  std::vector<RegimeChoice> table;            // one row per regime, in kAllRegimes order
  nlohmann::json extra = nlohmann::json::object();

  const RegimeKernel* kernel(const std::string& candidate_id) const;  // nullptr: not listed
};

// `records`: the admitted run records of one (gpu, task), any benchmark, several per candidate.
// `default_kernel`: the fastest rank-1 elite of that task's default-benchmark population (none:
// no default). docs/records.md describes the fields.
RegimeTable derive_regimes(const std::vector<const Record*>& records, const Elite* default_kernel,
                           const std::string& task, const RegimeRule& rule = {});

// The one JSON mapping of a regime table (the population's "regimes"): the writer, and the
// reader that refuses a value no writer of evo's writes (store/strict_fields.h): an unknown
// regime, a table that does not list the four in order, a kernel the table names but does not
// list, a negative or non-finite time.
nlohmann::json regime_table_json(const RegimeTable& t);
RegimeTable read_regime_table(StrictFields& regimes);
nlohmann::json regime_kernel_json(const RegimeKernel& k);  // one of "kernels" (and the manifest's)

// The rule as the population writes it, and back (a missing or malformed one: nullopt).
nlohmann::json regime_rule_json(const RegimeRule& rule);
std::optional<RegimeRule> regime_rule_from_json(const nlohmann::json& j);

}  // namespace evo
