// What evo_fill (support_kernels.cu) writes into each of Q, K and V for a case: its input
// distribution split per tensor. Q carries its mean and the outlier rows, K the sink key,
// V its own spread and mean.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/splitmix.h"

#include "gpu/value_fill.h"
#include "gpu/worker_protocol.h"

namespace evo {

// Mirrors EvoFill in support_kernels.cu (passed by value as a kernel argument).
struct FillParams {
  float stddev = 1, mean = 0, outlier_scale = 1, sink = 0;
  unsigned outlier_every = 0;  // 0: no outlier rows
  unsigned mean_every = 0;     // non-zero: `mean` only in the sequences v_offset_sequence keeps
  unsigned prefix_rows = 0;    // non-zero: odd batches repeat the batch before's first rows (shared_prefix_row)
  unsigned pair_every = 0;     // non-zero: a row whose pair hash hits repeats the row before's draw (fill_pair_source)
  float grid_scale = 0;        // non-zero: each value rounded to e4m3 times this power of two (e4m3_grid)
  unsigned prefix_group = 0;   // the shared prefix's group of batches: 0 is 2 (shared_prefix_row)
};
static_assert(sizeof(FillParams) == 40, "FillParams must mirror EvoFill");

struct TensorFills {
  FillParams q, k, v;
};

// Whether the case's outlier rows are padding rows (outlier_scale 0: near_uniform's every 16th).
inline bool padding_rows(const CaseSpec& c) { return c.outlier_every > 0 && c.outlier_scale == 0; }

// Whether logical row `row` ((b * heads + h) * seq + s) of a tensor filled with `every` and
// `seed` is one of its outlier (or padding) rows: evo_fill's test (support_kernels.cu), on the host.
inline bool fill_outlier_row(unsigned every, uint64_t row, unsigned seed) {
  return every != 0 && SplitMix{row ^ (uint64_t(seed) << 32)}.next() % every == 0;
}

// Which (b, head) sequences of a tensor with padding rows repeat one token (hacker round 19): 1 in
// every / 4 (1 in 4 for near_uniform's 16), by the sequence's index ((b * heads + h), salted so it
// is not row 0's padding hash).
inline constexpr uint64_t kRepeatedSequenceSalt = 0x7E9EA7ull;
inline bool fill_repeated_sequence(unsigned every, uint64_t sequence, unsigned seed) {
  return every != 0 &&
         SplitMix{sequence ^ kRepeatedSequenceSalt ^ (uint64_t(seed) << 32)}.next() % std::max(every / 4, 1u) == 0;
}

// The logical row whose draw row `row` of a tensor of `seq` rows takes (evo_fill, support_kernels.cu):
// itself, except with padding rows (`padding`: outlier_scale 0):
// - a sequence's last row copies row 0 when row 0 is padding, so such a sequence starts and ends
//   with the same padding token (hacker round 18: v_flat_by_endpoints.cu);
// - in a repeated sequence (fill_repeated_sequence) whose row 0 is not padding, every row that is
//   not padding copies row 0: one token repeated at every position but its padding tokens, which
//   fall where the hash puts them (hacker round 19: v_flat_by_three_rows.cu; any fixed set of
//   probe rows agrees bitwise in most such sequences while the padding rows differ). The padding
//   rows stay exactly the rows fill_outlier_row names, in every sequence.
inline uint64_t fill_source_row(unsigned every, bool padding, uint64_t row, uint64_t seq, unsigned seed) {
  const uint64_t s = row % seq, first = row - s;
  if (!padding || s == 0) return row;
  const bool first_padding = fill_outlier_row(every, first, seed);
  if (s == seq - 1 && first_padding) return first;
  if (!first_padding && fill_repeated_sequence(every, first / seq, seed) && !fill_outlier_row(every, row, seed))
    return first;
  return row;
}

// Whether element (b, s) of K or V takes the value of (b - 1, s) (evo_fill's shared prefix,
// support_kernels.cu fill_value, this the host's mirror): in an odd batch, the first `prefix_rows`
// rows repeat the batch before's bit for bit, every part of the fill alike (massive channels, V's
// offset bands, padding rows), and the rest differ, as parallel sampling or a shared system prompt
// leaves a KV cache. Hacker round 22: no two sequences of a case shared a row, so a kernel that took
// a sequence whose first K rows equal batch 0's for batch 0's (a prefix-sharing shortcut) read
// batch 0's K and V everywhere and was exact on every case (kv_shared_prefix_by_two_rows.cu).
// Hacker round 31's close: with `group` n (FillParams::prefix_group, 0 meaning 2) every batch of a
// group of n takes the group's first (repeat_interleave(n) of one prompt).
inline bool shared_prefix_row(unsigned prefix_rows, int b, int s, unsigned group = 0) {
  return prefix_rows != 0 && b % int(group ? group : 2) != 0 && s < int(prefix_rows);
}

inline TensorFills tensor_fills(const CaseSpec& c) {
  TensorFills f;
  f.q.stddev = float(c.qk_std);
  f.q.mean = float(c.q_mean);
  f.q.outlier_scale = float(c.outlier_scale);
  f.q.outlier_every = unsigned(c.outlier_every);
  f.k.stddev = float(c.qk_std);
  f.k.sink = float(c.k_sink);
  // Rows scaled by 0 are padding tokens (a zero hidden state after RMSNorm, a bias-free
  // projection): exactly zero in K and V as in Q, each tensor's own rows by the same hash (the
  // logical row index, so K's and V's zero rows are the same tokens). Hacker round 9: no
  // distribution had an exact zero, so a kernel that took an all-zero query row as padding (zeros
  // out) or an all-zero key as an empty cache slot (masked) was exact on every case. Hacker round
  // 11: V was never zero, so a key masked only when its K and V rows were both zero was.
  f.v.stddev = float(c.v_std);
  f.v.mean = float(c.v_mean);
  if (padding_rows(c)) {
    f.k.outlier_every = f.v.outlier_every = f.q.outlier_every;
    f.k.outlier_scale = f.v.outlier_scale = 0;
  }
  f.k.prefix_rows = f.v.prefix_rows = unsigned(c.shared_prefix);  // K and V: the cache; Q differs
  // "repeat_batch" (gpu/value_fill.h kRepeatBatch): Q repeats too, so whole sequences repeat.
  if (c.values == kRepeatBatch) f.q.prefix_rows = unsigned(c.shared_prefix);
  // "repeat_interleave_<n>" (hacker round 31's close): the same in groups of n, Q too.
  if (const unsigned n = repeat_interleave_group(c.values); n != 0) {
    f.q.prefix_rows = unsigned(c.shared_prefix);
    f.q.prefix_group = f.k.prefix_group = f.v.prefix_group = n;
  }
  // Hacker round 28's value cases (value_kinds): V's pairs, the e4m3 grid.
  if (c.values == "v_repeat") f.v.pair_every = kValuePairEvery;
  f.k.grid_scale = f.v.grid_scale = value_grid_scale(c);
  if (c.values == "e4m3_qkv") f.q.grid_scale = f.k.grid_scale;
  return f;
}

// Fills bytes of a padded buffer (packed and cached layouts) that hold no tensor element.
inline constexpr unsigned char kPaddingByte = 0x7E;
// The same for e4m3 inputs (fp8 tasks): 0x7F is e4m3's NaN.
inline constexpr unsigned char kPaddingByteE4m3 = 0x7F;

// What padding bytes (outside a padded buffer's tensor elements) and guard bands hold. A sampled
// case draws its kind (CaseSpec::junk): "nonfinite" fills both with 0xFF (NaN in fp16, bf16 and
// e4m3), and a padding of 16-bit elements then with NaN and infinities of both signs
// (`infinities`: nonfinite_junk_fill), and a padding of e4m3 elements with its two NaN codes in
// turn (`padding_word`), so a masked read of them spoils the output (0 · NaN and 0 · Inf are NaN);
// "finite" fills padding with varied finite values (`varied`:
// finite_junk_fill's values of the case's seed, as a used KV cache's spare rows hold stale keys,
// some of them large; bands 0xA5), so a kernel can tell a gate case neither by NaN neighbours nor
// by one byte repeated. "" is the fixed cases'.
struct JunkBytes {
  unsigned char padding = kPaddingByte, guard = kGuardByte;
  bool varied = false;        // padding then holds varied finite values (0x3C only in a tail under 16 bytes)
  bool infinities = false;    // fp16 and bf16 padding then holds NaN and +-Inf (0xFF in a tail, e4m3 and bands)
  uint32_t padding_word = 0;  // non-zero: padding then holds this 32-bit word repeated (e4m3's NaN codes)
};

// e4m3's two NaN codes, 0x7F and 0xFF (no infinity), in turn element by element: the word non-finite
// junk repeats in e4m3 padding (a tail under 4 bytes keeps 0xFF). Hacker round 14: e4m3 padding was
// 0xFF throughout, and a masked over-read of V that took the byte 0xFF as 0 was exact in every case.
inline constexpr uint32_t kE4m3NanCodesWord = 0x7FFF7FFFu;

// The values of "finite" junk (JunkBytes::varied): evo_fill's normal values, with one 16-byte row
// in kLargeJunkEvery scaled by kLargeJunkScale (so a spare KV row holds a few thousand in some of
// its 16-byte pieces nine times in ten at D = 64), as stale memory holds values of any magnitude
// (random fp16 bits are 256 or more one time in four). Before hacker round 3 they were all of
// ordinary magnitude, and a kernel that took its running max over a cache's spare rows before
// masking them was exact on every case (max_over_masked_keys.cu).
inline constexpr unsigned kLargeJunkEvery = 4;
inline constexpr float kLargeJunkScale = 4e3f;  // 16 sigma below fp16's 65504: never Inf
inline FillParams finite_junk_fill() {
  FillParams f;
  f.outlier_every = kLargeJunkEvery;  // evo_fill's rows are 16 bytes here: each piece drawn alone
  f.outlier_scale = kLargeJunkScale;
  return f;
}

// Where a V offset (CaseSpec::v_mean, the v_offset input) sits: two bands of D/4 columns, D/2
// apart, at a start drawn from the case's seed (any column from 0 to D/4, so column 0 is in the
// first band one case in 17 at D = 64, in 33 at D = 128), the first with the case's mean, the
// second with its opposite; every other column is zero-mean. Hacker round 5: one mean over every
// column let a kernel decide a row's overflow guard by column 0, or its side by V's first element;
// in a model the large means sit in a few channels, of either sign. Hacker round 20: the start was
// a multiple of 8 columns, so every 16-byte vector of 8 fp16 columns lay wholly in a band or out of
// it, and an overflow guard decided per vector by its first column was exact on every case
// (fp16_overflow_guard_vec8.cu); now 3 starts in 17 (D = 64; 5 in 33 at D = 128) are aligned.
struct ColumnBand {
  int begin = 0, end = 0;  // columns [begin, end)
  float mean = 0;
};
inline std::array<ColumnBand, 2> v_offset_bands(unsigned seed, int head_dim, float mean) {
  const int width = head_dim / 4, starts = head_dim / 2 - width + 1;
  const int first = int(SplitMix{seed ^ 0xBA5Dull}.below(size_t(starts)));
  return {ColumnBand{first, first + width, mean},
          ColumnBand{first + head_dim / 2, first + head_dim / 2 + width, -mean}};
}

// Which (b, KV head) sequences of V carry the offset bands (hacker round 21): all but one in
// kVOffsetDropEvery, by a salted hash of the sequence's index (b * heads + h) and the case's seed,
// and always one sequence drawn from the seed, so no case loses its offset. Before, the bands sat
// at the same columns with the same sign in every (b, head), so an overflow guard decided once
// from batch 0's KV head 0 (a per-channel table calibrated on one head) was exact on every case
// (fp16_overflow_guard_head0.cu); in a model a massive channel is not in every head. The band
// views' fill (evo_fill, support_kernels.cu fill_value, FillParams::mean_every) drops the mean
// where this is false; the columns keep their zero-mean draw.
inline constexpr unsigned kVOffsetDropEvery = 4;
inline constexpr uint64_t kVOffsetSequenceSalt = 0x0FF5E7ull;
inline uint64_t v_offset_kept_sequence(uint64_t sequences, unsigned seed) {
  return SplitMix{(uint64_t(seed) << 32) ^ kVOffsetSequenceSalt}.next() % std::max<uint64_t>(sequences, 1);
}
inline bool v_offset_sequence(unsigned every, uint64_t sequence, uint64_t sequences, unsigned seed) {
  if (every == 0 || sequence == v_offset_kept_sequence(sequences, seed)) return true;
  return SplitMix{sequence ^ (uint64_t(seed) << 32) ^ kVOffsetSequenceSalt ^ 0x5E9ull}.next() % every != 0;
}

// Massive channels (hacker round 20): in a model, Q and K carry a few channels far larger than the
// rest (a bias or rotary channel, "massive activations") paired with small values of the other
// tensor, so their products stay ordinary. The gate's Q and K were of one size in every channel:
// K never passed about 17 (large_logits' std 3) and an fp16 Q about 277 (outlier rows) wherever V
// varied, so a kernel that saturated K or Q, rounded a bf16 K through fp16, or skipped Q's small
// channels was exact on every case (k_clamped_256.cu, q_clamped_512.cu, bf16_k_through_fp16.cu,
// q_small_vector_skipped.cu; bf16_q_guard_channel0.cu read huge_v's Q mean, in every channel, on
// channel 0). Now an input whose V is large and carries no mean and whose Q and K carry none either
// (large_v) draws two bands of D/4 channels per case (v_offset_bands' positions, its own salt): on
// the first Q is `massive_channel_scale` times its draw and K divided by it, on the second K is
// multiplied and Q divided, so every product Q.K holds is distributed as before (the scores, and
// an honest kernel's error, unchanged) while |K| and |Q| reach 4096 x 5.77 in fp16 (a third of
// 65 504) and past fp16's range in bf16. Not on fp8 tasks (a per-tensor e4m3 scale would crush the
// ordinary channels), not in a shared view or a two-stream case (the tensors of two fills would
// pair one band's large values with another's ordinary ones: logits thousands of times larger).
// Hacker round 21: they came only with large_v, whose V (std 100) shows in every sequence's first
// row, so a kernel that saturated K at +-256 unless it saw a large V was exact on every case
// (k_clamped_unless_large_v.cu); in a model the massive channels do not come with a large V. Now
// the sampled cases (the covering rows of both tiers: CaseSpec::massive_sampled) draw them on
// normal too (Q and K std 1, V std 1, no mean): its scores' distribution and V are as before,
// and no case is added. The fixed cases' normal (gate sets, post-timing, the deep tier's fixed
// sets and far cases) keep ordinary channels, their references and records comparable.
inline constexpr uint64_t kMassiveChannelSalt = 0x3A55C4Aull;
inline bool massive_channels(const CaseSpec& c) {
  if (c.v_mean != 0 || c.q_mean != 0 || c.k_sink != 0 || c.outlier_every != 0) return false;
  return c.v_std > 1 || (c.massive_sampled && c.qk_std == 1 && c.v_std == 1);
}
inline float massive_channel_scale(bool bf16) { return bf16 ? 65536.f : 4096.f; }
// Which of v_offset_bands' two positions holds Q's large band (hacker round 22): the first (in
// columns [0, D/2)) or the second (in [D/2, D)), drawn per case, K's large band on the other. Before,
// Q was always large in the lower half and K in the upper, so a K saturated only in channels below
// D/2 (or a Q only above) was exact on every case (k_clamped_256_low_half.cu,
// q_clamped_512_high_half.cu); in a model a massive channel sits at any index of Q or K.
inline constexpr uint64_t kMassiveRoleSalt = 0x9E11A2ull;
inline bool massive_q_band_high(unsigned seed) { return SplitMix{uint64_t(seed) ^ kMassiveRoleSalt}.next() & 1; }
// [0]: Q multiplied, K divided; [1]: K multiplied, Q divided.
inline std::array<ColumnBand, 2> massive_channel_bands(unsigned seed, int head_dim) {
  const auto bands = v_offset_bands(unsigned(seed ^ kMassiveChannelSalt), head_dim, 0.f);
  if (!massive_q_band_high(seed)) return bands;
  return {bands[1], bands[0]};
}
// A column view the worker fills over a tensor's own draw: its band, whether Q is the large one
// there (massive channels), and its counter's offset (`lane` << 32: a view of one channel draws
// from the same logical indices as every other, so each takes a lane of its own; lane 0 is the
// D/4 bands' as before).
struct ChannelFill {
  ColumnBand band;
  bool q_large = false;
  uint64_t counter = 0;
};
inline uint64_t lane_counter(unsigned lane) { return uint64_t(lane) << 32; }

// Where the case's massive channels sit: v_offset_bands' two D/4 bands (massive_channel_bands, lane
// 0), or for the value cases "massive_1", "massive_2" and "massive_4" that many scattered channels
// with Q large and as many with K large (drawn_channels, lanes 1 up).
inline std::vector<ChannelFill> massive_channel_fills(const CaseSpec& c) {
  std::vector<ChannelFill> out;
  if (const int n = narrow_massive_width(c)) {
    const auto at = drawn_channels(c.seed, kNarrowMassiveSalt, c.shape.head_dim, 2 * n);
    for (size_t k = 0; k < at.size(); ++k)
      out.push_back({ColumnBand{at[k], at[k] + 1, 0.f}, int(k) < n, lane_counter(unsigned(k + 1))});
    return out;
  }
  const auto bands = massive_channel_bands(c.seed, c.shape.head_dim);
  return {{bands[0], true, 0}, {bands[1], false, 0}};
}
// What the worker fills over Q's and K's own draws (worker_device.h Problem::fill): `fill(tensor,
// band, params, counter)` for tensor 0 (Q) and 1 (K) on each of massive_channel_fills, the draw's
// spread scaled (the large tensor's multiplied, the other's divided).
template <class Fill>
void fill_massive_channels(const CaseSpec& c, const TensorFills& f, bool bf16, Fill fill) {
  const float big = massive_channel_scale(bf16);
  for (const ChannelFill& m : massive_channel_fills(c)) {
    FillParams fq = f.q, fk = f.k;
    fq.stddev = m.q_large ? fq.stddev * big : fq.stddev / big;
    fk.stddev = m.q_large ? fk.stddev / big : fk.stddev * big;
    fill(0u, m.band, fq, m.counter);
    fill(1u, m.band, fk, m.counter);
  }
}

// "k_offset" (value_kinds): 1 to 4 K channels (drawn_channels), each with a mean of 16 to 48 of a
// drawn sign over K's own spread, lanes 16 up. Empty for the other cases.
inline constexpr uint64_t kKOffsetSalt = 0xB1A5Cull;
inline std::vector<ChannelFill> k_offset_channels(const CaseSpec& c) {
  std::vector<ChannelFill> out;
  if (c.values != "k_offset") return out;
  SplitMix r{(uint64_t(c.seed) << 32) ^ kKOffsetSalt ^ 0x77ull};
  const int n = 1 + int(r.below(4));
  const auto at = drawn_channels(c.seed, kKOffsetSalt, c.shape.head_dim, n);
  for (size_t k = 0; k < at.size(); ++k) {
    const float mean = float(16 + 8 * int(r.below(5))) * (r.below(2) ? -1.f : 1.f);
    out.push_back({ColumnBand{at[k], at[k] + 1, mean}, false, lane_counter(unsigned(16 + k))});
  }
  return out;
}

// The values of "nonfinite" junk in fp16 and bf16 padding (JunkBytes::infinities): evo_fill's normal
// values times +Inf, so +Inf or -Inf element by element, with every other 16-byte row (by hash)
// times NaN. Hacker round 13: non-finite junk was the byte 0xFF throughout, one NaN pattern, and a
// masked over-read of V guarded against NaN (isnan(v) ? 0 : v) was exact in every case; 0 · Inf
// is NaN too. e4m3 has no infinity: its padding stays 0xFF.
inline FillParams nonfinite_junk_fill() {
  FillParams f;
  f.stddev = std::numeric_limits<float>::infinity();
  f.outlier_every = 2;
  f.outlier_scale = std::numeric_limits<float>::quiet_NaN();
  return f;
}

inline JunkBytes junk_bytes(const std::string& kind, int in_bytes) {
  if (kind == "nonfinite") return {0xFF, 0xFF, false, true, in_bytes == 1 ? kE4m3NanCodesWord : 0u};
  if (kind == "finite") return {0x3C, kGuardByte, true};
  if (!kind.empty()) throw std::invalid_argument("unknown junk kind '" + kind + "': use finite or nonfinite");
  return {in_bytes == 1 ? kPaddingByteE4m3 : kPaddingByte, kGuardByte};
}

}  // namespace evo
