// Hacker round 28 (lab/hack28/README.md): value patterns real models feed attention and the gate's
// input kinds may never produce. Eight tries, each the scalar control with a path keyed on what
// the kernel reads in Q, K or V: a few outlier channels of K or of Q, outlier channels of Q and K
// that coincide, a K of e4m3 values (an fp8 cache upcast), V rows that repeat while K's differ (a
// repeated token under RoPE), a first key whose value is tiny beside the others (a null-valued
// sink), a few per-channel offsets of K, and the twin of the first that the massive channels
// catch. Each try's condition and action are written here on the host; the first test shows each
// wrong on model-like inputs, the others read every case of both tiers of every fp16 and bf16
// pinned run through the host mirror of the fill (evo_fill, support_kernels.cu) and say which
// case first runs the path where it shows.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/splitmix.h"
#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "gpu/launch_draws.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "run/value_cases.h"
#include "support/fill_mirror.h"
#include "support/pinned_runs.h"
#include "support/support_source.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round28 {
namespace {

using test::Mirror;
using test::Row;
using test::to_dtype;

// ---- The tries, on the host: a chunk of keys as the kernel sees it -------------------------------

enum class Trick {
  none,
  k_outlier_channels,  // k_outlier_channels_clamped_24.cu
  k_wide_bands,        // k_wide_outlier_bands_clamped_24.cu
  q_outlier_channels,  // q_outlier_channels_clamped_24.cu
  qk_coinciding,       // qk_coinciding_outlier_channels_dropped.cu
  k_fp8_exact,         // k_fp8_exact_chunk_q_to_e4m3.cu
  v_repeat,            // v_repeat_reuses_score.cu
  v_null_sink,         // v_null_sink_dropped.cu
  k_bias_channels,     // k_bias_channels_dropped.cu
};
const std::vector<Trick> kTricks{Trick::k_outlier_channels, Trick::k_wide_bands,   Trick::q_outlier_channels,
                                 Trick::qk_coinciding,      Trick::k_fp8_exact,    Trick::v_repeat,
                                 Trick::v_null_sink,        Trick::k_bias_channels};
std::string name_of(Trick t) {
  switch (t) {
    case Trick::k_outlier_channels: return "k_outlier_channels_clamped_24";
    case Trick::k_wide_bands: return "k_wide_outlier_bands_clamped_24";
    case Trick::q_outlier_channels: return "q_outlier_channels_clamped_24";
    case Trick::qk_coinciding: return "qk_coinciding_outlier_channels_dropped";
    case Trick::k_fp8_exact: return "k_fp8_exact_chunk_q_to_e4m3";
    case Trick::v_repeat: return "v_repeat_reuses_score";
    case Trick::v_null_sink: return "v_null_sink_dropped";
    case Trick::k_bias_channels: return "k_bias_channels_dropped";
    case Trick::none: break;
  }
  return "control";
}

bool e4m3_exact(float x) {  // the kernels' e4m3_exact
  const float a = std::fabs(x);
  if (a == 0.f) return true;
  if (a > 448.f) return false;
  uint32_t u;
  std::memcpy(&u, &a, 4);
  if (a >= 0.015625f) return (u & 0xFFFFFu) == 0;
  return std::rint(a * 512.f) == a * 512.f;
}
// The kernels' e4m3_round: the fill's e4m3 grid at scale 1 (gpu/value_fill.h, the same operations).
float e4m3_round(float x) { return e4m3_grid(x, 1.f); }

// The chunk's largest |k| in channel c over keys [j0, j1).
float chunk_amax(const Row& r, int j0, int j1, int c) {
  float a = 0;
  for (int j = j0; j < j1; ++j) a = std::max(a, std::fabs(r.kx(j, c)));
  return a;
}
int k_outliers(const Row& r, int j0, int j1) {
  int n = 0;
  for (int c = 0; c < r.d; ++c) n += chunk_amax(r, j0, j1, c) > 24.f;
  return n;
}
int q_outliers(const Row& r) {
  int n = 0;
  for (float x : r.q) n += std::fabs(x) > 24.f;
  return n;
}
int coinciding(const Row& r, int j0, int j1) {
  int n = 0;
  for (int c = 0; c < r.d; ++c) n += chunk_amax(r, j0, j1, c) > 24.f && std::fabs(r.q[size_t(c)]) > 24.f;
  return n;
}
bool fp8_chunk(const Row& r, int j0, int j1) {
  for (int j = j0; j < j1; ++j)
    for (int c = 0; c < r.d; ++c)
      if (!e4m3_exact(r.kx(j, c))) return false;
  return true;
}
bool same_v(const Row& r, int a, int b) {
  return std::memcmp(&r.v[size_t(a) * r.d], &r.v[size_t(b) * r.d], sizeof(float) * size_t(r.d)) == 0;
}
float v_amax(const Row& r, int j) {
  float a = 0;
  for (int c = 0; c < r.d; ++c) a = std::max(a, std::fabs(r.vx(j, c)));
  return a;
}
// Bias channels of a full chunk: |mean| > 8, max - min < |mean| (keep[c] false for them).
int bias_channels(const Row& r, int j0, int j1, std::vector<bool>* keep) {
  if (keep) keep->assign(size_t(r.d), true);
  if (j1 - j0 < 32) return 0;
  int n = 0;
  for (int c = 0; c < r.d; ++c) {
    float sum = 0, hi = -INFINITY, lo = INFINITY;
    for (int j = j0; j < j1; ++j) {
      sum += r.kx(j, c);
      hi = std::max(hi, r.kx(j, c));
      lo = std::min(lo, r.kx(j, c));
    }
    const float mean = sum / 32.f;
    if (std::fabs(mean) > 8.f && hi - lo < std::fabs(mean)) {
      ++n;
      if (keep) (*keep)[size_t(c)] = false;
    }
  }
  return n;
}

// Whether the try's path runs on the chunk [j0, j1) of row `r` (whose visible keys are all of r's).
bool path_runs(Trick t, const Row& r, int j0, int j1) {
  switch (t) {
    case Trick::k_outlier_channels: {
      const int n = k_outliers(r, j0, j1);
      return n >= 1 && n <= 4;
    }
    case Trick::k_wide_bands: return k_outliers(r, j0, j1) >= 5;
    case Trick::q_outlier_channels: return q_outliers(r) >= 1 && q_outliers(r) <= 4;
    case Trick::qk_coinciding: {
      const int n = coinciding(r, j0, j1);
      return n >= 1 && n <= 4;
    }
    case Trick::k_fp8_exact: return fp8_chunk(r, j0, j1);
    case Trick::v_repeat:
      for (int j = j0 + 1; j < j1; ++j)
        if (same_v(r, j, j - 1)) return true;
      return false;
    case Trick::v_null_sink: {
      if (j0 != 0 || r.keys() < 2) return false;
      float others = 0;
      for (int j = 1; j < j1; ++j) others = std::max(others, v_amax(r, j));
      const float a0 = v_amax(r, 0);
      return a0 > 0.f && a0 * 64.f < others;
    }
    case Trick::k_bias_channels: {
      const int n = bias_channels(r, j0, j1, nullptr);
      return n >= 1 && n <= 4;
    }
    case Trick::none: break;
  }
  return false;
}

// The row's output, the try's action applied wherever its path runs (in double, a plain softmax:
// the kernels' online softmax is the same up to fp32 rounding).
std::vector<double> attend(Trick t, const Row& r, double scale) {
  const int n = r.keys(), d = r.d;
  std::vector<double> s(static_cast<size_t>(n));
  std::vector<float> q = r.q;
  if (t == Trick::q_outlier_channels && path_runs(t, r, 0, n))
    for (float& x : q) x = std::clamp(x, -24.f, 24.f);
  for (int j0 = 0; j0 < n; j0 += 32) {
    const int j1 = std::min(n, j0 + 32);
    const bool runs = t != Trick::q_outlier_channels && path_runs(t, r, j0, j1);
    std::vector<bool> keep;
    if (t == Trick::k_bias_channels) bias_channels(r, j0, j1, &keep);
    for (int j = j0; j < j1; ++j) {
      double dot = 0;
      for (int c = 0; c < d; ++c) {
        double qc = q[size_t(c)], kc = r.kx(j, c);
        if (runs && (t == Trick::k_outlier_channels || t == Trick::k_wide_bands)) kc = std::clamp(kc, -24.0, 24.0);
        if (runs && t == Trick::qk_coinciding && std::fabs(qc) > 24 && std::fabs(kc) > 24) continue;
        if (runs && t == Trick::k_fp8_exact) qc = e4m3_round(float(qc));
        if (runs && t == Trick::k_bias_channels && !keep[size_t(c)]) continue;
        dot += qc * kc;
      }
      s[size_t(j)] = dot * scale;
    }
    if (runs && t == Trick::v_repeat)
      for (int j = j0 + 1; j < j1; ++j)
        if (same_v(r, j, j - 1)) s[size_t(j)] = s[size_t(j - 1)];
    if (runs && t == Trick::v_null_sink) s[0] = -INFINITY;
  }
  const double m = *std::max_element(s.begin(), s.end());
  std::vector<double> o(size_t(d), 0.0);
  double l = 0;
  for (int j = 0; j < n; ++j) {
    const double p = std::exp(s[size_t(j)] - m);
    l += p;
    for (int c = 0; c < d; ++c) o[size_t(c)] += p * r.vx(j, c);
  }
  for (double& x : o) x /= l;
  return o;
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  double e = 0, n = 0;
  for (size_t c = 0; c < want.size(); ++c) {
    e += (got[c] - want[c]) * (got[c] - want[c]);
    n += want[c] * want[c];
  }
  return std::sqrt(e / n);
}

// Model-like inputs for each try (D 128, 256 keys, scale 1/sqrt(D), N(0, 1) but where the
// pattern is laid on; pinned seeds): what the try's note says a model has.
Row model_row(Trick t, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  Row r;
  r.d = 128;
  const int keys = 256;
  r.q.resize(128);
  r.k.resize(size_t(keys) * 128);
  r.v.resize(size_t(keys) * 128);
  for (float& x : r.q) x = n(gen);
  for (float& x : r.k) x = n(gen);
  for (float& x : r.v) x = n(gen);
  const int outlier_channels[] = {5, 70};
  switch (t) {
    case Trick::k_outlier_channels:  // two K channels of std 40 (a K cache's fixed outlier channels)
      for (int j = 0; j < keys; ++j)
        for (int c : outlier_channels) r.k[size_t(j) * 128 + c] *= 40;
      break;
    case Trick::k_wide_bands:  // 16 K channels of std 40
      for (int j = 0; j < keys; ++j)
        for (int c = 16; c < 32; ++c) r.k[size_t(j) * 128 + c] *= 40;
      break;
    case Trick::q_outlier_channels:  // two Q channels of std 40, K's ordinary
      for (int c : outlier_channels) r.q[size_t(c)] = 40 + 4 * r.q[size_t(c)];
      break;
    case Trick::qk_coinciding:  // Q and K large in the same two channels (K's of one sign, +-30)
      for (int c : outlier_channels) {
        r.q[size_t(c)] = 30 + r.q[size_t(c)];
        for (int j = 0; j < keys; ++j) r.k[size_t(j) * 128 + c] = 30 + 3 * r.k[size_t(j) * 128 + c];
      }
      break;
    case Trick::k_fp8_exact:  // K dequantized from e4m3 with a unit scale
      for (float& x : r.k) x = e4m3_round(x);
      break;
    case Trick::v_repeat:  // a token repeated at positions 40 to 79: V's rows equal, K's rotated apart
      for (int j = 41; j < 80; ++j) std::copy_n(&r.v[40 * 128], 128, &r.v[size_t(j) * 128]);
      break;
    case Trick::v_null_sink:  // key 0 a sink (K along Q: about half the weight), its value 1/200 the others'
      for (int c = 0; c < 128; ++c) {
        r.k[size_t(c)] = 0.6f * r.q[size_t(c)];
        r.v[size_t(c)] /= 200;
      }
      break;
    case Trick::k_bias_channels:  // two K channels offset by 20, spread 1.5 (a per-channel bias)
      for (int j = 0; j < keys; ++j)
        for (int c : outlier_channels) r.k[size_t(j) * 128 + c] = 20 + 1.5f * r.k[size_t(j) * 128 + c];
      break;
    case Trick::none: break;
  }
  return r;
}

// Each try runs its path on its model-like row and moves the output past twice bf16's rel_l2
// (0.01; fp16's is 0.001), and not on an N(0, 1) row, where it is exact.
TEST(HackerRound28, TheTriesAreWrongOnModelLikeInputs) {
  const double scale = 1 / std::sqrt(128.0);
  for (Trick t : kTricks)
    for (unsigned seed : {1u, 2u, 3u}) {
      const Row r = model_row(t, seed), plain = model_row(Trick::none, seed);
      bool runs = false, runs_plain = false;
      for (int j0 = 0; j0 < r.keys(); j0 += 32) {
        runs = runs || path_runs(t, r, j0, std::min(r.keys(), j0 + 32));
        runs_plain = runs_plain || path_runs(t, plain, j0, std::min(plain.keys(), j0 + 32));
      }
      EXPECT_TRUE(runs) << name_of(t) << " seed " << seed;
      EXPECT_FALSE(runs_plain) << name_of(t) << " seed " << seed << ": the path on N(0, 1) inputs";
      const double err = rel_l2(attend(t, r, scale), attend(Trick::none, r, scale));
      std::cout << fmt::format("{} seed {}: relative L2 {:.3g} on its model-like row\n", name_of(t), seed, err);
      EXPECT_GT(err, 0.02) << name_of(t) << " seed " << seed;
      EXPECT_EQ(rel_l2(attend(t, plain, scale), attend(Trick::none, plain, scale)), 0.0) << name_of(t);
    }
}

// Whether the try's path runs on a case where it shows: on the sampled rows of the case (batch 0
// and batch 1, query head 0, its first and last query rows, chunks 0 and 1 and the last of each
// row's visible keys), a chunk runs it while the row sees 2 keys or more and V varies
// (huge_logits' V is constant: any weights are exact). For v_null_sink, every odd batch's head 0
// too (a shared prefix puts batch b - 1's row 0 before batch b's own rows).
// v_null_sink_dropped.cu where it shows: V's offset bands (v_offset, large_o) are kept in all but 1
// in 4 (b, KV head) sequences (v_offset_sequence), and a shared prefix draws an odd batch's first
// rows as batch b - 1's, whose sequence decides their mean. Where b - 1's is dropped and b's kept,
// V's row 0 holds no offset and the rows after the prefix hold +-256 (v_offset) or +-16 384
// (large_o): key 0's V row is then 1/64 of the others' or less (v_offset's always, large_o's where
// its std-100 row stays under 261). Every such sequence of the case (up to 16, each of its query
// heads' first, last and up to 6 rows between) is read through the mirror, and the try's output
// compared with the honest one on every visible key (the gate's elementwise bound: atol + rtol |O|).
bool null_sink_shows(const CaseSpec& c, bool causal, bool bf16, const Tolerance& tol) {
  if (c.v_std <= 0 || c.v_mean == 0 || c.shared_prefix <= 0) return false;
  const Shape& s = c.shape;
  const Mirror m(c, bf16);
  const uint64_t heads = uint64_t(s.heads_kv), sequences = uint64_t(s.batch) * heads;
  const auto kept = [&](uint64_t b, uint64_t h) {
    return v_offset_sequence(kVOffsetDropEvery, b * heads + h, sequences, c.seed);
  };
  int tried = 0;
  for (uint64_t b = 1; b < uint64_t(s.batch) && tried < 16; b += 2)
    for (uint64_t h = 0; h < heads && tried < 16; ++h) {
      if (kept(b - 1, h) || !kept(b, h) || c.shared_prefix >= std::min(s.seq_kv, 32)) continue;
      ++tried;
      std::set<uint64_t> rows{0, uint64_t(s.seq_q - 1)};
      for (int k = 1; k <= 6; ++k) rows.insert(uint64_t(s.seq_q - 1) * uint64_t(k) / 7);
      for (uint64_t i : rows) {
        const int visible = causal ? std::min<int>(s.seq_kv, int(i) + 1) : s.seq_kv;
        if (visible <= c.shared_prefix || visible > 4096) continue;
        std::vector<int> chunks, starts;
        for (int ch = 0; ch * 32 < visible; ++ch) chunks.push_back(ch);
        const uint64_t hq = h * uint64_t(s.heads_q / s.heads_kv);
        const Row r = m.row(b, hq, i, causal, chunks, &starts);
        if (!path_runs(Trick::v_null_sink, r, 0, std::min(r.keys(), 32))) continue;
        const double scale = c.scale > 0 ? c.scale : 1 / std::sqrt(double(s.head_dim));
        const std::vector<double> got = attend(Trick::v_null_sink, r, scale), want = attend(Trick::none, r, scale);
        for (size_t d = 0; d < want.size(); ++d)
          if (std::fabs(got[d] - want[d]) > tol.atol + tol.rtol * std::fabs(want[d])) return true;
      }
    }
  return false;
}

struct Sample {
  Row r;
  std::vector<int> starts;  // where each chunk read begins among r's keys
};
std::vector<Sample> samples_of(const CaseSpec& c, bool causal, bool bf16) {
  std::vector<Sample> out;
  if (c.v_std <= 0) return out;
  const Mirror m(c, bf16);
  const Shape& s = c.shape;
  std::set<uint64_t> batches{0};
  if (s.batch > 1) batches.insert(1);
  for (uint64_t b : batches)
    for (uint64_t i : std::set<uint64_t>{0, uint64_t(s.seq_q - 1)}) {
      const int visible = causal ? std::min<int>(s.seq_kv, int(i) + 1) : s.seq_kv;
      if (visible < 2) continue;
      const int last = (visible - 1) / 32;
      std::vector<int> chunks{0};
      if (last >= 1) chunks.push_back(1);
      if (last >= 2) chunks.push_back(last);
      Sample x;
      x.r = m.row(b, 0, i, causal, chunks, &x.starts);
      out.push_back(std::move(x));
    }
  return out;
}
bool sample_runs(Trick t, const std::vector<Sample>& samples) {
  for (const Sample& x : samples) {
    const Row& r = x.r;
    for (int start : x.starts) {
      const int end = std::min(r.keys(), start + 32);
      if (!path_runs(t, r, start, end)) continue;
      if (t == Trick::k_fp8_exact) {  // all-zero K (padding rows): every score 0 whatever Q's rounding
        bool zero = true;
        for (int j = start; j < end; ++j)
          for (int d = 0; d < r.d; ++d) zero = zero && r.kx(j, d) == 0.f;
        if (zero) continue;
      }
      if (t == Trick::v_repeat) {  // K's rows equal too: the reused score is the key's own
        bool differs = false;
        for (int j = start + 1; j < end; ++j)
          if (same_v(r, j, j - 1))
            differs = differs ||
                      std::memcmp(&r.k[size_t(j) * r.d], &r.k[size_t(j - 1) * r.d], sizeof(float) * size_t(r.d)) != 0;
        if (!differs) continue;
      }
      return true;
    }
  }
  return false;
}
bool case_runs(Trick t, const CaseSpec& c, bool causal, bool bf16) {
  return sample_runs(t, samples_of(c, causal, bf16));
}

// A value case (run/value_cases.h; after the round): small enough to read whole rows. Batches 0
// and 1, query head 0, the middle and last query rows, each over every visible key.
std::vector<Sample> value_rows(const CaseSpec& c, bool causal, bool bf16) {
  std::vector<Sample> out;
  const Mirror m(c, bf16);
  const Shape& s = c.shape;
  for (uint64_t b : std::set<uint64_t>{0, uint64_t(std::min(s.batch, 2) - 1)})
    for (uint64_t i : std::set<uint64_t>{uint64_t(s.seq_q / 2), uint64_t(s.seq_q - 1)}) {
      const int visible = causal ? std::min<int>(s.seq_kv, int(i) + 1) : s.seq_kv;
      if (visible < 2) continue;
      std::vector<int> chunks;
      for (int ch = 0; ch * 32 < visible; ++ch) chunks.push_back(ch);
      Sample x;
      x.r = m.row(b, 0, i, causal, chunks, &x.starts);
      out.push_back(std::move(x));
    }
  return out;
}
// Whether the try shows on a value case's rows: its path runs on one of them (sample_runs) and its
// output leaves the case's tolerance there, an element past atol + rtol |O| or the rows' relative
// L2 past rel_l2 (its path runs on every row of such a case, so the rows' L2 stands for the case's).
bool value_case_shows(Trick t, const std::vector<Sample>& rows, const CaseSpec& c, const Tolerance& tol) {
  const double scale = c.scale > 0 ? c.scale : 1 / std::sqrt(double(c.shape.head_dim));
  double e = 0, n = 0;
  bool runs = false, past = false;
  for (const Sample& x : rows) {
    if (!sample_runs(t, {x})) continue;
    runs = true;
    const std::vector<double> got = attend(t, x.r, scale), want = attend(Trick::none, x.r, scale);
    for (size_t d = 0; d < want.size(); ++d) {
      past = past || std::fabs(got[d] - want[d]) > tol.atol + tol.rtol * std::fabs(want[d]);
      e += (got[d] - want[d]) * (got[d] - want[d]);
      n += want[d] * want[d];
    }
  }
  return runs && (past || std::sqrt(e / n) > tol.rel_l2);
}

// Per fp16 and bf16 pinned run (each_pinned_task_and_seed's order, fp8 left out: the tries'
// dtypes), the first case of each tier (the cheap: its gate cases, then the benchmark shapes
// timed and fresh; the deep: its drawn and fixed cases) on which the try's path runs where it
// shows, "" where none; and the value kinds of the tier's value cases on which it shows.
struct Catch {
  std::string run, cheap, deep;
  std::set<std::string> cheap_values, deep_values;
};
std::map<Trick, std::vector<Catch>> catches() {
  const GatesConfig g = test::repo_gates();
  std::map<Trick, std::vector<Catch>> out;
  std::set<std::string> kinds;
  test::each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    if (t.dtype == DType::fp8) return;
    const bool bf16 = t.dtype == DType::bf16;
    const EvalPlan p = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true});
    std::vector<const CaseSpec*> cheap, deep;
    for (const CaseSpec& c : p.gate_cases) cheap.push_back(&c);
    for (const BenchSpec& b : p.bench)
      for (const CaseSpec* c : {&b.timed, &b.fresh}) cheap.push_back(c);
    for (const CaseSpec& c : p.deep_cases) deep.push_back(&c);
    for (const auto* tier : {&cheap, &deep})
      for (const CaseSpec* c : *tier) kinds.insert(c->inputs);
    std::map<Trick, Catch> found;
    for (Trick tr : kTricks) found[tr] = Catch{fmt::format("{} seed {}", task, seed), "", "", {}, {}};
    for (const auto& [tier, first, values] : {std::tuple{&cheap, &Catch::cheap, &Catch::cheap_values},
                                              std::tuple{&deep, &Catch::deep, &Catch::deep_values}})
      for (const CaseSpec* c : *tier) {
        std::vector<Sample> samples;
        bool sampled = false;
        const bool value_case = !c->values.empty();
        for (Trick tr : kTricks) {
          std::string& id = found[tr].*first;
          if (!id.empty() && !value_case) continue;
          bool runs = false;
          if (tr == Trick::v_null_sink && c->v_mean != 0 && c->shared_prefix > 0) {
            runs = null_sink_shows(*c, t.causal, bf16, g.tolerance(t, c->inputs));
          } else {  // for v_null_sink: any other way V's row 0 could be 64 times smaller than the rest
            if (!sampled) samples = value_case ? value_rows(*c, t.causal, bf16) : samples_of(*c, t.causal, bf16);
            sampled = true;
            runs = value_case ? value_case_shows(tr, samples, *c, g.tolerance(t, c->inputs)) : sample_runs(tr, samples);
          }
          if (runs && value_case) (found[tr].*values).insert(c->values);
          if (runs && id.empty()) id = c->id;
        }
      }
    for (Trick tr : kTricks) {
      const Catch& k = found[tr];
      std::cout << fmt::format("{}: {}: cheap {}; deep {}; value cases cheap {}, deep {}\n", name_of(tr), k.run,
                               k.cheap.empty() ? "admits" : k.cheap, k.deep.empty() ? "admits" : k.deep,
                               fmt::join(k.cheap_values, ","), fmt::join(k.deep_values, ","));
      out[tr].push_back(k);
    }
  });
  // The argument for the holes covers these kinds: a new one needs the tries predicted again.
  const std::set<std::string> known{"normal",         "large_logits", "outlier_rows", "near_uniform",
                                    "attention_sink", "large_v",      "huge_v",       "tiny_v",
                                    "small_v",        "v_offset",     "huge_logits",  "large_o"};
  for (const std::string& k : kinds) EXPECT_TRUE(known.count(k)) << "input kind " << k << " not predicted for";
  return out;
}
const std::map<Trick, std::vector<Catch>>& all_catches() {
  static const std::map<Trick, std::vector<Catch>> c = catches();
  return c;
}

