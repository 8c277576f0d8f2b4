// builtin: Bayesian optimization over the configurations the parsed EVO_CONSTRAINT rules allow,
// spending GPU time by fidelity as successive halving does (docs/evolve.md, "Strategies").
//   - Screens explore: a space-filling start (greedy maximin), then each generation the
//     configurations of highest expected improvement under a Gaussian-process model of log µs
//     (search/surrogate.h), a batch made diverse by penalizing the neighbours of those already
//     picked (local penalization).
//   - With a prior from another domain (search/transfer.h) the model fits what it measures less
//     the prior's prediction, and the start is the prior's best configurations.
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

// The other domain's log-ratio of a configuration (search/transfer.h): the model's prior mean,
// up to a constant the fit absorbs; 0 without a prior or where it has no word.
double transfer_of(const SearchState& s, const Variant& v, const ParamSet& p) {
  if (!s.transfer) return 0;
  const auto it = s.transfer->find(config_key(v, p));
  return it == s.transfer->end() ? 0 : it->second;
}

// What the model learns from: each measured configuration (search/promotion.h) as a point, and
// the prior mean there (0 without a prior): the model fits log µs less it.
struct Data {
  std::vector<GpPoint> points;
  std::vector<double> log_us, prior;
};

Data training_data(const SearchState& s, const ScreenStanding& standing) {
  Data d;
  for (const auto& m : standing.measured) {
    const SearchVariant& sv = *space_of(*s.space, m.observation->variant);
    const ParamSet p = aligned(sv, m.observation->params);
    d.points.push_back(rank_point(*s.space, sv, p));
    d.log_us.push_back(std::log(m.us));
    d.prior.push_back(transfer_of(s, *sv.variant, p));
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
      const size_t n = count - out.size();
      auto screens = data.points.size() >= kInitialDesign ? by_improvement(s, data, open, n)
                     : s.transfer                         ? by_prior(s, open, n, rng)
                                                          : space_filling(s, data, open, n, rng);
      out.insert(out.end(), screens.begin(), screens.end());
    }
    return out;
  }

 private:
  // Greedy maximin from what is measured (strategy.h), before the model has six points.
  static std::vector<Proposal> space_filling(const SearchState& s, const Data& data, std::vector<Config>& open,
                                             size_t n, std::mt19937_64& rng) {
    return maximin_screens(s, data.points, open, n, "space-filling start: screened", rng);
  }

  // With a prior the start is the other domain's best configurations, best first (ties in a
  // seeded order), instead of a space-filling design.
  static std::vector<Proposal> by_prior(const SearchState& s, std::vector<Config>& open, size_t n,
                                        std::mt19937_64& rng) {
    shuffle(open, rng);
    std::stable_sort(open.begin(), open.end(), [&](const Config& a, const Config& b) {
      return transfer_of(s, *a.sv->variant, a.params) < transfer_of(s, *b.sv->variant, b.params);
    });
    std::vector<Proposal> out;
    for (size_t i = 0; i < n && i < open.size(); ++i)
      out.push_back(proposal(*open[i].sv, open[i].params, Fidelity::screen, "best under the prior: screened"));
    return out;
  }

  static std::vector<Proposal> by_improvement(const SearchState& s, const Data& data, const std::vector<Config>& open,
                                              size_t n) {
    std::vector<double> residual;
    for (size_t i = 0; i < data.log_us.size(); ++i) residual.push_back(data.log_us[i] - data.prior[i]);
    GaussianProcess gp;
    gp.fit(data.points, residual);
    const double best = *std::min_element(data.log_us.begin(), data.log_us.end());
    std::vector<GpPoint> points;
    std::vector<double> ei;
    for (const auto& c : open) {
      points.push_back(rank_point(*s.space, *c.sv, c.params));
      GaussianProcess::Prediction p = gp.predict(points.back());
      p.mean += transfer_of(s, *c.sv->variant, c.params);
      ei.push_back(expected_improvement(best, p, kXi));
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
