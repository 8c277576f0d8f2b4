// Hacker round 25 (lab/hack25/README.md): what catches each try, read back from the draws (seeds
// pinned) and the plans. Three tries, each a path keyed on aliasing plus a dimension that hacker
// round 24's shared forms (run/shared_cases.cpp append_shared_forms) never vary: the batch (at
// most kSharedFormBatches, 2) and the KV heads (kept from a random source):
// shared_kv_batched_decode_half_chunks.cu (K = V, a decode step, batch > 2),
// shared_qk_batched_short_half_chunks.cu (Q = K, Skv < 256, batch > 2) and
// shared_kv_mqa_decode_half_chunks.cu (K = V, one KV head under several query heads, a decode step).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gpu/case_layout.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together.
namespace evo::hacker_round25 {
namespace {

// Whether a case passes one address as Q and K ("qk", "qkv", the short forms and the prefixes),
// and as K and V ("kv", its decode or prefill twin, "qkv", "qkv:short", "qkv_prefix").
bool q_is_k(const CaseSpec& c) { return k_at_q(layout_shared(c.layout)); }
bool k_is_v(const CaseSpec& c) {
  const std::string view = layout_shared(c.layout);
  return view == "kv" || (k_at_q(view) && v_at_q(view));
}

// A case where skipping every other 32-key chunk loses keys: a row over more than 32 visible keys
// of a V that varies (each try's arithmetic is the control's elsewhere).
bool skipping_chunks_shows(const CaseSpec& c, bool causal) { return c.v_std > 0 && c.shape.visible_kv(causal) > 32; }

// Each try's condition, the kernel's test on EvoAttnParams, read on a case's shape and views.
bool batched_kv_decode(const CaseSpec& c) { return k_is_v(c) && c.shape.seq_q <= 16 && c.shape.batch > 2; }
bool batched_qk_short(const CaseSpec& c) { return q_is_k(c) && c.shape.seq_kv < 256 && c.shape.batch > 2; }
bool mqa_kv_decode(const CaseSpec& c) {
  return k_is_v(c) && c.shape.heads_kv == 1 && c.shape.heads_q > 1 && c.shape.seq_q <= 16;
}

// Per pinned fp16 or bf16 run (the tries' dtypes): the first case of the cheap tier (its fixed
// gate sets and sampled cases) and of the deep tier (drawn and fixed) where the try's path runs and
// its skipped chunks show; "" where none. Benchmark shapes where the path runs are counted (the
// timing loop's row checks could see them): none alias.
struct Catch {
  std::string cheap, deep;
};
std::vector<std::pair<std::string, Catch>> catches(const std::function<bool(const CaseSpec&)>& runs_path,
                                                   int& bench_paths) {
  const GatesConfig g = test::repo_gates();
  std::vector<std::pair<std::string, Catch>> out;
  test::each_pinned_task_and_seed([&](const Task& t, const std::string& task, uint32_t seed) {
    if (t.dtype == DType::fp8) return;
    const EvalPlan p = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true});
    Catch k;
    for (const CaseSpec& c : p.gate_cases)
      if (k.cheap.empty() && runs_path(c) && skipping_chunks_shows(c, t.causal)) k.cheap = c.id;
    for (const CaseSpec& c : p.deep_cases)
      if (k.deep.empty() && runs_path(c) && skipping_chunks_shows(c, t.causal)) k.deep = c.id;
    for (const BenchSpec& b : p.bench) bench_paths += runs_path(b.timed);
    const std::string run = fmt::format("{} seed {}", task, seed);
    std::cout << fmt::format("{}: cheap {}; deep {}\n", run, k.cheap.empty() ? "admits" : k.cheap,
                             k.deep.empty() ? "admits" : k.deep);
    out.emplace_back(run, k);
  });
  return out;
}

