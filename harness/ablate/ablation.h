// The search ablation (`evo ablate`, and COMPARE.md's "Search ablation" section): strategies
// against each other and against a dataset's optimum, by simulation (ablate/simulate.h) over
// several seeds, read at several GPU-second budgets: the share of seeds within 1 % and 2 % of the
// optimum, and the GPU-seconds each needed to come within 2 %.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ablate/simulate.h"
#include "core/stats.h"

namespace evo {

// Seeds 1001–1040: none of them was used to tune a constant of a strategy (docs/evolve.md says
// which were), so the ablation judges on seeds the strategies have not seen.
std::vector<uint64_t> untuned_seeds();

struct AblationSpec {
  // A strategy, or "NAME --quick": one left at the loop's fidelity, run as `evo evolve --quick`.
  std::vector<std::string> strategies{"builtin", "screened", "random", "random --quick", "exhaustive", "genetic"};
  std::vector<uint64_t> seeds = untuned_seeds();
  std::vector<double> budgets{25, 50, 100, 200};
  size_t population = 4;                  // proposals per generation, as `evo evolve`'s default
  double within = 0.02;                   // "within 2 % of the optimum"
  double close = 0.01;                    // the tighter share: "within 1 %"
  double horizon_gpu_s = 2000;            // how far "GPU-s to come within" looks past the largest budget
  std::optional<HangLimits> hang_limits;  // none: a hang costs what it cost in the dataset
  // `evo ablate --prior`: another domain's measurements warm-start the builtin's model
  // (search/transfer.h); none in COMPARE.md's section (its cache key has no place for one).
  std::shared_ptr<const TransferPrior> prior{};
};

// One column of the ablation: "random --quick" is {"random", true}. A usage error naming the
// strategies for an unknown one.
struct Arm {
  std::string strategy;
  bool quick = false;
};
Arm parse_arm(const std::string& name);

// What the ablation's figures read of one simulated run: the full evaluations that improved on
// the run's best so far, each with the GPU-seconds spent before its candidate started (a budget
// that had not run out by then includes it) and when it ended, and the run's counts. It answers
// best_at and gpu_s_to as the SimRun does, and is what the ablation cache keeps of a run
// (ablate/ablation_cache.h): a few numbers instead of every step.
struct SimSummary {
  struct Improvement {
    double started = 0, gpu_s = 0, value_us = 0;
    bool operator==(const Improvement&) const = default;
  };
  std::vector<Improvement> improvements;
  size_t replayed = 0, fulls = 0;

  static SimSummary of(const SimRun& run);
  bool operator==(const SimSummary&) const = default;
  double best_at(double budget) const;
  std::optional<double> gpu_s_to(double target) const;
};

struct StrategyRuns {
  std::string strategy;          // as the spec names it
  std::vector<SimSummary> runs;  // one per seed, in the spec's order
};

struct AblationResult {
  std::string dataset;  // as named to the reader (a path under the repository)
  std::string gpu, task, run;
  int stage = 0;
  size_t configs = 0, feasible = 0, screened = 0, full = 0;  // raw, allowed by the parsed rules, measured
  size_t unmeasured = 0;                  // allowed, never measured (the ground-truth run ran out of time)
  size_t ratios = 0;                      // configurations measured both ways (the screen noise drawn from)
  double screen_cost = 0, full_cost = 0;  // median GPU-s per evaluation
  // Evaluations of the measuring run that paid the deep tier (left out of their cost), and its median.
  size_t deep_gated = 0;
  double deep_gate_s = 0;
  Objective objective;
  std::string why_objective;         // how it was chosen
  std::optional<uint64_t> permuted;  // the seed of the permuted-landscape control, when it is one
  double optimum = 0;
  std::string optimum_params;
  AblationSpec spec;
  std::vector<StrategyRuns> strategies;

  const StrategyRuns* find(const std::string& strategy) const;
};

// The hang prices of the repository's gates.json for the dataset's task; none outside a repository.
std::optional<HangLimits> repo_hang_limits(const Dataset& d);

AblationResult run_ablation(const Dataset& d, const std::string& name, const Objective& objective,
                            const AblationSpec& spec);

// One (strategy, seed) of an ablation, simulated as run_ablation does: up to the largest budget,
// then on until within `spec.within` of the optimum or `spec.horizon_gpu_s` is spent.
SimSummary simulate_arm(const SimDomain& dom, const AblationSpec& spec, const std::string& strategy, uint64_t seed);

// The seed of the permuted-landscape control COMPARE.md shows: any seed does, one is shown.
inline constexpr uint64_t kControlPermuteSeed = 1;

// What COMPARE.md's section shows of one dataset: the ablation on its fitness; on its fitness with
// the timings permuted (the control: builtin, screened and random, the model against its baselines;
// the other strategies say nothing new there); and on its hard domain when it has one. The ablation
// cache (ablate/ablation_cache.h) keeps these.
std::vector<AblationResult> section_ablations(const Dataset& d, const std::string& name, const AblationSpec& spec);

// The benchmark shape on which random sampling needs the most GPU-seconds (median over the
// seeds, a run that never gets there counting as the horizon) to come within `spec.within` of
// the optimum: the hard domain of a dataset. `why` says what each shape needed.
Objective hardest_for_random(const Dataset& d, const AblationSpec& spec, std::string& why);

// Median of `v` (the mean of the middle two for an even count; core/stats.h's quantile); 0 for none.
double median(std::vector<double> v);

// The share of a strategy's runs whose best full evaluation at `budget` is within `within` of
// the optimum (at most optimum × (1 + within)).
double share_within(const StrategyRuns& s, double budget, double optimum, double within);

// The GPU-seconds the runs needed to come within `target` µs: median and interquartile range,
// a run that never got there counting as `horizon`.
struct Reach {
  double median = 0, q1 = 0, q3 = 0;
  size_t got = 0, of = 0;
};
Reach reach(const StrategyRuns& s, double target, double horizon);

// COMPARE.md's section: the section_ablations of every dataset under <results>/datasets/*.json (of
// this GPU key and task when given); empty when there is none. Hangs are priced by the
// repository's gates.json. Each dataset's figures come from its ablation cache
// (<results>/ablation/, ablate/ablation_cache.h) when the cache's key matches, else they are
// simulated and `notes` gets a line saying why the cache was not used and how to refresh it.
std::string ablation_section(const std::filesystem::path& results_dir, const std::string& gpu_filter = "",
                             const std::string& task_filter = "", std::vector<std::string>* notes = nullptr);
std::string render_ablation_markdown(const AblationResult& r);

}  // namespace evo