// The hole left open: no case of either tier of any fp16 or bf16 pinned run (gate seed 2025
// fp16-d64, the GPU suite's, included) runs qk_coinciding_outlier_channels_dropped.cu's path where
// it shows, the value cases included (their massive channels pair a large Q with a small K as the
// others do: calibrating a tolerance for coinciding ones needs a GPU).
TEST(HackerRound28, CoincidingChannelsStayAHole) {
  const auto& runs = all_catches().at(Trick::qk_coinciding);
  EXPECT_EQ(runs.size(), 21u);
  for (const Catch& k : runs) {
    EXPECT_EQ(k.cheap, "") << k.run << ": the cheap tier runs it";
    EXPECT_EQ(k.deep, "") << k.run << ": the deep tier runs it";
  }
}

// The five holes closed after the round (gpu/input_fill.h value_kinds, run/value_cases.h): in every
// fp16 and bf16 pinned run, each tier's value case of the kind named shows the try (its path runs
// and its output leaves the case's tolerance), and the tier's first case that shows it is a value
// case of a kind its expected.json caught_by names. v_null_sink_dropped.cu, caught before by a
// prefix case in 17 of 21 cheap runs (below), now by its own kind in all 21.
const std::vector<std::pair<Trick, std::set<std::string>>> kClosedBy{
    {Trick::k_outlier_channels, {"massive_1", "massive_2", "massive_4"}},
    {Trick::q_outlier_channels, {"massive_1", "massive_2", "massive_4"}},
    {Trick::k_fp8_exact, {"e4m3_kv"}},
    {Trick::v_repeat, {"v_repeat"}},
    {Trick::k_bias_channels, {"k_offset"}},
    {Trick::v_null_sink, {"small_sink"}},
};
TEST(HackerRound28, TheClosedHolesAreCaughtByTheirValueCasesInEveryRun) {
  for (const auto& [t, kinds] : kClosedBy) {
    const auto& runs = all_catches().at(t);
    EXPECT_EQ(runs.size(), 21u);
    for (const Catch& k : runs)
      for (const auto& [tier, first, shown] :
           {std::tuple{"cheap", &k.cheap, &k.cheap_values}, std::tuple{"deep", &k.deep, &k.deep_values}}) {
        for (const std::string& kind : kinds)
          EXPECT_TRUE(shown->count(kind)) << name_of(t) << ": " << k.run << " " << tier << ": /values=" << kind;
        EXPECT_NE(*first, "") << name_of(t) << ": " << k.run << " " << tier;
        if (t == Trick::v_null_sink && first->find("/prefix=") != std::string::npos) continue;  // below
        bool named = false;
        for (const std::string& kind : kinds) named = named || first->find("/values=" + kind) != std::string::npos;
        EXPECT_TRUE(named) << name_of(t) << ": " << k.run << " " << tier << ": " << *first;
      }
  }
}

