// builtin: Bayesian optimization over the configurations the parsed EVO_CONSTRAINT rules allow,
// spending GPU time by fidelity as successive halving does (docs/evolve.md, "Strategies").
//   - Screens explore: a space-filling start (greedy maximin), then each generation the
//     configurations of highest expected improvement under a Gaussian-process model of log µs
//     (search/surrogate.h), a batch made diverse by penalizing the neighbours of those already
//     picked (local penalization).
//   - Full evaluations are promotions: one per generation once kScreensFirst screens succeeded,
//     the best screened configuration, when its screen (scaled by the measured full/screen ratio)
//     beats the best full evaluation or ties it within the screens' measured noise (twice the
//     median absolute deviation of full/screen); once every configuration is screened,
//     the best remaining ones in turn. Promoting sooner spends a full evaluation (~10 screens)
//     on the best of a handful of screens, which random sampling matches.
// Screens and full evaluations time the same shapes the same way, so both train the model.
#include <algorithm>
#include <cmath>

#include "search/strategy.h"
#include "search/surrogate.h"

namespace evo {

namespace {

constexpr size_t kInitialDesign = 6;  // screens before the model proposes
constexpr double kXi = 0.002;         // EI margin in log µs (0.2 %)
constexpr size_t kScreensFirst = 8;   // successful screens before the first promotion
constexpr size_t kNoiseSample = 3;    // configurations measured both ways before the noise counts

GpPoint point_of(const std::vector<SearchVariant>& space, const SearchVariant& sv, const ParamSet& p) {
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

double distance(const GpPoint& a, const GpPoint& b) {
  if (a.group != b.group) return 1e9;
  double d2 = 0;
  for (size_t i = 0; i < a.x.size(); ++i) d2 += (a.x[i] - b.x[i]) * (a.x[i] - b.x[i]);
  return std::sqrt(d2);
}

struct Data {
  std::vector<GpPoint> points;
  std::vector<double> log_us;
  double ratio = 1;      // full / screen, median over configurations measured at both
  double incumbent = 0;  // best full µs (run or prior)
  size_t measured = 0;   // configurations measured (failures are not: they teach the model nothing)
  double noise = 0;      // how far a screen may misjudge a full evaluation (relative)
};

Data training_data(const SearchState& s, const std::map<std::string, Evaluated>& seen) {
  Data d;
  std::vector<double> ratios;
  for (const auto& [key, e] : seen)
    if (e.screen_us > 0 && e.full_us > 0) ratios.push_back(e.full_us / e.screen_us);
  const ScreenCalibration cal = calibrate_screens(std::move(ratios), kNoiseSample);
  d.ratio = cal.ratio;
  d.noise = cal.noise;
  std::map<std::string, bool> added;
  auto add = [&](const Observation& o, double us) {
    const SearchVariant* sv = space_of(*s.space, o.variant);
    const std::string key = config_key(*o.variant, o.params);
    if (!sv || added[key]) return;
    added[key] = true;
    d.points.push_back(point_of(*s.space, *sv, aligned(*sv, o.params)));
    d.log_us.push_back(std::log(us));
  };
  for (const auto& o : s.prior)
    if (o.value_us > 0) {
      add(o, o.value_us);
      if (d.incumbent == 0 || o.value_us < d.incumbent) d.incumbent = o.value_us;
    }
  for (const auto& o : s.run) {
    const auto& e = seen.at(config_key(*o.variant, o.params));
    if (e.failed || (e.full_us <= 0 && e.screen_us <= 0)) continue;
    add(o, e.full_us > 0 ? e.full_us : e.screen_us * d.ratio);
    if (e.full_us > 0 && (d.incumbent == 0 || e.full_us < d.incumbent)) d.incumbent = e.full_us;
  }
  d.measured = d.points.size();
  return d;
}

// Screened, not failed, not yet evaluated in full: best screen first.
std::vector<std::pair<double, const Observation*>> promotable(const SearchState& s,
                                                              const std::map<std::string, Evaluated>& seen) {
  std::vector<std::pair<double, const Observation*>> out;
  std::map<std::string, bool> listed;
  for (const auto& o : s.run) {
    const std::string key = config_key(*o.variant, o.params);
    const auto& e = seen.at(key);
    if (o.fidelity != Fidelity::screen || e.failed || e.full || e.screen_us <= 0 || listed[key]) continue;
    listed[key] = true;
    out.emplace_back(e.screen_us, &o);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

Proposal proposal(const SearchVariant& sv, ParamSet p, Fidelity f, std::string why) {
  Proposal out;
  out.variant = sv.variant;
  out.params = std::move(p);
  out.fidelity = f;
  out.rationale = std::move(why);
  return out;
}

class BuiltinStrategy : public Strategy {
 public:
  std::vector<Proposal> ask(const SearchState& s, size_t count, std::mt19937_64& rng) const override {
    const auto seen = evaluated(s);
    std::vector<Config> open;  // feasible and never evaluated
    for (const auto& c : *s.feasible) {
      const bool before = s.known && s.known(*c.sv->variant, c.params);
      if (!before && !seen.count(config_key(*c.sv->variant, c.params))) open.push_back(c);
    }
    const Data data = training_data(s, seen);
    const size_t promote = open.empty() ? count : data.measured >= kScreensFirst ? 1 : 0;
    std::vector<Proposal> out = promotions(s, seen, data, promote);
    if (out.size() < count && !open.empty()) {
      auto screens = data.measured < kInitialDesign ? space_filling(s, data, open, count - out.size(), rng)
                                                    : by_improvement(s, data, open, count - out.size());
      out.insert(out.end(), screens.begin(), screens.end());
    }
    return out;
  }

 private:
  static std::vector<Proposal> promotions(const SearchState& s, const std::map<std::string, Evaluated>& seen,
                                          const Data& data, size_t most) {
    std::vector<Proposal> out;
    for (const auto& [us, o] : promotable(s, seen)) {
      if (out.size() >= most) break;
      // Within the screen's noise of the best full evaluation is a tie the full evaluation decides.
      const bool beats = data.incumbent == 0 || us * data.ratio < data.incumbent * (1 + data.noise);
      if (!beats && most == 1) break;  // not every configuration is screened yet: screen more instead
      Proposal p = proposal(*space_of(*s.space, o->variant), o->params, Fidelity::promote,
                            beats ? "promoted: its screen beats the best full evaluation"
                                  : "promoted: every configuration is screened, the best remaining one");
      p.parent = o->candidate_id;
      out.push_back(std::move(p));
    }
    return out;
  }

  // Greedy maximin: each pick the open configuration farthest from everything measured or picked.
  static std::vector<Proposal> space_filling(const SearchState& s, const Data& data, std::vector<Config>& open,
                                             size_t n, std::mt19937_64& rng) {
    shuffle(open, rng);  // ties go to a seeded order
    std::vector<GpPoint> taken = data.points;
    std::vector<Proposal> out;
    while (out.size() < n && out.size() < open.size()) {
      size_t pick = 0;
      double far = -1;
      for (size_t i = 0; i < open.size(); ++i) {
        const GpPoint p = point_of(*s.space, *open[i].sv, open[i].params);
        double near = 1e18;
        for (const auto& t : taken) near = std::min(near, distance(p, t));
        if (near > far) far = near, pick = i;
      }
      taken.push_back(point_of(*s.space, *open[pick].sv, open[pick].params));
      out.push_back(proposal(*open[pick].sv, open[pick].params, Fidelity::screen, "space-filling start: screened"));
      open.erase(open.begin() + long(pick));
    }
    return out;
  }

  static std::vector<Proposal> by_improvement(const SearchState& s, const Data& data, const std::vector<Config>& open,
                                              size_t n) {
    GaussianProcess gp;
    gp.fit(data.points, data.log_us);
    const double best = *std::min_element(data.log_us.begin(), data.log_us.end());
    std::vector<GpPoint> points;
    std::vector<double> ei;
    for (const auto& c : open) {
      points.push_back(point_of(*s.space, *c.sv, c.params));
      ei.push_back(expected_improvement(best, gp.predict(points.back()), kXi));
    }
    std::vector<Proposal> out;
    while (out.size() < n) {
      const size_t pick = size_t(std::max_element(ei.begin(), ei.end()) - ei.begin());
      if (ei[pick] < 0) break;
      out.push_back(proposal(*open[pick].sv, open[pick].params, Fidelity::screen,
                             "highest expected improvement under the model: screened"));
      // Local penalization: the model's correlation with the pick discounts its neighbours.
      for (size_t i = 0; i < open.size(); ++i) ei[i] *= 1 - gp.correlation(points[i], points[pick]);
      ei[pick] = -1;
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_builtin_strategy() { return std::make_unique<BuiltinStrategy>(); }

}  // namespace evo
