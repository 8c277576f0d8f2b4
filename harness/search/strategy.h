// Search strategies over the tunables of a stage's variants (`evo evolve --generator NAME`), one
// per module as in Kernel Tuner (strategy_*.cpp). A strategy sees the space with its parsed
// constraints, every evaluation of the run at its fidelity, and the elites from before the run;
// it answers the next proposals, each with the fidelity it wants it evaluated at. It is a pure
// function of that state and the generator's random stream (seeded from --rng-seed and the
// generation), so a resumed run and a simulation (ablate/simulate.h) propose what the live run
// would.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "search/surrogate.h"
#include "search/tunable_generator.h"

namespace evo {

// One evaluation a strategy learns from.
struct Observation {
  const Variant* variant = nullptr;
  ParamSet params;
  Fidelity fidelity = Fidelity::full;  // screen or full
  std::string outcome;                 // ok, constraints, resources, correctness, timeout, ...
  double value_us = 0;                 // the objective (lower wins); 0: none (failed, pruned)
  double gpu_s = 0;
  std::string candidate_id;
};

struct SearchState {
  const std::vector<SearchVariant>* space = nullptr;
  const std::vector<Config>* feasible = nullptr;  // what the rules allow in `space` (set with it)
  std::vector<Observation> run;                   // this run's evaluations, oldest first
  std::vector<Observation> prior;                 // from before the run: the stage's elites on this GPU (full)
  // Evaluated before this run (the novelty filter): never proposed again.
  std::function<bool(const Variant&, const ParamSet&)> known;
  // Another domain's word on each allowed configuration (search/transfer.h: log µs over its best,
  // by config_key); null without `--prior`. Only the builtin's model reads it.
  const std::map<std::string, double>* transfer = nullptr;
  double budget_left_gpu_s = 0;  // 0: no GPU-second budget
  int generation = 0;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Up to `count` proposals. The caller drops any that repeat an evaluation (TunableGenerator).
  virtual std::vector<Proposal> ask(const SearchState& state, size_t count, std::mt19937_64& rng) const = 0;
};

// builtin, screened, spacefill, random, genetic, exhaustive; a usage error naming them otherwise.
std::unique_ptr<Strategy> make_strategy(const std::string& name);
bool is_strategy(const std::string& name);
std::string strategy_names();  // "builtin, screened, spacefill, random, genetic, exhaustive"

std::unique_ptr<Strategy> make_builtin_strategy();
std::unique_ptr<Strategy> make_screened_strategy();
std::unique_ptr<Strategy> make_spacefill_strategy();
std::unique_ptr<Strategy> make_random_strategy();
std::unique_ptr<Strategy> make_genetic_strategy();
std::unique_ptr<Strategy> make_exhaustive_strategy();

// What the strategies share.

// std::mt19937_64 is fully specified; the draws use only its raw output, so a seed gives the
// same proposals on every platform (std::uniform_int_distribution is not specified).
inline size_t draw(std::mt19937_64& rng, size_t n) { return n <= 1 ? 0 : size_t(rng() % n); }
// Fisher-Yates with draw() (std::shuffle's order differs between standard libraries).
template <typename T>
void shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[draw(rng, i)]);
}

// "variant-id|NAME=v NAME=v": one configuration, whatever the params' order.
std::string config_key(const Variant& v, const ParamSet& params);

// What the run knows about each configuration it evaluated (by config_key).
struct Evaluated {
  double screen_us = 0, full_us = 0;  // 0: none
  bool failed = false;                // a verdict other than ok at any fidelity
  bool screened = false, full = false;
};
std::map<std::string, Evaluated> evaluated(const SearchState& s);
// Up to `n` uniform draws without repetition from `open` (drawn ones are removed), at fidelity `f`.
std::vector<Proposal> uniform_draws(std::vector<Config>& open, size_t n, Fidelity f, const std::string& why,
                                    std::mt19937_64& rng);
// What the rules allow that neither this run (`seen`) nor an earlier one (`s.known`) evaluated.
std::vector<Config> unevaluated(const SearchState& s, const std::map<std::string, Evaluated>& seen);

// How a screen predicts a full evaluation, from the configurations measured both ways: `ratio`
// is the median full/screen (1 with none), `noise` how far one screen misjudges its full
// evaluation (twice the median absolute deviation of the ratios, relative; 0 with fewer than
// `min_for_noise` of them). The builtin's promotions and the ablation's hard domain use both.
struct ScreenCalibration {
  double ratio = 1, noise = 0;
};
ScreenCalibration calibrate_screens(std::vector<double> full_over_screen, size_t min_for_noise = 1);

// The parent's params laid out in the search variant's order (a parent from an older record may
// miss a tunable: it takes the default).
ParamSet aligned(const SearchVariant& sv, const ParamSet& given);
const SearchVariant* space_of(const std::vector<SearchVariant>& space, const Variant* v);

// A configuration as the builtin's model sees it: each tunable's value rank in its sorted domain,
// scaled to [0, 1], in a group of its own per variant (search/surrogate.h).
GpPoint rank_point(const std::vector<SearchVariant>& space, const SearchVariant& sv, const ParamSet& p);

// Greedy maximin, a space-filling design: up to `n` screens, each the configuration of `open`
// farthest (rank_point distance; another variant counts as farthest) from everything in `taken`
// and every pick before it, ties in a seeded order; the picks are removed from `open`. The
// builtin's start, and every screen of the spacefill strategy.
std::vector<Proposal> maximin_screens(const SearchState& s, std::vector<GpPoint> taken, std::vector<Config>& open,
                                      size_t n, const std::string& why, std::mt19937_64& rng);

}  // namespace evo