// Every value case of gate seed 2025 fp16-d64 (the GPU suite's run), named as the GPU suite will
// see it fail: the first value case of each kind in each tier.
TEST(HackerRound28, TheGpuSuitesRunNamesItsValueCases) {
  const auto& runs = all_catches().at(Trick::k_fp8_exact);
  ASSERT_EQ(runs[6].run, "fp16-d64 seed 2025");
  for (const auto& [t, kinds] : kClosedBy) {
    const Catch& k = all_catches().at(t)[6];
    std::cout << fmt::format("{}: gate seed 2025 fp16-d64: cheap {}; deep {}\n", name_of(t), k.cheap, k.deep);
  }
}

// The twin the massive channels catch: every run of both tiers, first on a case with massive
// channels (sampled normal or large_v).
TEST(HackerRound28, WideOutlierBandsAreCaughtInEveryRun) {
  const auto& runs = all_catches().at(Trick::k_wide_bands);
  EXPECT_EQ(runs.size(), 21u);
  for (const Catch& k : runs) {
    EXPECT_NE(k.cheap, "") << k.run;
    EXPECT_NE(k.deep, "") << k.run;
    for (const std::string& id : {k.cheap, k.deep})
      EXPECT_TRUE(id.find("/large_v") != std::string::npos || id.find("/normal") != std::string::npos) << id;
  }
  EXPECT_EQ(runs[6].run, "fp16-d64 seed 2025");
  EXPECT_EQ(runs[6].cheap,
            "sampled/5/2x24x8x4671x176x64/sq=very_long:odd/skv=short:x8/diag=gt/batch=few/heads=24/8/ratio=gqa_other/"
            "layout=bhsd/align=256/junk=nonfinite/scale=0.25/sqrt(D)..1:0.12623/large_v");
  EXPECT_EQ(runs[6].deep,
            "deep/9/5x128x8x16704x23x64/sq=ctx_32k:x64/skv=short:odd/diag=gt/batch=many/heads=128/8/ratio=gqa_wide/"
            "layout=kv_cache/align=208/junk=finite/scale=1/sqrt(D)/normal");
}

