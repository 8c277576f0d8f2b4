#include "search/strategy.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/errors.h"

namespace evo {

namespace {
// Every builtin strategy by name, in the order the help lists them: one table for the three
// lookups below.
struct NamedStrategy {
  const char* name;
  std::unique_ptr<Strategy> (*make)();
};
constexpr NamedStrategy kStrategies[] = {
    {"builtin", make_builtin_strategy}, {"screened", make_screened_strategy}, {"spacefill", make_spacefill_strategy},
    {"random", make_random_strategy},   {"genetic", make_genetic_strategy},   {"exhaustive", make_exhaustive_strategy}};
}  // namespace

std::unique_ptr<Strategy> make_strategy(const std::string& name) {
  for (const auto& s : kStrategies)
    if (name == s.name) return s.make();
  throw usage_error("--generator " + name + ": use " + strategy_names() + " or exec:COMMAND");
}

bool is_strategy(const std::string& name) {
  return std::any_of(std::begin(kStrategies), std::end(kStrategies), [&](const auto& s) { return name == s.name; });
}

std::string strategy_names() {
  std::string out;
  for (const auto& s : kStrategies) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

std::string config_key(const Variant& v, const ParamSet& params) {
  std::map<std::string, long> sorted(params.begin(), params.end());
  std::string s = v.id + "|";
  for (const auto& [k, x] : sorted) s += k + "=" + std::to_string(x) + " ";
  return s;
}

std::map<std::string, Evaluated> evaluated(const SearchState& s) {
  std::map<std::string, Evaluated> out;
  for (const auto& o : s.run) {
    Evaluated& e = out[config_key(*o.variant, o.params)];
    const bool full = o.fidelity != Fidelity::screen;
    (full ? e.full : e.screened) = true;
    if (o.outcome != "ok" || o.value_us <= 0) {
      e.failed = e.failed || o.outcome != "ok";
      continue;
    }
    double& v = full ? e.full_us : e.screen_us;
    if (v == 0 || o.value_us < v) v = o.value_us;
  }
  return out;
}

std::vector<Config> unevaluated(const SearchState& s, const std::map<std::string, Evaluated>& seen) {
  std::vector<Config> open;
  for (const auto& c : *s.feasible)
    if (!seen.count(config_key(*c.sv->variant, c.params)) && !(s.known && s.known(*c.sv->variant, c.params)))
      open.push_back(c);
  return open;
}

std::vector<Proposal> uniform_draws(std::vector<Config>& open, size_t n, Fidelity f, const std::string& why,
                                    std::mt19937_64& rng) {
  std::vector<Proposal> out;
  while (out.size() < n && !open.empty()) {
    const size_t pick = draw(rng, open.size());
    Proposal p;
    p.variant = open[pick].sv->variant;
    p.params = open[pick].params;
    p.fidelity = f;
    p.rationale = why;
    out.push_back(std::move(p));
    open[pick] = std::move(open.back());
    open.pop_back();
  }
  return out;
}

ParamSet aligned(const SearchVariant& sv, const ParamSet& given) {
  ParamSet p;
  for (const auto& t : sv.tunables) {
    long v = t.values.front();
    for (const auto& [n, x] : given)
      if (n == t.name) v = x;
    p.emplace_back(t.name, v);
  }
  return p;
}

const SearchVariant* space_of(const std::vector<SearchVariant>& space, const Variant* v) {
  for (const auto& sv : space)
    if (sv.variant == v) return &sv;
  return nullptr;
}

GpPoint rank_point(const std::vector<SearchVariant>& space, const SearchVariant& sv, const ParamSet& p) {
  GpPoint g;
  g.group = int(&sv - space.data());
  for (size_t k = 0; k < sv.tunables.size(); ++k) {
    std::vector<long> dom = sv.tunables[k].values;
    std::sort(dom.begin(), dom.end());
    const long v = k < p.size() ? p[k].second : dom.front();
    const size_t at = size_t(std::find(dom.begin(), dom.end(), v) - dom.begin());
    g.x.push_back(dom.size() > 1 ? double(std::min(at, dom.size() - 1)) / double(dom.size() - 1) : 0.0);
  }
  return g;
}

namespace {
double distance(const GpPoint& a, const GpPoint& b) {
  if (a.group != b.group) return 1e9;
  double d2 = 0;
  for (size_t i = 0; i < a.x.size(); ++i) d2 += (a.x[i] - b.x[i]) * (a.x[i] - b.x[i]);
  return std::sqrt(d2);
}
}  // namespace

std::vector<Proposal> maximin_screens(const SearchState& s, std::vector<GpPoint> taken, std::vector<Config>& open,
                                      size_t n, const std::string& why, std::mt19937_64& rng) {
  shuffle(open, rng);           // ties go to a seeded order
  std::vector<GpPoint> points;  // open[i]'s, computed once
  for (const Config& c : open) points.push_back(rank_point(*s.space, *c.sv, c.params));
  std::vector<Proposal> out;
  while (out.size() < n && !open.empty()) {
    size_t pick = 0;
    double far = -1;
    for (size_t i = 0; i < open.size(); ++i) {
      double near = 1e18;
      for (const auto& t : taken) near = std::min(near, distance(points[i], t));
      if (near > far) far = near, pick = i;
    }
    taken.push_back(points[pick]);
    points.erase(points.begin() + long(pick));
    Proposal p;
    p.variant = open[pick].sv->variant;
    p.params = open[pick].params;
    p.fidelity = Fidelity::screen;
    p.rationale = why;
    out.push_back(std::move(p));
    open.erase(open.begin() + long(pick));
  }
  return out;
}

ScreenCalibration calibrate_screens(std::vector<double> full_over_screen, size_t min_for_noise) {
  ScreenCalibration c;
  if (full_over_screen.empty()) return c;
  std::sort(full_over_screen.begin(), full_over_screen.end());
  c.ratio = full_over_screen[full_over_screen.size() / 2];
  if (full_over_screen.size() < std::max<size_t>(min_for_noise, 1)) return c;
  std::vector<double> deviations;
  for (double r : full_over_screen) deviations.push_back(std::abs(r / c.ratio - 1));
  std::sort(deviations.begin(), deviations.end());
  c.noise = 2 * deviations[deviations.size() / 2];
  return c;
}

}  // namespace evo
