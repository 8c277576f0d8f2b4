// A small, portable random stream: splitmix64. Gate cases must be exactly reproducible from a
// seed on every platform and library, which std's distributions are not.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace evo {

struct SplitMix {
  uint64_t state = 0;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return size_t(next() % n); }
  // An integer in [lo, hi], uniform (one draw of below: the same stream as lo + below(hi - lo + 1)).
  int uniform(int lo, int hi) { return lo + int(below(size_t(hi - lo + 1))); }
  double unit() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  // An integer in [lo, hi], log-uniform.
  int log_uniform(int lo, int hi) {
    const double x = std::exp(std::log(double(lo)) + unit() * (std::log(double(hi) + 1) - std::log(double(lo))));
    return std::clamp(int(x), lo, hi);
  }
};

// FNV-1a of a string: the same on every platform, unlike std::hash.
inline uint64_t fnv1a(const std::string& s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

}  // namespace evo
