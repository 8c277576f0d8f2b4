#include "core/stats.h"

#include <algorithm>
#include <cmath>

namespace evo {

double SampleStats::rse() const { return n > 1 && mean > 0 ? stdev / std::sqrt(double(n)) / mean : INFINITY; }

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * double(v.size() - 1);
  size_t lo = size_t(std::floor(pos)), hi = size_t(std::ceil(pos));
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

SampleStats summarize(std::vector<double> v) {
  SampleStats s;
  s.n = int(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = quantile(v, 0.5);
  s.p10 = quantile(v, 0.1);
  s.p90 = quantile(v, 0.9);
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / double(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.stdev = v.size() > 1 ? std::sqrt(ss / double(v.size() - 1)) : 0;
  return s;
}

nlohmann::json stats_json(const SampleStats& s) {
  return {{"median_us", s.median},
          {"p10_us", s.p10},
          {"p90_us", s.p90},
          {"mean_us", s.mean},
          {"stdev_us", s.stdev},
          {"min_us", s.min},
          {"max_us", s.max},
          {"n", s.n},
          {"rse", std::isfinite(s.rse()) ? nlohmann::json(s.rse()) : nlohmann::json(nullptr)}};
}

}  // namespace evo
