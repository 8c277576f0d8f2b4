#include "ablate/simulate.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "core/errors.h"
#include "evolve/screen_plan.h"
#include "search/strategy.h"
#include "search/tunable_generator.h"

namespace evo {

HangLimits hang_limits(const GatesConfig& gates, const Task& task) {
  return {*screen_plan(gates, task, gates.benchmark_sets).limits, gates.limits};
}

SimDomain::SimDomain(const Dataset& d, Objective objective, std::optional<HangLimits> limits)
    : objective_(std::move(objective)), limits_(std::move(limits)) {
  if (!objective_.shape.empty() && std::find(d.shapes.begin(), d.shapes.end(), objective_.shape) == d.shapes.end())
    throw usage_error("--objective " + objective_.shape + ": not a benchmark shape of the dataset");
  const Task task = parse_task(d.task);
  for (const auto& dv : d.variants) {
    auto v = std::make_unique<Variant>();
    v->id = dv.id;
    v->stage = d.stage;
    v->path = dv.path;
    v->source = dv.source;
    v->params = dv.tunables;
    const std::string header = d.header;
    space_.push_back(make_search_variant(*v, dv.tunables, task, [header](const std::string& name) {
      return name == "evo_attn.cuh" ? std::optional<std::string>(header) : std::nullopt;
    }));
    variants_.push_back(std::move(v));
  }
  std::vector<double> costs, ratios;
  for (const auto& c : d.configs) {
    for (const auto& v : variants_)
      if (v->id == c.variant) by_key_[config_key(*v, c.params)] = &c;
    if (c.full && c.full->outcome == "ok") costs.push_back(c.full->gpu_s);
    if (c.full && c.screen && value(*c.full) > 0 && value(*c.screen) > 0)
      ratios.push_back(value(*c.full) / value(*c.screen));
  }
  if (costs.empty()) throw usage_error("the dataset has no full evaluation: nothing to price one with");
  std::sort(costs.begin(), costs.end());
  full_cost_ = costs[costs.size() / 2];
  std::sort(ratios.begin(), ratios.end());
  ratios_ = ratios;
  const ScreenCalibration cal = calibrate_screens(std::move(ratios));
  ratio_ = cal.ratio;
  ratio_noise_ = cal.noise;
  for (const auto& c : d.configs) {
    const double us = full_value(c);
    if (us > 0 && (optimum_ == 0 || us < optimum_)) optimum_ = us, optimum_at_ = &c;
  }
}

double SimDomain::full_value(const DatasetConfig& c) const {
  if (c.full && value(*c.full) > 0) return value(*c.full);
  return c.screen && value(*c.screen) > 0 ? value(*c.screen) * ratio_ : 0;
}

namespace {

// SplitMix64's finalizer: a seed and a configuration's hash give a well-mixed, portable draw.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ull;
  return h;
}

}  // namespace

double SimDomain::replayed_value(const DatasetConfig& c, uint64_t seed, const std::string& key) const {
  if (!c.screen || value(*c.screen) <= 0) return 0;
  if (ratios_.empty()) return value(*c.screen) * ratio_;
  return value(*c.screen) * ratios_[mix(fnv1a(key) ^ mix(seed)) % ratios_.size()];
}

double SimDomain::cost(const DatasetEval& e, bool full) const {
  // The watchdog's words (run/worker_client.cpp): "no progress for 10 s during gate <case>: ...".
  static const std::regex hang(R"(no progress for ([0-9.eE+-]+) s during (\w+))");
  std::smatch m;
  if (!limits_ || e.outcome != "timeout" || !std::regex_search(e.reason, m, hang)) return e.gpu_s;
  const Limits& l = full ? limits_->full : limits_->screen;
  const std::string phase = m[2];
  const double limit = phase == "gate"                                                      ? l.gate_case_s
                       : phase == "timing" || phase == "post_check" || phase == "reference" ? l.timing_shape_s
                                                                                            : l.load_s;
  return std::max(0.0, e.gpu_s - std::stod(m[1])) + limit;
}

const DatasetConfig* SimDomain::find(const Variant& v, const ParamSet& p) const {
  auto it = by_key_.find(config_key(v, p));
  return it == by_key_.end() ? nullptr : it->second;
}

double SimDomain::value(const DatasetEval& e) const {
  if (e.outcome != "ok") return 0;
  if (objective_.shape.empty()) return e.fitness_us;
  auto it = e.shapes_us.find(objective_.shape);
  return it == e.shapes_us.end() ? 0 : it->second;
}

double SimRun::best_at(double budget) const {
  double best = 0, spent = 0;
  for (const auto& s : steps) {
    if (spent >= budget && !s.follows) break;  // the loop checks the budget before each candidate
    spent = s.gpu_s;
    if (s.full && s.value_us > 0 && (best == 0 || s.value_us < best)) best = s.value_us;
  }
  return best;
}

