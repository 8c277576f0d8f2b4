#include "search/promotion.h"

#include <algorithm>

namespace evo {

namespace {

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

}  // namespace

ScreenStanding screen_standing(const SearchState& s, const std::map<std::string, Evaluated>& seen) {
  ScreenStanding st;
  std::vector<double> ratios;
  for (const auto& [key, e] : seen)
    if (e.screen_us > 0 && e.full_us > 0) ratios.push_back(e.full_us / e.screen_us);
  const ScreenCalibration cal = calibrate_screens(std::move(ratios), kNoiseSample);
  st.ratio = cal.ratio;
  st.noise = cal.noise;
  std::map<std::string, bool> added;
  auto add = [&](const Observation& o, double us) {
    const std::string key = config_key(*o.variant, o.params);
    if (!space_of(*s.space, o.variant) || added[key]) return;
    added[key] = true;
    st.measured.push_back({&o, us});
  };
  for (const auto& o : s.prior)
    if (o.value_us > 0) {
      add(o, o.value_us);
      if (st.incumbent == 0 || o.value_us < st.incumbent) st.incumbent = o.value_us;
    }
  for (const auto& o : s.run) {
    const auto& e = seen.at(config_key(*o.variant, o.params));
    if (e.failed || (e.full_us <= 0 && e.screen_us <= 0)) continue;
    add(o, e.full_us > 0 ? e.full_us : e.screen_us * st.ratio);
    if (e.full_us > 0 && (st.incumbent == 0 || e.full_us < st.incumbent)) st.incumbent = e.full_us;
  }
  return st;
}

namespace {

std::vector<Proposal> promotions(const SearchState& s, const std::map<std::string, Evaluated>& seen,
                                 const ScreenStanding& standing, size_t most) {
  std::vector<Proposal> out;
  for (const auto& [us, o] : promotable(s, seen)) {
    if (out.size() >= most) break;
    // Within the screen's noise of the best full evaluation is a tie the full evaluation decides.
    const bool beats = standing.incumbent == 0 || us * standing.ratio < standing.incumbent * (1 + standing.noise);
    if (!beats && most == 1) break;  // not every configuration is screened yet: screen more instead
    Proposal p;
    p.variant = o->variant;
    p.params = o->params;
    p.fidelity = Fidelity::promote;
    p.rationale = beats ? "promoted: its screen beats the best full evaluation"
                        : "promoted: every configuration is screened, the best remaining one";
    p.parent = o->candidate_id;
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

PromotionRound promotion_round(const SearchState& s, size_t count) {
  PromotionRound round;
  const auto seen = evaluated(s);
  round.open = unevaluated(s, seen);
  round.standing = screen_standing(s, seen);
  const size_t due = round.open.empty() ? count : round.standing.measured.size() >= kScreensFirst ? 1 : 0;
  round.promoted = promotions(s, seen, round.standing, due);
  return round;
}

}  // namespace evo
