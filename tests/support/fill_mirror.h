// The host mirror of the fill (hacker round 28): what evo_fill (support_kernels.cu fill_value)
// and the worker (worker_device.h Problem::fill) lay on a case's Q, K and V, element by element,
// and one query row with its keys as a kernel reads them. Rounds 28 and 29 read the pinned runs'
// cases through it.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "gpu/launch_draws.h"
#include "gpu/value_fill.h"
#include "gpu/worker_protocol.h"

namespace evo::test {

// One query row and its keys as the kernel reads them (values already in the task's dtype).
struct Row {
  int d = 0;
  std::vector<float> q;     // d
  std::vector<float> k, v;  // keys x d
  int keys() const { return int(k.size()) / d; }
  float kx(int j, int c) const { return k[size_t(j) * d + c]; }
  float vx(int j, int c) const { return v[size_t(j) * d + c]; }
};

struct Dims {
  uint64_t batch, heads, seq, dim;
};

// fill_value (support_kernels.cu) for element (b, h, s, d) of a tensor (or column view) of `t`'s
// dims, before rounding: the shared prefix, the padding rows' copies, the offset's kept sequences,
// the outlier and padding rows, the sink.
inline float fill_host(const Dims& t, const FillParams& f, unsigned seed, unsigned tensor, uint64_t b, uint64_t h,
                       uint64_t s, uint64_t d, uint64_t counter = 0) {
  uint64_t i = ((b * t.heads + h) * t.seq + s) * t.dim + d;
  const uint64_t group = f.prefix_group ? f.prefix_group : 2;
  if (f.prefix_rows && (b % group) && s < f.prefix_rows) {
    i -= (b % group) * t.seq * t.heads * t.dim;
    b -= b % group;
  }
  if (f.outlier_every && f.outlier_scale == 0 && s > 0)
    i = fill_source_row(f.outlier_every, true, i / t.dim, t.seq, seed) * t.dim + d;
  if (f.pair_every) i = fill_pair_source(f.pair_every, i / t.dim, t.seq, seed) * t.dim + i % t.dim;
  float mean = f.mean;
  if (f.mean_every && !v_offset_sequence(f.mean_every, b * t.heads + h, t.batch * t.heads, seed)) mean = 0;
  float x = mean + evo_normal_host(i + counter, seed, tensor, f.stddev);
  const uint64_t row = i / t.dim;
  if (fill_outlier_row(f.outlier_every, row, seed)) {
    const uint64_t kind = SplitMix{row ^ (uint64_t(seed) << 32)}.next() / f.outlier_every % 3;
    x = f.outlier_scale != 0.f || kind == 2 ? x * f.outlier_scale : kind == 0 ? 0.f : -0.f;
  }
  if (f.sink != 0.f && s == 0) x = f.sink;
  return e4m3_grid(x, f.grid_scale);
}

inline float to_dtype(float x, bool bf16) {
  if (bf16) {
    uint32_t u;
    std::memcpy(&u, &x, 4);
    if ((u & 0x7F800000u) != 0x7F800000u) u = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
    std::memcpy(&x, &u, 4);
    return x;
  }
  return float(static_cast<_Float16>(x));
}

// A case's Q, K and V as the worker fills them (worker_device.h Problem::fill): each tensor's own
// fill, massive channels over Q's and K's bands (one-stream cases without a shared view), V's
// offset bands, and a shared view holding what was filled last (K's values for qk and qk_prefix,
// V's for kv, qv, qkv and qkv_prefix). The first problem of a two-stream case.
struct Mirror {
  const CaseSpec& c;
  bool bf16;
  TensorFills f;
  std::string shared;
  bool massive;
  std::vector<ChannelFill> mfills, koffsets;
  std::array<ColumnBand, 2> vbands;
  Dims qd, kd;
  Mirror(const CaseSpec& cs, bool b)
      : c(cs),
        bf16(b),
        f(tensor_fills(cs)),
        shared(layout_shared(cs.layout)),
        massive(massive_channels(cs) && shared.empty() && !cs.two_streams),
        mfills(massive_channel_fills(cs)),
        koffsets(k_offset_channels(cs)),
        vbands(v_offset_bands(cs.seed, cs.shape.head_dim, float(f.v.mean))),
        qd{uint64_t(cs.shape.batch), uint64_t(cs.shape.heads_q), uint64_t(cs.shape.seq_q), uint64_t(cs.shape.head_dim)},
        kd{uint64_t(cs.shape.batch), uint64_t(cs.shape.heads_kv), uint64_t(cs.shape.seq_kv),
           uint64_t(cs.shape.head_dim)} {}

