// Hacker round 28's value cases (run/value_cases.h): what evo_fill and the worker lay on a case's
// inputs for each value kind (CaseSpec::values), the parts gpu/input_fill.h builds on.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/splitmix.h"
#include "gpu/worker_protocol.h"

namespace evo {

// Patterns real models feed attention that the input kinds never drew, one a case, each on
// otherwise ordinary inputs:
//  - "massive_1", "massive_2", "massive_4": Q large (x massive_channel_scale) in 1, 2 or 4
//    scattered channels with K divided there, and K large in as many others with Q divided, so
//    every product Q.K holds is distributed as normal's (gpu/input_fill.h massive_channel_fills).
//    The other cases' massive channels are bands of D/4, so a chunk's count of channels past 24
//    was 0 or 5 and more, and a kernel that clamped K or Q only where 1 to 4 channels passed it
//    was exact (k_outlier_channels_clamped_24.cu, q_outlier_channels_clamped_24.cu);
//  - "v_repeat": V's rows come in pairs where a hash says (a token repeated at adjacent
//    positions, fill_pair_source) while K's rows are drawn afresh, as RoPE rotates a repeated
//    token's key: every repeat before was of whole Q, K and V rows (v_repeat_reuses_score.cu);
//  - "e4m3_kv": K and V on the e4m3 grid times a power of two of 1 to 4 (a dequantized fp8 cache
//    with a power-of-two scale), Q a 16-bit projection's; "e4m3_qkv": Q, K and V on it at 2^-6 or
//    2^-5 (a per-tensor scale that spreads N(0, 1) over e4m3's range). The gate's values had
//    random low bits, so a kernel that took an all-e4m3 chunk of K for an fp8 path and rounded Q
//    to e4m3 was exact (k_fp8_exact_chunk_q_to_e4m3.cu; a Q on the grid makes that rounding exact);
//  - "k_offset": 1 to 4 K channels with a mean of 16 to 48 (either sign) and spread 1, a
//    per-channel bias of K (gpu/input_fill.h k_offset_channels); the mean adds a per-query
//    constant to the scores, which softmax drops, so an honest kernel's error is normal's. K never
//    had a channel mean (k_bias_channels_dropped.cu);
//  - "small_sink": attention_sink with V's row 0 of every sequence at kSmallSinkScale of V's
//    spread (an attention sink that carries weight and little value; v_null_sink_dropped.cu was
//    caught only by a side effect of rounds 21 and 22's rules).
// Q's and K's large channels coinciding (qk_coinciding_outlier_channels_dropped.cu) are not drawn:
// their logits reach hundreds and the tolerance there is not calibrated on a GPU.
inline const std::vector<std::string>& value_kinds() {
  static const std::vector<std::string> k{"massive_1", "massive_2", "massive_4", "v_repeat",
                                          "e4m3_kv",   "e4m3_qkv",  "k_offset",  "small_sink"};
  return k;
}

// Whole repeated sequences ("repeat_batch", hacker round 30's second close: run/batch_cases.h
// append_beam_prefill_cases): Q takes the case's shared prefix rows too (gpu/input_fill.h
// tensor_fills), so with CaseSpec::shared_prefix at least Sq and Skv every odd sequence repeats the
// one before whole, Q, K and V, as repeat_interleave of one prompt before a beam search's prefill.
// Not one of value_kinds (the value cases draw one case each of those); the worker takes it too.
inline constexpr const char* kRepeatBatch = "repeat_batch";
// Whole sequences repeated in groups of n ("repeat_interleave_<n>", n of 3 or 4: hacker round 31's
// close, run/batch_cases.h append_beam_prefill_cases): every sequence of a group of n repeats the
// group's first whole, Q, K and V (gpu/input_fill.h FillParams::prefix_group), as
// repeat_interleave(n) of each prompt before generate(num_beams = n). n = 2 is kRepeatBatch.
inline constexpr const char* kRepeatInterleave = "repeat_interleave_";
inline constexpr unsigned kRepeatInterleaveMax = 4;
// The group of a "repeat_interleave_<n>" kind, 0 for any other.
inline unsigned repeat_interleave_group(const std::string& kind) {
  const std::string head = kRepeatInterleave;
  if (kind.size() != head.size() + 1 || kind.compare(0, head.size(), head) != 0) return 0;
  const unsigned n = unsigned(kind.back() - '0');
  return n >= 3 && n <= kRepeatInterleaveMax ? n : 0;
}
inline bool known_value_kind(const std::string& kind) {
  return kind == kRepeatBatch || repeat_interleave_group(kind) != 0 ||
         std::find(value_kinds().begin(), value_kinds().end(), kind) != value_kinds().end();
}

// V's repeated rows ("v_repeat"): row s > 0 of a (b, head) sequence takes row s - 1's draw where
// the row's hash (salted, the case's seed) is 0 mod `every` and the row before's is not, so rows
// come in pairs, never chains (about 3 rows in 16 at every = 4). evo_fill (support_kernels.cu
// fill_value) applies it to the logical row after the shared prefix and padding rows; this is its
// host mirror.
inline constexpr unsigned kValuePairEvery = 4;
inline constexpr uint64_t kPairRowSalt = 0x9A1E5ull;
inline bool fill_pair_row(unsigned every, uint64_t row, unsigned seed) {
  return every != 0 && SplitMix{row ^ kPairRowSalt ^ (uint64_t(seed) << 32)}.next() % every == 0;
}
inline uint64_t fill_pair_source(unsigned every, uint64_t row, uint64_t seq, unsigned seed) {
  if (every == 0 || row % seq == 0) return row;
  return fill_pair_row(every, row, seed) && !fill_pair_row(every, row - 1, seed) ? row - 1 : row;
}

// x rounded to the nearest e4m3 value times `scale` (a power of two; 0: x as it is), ties to even,
// saturated to +-448 x scale: evo_fill's last step (support_kernels.cu evo_e4m3_grid, the same
// operations: exact division by a power of two, integer rounding of the bits, rint, a product by
// a power of two), so host and device agree bit for bit. e4m3: 3 mantissa bits, normal from 2^-6,
// subnormal steps of 2^-9, largest 448; every result is exact in fp16 and bf16 for the scales used.
inline float e4m3_grid(float x, float scale) {
  if (scale == 0.f) return x;
  const float a = std::fabs(x / scale);
  float r;
  if (a >= 0.015625f) {
    uint32_t u;
    std::memcpy(&u, &a, 4);
    u = (u + 0x7FFFFu + ((u >> 20) & 1u)) & ~0xFFFFFu;
    std::memcpy(&r, &u, 4);
    r = std::fmin(r, 448.f);
  } else {
    r = std::rint(a * 512.f) / 512.f;
  }
  return std::copysign(r, x) * scale;
}
// The case's grid scale: "e4m3_kv" 1, 2 or 4 (K and V), "e4m3_qkv" 2^-6 or 2^-5 (Q, K and V), by
// the seed; 0 for the others.
inline constexpr uint64_t kGridScaleSalt = 0xE43Aull;
inline float value_grid_scale(const CaseSpec& c) {
  const uint64_t h = SplitMix{uint64_t(c.seed) ^ kGridScaleSalt}.next();
  if (c.values == "e4m3_kv") return std::ldexp(1.f, int(h % 3));
  if (c.values == "e4m3_qkv") return std::ldexp(1.f, -6 + int(h % 2));
  return 0.f;
}

// "massive_1", "massive_2", "massive_4": the count of scattered channels with Q large, and of those
// with K large (gpu/input_fill.h massive_channel_fills); 0 for the other cases.
inline constexpr uint64_t kNarrowMassiveSalt = 0x4A55C1ull;
inline int narrow_massive_width(const CaseSpec& c) {
  return c.values == "massive_1" ? 1 : c.values == "massive_2" ? 2 : c.values == "massive_4" ? 4 : 0;
}

// Distinct channels of [0, head_dim) drawn from the seed and `salt`, `n` of them, in draw order.
inline std::vector<int> drawn_channels(unsigned seed, uint64_t salt, int head_dim, int n) {
  std::vector<int> out;
  SplitMix r{(uint64_t(seed) << 32) ^ salt};
  while (int(out.size()) < std::min(n, head_dim)) {
    const int c = int(r.below(size_t(head_dim)));
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

// "small_sink": V's row 0 of every (b, head) sequence drawn again (a view of one row, lane 32:
// gpu/channel_views.cpp) at kSmallSinkScale of V's spread, over attention_sink's inputs: the sink
// key takes much of the weight and brings little value.
inline constexpr float kSmallSinkScale = 1e-3f;
inline constexpr unsigned kSmallSinkLane = 32;
inline bool small_sink_row(const CaseSpec& c) { return c.values == "small_sink"; }

}  // namespace evo
