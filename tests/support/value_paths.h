// The value tries' tests on K's first chunk (hacker rounds 29 and 30): what their kernels count in
// K's first 32 keys, a model-like chunk that has such channels, and the path on a case read
// through the host mirror of the fill.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "support/fill_mirror.h"
#include "support/kernel_call.h"
#include "support/pinned_catches.h"

namespace evo::test {

// The value tries' tests on K's first 32 keys (D channels, row-major), as their kernels read them.
// k_outlier_channels_past_512_keys_half_chunks.cu: 1 to 4 channels past 24 in magnitude.
inline int outlier_channels(const std::vector<float>& k, int d) {
  int big = 0;
  for (int c = 0; c < d; ++c) {
    bool over = false;
    for (int j = 0; j < 32; ++j) over = over || std::fabs(k[size_t(j) * d + c]) > 24.f;
    big += over ? 1 : 0;
  }
  return big;
}
// k_bias_channels_wide_groups_half_chunks.cu: 1 to 4 channels with |mean| past 8 and max - min under it.
inline int bias_channels(const std::vector<float>& k, int d) {
  int biased = 0;
  for (int c = 0; c < d; ++c) {
    float sum = 0.f, lo = 3.0e38f, hi = -3.0e38f;
    for (int j = 0; j < 32; ++j) {
      const float x = k[size_t(j) * d + c];
      sum += x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    const float mean = std::fabs(sum / 32.f);
    biased += mean > 8.f && hi - lo < mean ? 1 : 0;
  }
  return biased;
}
inline bool few(int n) { return n >= 1 && n <= 4; }
// A K chunk of 32 keys of a model-like row: N(0, 1), and `channels` channels either past 24
// (±(30 + N(0, 1)), a fixed outlier channel) or offset (20 + 1.5 N(0, 1), a per-channel bias).
inline std::vector<float> k_chunk(int d, unsigned seed, int channels, bool offset) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  std::vector<float> k(size_t(32) * d);
  for (float& x : k) x = n(gen);
  for (int c = 0; c < channels; ++c) {
    const int ch = (7 + 37 * c) % d;
    for (int j = 0; j < 32; ++j) {
      float& x = k[size_t(j) * d + ch];
      x = offset ? 20.f + 1.5f * x : (c % 2 ? -1.f : 1.f) * (30.f + x);
    }
  }
  return k;
}

// K's first 32 keys of KV head h of batch 0 as the worker fills them (support/fill_mirror.h), in the
// task's dtype: what the value tries' kernels test (D channels a key, row-major).
inline std::vector<float> first_k_chunk(const Task& t, const CaseSpec& c, int h) {
  const Mirror m(c, t.dtype == DType::bf16);
  const int d = c.shape.head_dim;
  std::vector<float> k(size_t(32) * d, 0.f);
  for (int j = 0; j < std::min(32, c.shape.seq_kv); ++j)
    for (int ch = 0; ch < d; ++ch) k[size_t(j) * d + ch] = m.k(0, uint64_t(h), uint64_t(j), uint64_t(ch));
  return k;
}
// A value try's path on a case: its shape test and, for some KV head of batch 0, its test on K's
// first chunk. Only the value kinds lay 1 to 4 large or offset channels in K (round 28's mirror
// over every other case's sampled rows: HackerRound28.TheClosedHolesAreCaughtByTheirValueCasesInEveryRun),
// so the other cases are read as not running it.
using ChannelCount = int (*)(const std::vector<float>&, int);
inline TaskPath value_path(const std::function<bool(const Call&)>& shape, ChannelCount channels) {
  return [=](const Task& t, const CaseSpec& c, const Shape& s) {
    if (c.values.empty() || !shape(call_of(s, c.layout, c.scale, t.causal))) return false;
    for (int h = 0; h < s.heads_kv; ++h)
      if (few(channels(first_k_chunk(t, c, h), s.head_dim))) return true;
    return false;
  };
}
}  // namespace evo::test
