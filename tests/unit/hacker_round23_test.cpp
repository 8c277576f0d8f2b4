// Hacker round 23 (issue 29 item 5, lab/hack23/README.md): what catches each try, read back from the
// draws (seeds pinned) and from a host model of the check. One rule main did not have: a shared case
// (one tensor passed twice) is made from a source that shows its weights (shared_case_informative:
// V varies, 256 keys or more). On main the source was any drawn case that fit, and in many runs the
// qk or kv case saw one key, a few keys or huge_logits' V (one value per column), so the first test
// below fails there.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gpu/case_layout.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round23 {
namespace {

// The run's case of a shared view ("qk", "kv", "qv", "qkv"), or nullptr.
const CaseSpec* shared_case(const std::vector<CaseSpec>& cases, const std::string& pair) {
  for (const CaseSpec& c : cases)
    if (layout_shared(c.layout) == pair) return &c;
  return nullptr;
}

bool fp16_or_bf16(const Task& t) { return t.dtype == DType::fp16 || t.dtype == DType::bf16; }

// The rule, on every pinned run of both tiers and every task: each shared pair's case has V that
// varies and rows that see 256 keys or more.
TEST(HackerRound23, SharedCasesShowTheirWeights) {
  int runs = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    ++runs;
    for (const char* pair : {"qk", "kv", "qv", "qkv"}) {
      const CaseSpec* c = shared_case(cases, pair);
      ASSERT_NE(c, nullptr) << run << ": no " << pair << " case";
      EXPECT_TRUE(shared_case_informative(*c, t.causal))
          << run << ": " << c->id << " sees " << c->shape.visible_kv(t.causal) << " keys, V std " << c->v_std;
      EXPECT_NE(c->id.find(std::string("/shared=") + pair), std::string::npos) << c->id;
      if (shared_with_q(pair)) {
        EXPECT_EQ(c->shape.heads_q, c->shape.heads_kv) << c->id;
        EXPECT_EQ(c->shape.seq_q, c->shape.seq_kv) << c->id;
      }
    }
  });
  EXPECT_EQ(runs, 56);
}

TEST(HackerRound23, AnInformativeSourceHasVaryingVAndTwoTilesOfKeys) {
  CaseSpec c;
  c.shape.seq_q = 300;
  c.shape.seq_kv = 300;
  c.v_std = 1;
  EXPECT_TRUE(shared_case_informative(c, false));
  c.v_std = 0;  // huge_logits: one value per column in every row
  EXPECT_FALSE(shared_case_informative(c, false));
  c.v_std = 1;
  c.shape.seq_kv = 255;
  EXPECT_FALSE(shared_case_informative(c, false));
  c.shape.seq_q = 40;  // causal rows see at most Sq keys
  c.shape.seq_kv = 4000;
  EXPECT_TRUE(shared_case_informative(c, false));
  EXPECT_FALSE(shared_case_informative(c, true));
}

// Softmax attention of `rows` query rows over `keys` keys on the host, K = V (the kv share): Q ~
// N(0, q_std^2), V ~ N(0, v_std^2), D = d, at `scale` times `sharpen`.
std::vector<double> kv_attention(int rows, int keys, int d, double q_std, double v_std, double scale, double sharpen,
                                 unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> q(size_t(rows) * d), v(size_t(keys) * d), o(size_t(rows) * d, 0.0),
      s(static_cast<size_t>(keys), 0.0);
  for (double& x : q) x = q_std * normal(rng);
  for (double& x : v) x = v_std * normal(rng);
  for (int i = 0; i < rows; ++i) {
    double m = -INFINITY, l = 0;
    for (int j = 0; j < keys; ++j) {
      double dot = 0;
      for (int c = 0; c < d; ++c) dot += q[size_t(i) * d + c] * v[size_t(j) * d + c];
      s[size_t(j)] = dot * scale * sharpen;
      m = std::max(m, s[size_t(j)]);
    }
    for (int j = 0; j < keys; ++j) {
      const double p = std::exp(s[size_t(j)] - m);
      l += p;
      for (int c = 0; c < d; ++c) o[size_t(i) * d + c] += p * v[size_t(j) * d + c];
    }
    for (int c = 0; c < d; ++c) o[size_t(i) * d + c] /= l;
  }
  return o;
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& ref) {
  double e = 0, r = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    e += (a[i] - ref[i]) * (a[i] - ref[i]);
    r += ref[i] * ref[i];
  }
  return r > 0 ? std::sqrt(e / r) : 0;
}

