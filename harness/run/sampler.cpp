#include "run/sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/errors.h"
#include "gpu/case_layout.h"

namespace evo {

namespace {

// splitmix64: portable and exactly reproducible (std distributions are not across libraries).
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return size_t(next() % n); }
  double unit() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  int log_uniform(int lo, int hi) {
    const double x = std::exp(std::log(double(lo)) + unit() * (std::log(double(hi) + 1) - std::log(double(lo))));
    return std::clamp(int(x), lo, hi);
  }
};

// For each case, an index into a dimension of n values: a shuffled cycle, so each value is
// used once before any repeats.
std::vector<size_t> covering(Rng& rng, size_t n, size_t cases) {
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = i;
  for (size_t i = n; i > 1; --i) std::swap(perm[i - 1], perm[rng.below(i)]);
  std::vector<size_t> out(cases);
  for (size_t i = 0; i < cases; ++i) out[i] = perm[i % n];
  return out;
}

// Off every tile size: a multiple of 8 moves down by 1..7 (down keeps the case within its
// bounds; up only when down would leave the class's range).
int off_tile(Rng& rng, int v, int lo, int hi) {
  if (v % 8 != 0) return v;
  const int step = 1 + int(rng.below(7));
  return v - step >= lo ? v - step : std::min(hi, v + step);
}

double case_flops(const Shape& s) { return 4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim; }

// The element bound counts what is allocated: a packed QKV view's buffer holds Hq + 2·Hkv heads
// (73× the K elements for 71/1), and all of it is filled, hashed and guarded.
bool fits(const Shape& s, const SampleSpace& sp, const std::string& layout) {
  const CaseLayout l = case_layout(s, layout);
  const int64_t biggest =
      std::max({l.q.buffer_elements, l.k.buffer_elements, l.v.buffer_elements, l.o.buffer_elements});
  return biggest <= sp.max_tensor_elements && case_flops(s) <= sp.max_flops;
}

// Shrinks batch, then Sq, then Skv (never below their class's lower end) until the case fits.
void bound(Shape& s, const SampleSpace& sp, const LengthClass& lc, const std::string& layout) {
  while (!fits(s, sp, layout)) {
    if (s.batch > 1) {
      s.batch = (s.batch + 1) / 2;
    } else if (s.seq_q > lc.seq_q_lo) {
      s.seq_q = std::max(lc.seq_q_lo, int(s.seq_q * 0.7));
    } else if (s.seq_kv > lc.seq_kv_lo) {
      s.seq_kv = std::max(lc.seq_kv_lo, int(s.seq_kv * 0.7));
    } else {
      break;  // the class's smallest case: the space's bounds are documented against it
    }
  }
}

std::string layout_of(const std::string& name) { return name == "bhsd" || name == "bshd" ? "" : name; }

// The smallest case of a head pair and length regime: what must fit for any draw to fit.
Shape smallest(const SampleSpace& sp, size_t heads, size_t lengths, int head_dim) {
  Shape s;
  s.head_dim = head_dim;
  s.heads_q = sp.heads[heads].heads_q;
  s.heads_kv = sp.heads[heads].heads_kv;
  s.seq_q = sp.lengths[lengths].seq_q_lo;
  s.seq_kv = sp.lengths[lengths].seq_kv_lo;
  return s;
}

// A padded layout (a fused QKV buffer holds Hq + 2·Hkv heads) can make even the smallest case
// of a pair too big: trade its layout with a case that can take it, so every layout is still
// drawn and every case fits.
void trade_layouts(const SampleSpace& sp, const std::vector<size_t>& heads, const std::vector<size_t>& lengths,
                   std::vector<size_t>& layouts, int head_dim) {
  auto ok = [&](size_t i, size_t layout) {
    return fits(smallest(sp, heads[i], lengths[i], head_dim), sp, layout_of(sp.layouts[layout]));
  };
  for (size_t i = 0; i < layouts.size(); ++i)
    if (!ok(i, layouts[i]))
      for (size_t j = 0; j < layouts.size(); ++j)
        if (j != i && ok(i, layouts[j]) && ok(j, layouts[i])) {
          std::swap(layouts[i], layouts[j]);
          break;
        }
}

}  // namespace

