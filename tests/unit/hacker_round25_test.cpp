// Hacker round 25 (lab/hack25/README.md): what catches each try, read back from the draws (seeds
// pinned) and the plans. Three tries, each a path keyed on aliasing plus a dimension that hacker
// round 24's shared forms (run/shared_cases.cpp append_shared_forms) never varied: the batch (at
// most 2) and the KV heads (kept from a random source):
// shared_kv_batched_decode_half_chunks.cu (K = V, a decode step, batch > 2),
// shared_qk_batched_short_half_chunks.cu (Q = K, Skv < 256, batch > 2) and
// shared_kv_mqa_decode_half_chunks.cu (K = V, one KV head under several query heads, a decode step).
// Holes at the round's end; closed after it by the forms' batch drawn past 2 in every run and a
// kv:mla form (run/sampler.h kSharedFormMinBatch, kSharedMlaMinHeads), which the tests below pin.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "gpu/case_layout.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/skipped_chunks.h"
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
TEST(HackerRound25, SkippedChunksAreWrongInAModel) {
  for (const int d : {64, 128})
    for (const int keys : {200, 300, 496}) {
      const double e = test::skipped_chunks_rel_l2(keys, d, 25u + unsigned(keys));
      std::cout << fmt::format("D {} over {} keys: rel L2 {:.3f}\n", d, keys, e);
      EXPECT_GT(e, 0.1) << "D " << d << ", " << keys << " keys";
    }
  EXPECT_LT(test::skipped_chunks_rel_l2(32, 64, 1u), 1e-12) << "one chunk: nothing skipped";
}

bool ends_with(const std::string& id, const std::string& tail) {
  return id.size() >= tail.size() && id.compare(id.size() - tail.size(), tail.size(), tail) == 0;
}
bool ends_with_any(const std::string& id, const std::vector<std::string>& tails) {
  return std::any_of(tails.begin(), tails.end(), [&](const std::string& t) { return ends_with(id, t); });
}

// Every run's catches: each tier of each run whose task can show the path (`shows(task)`) catches
// the try on a case named by one of `by`; the others catch nothing.
void expect_caught_in_every_run(const std::vector<std::pair<std::string, Catch>>& runs,
                                const std::function<bool(const std::string&)>& shows,
                                const std::vector<std::string>& by) {
  EXPECT_EQ(runs.size(), 21u);
  for (const auto& [run, k] : runs)
    for (const std::string& id : {k.cheap, k.deep}) {
      if (!shows(run)) {
        EXPECT_EQ(id, "") << run << ": the path's rows see 32 keys or fewer";
        continue;
      }
      EXPECT_TRUE(ends_with_any(id, by)) << run << ": " << (id.empty() ? "admitted" : id);
    }
}
bool not_causal(const std::string& run) { return run.find("causal") == std::string::npos; }

// shared_kv_batched_decode_half_chunks.cu skips every other chunk where p.k == p.v, Sq <= 16 and
// the batch is over 2: a batched MLA decode. Round 24's kv:decode and qkv_prefix forms kept at most
// 2 sequences, so only a run whose own kv case was a decode step of 3 or more sequences saw the
// path (5 of the 14 fp16-d64 and bf16-d128 runs over both tiers). Closed: every K = V decode form
// (kv:decode, qkv_prefix, kv:mla) draws 3 to 8 sequences, so both tiers of every fp16-d64 and
// bf16-d128 run catch it, on the tier's kv case where it is such a step (by odds, first in the
// tier) or else on kv:decode (where the kv case is a prefill) or qkv_prefix. Causal: a top-left
// decode step sees 16 keys or fewer, nothing to skip (the try is exact there).
TEST(HackerRound25, KvDecodeOverTwoBatchesIsCaughtInEveryRun) {
  int bench = 0;
  const auto runs = catches(batched_kv_decode, bench);
  expect_caught_in_every_run(runs, not_causal, {"/shared=kv", "/shared=kv:decode", "/shared=qkv_prefix"});
  EXPECT_EQ(bench, 0);
  int forms = 0;
  test::each_run_of_both_tiers([&](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    for (const CaseSpec& c : cases) {
      const bool form = ends_with_any(c.id, {"/shared=kv:decode", "/shared=qkv_prefix", "/shared=kv:mla"});
      if (!form) continue;
      ++forms;
      EXPECT_TRUE(batched_kv_decode(c)) << run << ": " << c.id;
      EXPECT_LE(c.shape.batch, kSharedDecodeMaxBatch) << run << ": " << c.id;
    }
  });
  EXPECT_EQ(forms, 49 + 56 + 56) << "kv:decode in 49 of the 56 tiers, a qkv_prefix and a kv:mla in each";
}