  float own(unsigned tensor, uint64_t b, uint64_t h, uint64_t s, uint64_t d) const {
    const Dims& t = tensor == 0 ? qd : kd;
    const FillParams& fp = tensor == 0 ? f.q : tensor == 1 ? f.k : f.v;
    if (tensor < 2 && massive) {
      const float big = massive_channel_scale(bf16);
      for (const ChannelFill& m : mfills) {
        const ColumnBand& band = m.band;
        if (int(d) < band.begin || int(d) >= band.end) continue;
        FillParams g = fp;
        g.stddev = (tensor == 0) == m.q_large ? g.stddev * big : g.stddev / big;
        const Dims view{t.batch, t.heads, t.seq, uint64_t(band.end - band.begin)};
        return fill_host(view, g, c.seed, tensor, b, h, s, d - uint64_t(band.begin), m.counter);
      }
    }
    if (tensor == 1)  // "k_offset": K channels with a mean
      for (const ChannelFill& ch : koffsets) {
        if (int(d) < ch.band.begin || int(d) >= ch.band.end) continue;
        FillParams g = fp;
        g.mean = ch.band.mean;
        const Dims view{t.batch, t.heads, t.seq, 1};
        return fill_host(view, g, c.seed, 1, b, h, s, 0, ch.counter);
      }
    if (tensor == 2 && s == 0 && small_sink_row(c)) {  // "small_sink": V's row 0 a view of one row, small
      FillParams g = f.v;
      g.stddev *= kSmallSinkScale;
      const Dims view{t.batch, t.heads, 1, t.dim};
      return fill_host(view, g, c.seed, 2, b, h, 0, d, lane_counter(kSmallSinkLane));
    }
    if (tensor == 2 && f.v.mean != 0) {
      for (const ColumnBand& band : vbands) {
        if (int(d) < band.begin || int(d) >= band.end) continue;
        FillParams g = f.v;
        g.mean = band.mean;
        g.mean_every = kVOffsetDropEvery;
        const Dims view{t.batch, t.heads, t.seq, uint64_t(band.end - band.begin)};
        return fill_host(view, g, c.seed, 2, b, h, s, d - uint64_t(band.begin));
      }
      FillParams g = f.v;
      g.mean = 0;
      return fill_host(t, g, c.seed, 2, b, h, s, d);
    }
    return fill_host(t, fp, c.seed, tensor, b, h, s, d);
  }
  float q(uint64_t b, uint64_t h, uint64_t s, uint64_t d) const {
    const unsigned src = v_at_q(shared) ? 2 : k_at_q(shared) ? 1 : 0;
    return to_dtype(own(src, b, h, s, d), bf16);
  }
  float k(uint64_t b, uint64_t h, uint64_t s, uint64_t d) const {
    const bool from_v = shared == "kv" || (k_at_q(shared) && v_at_q(shared));
    return to_dtype(own(from_v ? 2 : 1, b, h, s, d), bf16);
  }
  float v(uint64_t b, uint64_t h, uint64_t s, uint64_t d) const { return to_dtype(own(2, b, h, s, d), bf16); }

  // Query row i of head h of batch b and its visible keys (top-left causal: the first i + 1), the
  // keys limited to the chunks in `chunks` (each read whole; the others left out).
  Row row(uint64_t b, uint64_t h, uint64_t i, bool causal, const std::vector<int>& chunks,
          std::vector<int>* starts) const {
    Row r;
    r.d = c.shape.head_dim;
    const uint64_t hk = h / uint64_t(c.shape.heads_q / c.shape.heads_kv);
    const int visible = causal ? std::min<int>(c.shape.seq_kv, int(i) + 1) : c.shape.seq_kv;
    for (int d = 0; d < r.d; ++d) r.q.push_back(q(b, h, i, uint64_t(d)));
    starts->clear();
    for (int ch : chunks) {
      const int j0 = ch * 32;
      if (j0 >= visible) continue;
      starts->push_back(r.keys());
      for (int j = j0; j < std::min(visible, j0 + 32); ++j)
        for (int d = 0; d < r.d; ++d) {
          r.k.push_back(k(b, hk, uint64_t(j), uint64_t(d)));
          r.v.push_back(v(b, hk, uint64_t(j), uint64_t(d)));
        }
    }
    return r;
  }
};

}  // namespace evo::test
