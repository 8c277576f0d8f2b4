// The builtin strategy's model of the objective over the tunables: Gaussian-process regression
// with a Matérn 5/2 kernel (as Kernel Tuner's Bayesian optimization and scikit-learn's
// GaussianProcessRegressor(Matern(nu=2.5)) use), on the log of the measured µs, standardized.
// Points are tunable settings scaled to [0, 1] (each tunable's value rank in its sorted domain);
// points of different variants are independent (one group each). The length scale and the
// noise are chosen by the marginal likelihood over a small grid (on at most 64 of the points,
// evenly spread over them, so a fit stays cheap), so the model is a deterministic function of
// its data.
#pragma once
#include <cstddef>
#include <vector>

namespace evo {

struct GpPoint {
  int group = 0;
  std::vector<double> x;
};

class GaussianProcess {
 public:
  void fit(std::vector<GpPoint> points, const std::vector<double>& y);
  struct Prediction {
    double mean = 0, sd = 1;  // in the units of y
  };
  Prediction predict(const GpPoint& p) const;
  // Prior correlation of two points (1 at distance 0, 0 across groups).
  double correlation(const GpPoint& a, const GpPoint& b) const;
  double length_scale() const { return length_; }
  double noise() const { return noise_; }
  size_t size() const { return points_.size(); }

 private:
  double fit_with(double length, double noise);  // log marginal likelihood; fills chol_ and alpha_
  std::vector<GpPoint> points_;
  std::vector<double> y_;  // standardized
  double mean_ = 0, scale_ = 1, length_ = 0.5, noise_ = 0.01;
  std::vector<double> chol_, alpha_;  // lower Cholesky factor of K + noise I (row-major); K^-1 y
};

// Expected improvement below `best` (minimization) of a prediction, less a margin `xi`.
double expected_improvement(double best, const GaussianProcess::Prediction& p, double xi);

}  // namespace evo
