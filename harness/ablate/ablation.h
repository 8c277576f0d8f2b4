// The search ablation (`evo ablate`, and COMPARE.md's "Search ablation" section): strategies
// against each other and against a dataset's optimum, by simulation (ablate/simulate.h) over
// several seeds, read at several GPU-second budgets.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "ablate/simulate.h"

namespace evo {

struct AblationSpec {
  std::vector<std::string> strategies{"builtin", "random", "genetic"};
  std::vector<uint64_t> seeds{1, 2, 3, 4, 5};
  std::vector<double> budgets{25, 50, 100, 200};
  size_t population = 4;        // proposals per generation, as `evo evolve`'s default
  double within = 0.02;         // "within 2 % of the optimum"
  double horizon_gpu_s = 2000;  // how far "GPU-s to come within" looks past the largest budget
};

struct StrategyRuns {
  std::string strategy;
  std::vector<SimRun> runs;  // one per seed, in the spec's order
};

struct AblationResult {
  std::string dataset;  // as named to the reader (a path under the repository)
  std::string gpu, task, run;
  int stage = 0;
  size_t configs = 0, feasible = 0, screened = 0, full = 0;  // raw, allowed by the parsed rules, measured
  size_t unmeasured = 0;                  // allowed, never measured (the ground-truth run ran out of time)
  double screen_cost = 0, full_cost = 0;  // median GPU-s per evaluation
  Objective objective;
  std::string why_objective;  // how it was chosen
  double optimum = 0;
  std::string optimum_params;
  AblationSpec spec;
  std::vector<StrategyRuns> strategies;

  const StrategyRuns* find(const std::string& strategy) const;
};

AblationResult run_ablation(const Dataset& d, const std::string& name, const Objective& objective,
                            const AblationSpec& spec);

// The benchmark shape on which random sampling needs the most GPU-seconds (median over the
// seeds, a run that never gets there counting as the horizon) to come within `spec.within` of
// the optimum: the hard domain of a dataset. `why` says what each shape needed.
Objective hardest_for_random(const Dataset& d, const AblationSpec& spec, std::string& why);

// Median of `v` (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> v);

// COMPARE.md's section: every dataset under <results>/datasets/*.json (of this GPU key and task
// when given), on its fitness and on its hard domain; empty when there is none.
std::string ablation_section(const std::filesystem::path& results_dir, const std::string& gpu_filter = "",
                             const std::string& task_filter = "");
std::string render_ablation_markdown(const AblationResult& r);

}  // namespace evo
