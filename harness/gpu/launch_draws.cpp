#include "gpu/launch_draws.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "gpu/worker_protocol.h"

namespace evo {

namespace {

// The spread of a random pre-fill: log-uniform over the magnitudes attention outputs have (a
// head's output is a convex mix of V rows: near 0 for long uniform rows, up to |V| for peaked
// ones), so its size says nothing about whether the launch is checked.
constexpr double kMinSpread = 0.1, kMaxSpread = 2.0;

uint64_t mix64(uint64_t x) { return SplitMix{x}.next(); }

}  // namespace

Prefill LaunchDraws::prefill(LaunchKind kind) {
  ++launches_;
  Prefill p;
  // Before a timed sample O holds the previous sample's output, of other inputs (fresh ones
  // every sample): as in a model, where O comes from the caching allocator. Anywhere else the
  // previous output is of the same inputs, so it would already be the answer.
  p.keep_previous = kind == LaunchKind::timed && rng_.next() % 2 == 0;
  p.keep_partials =
      kind == LaunchKind::gate_second ||
      ((kind == LaunchKind::gate_first || kind == LaunchKind::gate_primer) && last_ == LaunchKind::gate_primer);
  last_ = kind;
  p.seed = uint32_t(rng_.next());
  p.nonce = rng_.next() | 1;  // 0 is the fixed cases' input counter
  p.stddev = float(kMinSpread * std::exp(rng_.unit() * std::log(kMaxSpread / kMinSpread)));
  if (rng_.below(kZeroOdds) == 0)
    p.stddev = 0;  // evo_fill gives mean + 0 = +0.0 everywhere
  else if (rng_.below(kStaleOdds) == 0)
    // past fp16's range everywhere, past float's often (stale Inf), or NaN everywhere (stale NaN)
    switch (rng_.below(3)) {
      case 0: p.stddev = kStaleSpread; break;
      case 1: p.stddev = kStaleNaN; break;
      default: p.stale_bits = true;  // random bit patterns, element by element
    }
  return p;
}

bool LaunchDraws::verify(LaunchKind kind) {
  if (kind == LaunchKind::gate_primer) return false;  // its output is overwritten by the case's first launch
  if (kind != LaunchKind::warm_up) return true;
  return rng_.below(kWarmUpOdds) == 0;
}

int LaunchDraws::primer_splits(int splits, long long kv_splits_max, long long blocks) {
  const int top = int(std::min({kv_splits_max, blocks, 1LL << 16}));
  const int own = splits >= 2 && splits <= top;  // the case's count is among 2..top: skipped
  if (top - 1 - own < 1) return splits;
  const int drawn = 2 + int(rng_.below(size_t(top - 1 - own)));
  return own && drawn >= splits ? drawn + 1 : drawn;
}

std::pair<int, int> LaunchDraws::primer_lengths(const Shape& s, int splits, int block, bool causal) {
  const int least = (splits - 1) * block + 1;  // keys for `splits` blocks
  const int min_q = std::clamp(causal ? least : 1, 1, s.seq_q), min_kv = std::clamp(least, 1, s.seq_kv);
  int q = min_q + int(rng_.below(size_t(s.seq_q - min_q + 1)));
  int kv = min_kv + int(rng_.below(size_t(s.seq_kv - min_kv + 1)));
  if (q == s.seq_q && kv == s.seq_kv) {  // another shape: one length shorter, where it may be
    if (kv > min_kv)
      --kv;
    else if (q > min_q)
      --q;
  }
  return {q, kv};
}

std::string mark_unwritten(const UnwrittenEvidence& first, const UnwrittenEvidence& second) {
  std::string out = first.out;
  const size_t n = std::min({first.out.size(), first.prefill.size(), second.out.size(), second.prefill.size()}) / 2;
  auto at = [](const std::string& s, size_t i) {
    uint16_t v;
    std::memcpy(&v, s.data() + 2 * i, 2);
    return v;
  };
  for (size_t i = 0; i < n; ++i)
    if (at(first.prefill, i) != at(second.prefill, i) && at(first.out, i) == at(first.prefill, i) &&
        at(second.out, i) == at(second.prefill, i))
      std::memcpy(out.data() + 2 * i, &kPoisonBits, 2);
  return out;
}

uint32_t stale_partial_bits(const Prefill& f) {
  if (f.seed % 2) return 0xFFFFFFFFu;             // NaN: spoils whatever reads it
  const float x = float(1 + (f.seed >> 1) % 64);  // finite: a plausible max, sum or output
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits;
}

float evo_normal_host(uint64_t index, unsigned seed, unsigned tensor, float stddev) {
  const uint64_t h = mix64(index ^ (uint64_t(seed) << 40) ^ (uint64_t(tensor) << 62) ^ 0x5bd1e995ull * (tensor + 1));
  const float u1 = (float(h >> 40) + 1.0f) * (1.0f / 16777216.0f);
  const float u2 = float((h >> 16) & 0xFFFFFF) * (1.0f / 16777216.0f);
  return stddev * std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * float(M_PI) * u2);
}

float prefill_value(const Prefill& p, uint64_t index) {
  return evo_normal_host(index + p.nonce, p.seed, 3, p.stddev);  // evo_fill of tensor 3, no mean
}

uint16_t prefill_bits(const Prefill& p, uint64_t index) {
  return uint16_t(mix64((index + p.nonce) ^ (uint64_t(p.seed) << 40) ^ 0xB175ull) >> 48);
}

FillParams stale_partial_fill(const Prefill& f) {
  float pattern;
  const uint32_t bits = stale_partial_bits(f);
  std::memcpy(&pattern, &bits, 4);
  FillParams fp;
  fp.mean = pattern;
  fp.stddev = pattern / 4;
  return fp;
}

uint32_t stale_partial_word(const Prefill& f, uint64_t word) {
  const FillParams fp = stale_partial_fill(f);
  auto bf16 = [&](uint64_t i) {  // round to nearest even, as __float2bfloat16_rn (finite values)
    uint32_t x;
    const float v = fp.mean + evo_normal_host(i + f.nonce, f.seed, kStalePartialTensor, fp.stddev);
    std::memcpy(&x, &v, 4);
    return uint32_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
  };
  return bf16(2 * word + 1) << 16 | bf16(2 * word);  // little-endian: the odd element is the high half
}

}  // namespace evo