// v_null_sink_dropped.cu: before the value cases, only where a shared prefix of an odd batch draws
// batch b - 1's rows without V's offset bands before batch b's rows with them (null_sink_shows),
// which the cheap tier meets in 17 of the 21 fp16 and bf16 pinned runs (every fp16-d64 run) and the
// deep tier in all. The other 4 cheap runs are now caught first by the "small_sink" value case.
TEST(HackerRound28, NullSinkCaughtWhereAPrefixMeetsAnOffsetBand) {
  const std::set<std::string> cheap_admits{"bf16-d128 seed 12345", "fp16-d128-causal seed 1511791795",
                                           "fp16-d128-causal seed 4294967295", "fp16-d128-causal seed 2025"};
  const auto& runs = all_catches().at(Trick::v_null_sink);
  EXPECT_EQ(runs.size(), 21u);
  for (const Catch& k : runs) {
    EXPECT_EQ(k.cheap.find("/values=small_sink") != std::string::npos, cheap_admits.count(k.run) > 0)
        << k.run << ": cheap " << k.cheap;
    EXPECT_NE(k.deep, "") << k.run;
    for (const std::string& id : {k.cheap, k.deep}) {
      if (id.find("/values=small_sink") != std::string::npos) continue;
      EXPECT_NE(id.find("/prefix="), std::string::npos) << id;
      EXPECT_TRUE(id.find("/v_offset") != std::string::npos || id.find("/large_o") != std::string::npos) << id;
    }
  }
  const Catch& gpu_suite = runs[6];  // fp16-d64 seed 2025
  EXPECT_EQ(gpu_suite.run, "fp16-d64 seed 2025");
  EXPECT_EQ(gpu_suite.cheap.substr(0, gpu_suite.cheap.find(":bshd")),
            "sampled/64/5x256x256x1x66x64/sq=one:odd/skv=short:x2/diag=lt/batch=many/heads=256/256/ratio=mha/"
            "layout=mixed/align=208/junk=finite/scale=0.25/sqrt(D)..1:0.0316567/large_o/prefix=19");
}

