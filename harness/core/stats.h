// Summary statistics of timing samples.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

namespace evo {

struct SampleStats {
  double median = 0, p10 = 0, p90 = 0, mean = 0, stdev = 0, min = 0, max = 0;
  int n = 0;
  double rse() const;  // relative standard error of the mean: stdev / sqrt(n) / mean
};

// Quantiles by linear interpolation between order statistics.
double quantile(std::vector<double> sorted_values, double q);
SampleStats summarize(std::vector<double> samples);
nlohmann::json stats_json(const SampleStats& s);  // keys: median_us, p10_us, ... (samples in µs)

}  // namespace evo
