// A warm start of the builtin's model from another domain of the same stage (issue 31, "use what
// transfers"), as Kernel Tuner and K-Search carry what one problem taught to the next: the
// configurations measured there, each as the log of its µs over that domain's best (0 for its
// optimum), so two tasks whose times differ in scale still agree on which settings are good.
// The builtin reads it as the prior mean of its Gaussian process (strategy_builtin.cpp): it models
// what the run measures less what the other domain predicts, and screens the other domain's best
// configurations first. Its data, not constants: one measured dataset or another is a choice of
// the caller (`evo ablate --prior`), and no number of it is tuned here.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/candidate.h"
#include "search/search_space.h"

namespace evo {

// One configuration of the other domain: its variant id, params, and log(µs / that domain's best).
struct TransferPoint {
  std::string variant;
  ParamSet params;
  double log_ratio = 0;
};

class TransferPrior {
 public:
  TransferPrior(std::string origin, std::vector<TransferPoint> points);
  const std::string& origin() const { return origin_; }  // where it came from (a dataset file)
  const std::vector<TransferPoint>& points() const { return points_; }
  // The prior's log-ratio of each configuration of `feasible` (by config_key) whose variant the
  // other domain measured: the measured one where it has the same params, else what a Gaussian
  // process over that variant's points predicts (a setting the other domain's rules rejected).
  std::map<std::string, double> means(const std::vector<SearchVariant>& space,
                                      const std::vector<Config>& feasible) const;

 private:
  std::string origin_;
  std::vector<TransferPoint> points_;
};

}  // namespace evo