// Every case of gate seed 2025 fp16-d64 (both tiers) on which the two caught tries show is drawn
// (sampled or deep) or a benchmark shape's post-timing check, never a fixed gate case, and its
// drawn ones name a token of the try's expected.json caught_by.
TEST(HackerRound28, TheCaughtTriesCatchingCasesNameTheirTokens) {
  const GatesConfig g = test::repo_gates();
  const Task t = parse_task("fp16-d64");
  const EvalPlan p = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u, true});
  std::vector<const CaseSpec*> all;
  std::set<const CaseSpec*> bench;  // the post-timing checks: after the gate cases, which reject first
  for (const CaseSpec& c : p.gate_cases) all.push_back(&c);
  for (const BenchSpec& b : p.bench)
    for (const CaseSpec* c : {&b.timed, &b.fresh}) {
      all.push_back(c);
      bench.insert(c);
    }
  for (const CaseSpec& c : p.deep_cases) all.push_back(&c);
  int wide = 0, sink = 0;
  for (const CaseSpec* c : all) {
    const bool drawn = is_sampled_case(c->id) || is_deep_case(c->id) || bench.count(c) > 0;
    if (case_runs(Trick::k_wide_bands, *c, false, false)) {
      ++wide;
      EXPECT_TRUE(drawn) << c->id;
      if (bench.count(c)) continue;
      EXPECT_TRUE(c->id.find("/large_v") != std::string::npos || c->id.find("/normal") != std::string::npos ||
                  c->id.find("/v_offset") != std::string::npos)
          << c->id;
    }
    if (null_sink_shows(*c, false, false, g.tolerance(t, c->inputs))) {
      ++sink;
      EXPECT_TRUE(drawn) << c->id;
      EXPECT_NE(c->id.find("/prefix="), std::string::npos) << c->id;
    }
  }
  std::cout << fmt::format(
      "gate seed 2025 fp16-d64: {} cases run k_wide_outlier_bands_clamped_24, {} v_null_sink_dropped\n", wide, sink);
  EXPECT_GE(wide, 10);
  EXPECT_GE(sink, 2);
}