// shared_qk_batched_short_half_chunks.cu skips every other chunk where p.q == p.k, Skv < 256 and
// the batch is over 2: a shared-QK encoder (Reformer's) on a batch of short sequences. Round 24's
// qk:short and qkv:short forms kept at most 2 sequences and every other Q = K case has 256 keys or
// more, so no pinned run saw the path. Closed: both short forms draw 3 to 16 sequences, so both
// tiers of all 21 fp16 and bf16 runs catch it on qk:short (the first of the two; causal too: a
// short case's last rows see over 32 keys). The twin at one sequence (qk:short:one) keeps the
// class round 24's forms had.
TEST(HackerRound25, ShortQkOverTwoBatchesIsCaughtInEveryRun) {
  int bench = 0;
  const auto runs = catches(batched_qk_short, bench);
  expect_caught_in_every_run(runs, [](const std::string&) { return true; }, {"/shared=qk:short"});
  EXPECT_EQ(bench, 0);
  int batched = 0, single = 0;
  test::each_run_of_both_tiers([&](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    for (const CaseSpec& c : cases) {
      if (!q_is_k(c) || c.shape.seq_kv >= 256) continue;
      const bool one = ends_with(c.id, ":short:one");
      ++(one ? single : batched);
      EXPECT_EQ(batched_qk_short(c), !one) << run << ": " << c.id;
    }
  });
  EXPECT_EQ(batched, 2 * 56) << "qk:short and qkv:short a tier, 3 to 16 sequences";
  EXPECT_EQ(single, 56) << "qk:short:one a tier";
}

// shared_kv_mqa_decode_half_chunks.cu skips every other chunk where p.k == p.v, Hkv = 1 < Hq and
// Sq <= 16: MLA's absorbed decode (DeepSeek-V2/V3: 128 query heads over one latent head that is K
// and V). Round 24's kv:decode kept a random source's heads, so only 3 of the 14 fp16-d64 and
// bf16-d128 runs over both tiers saw it. Closed: every tier has a kv:mla case (one KV head under
// 16 to 128 query heads, a decode step over 256 to 511 keys, 3 to 8 sequences), so both tiers of
// every fp16-d64 and bf16-d128 run catch it, on kv:mla or on a K = V decode step before it that
// happens to have one KV head (the kv case or kv:decode). Causal: nothing to skip.
TEST(HackerRound25, MqaKvDecodeIsCaughtInEveryRun) {
  int bench = 0;
  const auto runs = catches(mqa_kv_decode, bench);
  expect_caught_in_every_run(runs, not_causal, {"/shared=kv", "/shared=kv:decode", "/shared=kv:mla"});
  EXPECT_EQ(bench, 0);
  int mla = 0;
  test::each_run_of_both_tiers([&](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    for (const CaseSpec& c : cases) {
      if (!ends_with(c.id, "/shared=kv:mla")) continue;
      ++mla;
      EXPECT_TRUE(mqa_kv_decode(c) && batched_kv_decode(c)) << run << ": " << c.id;
      EXPECT_GE(c.shape.heads_q, kSharedMlaMinHeads) << run << ": " << c.id;
      EXPECT_LE(c.shape.heads_q, kSharedMlaMaxHeads) << run << ": " << c.id;
      EXPECT_GE(c.shape.seq_kv, kSharedMinKeys) << run << ": " << c.id;
      EXPECT_GT(c.v_std, 0) << run << ": " << c.id;
    }
  });
  EXPECT_EQ(mla, 56) << "a kv:mla case a tier";
}

}  // namespace
}  // namespace evo::hacker_round25
