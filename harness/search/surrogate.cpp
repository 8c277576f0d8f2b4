#include "search/surrogate.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace evo {

namespace {

double matern52(double r) {
  const double s = std::sqrt(5.0) * r;
  return (1 + s + s * s / 3) * std::exp(-s);
}

// In place: the lower Cholesky factor of the n x n row-major matrix a; false if not positive.
bool cholesky(std::vector<double>& a, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (d <= 1e-12) return false;
    d = std::sqrt(d);
    a[j * n + j] = d;
    for (size_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / d;
    }
    for (size_t k = j + 1; k < n; ++k) a[j * n + k] = 0;
  }
  return true;
}

// Solves L z = b in place.
void forward(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = 0; i < n; ++i) {
    double s = b[i];
    for (size_t k = 0; k < i; ++k) s -= l[i * n + k] * b[k];
    b[i] = s / l[i * n + i];
  }
}

// Solves L^T z = b in place.
void backward(const std::vector<double>& l, size_t n, std::vector<double>& b) {
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= l[k * n + i] * b[k];
    b[i] = s / l[i * n + i];
  }
}

}  // namespace

double GaussianProcess::correlation(const GpPoint& a, const GpPoint& b) const {
  if (a.group != b.group) return 0;
  double d2 = 0;
  for (size_t i = 0; i < a.x.size() && i < b.x.size(); ++i) d2 += (a.x[i] - b.x[i]) * (a.x[i] - b.x[i]);
  return matern52(std::sqrt(d2) / length_);
}

double GaussianProcess::fit_with(double length, double noise) {
  length_ = length;
  noise_ = noise;
  const size_t n = points_.size();
  chol_.assign(n * n, 0);
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j <= i; ++j) chol_[i * n + j] = chol_[j * n + i] = correlation(points_[i], points_[j]);
  for (size_t i = 0; i < n; ++i) chol_[i * n + i] += noise;
  if (!cholesky(chol_, n)) return -1e300;
  alpha_ = y_;
  forward(chol_, n, alpha_);
  double fit = 0, logdet = 0;
  for (size_t i = 0; i < n; ++i) fit += alpha_[i] * alpha_[i], logdet += std::log(chol_[i * n + i]);
  backward(chol_, n, alpha_);
  return -0.5 * fit - logdet;
}

void GaussianProcess::fit(std::vector<GpPoint> points, const std::vector<double>& y) {
  const size_t n = y.size();
  mean_ = n ? std::accumulate(y.begin(), y.end(), 0.0) / double(n) : 0;
  double var = 0;
  for (double v : y) var += (v - mean_) * (v - mean_);
  scale_ = n > 1 && var > 0 ? std::sqrt(var / double(n)) : 1;
  if (n == 0) return points_.clear(), y_.clear();
  // The hyperparameters on an even spread of at most 64 points, then the model on all of them.
  const size_t step = (n + 63) / 64;
  points_.clear();
  y_.clear();
  for (size_t i = 0; i < n; i += step) points_.push_back(points[i]), y_.push_back((y[i] - mean_) / scale_);
  double best = -1e301, best_length = 0.5, best_noise = 0.01;
  for (double length : {0.15, 0.3, 0.6, 1.2})
    for (double noise : {0.003, 0.03, 0.3}) {
      const double ll = fit_with(length, noise);
      if (ll > best) best = ll, best_length = length, best_noise = noise;
    }
  points_ = std::move(points);
  y_.clear();
  for (double v : y) y_.push_back((v - mean_) / scale_);
  fit_with(best_length, best_noise);
}

GaussianProcess::Prediction GaussianProcess::predict(const GpPoint& p) const {
  const size_t n = points_.size();
  if (n == 0) return {mean_, scale_};
  std::vector<double> k(n);
  for (size_t i = 0; i < n; ++i) k[i] = correlation(points_[i], p);
  double mean = 0;
  for (size_t i = 0; i < n; ++i) mean += k[i] * alpha_[i];
  forward(chol_, n, k);
  double var = 1;
  for (double v : k) var -= v * v;
  return {mean_ + scale_ * mean, scale_ * std::sqrt(std::max(var, 1e-12))};
}

double expected_improvement(double best, const GaussianProcess::Prediction& p, double xi) {
  const double gain = best - p.mean - xi;
  if (p.sd <= 0) return std::max(gain, 0.0);
  const double z = gain / p.sd;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  return gain * cdf + p.sd * pdf;
}

}  // namespace evo
