// builtin: Bayesian optimization over the configurations the parsed EVO_CONSTRAINT rules allow,
// spending GPU time by fidelity as successive halving does (docs/evolve.md, "Strategies").
//   - Screens explore: a space-filling start (greedy maximin), then each generation the
//     configurations of highest expected improvement under a Gaussian-process model of log µs
//     (search/surrogate.h), a batch made diverse by penalizing the neighbours of those already
//     picked (local penalization).
//   - Full evaluations are promotions by the rule the screened strategy shares
//     (search/promotion.h): the model chooses only what is screened.
// Screens and full evaluations time the same shapes the same way, so both train the model.
#include <algorithm>
#include <cmath>

#include "search/promotion.h"
#include "search/strategy.h"
#include "search/surrogate.h"

namespace evo {

namespace {

constexpr size_t kInitialDesign = 6;  // screens before the model proposes
constexpr double kXi = 0.002;         // EI margin in log µs (0.2 %)

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

// What the model learns from: each measured configuration (search/promotion.h) as a point.
struct Data {
  std::vector<GpPoint> points;
  std::vector<double> log_us;
};

Data training_data(const SearchState& s, const ScreenStanding& standing) {
  Data d;
  for (const auto& m : standing.measured) {
    const SearchVariant& sv = *space_of(*s.space, m.observation->variant);
    d.points.push_back(point_of(*s.space, sv, aligned(sv, m.observation->params)));
    d.log_us.push_back(std::log(m.us));
  }
  return d;
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
    PromotionRound round = promotion_round(s, count);
    std::vector<Config>& open = round.open;
    const Data data = training_data(s, round.standing);
    std::vector<Proposal> out = std::move(round.promoted);
    if (out.size() < count && !open.empty()) {
      auto screens = data.points.size() < kInitialDesign ? space_filling(s, data, open, count - out.size(), rng)
                                                         : by_improvement(s, data, open, count - out.size());
      out.insert(out.end(), screens.begin(), screens.end());
    }
    return out;
  }

 private:
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
