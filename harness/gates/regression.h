// The regression gate: is a current median time the same as a baseline's, given the noise of
// both measurements? The statistics, the baseline file model, and the labelling of current
// records against a baseline. Pure functions, no I/O; docs/compare-and-gate.md has the math.
//
// Everything is done on ln(median): ratios become differences, the interval of a ratio is
// symmetric there, and a geometric mean over shapes is a plain mean of logs.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "policy/config.h"

namespace evo {

// What one timing entry says about its median: the value, and the sample spread behind it.
struct MedianSample {
  double median_us = 0;
  double stdev_us = 0;
  int n = 0;
};

// Standard error of ln(median): sqrt(pi/2) * stdev / (sqrt(n) * median). sqrt(pi/2) is the
// asymptotic cost of estimating a centre with the median instead of the mean (normal samples).
// Infinite when the spread is unknown (n < 2) or the median is not positive: such a
// measurement cannot support any decision.
double log_median_se(const MedianSample& s);

// The z with P(|Z| <= z) = confidence for a standard normal Z (two-sided), e.g. 0.99 -> 2.5758.
// `confidence` must lie in (0, 1).
double z_two_sided(double confidence);

// ratio = numerator / denominator with its interval [lo, hi] at the given confidence.
struct RatioInterval {
  double ratio = 1, lo = 0, hi = 0;
  double log_se = 0;  // standard error of ln(ratio)
  int terms = 0;      // how many (numerator, denominator) pairs went in
  double half_width() const { return (hi - lo) / 2; }
};

// ln r = ln a - ln b; se(ln r) = sqrt(se_a^2 + se_b^2): the two measurements are independent.
RatioInterval ratio_interval(const MedianSample& numerator, const MedianSample& denominator, double confidence);

// Geometric mean over shapes of numerator_i / denominator_i: ln r = mean_i(ln a_i - ln b_i),
// se(ln r) = sqrt(sum_i (se_a_i^2 + se_b_i^2)) / k. Empty input gives ratio 1 with terms = 0.
RatioInterval geomean_ratio_interval(const std::vector<std::pair<MedianSample, MedianSample>>& pairs,
                                     double confidence);

enum class RegressionLabel {
  same,       // the whole interval lies within +-min_effect: no change that matters
  fast,       // the whole interval lies below -min_effect: faster beyond doubt
  slow,       // the whole interval lies above +min_effect: a performance regression
  ambiguous,  // the interval straddles +min_effect or -min_effect: the noise hides the answer
};

std::string_view to_string(RegressionLabel label);

// Labels current/baseline: min_effect is the smallest change the gate acts on (relative, e.g.
// 0.03), symmetric in log space: +-ln(1 + min_effect). It is also the gate's noise floor: run-to-
// run drift (clocks, placement) that the within-run spread cannot see stays below it.
RegressionLabel classify(const RatioInterval& current_over_baseline, double min_effect);

struct RegressionCheck {
  RatioInterval interval;  // current / baseline
  RegressionLabel label = RegressionLabel::ambiguous;
};

RegressionCheck check_regression(const MedianSample& current, const MedianSample& baseline,
                                 const RegressionConfig& config);

// ---------------------------------------------------------------------------------------------
// The gate: a baseline (docs/records.md, "Gate baseline") against current records.

inline constexpr const char* kBaselineSchemaVersion = "1.0";

struct BaselineEntry {
  std::string task, variant, candidate_id, shape;
  int stage = 0;
  nlohmann::json params = nlohmann::json::object();
  MedianSample sample;
  double p10_us = 0, p90_us = 0;
};

struct GateBaseline {
  std::string gpu, time;
  std::vector<BaselineEntry> entries;
};

// Validates every field; throws a usage error naming `origin` and the field (entries[3].n).
// A newer minor schema version sets `warning`.
GateBaseline parse_baseline(const std::string& text, const std::string& origin, std::string* warning = nullptr);
nlohmann::json baseline_json(const GateBaseline& baseline);

// The baseline of the current elites: for each task of `gpu` (empty: the only GPU in the
// records), the rank-1 elite of its highest stage (store/population.cpp rules), one entry per
// timed shape. `time` is the newest of those records' times, so equal records give equal files.
// `tasks` empty = every task. Throws a usage error when there is nothing to write.
GateBaseline baseline_from_records(const std::vector<nlohmann::json>& records, const std::string& gpu,
                                   const std::vector<std::string>& tasks);

enum class GateStatus {
  same,       // within +-min_effect, beyond doubt
  fast,       // faster beyond doubt
  slow,       // slower beyond doubt (or timing was cut short as clearly slower): exit 4
  ambiguous,  // the noise hides the answer: printed loudly; exit 4 under --strict
  broken,     // the current record is not ok (correctness, crash, ...): exit 3
  missing,    // no current record or no timing for the shape: exit 1
};

std::string_view to_string(GateStatus status);

struct GateResult {
  BaselineEntry entry;
  GateStatus status = GateStatus::missing;
  std::optional<RegressionCheck> check;  // set when both medians were there
  std::optional<MedianSample> current;
  std::string note;  // why, for broken / missing / pruned, and "source changed" hints
};

// Matches each baseline entry to the latest current record of the same GPU, task, variant and
// params (time, then run id), and labels it.
std::vector<GateResult> evaluate_gate(const GateBaseline& baseline, const std::vector<nlohmann::json>& current,
                                      const RegressionConfig& config);

// 3 if any broken (correctness wins), else 4 if any slow, else 1 if any missing, else 4 if any
// ambiguous under `strict`, else 0.
int gate_exit_code(const std::vector<GateResult>& results, bool strict);

}  // namespace evo
