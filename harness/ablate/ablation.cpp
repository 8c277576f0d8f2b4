#include "ablate/ablation.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <thread>

#include "core/errors.h"
#include "core/paths.h"
#include "core/stats.h"
#include "core/thread_pool.h"
#include "search/strategy.h"

namespace evo {

const StrategyRuns* AblationResult::find(const std::string& strategy) const {
  for (const auto& s : strategies)
    if (s.strategy == strategy) return &s;
  return nullptr;
}

SimSummary SimSummary::of(const SimRun& run) {
  SimSummary out;
  double best = 0, before = 0, started = 0;  // `started`: spent before the current candidate
  for (const auto& s : run.steps) {
    if (!s.follows) started = before;
    before = s.gpu_s;
    out.replayed += s.replayed, out.fulls += s.full;
    if (s.full && s.value_us > 0 && (best == 0 || s.value_us < best))
      best = s.value_us, out.improvements.push_back({started, s.gpu_s, s.value_us});
  }
  return out;
}

// SimRun::best_at's rule: the loop checks the budget before each candidate, so a run with that
// budget holds the candidates started before it ran out (`started` never decreases).
double SimSummary::best_at(double budget) const {
  double best = 0;
  for (const auto& i : improvements) {
    if (i.started >= budget) break;
    best = i.value_us;
  }
  return best;
}

std::optional<double> SimSummary::gpu_s_to(double target) const {
  for (const auto& i : improvements)
    if (i.value_us <= target) return i.gpu_s;  // the first full evaluation that got there improved on all before
  return std::nullopt;
}

std::vector<uint64_t> untuned_seeds() {
  std::vector<uint64_t> seeds;
  for (uint64_t s = 1001; s <= 1040; ++s) seeds.push_back(s);
  return seeds;
}

Arm parse_arm(const std::string& name) {
  const std::string quick = " --quick";
  Arm arm{name, false};
  if (name.size() > quick.size() && name.compare(name.size() - quick.size(), quick.size(), quick) == 0)
    arm = {name.substr(0, name.size() - quick.size()), true};
  if (!is_strategy(arm.strategy))
    throw usage_error("--strategies " + name + ": use " + strategy_names() + " (each optionally with \" --quick\")");
  return arm;
}

double median(std::vector<double> v) { return quantile(std::move(v), 0.5); }

double share_within(const StrategyRuns& s, double budget, double optimum, double within) {
  if (s.runs.empty()) return 0;
  size_t n = 0;
  for (const auto& run : s.runs) {
    const double best = run.best_at(budget);
    n += best > 0 && best <= optimum * (1 + within);
  }
  return double(n) / double(s.runs.size());
}

Reach reach(const StrategyRuns& s, double target, double horizon) {
  Reach r;
  std::vector<double> v;
  for (const auto& run : s.runs) {
    const auto t = run.gpu_s_to(target);
    v.push_back(t.value_or(horizon));
    r.got += t.has_value();
  }
  r.of = v.size();
  r.median = quantile(v, 0.5), r.q1 = quantile(v, 0.25), r.q3 = quantile(v, 0.75);
  return r;
}

namespace {

// Every (strategy, seed) simulated once, in parallel: each is independent and deterministic, so
// the order of completion changes nothing.
std::vector<StrategyRuns> simulate_all(const SimDomain& dom, const AblationSpec& spec) {
  ThreadPool pool(std::max(1u, std::min(8u, std::thread::hardware_concurrency())));
  std::vector<std::vector<std::future<SimSummary>>> futures;
  for (const auto& name : spec.strategies) {
    parse_arm(name);  // a usage error before any simulation
    futures.emplace_back();
    for (uint64_t seed : spec.seeds)
      futures.back().push_back(pool.submit([&dom, &spec, name, seed] { return simulate_arm(dom, spec, name, seed); }));
  }
  std::vector<StrategyRuns> out;
  for (size_t i = 0; i < spec.strategies.size(); ++i) {
    out.push_back({spec.strategies[i], {}});
    for (auto& f : futures[i]) out.back().runs.push_back(f.get());
  }
  return out;
}

}  // namespace

std::optional<HangLimits> repo_hang_limits(const Dataset& d) {
  std::filesystem::path root;
  try {
    root = repo_root();
  } catch (const EvoError&) {  // outside a repository (as `evo compare` with --results): as measured
    return std::nullopt;
  }
  return hang_limits(load_gates_config(root / "gates" / "gates.json"), parse_task(d.task));
}

SimSummary simulate_arm(const SimDomain& dom, const AblationSpec& spec, const std::string& strategy, uint64_t seed) {
  const double largest = spec.budgets.empty() ? 0 : *std::max_element(spec.budgets.begin(), spec.budgets.end());
  const Arm arm = parse_arm(strategy);
  SimOptions o{arm.strategy, seed, spec.population, largest, dom.optimum() * (1 + spec.within), spec.horizon_gpu_s};
  o.quick = arm.quick;
  o.prior = spec.prior;
  return SimSummary::of(simulate(dom, o));
}

AblationResult run_ablation(const Dataset& d, const std::string& name, const Objective& objective,
                            const AblationSpec& spec) {
  const SimDomain dom(d, objective, spec.hang_limits);
  AblationResult r;
  r.dataset = name;
  r.gpu = d.gpu, r.task = d.task, r.run = d.run, r.stage = d.stage;
  r.configs = d.configs.size();
  for (const auto& sv : dom.space()) r.feasible += sv.feasible_configs();
  std::vector<double> screens, deep;
  for (const auto& c : d.configs) {
    for (const auto* e : {&c.screen, &c.full})
      if (*e && (*e)->deep_gate_s > 0) deep.push_back((*e)->deep_gate_s);
    if (c.screen) ++r.screened, screens.push_back(c.screen->gpu_s);
    if (c.full) ++r.full;
    if (c.full && c.screen && dom.value(*c.full) > 0 && dom.value(*c.screen) > 0) ++r.ratios;
    if (c.outcome == "unmeasured") ++r.unmeasured;
  }
  r.screen_cost = median(screens);
  r.full_cost = dom.full_cost();
  r.deep_gated = deep.size();
  r.deep_gate_s = deep.empty() ? 0 : median(deep);
  r.objective = objective;
  r.optimum = dom.optimum();
  if (dom.optimum_config()) r.optimum_params = param_set_text(dom.optimum_config()->params);
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
    const SimDomain dom(d, Objective{shape}, spec.hang_limits);
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

std::vector<AblationResult> section_ablations(const Dataset& d, const std::string& name, const AblationSpec& spec) {
  std::vector<AblationResult> out{run_ablation(d, name, Objective{}, spec)};
  AblationSpec control_spec = spec;
  control_spec.strategies = {"builtin", "screened", "random"};
  out.push_back(run_ablation(permuted(d, kControlPermuteSeed), name, Objective{}, control_spec));
  out.back().permuted = kControlPermuteSeed;
  std::string why;
  const Objective hard = hardest_for_random(d, spec, why);
  if (hard.shape.empty()) return out;
  out.push_back(run_ablation(d, name, hard, spec));
  out.back().why_objective =
      "The hard domain: of the benchmark shapes as the objective, the one where random sampling "
      "needs the most GPU-seconds (median over the seeds) to come within 2 % of the optimum (" +
      why + ").";
  return out;
}

}  // namespace evo