// ---- After the round: the value cases and the fill's new rules --------------------------------

// e4m3_grid (gpu/input_fill.h; evo_e4m3_grid in support_kernels.cu the same operations): the nearest
// e4m3 value of x / scale, ties to the even code, saturated to 448, times the scale; exact in fp16
// and bf16 at the scales the value cases use.
TEST(HackerRound28, E4m3GridIsTheNearestE4m3ValueTimesTheScale) {
  std::vector<float> grid;  // every finite non-negative e4m3 value, in code order (its low bit: the mantissa's)
  for (int code = 0; code < 0x7F; ++code) {
    const int e = code >> 3, m = code & 7;
    grid.push_back(e == 0 ? std::ldexp(float(m), -9) : std::ldexp(1.f + float(m) / 8.f, e - 7));
  }
  EXPECT_EQ(grid.back(), 448.f);
  std::mt19937 gen(28);
  std::normal_distribution<float> n(0.f, 1.f);
  int ties = 0;
  for (float scale : {0.015625f, 0.03125f, 1.f, 2.f, 4.f})
    for (int k = 0; k < 20000; ++k) {
      float x = n(gen) * std::ldexp(1.f, int(gen() % 12) - 6);
      if (k % 50 == 0) x = std::copysign(grid[gen() % grid.size()] + grid[1] / 2, x) * scale;  // a tie or near one
      const float r = e4m3_grid(x, scale), a = std::fabs(x / scale);
      const size_t hi = size_t(std::lower_bound(grid.begin(), grid.end(), a) - grid.begin());
      float want;
      if (hi == grid.size()) {
        want = 448.f;
      } else if (hi == 0 || grid[hi] == a) {
        want = grid[hi];
      } else {
        const float dl = a - grid[hi - 1], dh = grid[hi] - a;
        ties += dl == dh;
        want = dl < dh ? grid[hi - 1] : dh < dl ? grid[hi] : ((hi - 1) % 2 == 0 ? grid[hi - 1] : grid[hi]);
      }
      ASSERT_EQ(r, std::copysign(want, x) * scale) << x << " at scale " << scale;
      EXPECT_EQ(to_dtype(r, false), r) << r;
      EXPECT_EQ(to_dtype(r, true), r) << r;
      if (scale >= 1 && std::fabs(r) <= 448) {  // the try's test: an e4m3 value past the unit scale
        EXPECT_TRUE(e4m3_exact(r)) << r;
      }
    }
  EXPECT_GT(ties, 0);
  EXPECT_EQ(e4m3_grid(0.3f, 0.f), 0.3f) << "scale 0: the value as it is";
  EXPECT_EQ(e4m3_grid(1e4f, 1.f), 448.f);
}