uint32_t draw_gate_seed() { return std::random_device{}(); }

uint32_t parse_gate_seed(const std::string& text) {
  bool ok = !text.empty() && text.size() <= 10 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (ok && std::stoull(text) <= 0xFFFFFFFFull) return uint32_t(std::stoull(text));
  throw usage_error(
      fmt::format("--gate-seed '{}': use a decimal integer from 0 to 4294967295 (a record's gate_seed)", text));
}

bool is_sampled_case(const std::string& id) { return id.rfind(kSampledPrefix, 0) == 0; }

std::vector<CaseSpec> draw_sampled_cases(const GatesConfig& gates, const Task& task, uint32_t seed) {
  const SampleSpace& sp = gates.sampled;
  std::vector<CaseSpec> out;
  if (!sp.enabled) return out;
  // The task takes part in the stream so two tasks of one run draw different cases.
  uint64_t fnv = 0xcbf29ce484222325ull;  // FNV-1a: the same on every platform, unlike std::hash
  for (unsigned char ch : task.name()) fnv = (fnv ^ ch) * 0x100000001B3ull;
  Rng rng{(uint64_t(seed) << 20) ^ fnv};
  const size_t n = size_t(sp.cases);
  const auto heads = covering(rng, sp.heads.size(), n), lengths = covering(rng, sp.lengths.size(), n);
  auto layouts = covering(rng, sp.layouts.size(), n);
  const auto scales = covering(rng, sp.scales.size(), n);
  const auto inputs = covering(rng, sp.inputs.size(), n);
  trade_layouts(sp, heads, lengths, layouts, task.head_dim);
  for (size_t i = 0; i < n; ++i) {
    const LengthClass& lc = sp.lengths[lengths[i]];
    Shape s;
    s.set = "sampled";
    s.head_dim = task.head_dim;
    s.heads_q = sp.heads[heads[i]].heads_q;
    s.heads_kv = sp.heads[heads[i]].heads_kv;
    s.batch = sp.batch_lo + int(rng.below(size_t(sp.batch_hi - sp.batch_lo + 1)));
    s.seq_q = rng.log_uniform(lc.seq_q_lo, lc.seq_q_hi);
    s.seq_kv = rng.log_uniform(lc.seq_kv_lo, lc.seq_kv_hi);
    const std::string& layout = sp.layouts[layouts[i]];
    s.layout = layout == "bshd" || layout == "packed_qkv" ? Layout::bshd : Layout::bhsd;
    bound(s, sp, lc, layout_of(layout));
    s.seq_q = off_tile(rng, s.seq_q, lc.seq_q_lo, lc.seq_q_hi);
    s.seq_kv = off_tile(rng, s.seq_kv, lc.seq_kv_lo, lc.seq_kv_hi);
    const InputDistribution& in = gates.distributions.at(sp.inputs[inputs[i]]);
    const ScaleChoice& sc = sp.scales[scales[i]];
    CaseSpec c;
    c.shape = s;
    c.seed = uint32_t(rng.next());
    c.inputs = in.name;
    c.qk_std = in.qk_std;
    c.v_std = in.v_std;
    c.q_mean = in.q_mean;
    c.outlier_every = in.outlier_every;
    c.outlier_scale = in.outlier_scale;
    c.k_sink = in.k_sink;
    c.scale = sc.value(task.head_dim);
    c.layout = layout == "bhsd" || layout == "bshd" ? "" : layout;
    // The id names every dimension, so a rejection says where the kernel was wrong.
    c.id = fmt::format("{}{}/{}/{}/heads={}/{}/layout={}/scale={}/{}", kSampledPrefix, i, lc.name, s.dims(), s.heads_q,
                       s.heads_kv, layout, sc.text, in.name);
    out.push_back(c);
  }
  return out;
}

}  // namespace evo
