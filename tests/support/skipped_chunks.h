// The host model of the adversarial suite's half-chunk tries (hacker rounds 23 to 26): one query
// row of the scalar control's arithmetic (an online softmax over 32-key chunks, here in double)
// against the same with every other chunk skipped (the tries' key_step 64), normal Q, K and V of
// std 1 at 1/sqrt(D), or one row given. Returns the skipped row's relative L2 error.
#pragma once
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace evo::test {

// The same for one row given: Q (d), K and V (keys x d, row-major) at `scale`.
inline double skipped_chunks_rel_l2(const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& v, int d, double scale) {
  const int keys = int(k.size()) / d;
  const auto row = [&](int step) {
    std::vector<double> acc(d, 0.0);
    double m = -INFINITY, l = 0;
    for (int j0 = 0; j0 < keys; j0 += step)
      for (int j = j0; j < std::min(keys, j0 + 32); ++j) {
        double s = 0;
        for (int c = 0; c < d; ++c) s += double(q[c]) * k[size_t(j) * d + c];
        s *= scale;
        const double m_new = std::max(m, s), alpha = std::exp(m - m_new), w = std::exp(s - m_new);
        l = l * alpha + w;
        for (int c = 0; c < d; ++c) acc[c] = acc[c] * alpha + w * v[size_t(j) * d + c];
        m = m_new;
      }
    for (double& a : acc) a /= l;
    return acc;
  };
  const std::vector<double> honest = row(32), skipped = row(64);
  double err = 0, norm = 0;
  for (int c = 0; c < d; ++c) {
    err += (skipped[c] - honest[c]) * (skipped[c] - honest[c]);
    norm += honest[c] * honest[c];
  }
  return std::sqrt(err / norm);
}

inline double skipped_chunks_rel_l2(int keys, int d, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  std::vector<float> q(d), k(size_t(keys) * d), v(size_t(keys) * d);
  for (float& x : q) x = n(gen);
  for (float& x : k) x = n(gen);
  for (float& x : v) x = n(gen);
  return skipped_chunks_rel_l2(q, k, v, d, 1 / std::sqrt(double(d)));
}

}  // namespace evo::test