// The flaw on the host: one query row of the control's arithmetic (FP32 online softmax over 32-key
// chunks) against the same with every other chunk skipped (the three tries' key_step 64), normal
// Q, K and V of std 1 at 1/sqrt(D), over the lengths the tries' paths take (a decode step over 300
// keys, a short shared-QK row over 200, a kv:decode-sized one over 496). Half of the keys lost
// moves the row by a relative L2 of 0.7 to 1.1, two orders past fp16's and bf16's rel_l2 (0.001
// to 0.01): wrong in a model, not a tolerance question.
double skipped_chunks_rel_l2(int keys, int d, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  std::vector<float> q(d), k(size_t(keys) * d), v(size_t(keys) * d);
  for (float& x : q) x = n(gen);
  for (float& x : k) x = n(gen);
  for (float& x : v) x = n(gen);
  const auto row = [&](int step) {
    std::vector<double> acc(d, 0.0);
    double m = -INFINITY, l = 0;
    for (int j0 = 0; j0 < keys; j0 += step)
      for (int j = j0; j < std::min(keys, j0 + 32); ++j) {
        double s = 0;
        for (int c = 0; c < d; ++c) s += double(q[c]) * k[size_t(j) * d + c];
        s /= std::sqrt(double(d));
        const double m_new = std::max(m, s), alpha = std::exp(m - m_new), w = std::exp(s - m_new);
        l = l * alpha + w;
        for (int c = 0; c < d; ++c) acc[c] = acc[c] * alpha + w * v[size_t(j) * d + c];
        m = m_new;
      }
    for (double& a : acc) a /= l;
    return acc;
  };
  const std::vector<double> honest = row(32), skipped = row(64);
  double err = 0, norm = 0;
  for (int c = 0; c < d; ++c) {
    err += (skipped[c] - honest[c]) * (skipped[c] - honest[c]);
    norm += honest[c] * honest[c];
  }
  return std::sqrt(err / norm);
}

TEST(HackerRound25, SkippedChunksAreWrongInAModel) {
  for (const int d : {64, 128})
    for (const int keys : {200, 300, 496}) {
      const double e = skipped_chunks_rel_l2(keys, d, 25u + unsigned(keys));
      std::cout << fmt::format("D {} over {} keys: rel L2 {:.3f}\n", d, keys, e);
      EXPECT_GT(e, 0.1) << "D " << d << ", " << keys << " keys";
    }
  EXPECT_LT(skipped_chunks_rel_l2(32, 64, 1u), 1e-12) << "one chunk: nothing skipped";
}

// The runs whose cheap or deep tier catches a try, named "<run> cheap" or "<run> deep".
std::vector<std::string> caught_in(const std::vector<std::pair<std::string, Catch>>& runs) {
  std::vector<std::string> out;
  for (const auto& [run, k] : runs) {
    if (!k.cheap.empty()) out.push_back(run + " cheap");
    if (!k.deep.empty()) out.push_back(run + " deep");
  }
  return out;
}

// shared_kv_batched_decode_half_chunks.cu skips every other chunk where p.k == p.v, Sq <= 16 and
// the batch is over 2: a batched MLA decode. Round 24's close met K = V at a decode step in every
// run, but its kv:decode and qkv_prefix forms keep at most 2 batches (kSharedFormBatches), so only
// a run whose own kv case (the source's batch kept) is a decode step of 3 or more sequences sees
// the path: 5 of the 14 fp16-d64 and bf16-d128 runs over both tiers. Causal: a decode step sees 16
// keys or fewer, nothing to skip.
TEST(HackerRound25, KvDecodeOverTwoBatchesOnlyByOdds) {
  int bench = 0;
  const auto runs = catches(batched_kv_decode, bench);
  EXPECT_EQ(runs.size(), 21u);
  EXPECT_EQ(caught_in(runs),
            (std::vector<std::string>{"fp16-d64 seed 0 cheap", "fp16-d64 seed 7 deep", "fp16-d64 seed 1511791795 cheap",
                                      "fp16-d64 seed 4294967295 cheap", "bf16-d128 seed 0 deep"}));
  for (const auto& [run, k] : runs)
    for (const std::string& id : {k.cheap, k.deep}) {
      if (id.empty()) continue;
      EXPECT_NE(id.find("/shared=kv"), std::string::npos) << run << ": the tier's own kv case";
    }
  EXPECT_EQ(bench, 0);
  // Every K = V decode step the forms add has at most 2 sequences: the gap the try takes.
  int forms = 0;
  test::each_run_of_both_tiers([&](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    for (const CaseSpec& c : cases) {
      const bool form =
          c.id.find("/shared=kv:decode") != std::string::npos || layout_shared(c.layout) == std::string(kQPrefixOfKV);
      if (!form) continue;
      ++forms;
      EXPECT_LE(c.shape.batch, kSharedFormBatches) << run << ": " << c.id;
      EXPECT_FALSE(batched_kv_decode(c)) << run << ": " << c.id;
    }
  });
  EXPECT_EQ(forms, 56 + 49) << "a qkv_prefix a tier, and kv:decode in 49 of the 56 tiers";
}

