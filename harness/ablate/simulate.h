// `evo evolve` without a GPU, over a dataset (ablate/dataset.h), as Kernel Tuner's simulation
// mode: the same TunableGenerator and strategy classes propose, generation by generation, and
// each proposal is answered from the dataset instead of the GPU, paying the GPU-seconds its
// measurement cost. The budget is checked before each evaluation, as the loop does.
//
// A full evaluation of a configuration the dataset has only screened (the ground-truth run
// evaluates only the best screens in full) is answered with its screen's timing (the same shapes,
// fewer samples) times a full/screen ratio drawn from the configurations measured both ways
// (seeded by the run's seed and the configuration, so every strategy of one seed meets the same
// landscape), at the median GPU-seconds of the dataset's full evaluations; each such answer is
// counted (`replayed`) so a report can say how often that happened. An evaluation costs its gpu_s,
// which a dataset of schema 2 holds without the deep tier (ablate/dataset.h): the deep tier is a
// cost of entering the measuring run's top 3, ~30 GPU-s on stage 9, and the simulation leaves it
// out for every strategy (a real run pays it on each entry into its top 3; the real-run check
// turns it off). A hang costs the seconds
// before the watchdog fired plus the limit of the fidelity it is answered at (gates.json for a
// full evaluation, the screen plan's for a screen), when the limits are given.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ablate/dataset.h"
#include "evolve/loop.h"
#include "policy/config.h"
#include "search/search_space.h"
#include "search/transfer.h"

namespace evo {

// What is minimized: the fitness (geomean of the shapes' medians), or one shape's median.
struct Objective {
  std::string shape;  // empty: the fitness
  std::string name() const { return shape.empty() ? "fitness (geomean of the benchmark shapes)" : "shape " + shape; }
};

// The watchdog limits a hang is priced by, per fidelity (policy/config.h).
struct HangLimits {
  Limits screen, full;
};
// gates.json's limits for a full evaluation, the screen plan's (evolve/screen_plan.h) for a screen.
HangLimits hang_limits(const GatesConfig& gates, const Task& task);

// A dataset made searchable: its variants, their search space (rules parsed from the stored
// sources), and each configuration's answers.
class SimDomain {
 public:
  // Without `limits` a hang costs what it cost in the dataset.
  SimDomain(const Dataset& d, Objective objective, std::optional<HangLimits> limits = std::nullopt);
  const std::vector<SearchVariant>& space() const { return space_; }
  const DatasetConfig* find(const Variant& v, const ParamSet& p) const;
  // The objective of a measurement (0: none).
  double value(const DatasetEval& e) const;
  // A configuration's objective in full: measured, or its screen's scaled by full_ratio(); 0: none.
  double full_value(const DatasetConfig& c) const;
  // A full evaluation of a configuration measured only as a screen, as run `seed` meets it: the
  // screen times one of the measured full/screen ratios, drawn by the seed and `key`; 0: none.
  double replayed_value(const DatasetConfig& c, uint64_t seed, const std::string& key) const;
  // What an evaluation costs when answered at `full` or screen fidelity: its gpu_s (the deep tier
  // left out), a hang by the limits.
  double cost(const DatasetEval& e, bool full) const;
  double full_ratio() const { return ratio_; }
  // How far one screen misjudges its full evaluation: twice the median absolute deviation of
  // full/screen from full_ratio() (relative); what an optimum known only from a screen may be off.
  double ratio_noise() const { return ratio_noise_; }
  // The best full_value of the dataset, and where.
  double optimum() const { return optimum_; }
  const DatasetConfig* optimum_config() const { return optimum_at_; }
  double full_cost() const { return full_cost_; }  // median GPU-s of the full evaluations
  const Objective& objective() const { return objective_; }

 private:
  std::vector<std::unique_ptr<Variant>> variants_;
  std::vector<SearchVariant> space_;
  std::map<std::string, const DatasetConfig*> by_key_;
  Objective objective_;
  std::vector<double> ratios_;  // full / screen of the configurations measured both ways
  std::optional<HangLimits> limits_;
  double optimum_ = 0, full_cost_ = 0, ratio_ = 1, ratio_noise_ = 0;
  const DatasetConfig* optimum_at_ = nullptr;
};

struct SimStep {
  double gpu_s = 0;  // spent once it was done
  bool full = false, replayed = false;
  bool follows = false;      // the full evaluation of a --quick screen: part of the same candidate
  double value_us = 0;       // its objective value; 0: none (failed, or stopped before the GPU)
  std::string key, outcome;  // config_key; the dataset's outcome
};

struct SimRun {
  std::vector<SimStep> steps;
  int generations = 0;
  double gpu_s = 0;
  // The best full evaluation of a run given `budget` (what a run with that budget would have
  // ended with: every candidate started before the budget was spent); 0: none.
  double best_at(double budget) const;
  // GPU-seconds until a full evaluation came within `target` µs; nullopt: never.
  std::optional<double> gpu_s_to(double target) const;
  size_t replayed() const;
  size_t fulls() const;
};

struct SimOptions {
  std::string strategy = "builtin";
  uint64_t seed = 1;
  size_t population = 4;
  double budget_gpu_s = 200;
  // Past the budget, go on until a full evaluation is within this many µs (0: stop at the budget),
  // or `horizon_gpu_s` is spent: how far the "GPU-s to come within 2 %" figure looks.
  double until_us = 0;
  double horizon_gpu_s = 0;
  // `evo evolve --quick`: what the strategy leaves at the loop's fidelity is screened first, then
  // evaluated in full when its screen is within `promote` of the best screen so far.
  bool quick = false;
  double promote = EvolveOptions{}.promote;
  // Another domain's measurements as the builtin's prior (search/transfer.h); none: no transfer.
  std::shared_ptr<const TransferPrior> prior{};
};

SimRun simulate(const SimDomain& domain, const SimOptions& o);

// A dataset as a prior for another domain of its stage: each configuration with a full value
// (measured, or its screen scaled; SimDomain::full_value) as log(value / the dataset's optimum),
// on `objective`. `origin` names it.
TransferPrior transfer_prior(const Dataset& d, const Objective& objective, const std::string& origin);
// `--prior FILE` of evo ablate and evo evolve: that dataset as a prior on the fitness (two tasks'
// benchmark shapes need not share names). A usage error when it is of a stage other than `stage`
// or holds no configuration measured ok.
std::shared_ptr<const TransferPrior> read_prior(const std::string& file, int stage);

}  // namespace evo
