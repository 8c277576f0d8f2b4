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
  p.seed = uint32_t(rng_.next());
  p.nonce = rng_.next() | 1;  // 0 is the fixed cases' input counter
  p.stddev = float(kMinSpread * std::exp(rng_.unit() * std::log(kMaxSpread / kMinSpread)));
  if (rng_.below(kZeroOdds) == 0)
    p.stddev = 0;  // evo_fill gives mean + 0 = +0.0 everywhere
  else if (rng_.below(kStaleOdds) == 0)
    // past fp16's range everywhere, past float's often (stale Inf), or NaN everywhere (stale NaN)
    p.stddev = rng_.below(2) == 0 ? kStaleSpread : kStaleNaN;
  return p;
}

bool LaunchDraws::verify(LaunchKind kind) {
  if (kind != LaunchKind::warm_up) return true;
  return rng_.below(kWarmUpOdds) == 0;
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

float prefill_value(const Prefill& p, uint64_t index) {
  // evo_normal(index + nonce, seed, tensor 3, stddev) of support_kernels.cu.
  constexpr uint64_t tensor = 3;
  const uint64_t h =
      mix64((index + p.nonce) ^ (uint64_t(p.seed) << 40) ^ (tensor << 62) ^ 0x5bd1e995ull * (tensor + 1));
  const float u1 = (float(h >> 40) + 1.0f) * (1.0f / 16777216.0f);
  const float u2 = float((h >> 16) & 0xFFFFFF) * (1.0f / 16777216.0f);
  return p.stddev * std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * float(M_PI) * u2);
}

}  // namespace evo