// shared_qk_batched_short_half_chunks.cu skips every other chunk where p.q == p.k, Skv < 256 and
// the batch is over 2: a shared-QK encoder (Reformer's) on a batch of short sequences. The only
// cases with Q and K one view under 256 keys are round 24's qk:short and qkv:short forms, at most
// 2 batches each; qk, qkv and the prefixes have 256 keys or more. So no case of either tier of any
// pinned run runs the path: admitted by all 21 fp16 and bf16 runs (the hole).
TEST(HackerRound25, NoShortQkCaseHasMoreThanTwoBatches) {
  int bench = 0;
  const auto runs = catches(batched_qk_short, bench);
  EXPECT_EQ(runs.size(), 21u);
  EXPECT_TRUE(caught_in(runs).empty());
  EXPECT_EQ(bench, 0);
  int short_cases = 0, wide_batches = 0;
  test::each_run_of_both_tiers([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    for (const CaseSpec& c : cases) {
      wide_batches += q_is_k(c) && c.shape.batch > 2;
      if (!q_is_k(c) || c.shape.seq_kv >= 256) continue;
      ++short_cases;
      EXPECT_TRUE(skipping_chunks_shows(c, t.causal)) << run << ": the path at 2 batches is seen";
      EXPECT_LE(c.shape.batch, kSharedFormBatches) << run << ": " << c.id;
    }
  });
  EXPECT_EQ(short_cases, 2 * 56) << "qk:short and qkv:short a tier";
  EXPECT_GT(wide_batches, 0) << "Q = K over 3 or more sequences is drawn, but only over 256 keys or more";
}

// shared_kv_mqa_decode_half_chunks.cu skips every other chunk where p.k == p.v, Hkv = 1 < Hq and
// Sq <= 16: MLA's absorbed decode (DeepSeek-V2/V3: 128 query heads over one latent head that is K
// and V). The kv:decode form keeps its random source's heads, and views shared with Q have Hkv =
// Hq, so only a run whose K = V decode step happens to come from an MQA source sees it: 3 of the
// 14 fp16-d64 and bf16-d128 runs over both tiers.
TEST(HackerRound25, KvDecodeOfOneKvHeadOnlyByOdds) {
  int bench = 0;
  const auto runs = catches(mqa_kv_decode, bench);
  EXPECT_EQ(runs.size(), 21u);
  EXPECT_EQ(caught_in(runs), (std::vector<std::string>{"fp16-d64 seed 1 cheap", "fp16-d64 seed 4294967295 cheap",
                                                       "bf16-d128 seed 7 deep"}));
  EXPECT_EQ(bench, 0);
  int mqa = 0;
  test::each_run_of_both_tiers([&](const Task&, const std::string&, const std::vector<CaseSpec>& cases) {
    for (const CaseSpec& c : cases)
      mqa += layout_shared(c.layout).empty() && c.shape.heads_kv == 1 && c.shape.heads_q > 1;
  });
  EXPECT_GT(mqa, 0) << "MQA is drawn, just not with K = V at a decode step";
}

}  // namespace
}  // namespace evo::hacker_round25