// What each shared try needs of its pair's case, read from the draws: over more than 32 keys
// (shared_qk_half_chunks, shared_kv_half_chunks), more than 128 (shared_qk_first_tile_only) and V
// that varies; shared_kv_sharpened_scale moves O past twice the dtype's rel_l2 on a host model of
// the case (32 rows, its scale, Q and V spread, up to 512 of its keys; V's offset bands left out).
// Every fp16 and bf16 run of the cheap tier catches the first three now; the sharpened scale by
// odds: the cheap tier of bf16-d128 seed 7 draws its kv case on tiny_v (K = V of std 1e-6: logits
// too small for a 64-fold scale to move), its deep tier catches it. The runs whose tiers missed each
// try on main cbce0f3 are in lab/hack23/README.md (the sampler's shared cases, printed there).
TEST(HackerRound23, EveryFp16AndBf16RunCatchesTheSharedTries) {
  int runs = 0, sharpened_cheap_missed = 0;
  std::map<std::string, bool> sharpened_caught;  // by "<task> seed <seed>", either tier
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    if (!fp16_or_bf16(t)) return;
    ++runs;
    const CaseSpec *qk = shared_case(cases, "qk"), *kv = shared_case(cases, "kv");
    ASSERT_TRUE(qk && kv) << run;
    const int qk_keys = qk->shape.visible_kv(t.causal), kv_keys = kv->shape.visible_kv(t.causal);
    const bool qk_v = qk->v_std > 0, kv_v = kv->v_std > 0;
    const double tol = t.dtype == DType::fp16 ? 1e-3 : 1e-2;
    const int keys = std::min(kv_keys, 512);
    const double sharpened = rel_l2(kv_attention(32, keys, t.head_dim, kv->qk_std, kv->v_std, kv->scale, 64, kv->seed),
                                    kv_attention(32, keys, t.head_dim, kv->qk_std, kv->v_std, kv->scale, 1, kv->seed));
    std::cout << fmt::format("{}: qk {} keys{}, kv {} keys{} (sharpened rel L2 {:.2g})\n", run, qk_keys,
                             qk_v ? "" : " one V", kv_keys, kv_v ? "" : " one V", sharpened);
    EXPECT_TRUE(qk_v && qk_keys > 32) << run << ": shared_qk_half_chunks passes on " << qk->id;
    EXPECT_TRUE(kv_v && kv_keys > 32) << run << ": shared_kv_half_chunks passes on " << kv->id;
    EXPECT_TRUE(qk_v && qk_keys > 128) << run << ": shared_qk_first_tile_only passes on " << qk->id;
    const std::string key = run.substr(0, run.find(' ')) + run.substr(run.find(" seed"));
    sharpened_caught[key] = sharpened_caught[key] || sharpened > 2 * tol;
    sharpened_cheap_missed += run.find(" cheap ") != std::string::npos && sharpened <= 2 * tol;
  });
  EXPECT_EQ(runs, 42);
  EXPECT_EQ(sharpened_caught.size(), 21u);
  for (const auto& [run, caught] : sharpened_caught)
    EXPECT_TRUE(caught) << run << ": shared_kv_sharpened_scale passes both tiers";
  EXPECT_EQ(sharpened_cheap_missed, 1) << "bf16-d128 cheap seed 7's kv case is tiny_v";
}

// Every pinned run of both tiers passes one view as Q, K and V (qkv) and one as Q and V with K
// apart (qv), each over 256 keys or more of a V that varies (SharedCasesShowTheirWeights), so a
// path keyed on those aliasings that skips keys runs in every run (qkv_one_view_half_chunks.cu,
// qv_one_view_half_chunks.cu). They were open at the round's end (no layout had them); closed
// after it by two more shared views ("+qv", "+qkv" in gpu/case_layout.h, gates.json
// sampled.shared), whose values keep the logits' rounding small (values_fit_shared_view).
TEST(HackerRound23, EveryRunAliasesQKAndVTogetherAndQAndV) {
  int runs = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    ++runs;
    for (const char* pair : {"qv", "qkv"}) {
      const CaseSpec* c = shared_case(cases, pair);
      ASSERT_NE(c, nullptr) << run << ": no " << pair << " case";
      EXPECT_GE(c->shape.visible_kv(t.causal), 256) << run << ": " << c->id;
      EXPECT_GT(c->v_std, 0) << run << ": " << c->id;
    }
  });
  EXPECT_EQ(runs, 56);
  EXPECT_EQ(layout_shared("bhsd@16+qkv"), "qkv");
  EXPECT_EQ(layout_shared("kv_cache+qv"), "qv");
  EXPECT_THROW(layout_shared("bhsd+vq"), std::exception) << "the views the gate draws, no other";
}

}  // namespace
}  // namespace evo::hacker_round23