// fill_pair_source (evo_fill's "v_repeat" rows): a row takes the row before's draw, never its own
// sequence's first row's predecessor and never in a chain, about 3 rows in 16 at every = 4.
TEST(HackerRound28, PairRowsComeInPairsNeverChains) {
  uint64_t copies = 0, rows = 0;
  for (unsigned seed : {0u, 7u, 2025u})
    for (uint64_t seq : {1ull, 2ull, 33ull, 300ull})
      for (uint64_t row = 0; row < 64 * seq; ++row) {
        const uint64_t src = fill_pair_source(kValuePairEvery, row, seq, seed);
        ++rows;
        EXPECT_EQ(fill_pair_source(0, row, seq, seed), row);
        if (src == row) continue;
        ++copies;
        EXPECT_EQ(src, row - 1);
        EXPECT_NE(row % seq, 0u) << "a sequence's first row is its own";
        EXPECT_EQ(fill_pair_source(kValuePairEvery, src, seq, seed), src) << "no chains";
      }
  EXPECT_GT(double(copies) / double(rows), 0.14);
  EXPECT_LT(double(copies) / double(rows), 0.23);
}

// The device fill (support_kernels.cu, embedded as support_kernels_source) carries the rules the host
// mirrors: EvoFill's fields in FillParams' order, the pair rows' salt and test, the grid's operations.
TEST(HackerRound28, TheDeviceFillCarriesTheMirrorsRules) {
  EXPECT_EQ(sizeof(FillParams), 40u);  // round 31's close: prefix_group last
  EXPECT_EQ(offsetof(FillParams, pair_every), 28u);
  EXPECT_EQ(offsetof(FillParams, grid_scale), 32u);
  EXPECT_EQ(offsetof(FillParams, prefix_group), 36u);
  const std::string& src = support_kernels_source();
  size_t at = 0;
  for (const char* field :
       {"float stddev, mean, outlier_scale, sink;", "unsigned outlier_every;", "unsigned mean_every;",
        "unsigned prefix_rows;", "unsigned pair_every;", "float grid_scale;", "unsigned prefix_group;"}) {
    const size_t next = src.find(field, at);
    ASSERT_NE(next, std::string::npos) << field << " after EvoFill's earlier fields";
    at = next;
  }
  EXPECT_EQ(kPairRowSalt, 0x9A1E5ull);
  for (const char* text :
       {"evo_mix64(q ^ 0x9A1E5ull ^ salt) % f.pair_every == 0",
        "row % t.seq != 0 && pair_row(row) && !pair_row(row - 1)) i -= t.dim;",
        "(u + 0x7FFFFu + ((u >> 20) & 1u)) & ~0xFFFFFu", "fminf(__uint_as_float(u), 448.f)", "rintf(a * 512.f) / 512.f",
        "copysignf(r, x) * scale", "fabsf(x / scale)", "if (f.grid_scale != 0.f) x = evo_e4m3_grid(x, f.grid_scale);"})
    EXPECT_NE(src.find(text), std::string::npos) << text;
}