std::optional<double> SimRun::gpu_s_to(double target) const {
  for (const auto& s : steps)
    if (s.full && s.value_us > 0 && s.value_us <= target) return s.gpu_s;
  return std::nullopt;
}

size_t SimRun::replayed() const {
  return size_t(std::count_if(steps.begin(), steps.end(), [](const SimStep& s) { return s.replayed; }));
}

size_t SimRun::fulls() const {
  return size_t(std::count_if(steps.begin(), steps.end(), [](const SimStep& s) { return s.full; }));
}

namespace {

// The dataset's answer to one proposal at `fidelity`, as the observation the loop would have recorded.
Observation answer(const SimDomain& dom, const Proposal& p, Fidelity fidelity, uint64_t seed, SimStep& step) {
  Observation o{p.variant,
                p.params,
                fidelity == Fidelity::screen ? Fidelity::screen : Fidelity::full,
                "",
                0,
                0,
                config_key(*p.variant, p.params)};
  const DatasetConfig* c = dom.find(*p.variant, p.params);
  step.key = o.candidate_id;
  const bool screen = o.fidelity == Fidelity::screen;
  const DatasetEval* e = !c ? nullptr : screen ? (c->screen ? &*c->screen : nullptr) : (c->full ? &*c->full : nullptr);
  step.full = !screen;
  if (!c || (!e && !c->screen && !c->full)) {
    o.outcome = c ? c->outcome : "unmeasured";  // stopped before the GPU (or never measured): free
    return o;
  }
  if (!e && !screen && c->screen) {  // in full, measured only as a screen: its timing, a full's price
    o.outcome = c->screen->outcome;
    o.value_us = dom.replayed_value(*c, seed, o.candidate_id);
    o.gpu_s = c->screen->outcome == "ok" ? dom.full_cost() : dom.cost(*c->screen, true);
    step.replayed = c->screen->outcome == "ok";
  } else if (e) {
    o.outcome = e->outcome;
    o.value_us = dom.value(*e);
    o.gpu_s = dom.cost(*e, !screen);
  } else {
    o.outcome = "unmeasured";
  }
  step.value_us = o.value_us;
  return o;
}

}  // namespace

SimRun simulate(const SimDomain& dom, const SimOptions& o) {
  TunableGenerator gen(dom.space(), o.strategy, o.seed, o.prior.get());
  SearchState state;
  SimRun run;
  auto done = [&] {
    const bool over = run.gpu_s >= std::max(o.budget_gpu_s, 0.0);
    if (!over) return false;
    if (o.until_us <= 0) return true;
    return run.gpu_s_to(o.until_us).has_value() || (o.horizon_gpu_s > 0 && run.gpu_s >= o.horizon_gpu_s);
  };
  double best_quick = 0;  // the loop's best --quick screen so far
  auto evaluate = [&](const Proposal& p, Fidelity f, bool follows) {
    SimStep step;
    step.follows = follows;
    state.run.push_back(answer(dom, p, f, o.seed, step));
    step.outcome = state.run.back().outcome;
    run.gpu_s += state.run.back().gpu_s;
    step.gpu_s = run.gpu_s;
    run.steps.push_back(step);
    return state.run.back().value_us;
  };
  for (int g = 0; g < 100000 && !done(); ++g) {
    state.generation = g;
    const auto props = gen.propose(state, o.population);
    if (props.empty()) break;  // the domain is spent
    run.generations = g + 1;
    for (const auto& p : props) {
      if (done()) break;
      if (!(o.quick && p.fidelity == Fidelity::unset)) {
        evaluate(p, p.fidelity, false);
        continue;
      }
      // The loop's --quick (evolve/loop.cpp): the screen, then the full evaluation of the same
      // candidate when the screen is within --promote of the best screen before it.
      const double f = evaluate(p, Fidelity::screen, false);
      const bool promote = f > 0 && (best_quick == 0 || f <= best_quick * o.promote);
      if (f > 0 && (best_quick == 0 || f < best_quick)) best_quick = f;
      if (promote) evaluate(p, Fidelity::full, true);
    }
  }
  return run;
}

TransferPrior transfer_prior(const Dataset& d, const Objective& objective, const std::string& origin) {
  const SimDomain dom(d, objective);
  std::vector<TransferPoint> points;
  for (const auto& c : d.configs)
    if (const double us = dom.full_value(c); us > 0)
      points.push_back({c.variant, c.params, std::log(us / dom.optimum())});
  return TransferPrior(origin, std::move(points));
}

std::shared_ptr<const TransferPrior> read_prior(const std::string& file, int stage) {
  const Dataset d = read_dataset(file);
  if (d.stage != stage)
    throw usage_error("--prior " + file + ": a dataset of stage " + std::to_string(d.stage) + "; use one of stage " +
                      std::to_string(stage));
  auto prior = std::make_shared<const TransferPrior>(transfer_prior(d, Objective{}, file));
  if (prior->points().empty()) throw usage_error("--prior " + file + ": no configuration measured ok");
  return prior;
}

}  // namespace evo
