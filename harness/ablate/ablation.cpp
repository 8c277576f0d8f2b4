#include "ablate/ablation.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <thread>

#include "core/thread_pool.h"
#include "search/strategy.h"

namespace evo {

const StrategyRuns* AblationResult::find(const std::string& strategy) const {
  for (const auto& s : strategies)
    if (s.strategy == strategy) return &s;
  return nullptr;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {

// Every (strategy, seed) simulated once, in parallel: each is independent and deterministic, so
// the order of completion changes nothing.
std::vector<StrategyRuns> simulate_all(const SimDomain& dom, const AblationSpec& spec) {
  const double largest = spec.budgets.empty() ? 0 : *std::max_element(spec.budgets.begin(), spec.budgets.end());
  ThreadPool pool(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  std::vector<std::vector<std::future<SimRun>>> futures;
  for (const auto& name : spec.strategies) {
    futures.emplace_back();
    for (uint64_t seed : spec.seeds) {
      SimOptions o{name, seed, spec.population, largest, dom.optimum() * (1 + spec.within), spec.horizon_gpu_s};
      futures.back().push_back(pool.submit([&dom, o] { return simulate(dom, o); }));
    }
  }
  std::vector<StrategyRuns> out;
  for (size_t i = 0; i < spec.strategies.size(); ++i) {
    out.push_back({spec.strategies[i], {}});
    for (auto& f : futures[i]) out.back().runs.push_back(f.get());
  }
  return out;
}

std::string params_text(const ParamSet& p) {
  std::string s;
  for (const auto& [k, v] : p) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

}  // namespace

AblationResult run_ablation(const Dataset& d, const std::string& name, const Objective& objective,
                            const AblationSpec& spec) {
  const SimDomain dom(d, objective);
  AblationResult r;
  r.dataset = name;
  r.gpu = d.gpu, r.task = d.task, r.run = d.run, r.stage = d.stage;
  r.configs = d.configs.size();
  for (const auto& sv : dom.space()) r.feasible += sv.feasible_configs();
  std::vector<double> screens;
  for (const auto& c : d.configs) {
    if (c.screen) ++r.screened, screens.push_back(c.screen->gpu_s);
    if (c.full) ++r.full;
    if (c.outcome == "unmeasured") ++r.unmeasured;
  }
  r.screen_cost = median(screens);
  r.full_cost = dom.full_cost();
  r.objective = objective;
  r.optimum = dom.optimum();
  if (dom.optimum_config()) r.optimum_params = params_text(dom.optimum_config()->params);
  r.spec = spec;
  r.strategies = simulate_all(dom, spec);
  return r;
}

Objective hardest_for_random(const Dataset& d, const AblationSpec& spec, std::string& why) {
  AblationSpec random_only = spec;
  random_only.strategies = {"random"};
  Objective hardest;
  double most = -1;
  why.clear();
  for (const auto& shape : d.shapes) {
    // A shape whose best configuration was only screened has an optimum extrapolated by the
    // median full/screen ratio. Where screens of that shape misjudge full evaluations by more
    // than half the target (a long shape timed with few samples), the extrapolation can undercut
    // every real measurement and no strategy could "reach" it: no domain to judge a search by.
    const SimDomain dom(d, Objective{shape});
    const DatasetConfig* best = dom.optimum_config();
    const bool screened_only = best && !(best->full && dom.value(*best->full) > 0);
    if (!best || (screened_only && dom.ratio_noise() > spec.within / 2)) {
      why += fmt::format("{}{} (skipped: optimum only screened, screens off by {:.1f} %)", why.empty() ? "" : ", ",
                         shape, dom.ratio_noise() * 100);
      continue;
    }
    const AblationResult r = run_ablation(d, "", Objective{shape}, random_only);
    std::vector<double> needed;
    for (const auto& run : r.strategies.front().runs)
      needed.push_back(run.gpu_s_to(r.optimum * (1 + spec.within)).value_or(spec.horizon_gpu_s));
    const double m = median(needed);
    why += fmt::format("{}{} {:.0f}", why.empty() ? "" : ", ", shape, m);
    if (m > most) most = m, hardest = Objective{shape};
  }
  return hardest;
}

}  // namespace evo