// The value cases (run/value_cases.h): eight a tier of every 16-bit pinned run, none on fp8, after
// every other case, each within the tier's bounds and 2^30 FLOPs, named by its kind; every case
// before them is the one the tier draws without them (id and seed).
TEST(HackerRound28, ValueCasesAreSmallCasesAtTheEnd) {
  GatesConfig g = test::repo_gates();
  g.sampled.scale_cases = false;  // round 29's scale and fused-buffer cases come after the value cases
  g.sampled.fused_qkv_cases = false;
  g.sampled.whole_cache_model_cases = false;  // and round 29's close after those
  g.sampled.long_value_cases = false;
  g.sampled.training_step_cases = false;
  test::without_round30_close(g);  // and round 30's close after those
  GatesConfig without = g;
  without.sampled.value_cases = false;
  double most_cheap = 0, most_deep = 0;
  test::each_run_with_and_without(
      g, without,
      [&](const Task& t, const std::string& run, bool deep, const std::vector<CaseSpec>& cases,
          const std::vector<CaseSpec>& before) {
        const size_t added = t.dtype == DType::fp8 ? 0 : value_kinds().size();
        ASSERT_EQ(cases.size(), before.size() + added) << run;
        const CoverageTier& tier = deep ? g.sampled.deep : g.sampled.cheap;
        const SampleSpace sp = tier_space(g, t, tier);
        double sum = 0;
        for (size_t i = 0; i < cases.size(); ++i) {
          const CaseSpec& c = cases[i];
          if (i < before.size()) {
            EXPECT_EQ(c.id, before[i].id) << run;
            EXPECT_EQ(c.seed, before[i].seed) << run << ": " << c.id;
            EXPECT_EQ(c.values, "") << run << ": " << c.id;
            continue;
          }
          const std::string& kind = value_kinds()[i - before.size()];
          const Shape& s = c.shape;
          const double f = 4.0 * s.batch * s.heads_q * double(s.seq_q) * s.seq_kv * s.head_dim;
          sum += f;
          EXPECT_EQ(c.values, kind) << c.id;
          EXPECT_TRUE(c.id.ends_with("/values=" + kind)) << c.id;
          EXPECT_EQ(c.id.rfind(deep ? "deep/" : "sampled/", 0), 0u) << c.id;
          EXPECT_LE(f, kModelCaseMaxFlops) << c.id;
          EXPECT_LE(f, sp.max_flops) << c.id;
          EXPECT_LE(s.elements(s.heads_q, s.seq_q), sp.max_tensor_elements) << c.id;
          EXPECT_TRUE(!c.two_streams && c.shared_prefix == 0 && c.junk == "finite") << c.id;
          EXPECT_EQ(c.inputs, kind == "small_sink" ? "attention_sink" : "normal") << c.id;
          EXPECT_EQ(massive_channels(c), kind.rfind("massive_", 0) == 0) << c.id;
          EXPECT_TRUE(s.seq_kv >= kValueCaseMinKeys && (s.seq_q == s.seq_kv || (!t.causal && s.seq_q <= 16))) << c.id;
        }
        double& most = deep ? most_deep : most_cheap;
        most = std::max(most, sum);
      });
  std::cout << fmt::format("value cases: {} a tier, at most {:.3g} GFLOP a cheap tier, {:.3g} a deep one\n",
                           value_kinds().size(), most_cheap / 1e9, most_deep / 1e9);
  EXPECT_LE(most_cheap, 8 * kModelCaseMaxFlops);
}

// What each value kind lays on its case, read back through the mirror: the massive channels' count
// past 24 (K and Q), V's pairs beside K rows that differ, K and V on the grid, K's offset channels,
// V's small row 0.
TEST(HackerRound28, EachValueCaseHoldsItsPattern) {
  const GatesConfig g = test::repo_gates();
  for (const char* name : {"fp16-d64", "bf16-d128", "fp16-d128-causal"}) {
    const Task t = parse_task(name);
    const bool bf16 = t.dtype == DType::bf16;
    for (const CaseSpec& c : draw_sampled_cases(g, t, 2025u)) {
      if (c.values.empty()) continue;
      const Mirror m(c, bf16);
      std::vector<int> chunks{0}, starts;
      const Row r = m.row(0, 0, uint64_t(c.shape.seq_q - 1), t.causal, chunks, &starts);
      const int n = narrow_massive_width(c);
      if (n) {
        EXPECT_EQ(k_outliers(r, 0, 32), n) << c.id;
        EXPECT_EQ(q_outliers(r), n) << c.id;
      }
      int pairs = 0;
      for (int j = 1; j < 32; ++j) pairs += same_v(r, j, j - 1);
      EXPECT_EQ(pairs > 0, c.values == "v_repeat") << c.id;
      EXPECT_EQ(fp8_chunk(r, 0, 32), c.values == "e4m3_kv") << c.id;
      const int offsets = bias_channels(r, 0, 32, nullptr);
      EXPECT_EQ(offsets > 0, c.values == "k_offset") << c.id;
      if (c.values == "k_offset") {
        EXPECT_EQ(size_t(offsets), k_offset_channels(c).size()) << c.id;
      }
      EXPECT_EQ(path_runs(Trick::v_null_sink, r, 0, 32), c.values == "small_sink") << c.id;
      if (c.values != "e4m3_qkv") continue;
      const float s = value_grid_scale(c);
      for (int j = 0; j < 32; ++j)
        for (int d = 0; d < r.d; ++d) {
          EXPECT_EQ(e4m3_grid(r.kx(j, d), s), r.kx(j, d)) << c.id;
          EXPECT_EQ(e4m3_grid(r.vx(j, d), s), r.vx(j, d)) << c.id;
        }
      for (int d = 0; d < r.d; ++d) EXPECT_EQ(e4m3_grid(r.q[size_t(d)], s), r.q[size_t(d)]) << c.id;
    }
  }
}

}  // namespace
}  // namespace evo::hacker_round28
