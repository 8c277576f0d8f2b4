// Hacker round 9 (issue 29 item 5, docs/safety.md 3g): what the op accepts and no tier drew. Each
// test reads a new draw back from what the worker is given (seeds pinned) and fails on round 8's
// gate: no exact zero in any input, no scale below 1/D, every token-major view's heads D apart,
// offsets past int32 only at Sq 1024 and 129, and a launch over kept partials only on the inputs
// that left them. The fills, views and primer themselves run on the GPU only.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "gpu/launch_draws.h"
#include "policy/config.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together, and rounds share helper
// names (PinnedRun, kSplitControl, ...).
namespace evo::hacker_round9 {
namespace {

// Rows of a [B, H, S, D] tensor whose fill (`f`, the case's seed) makes them outlier rows; at most
// `limit` rows looked at.
int64_t outlier_rows(const FillParams& f, int64_t rows, unsigned seed, int64_t limit = 1 << 16) {
  int64_t n = 0;
  for (int64_t r = 0; r < std::min(rows, limit); ++r) n += fill_outlier_row(f.outlier_every, uint64_t(r), seed);
  return n;
}

// zero_q_row_as_padding.cu, zero_k_row_as_empty_slot.cu: near_uniform's every 16th row (by hash)
// is a padding token, exactly zero in Q and in K, in every run.
TEST(HackerRound9, EveryRunHasExactlyZeroQueryAndKeyRows) {
  test::each_pinned_run([](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    int64_t zero_q = 0, zero_k = 0;
    for (const CaseSpec& c : cases) {
      const TensorFills f = tensor_fills(c);
      const Shape& s = c.shape;
      if (c.inputs == "outlier_rows") {
        EXPECT_EQ(f.k.outlier_every, 0u) << c.id << ": outliers scale Q's rows only";
      }
      if (!padding_rows(c)) continue;
      EXPECT_EQ(c.inputs, "near_uniform") << c.id;
      EXPECT_EQ(f.q.outlier_scale, 0.f);
      EXPECT_EQ(f.k.outlier_scale, 0.f);
      zero_q += outlier_rows(f.q, int64_t(s.batch) * s.heads_q * s.seq_q, c.seed);
      zero_k += outlier_rows(f.k, int64_t(s.batch) * s.heads_kv * s.seq_kv, c.seed);
    }
    EXPECT_GE(zero_q, 1) << run << ": no all-zero query row";
    EXPECT_GE(zero_k, 1) << run << ": no all-zero key row";
  });
  // The host replica of evo_fill's row test: about one row in 16, none without outliers.
  int64_t n = 0;
  for (uint64_t r = 0; r < 16000; ++r) n += fill_outlier_row(16, r, 5u);
  EXPECT_NEAR(double(n), 1000.0, 150.0);
  EXPECT_FALSE(fill_outlier_row(0, 0, 0)) << "0: no outlier rows";
}

// scale_floor_2p8.cu: a scale below 1/256 meets the heavy-logit inputs in every run.
TEST(HackerRound9, EveryRunDrawsAScaleBelowOneIn256WithLargeLogits) {
  test::each_pinned_run([](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    std::map<std::string, bool> seen;
    for (const CaseSpec& c : cases)
      if (c.scale > 0 && c.scale < 1.0 / 256) seen[c.inputs] = true;
    EXPECT_TRUE(seen["outlier_rows"] || seen["large_logits"]) << run;
  });
}

// A token-major view (head stride below row stride) of several heads and rows whose heads are not
// D apart (a launch gives a dim of size 1 the stride D: evo_launch_stride).
bool heads_apart(const TensorPlacement& p, int heads, int seq, int head_dim) {
  return heads > 1 && seq > 1 && p.stride[1] < p.stride[2] && p.stride[1] != head_dim;
}

// q_token_major_head_stride_d.cu, o_…, kv_…: kv_cache's seq-major Q, V and O with their heads 16
// bytes wider than D, with several heads, in every run.
TEST(HackerRound9, EveryRunHasTokenMajorViewsWhoseHeadsAreNotDApart) {
  test::each_pinned_run([](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    std::map<std::string, bool> seen;
    for (const CaseSpec& c : cases) {
      const Shape& s = c.shape;
      const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
      seen["Q"] |= heads_apart(l.q, s.heads_q, s.seq_q, s.head_dim);
      seen["O"] |= heads_apart(l.o, s.heads_q, s.seq_q, s.head_dim);
      seen["K or V"] |=
          heads_apart(l.k, s.heads_kv, s.seq_kv, s.head_dim) || heads_apart(l.v, s.heads_kv, s.seq_kv, s.head_dim);
    }
    for (const char* what : {"Q", "O", "K or V"})
      EXPECT_TRUE(seen[what]) << run << ": no token-major " << what << " with heads not D apart";
  });
}

// decode_kv_offsets_int32.cu: the deep tier's far set also as decode steps, whose K offsets pass
// 2^31 elements (a batch's, and in the one-sequence shape a row's).
TEST(HackerRound9, TheDeepTierDecodesOverTheFarCaches) {
  const GatesConfig g = test::repo_gates();
  for (const char* task : {"fp16-d64", "fp16-d128-causal", "bf16-d128", "fp8-d64"}) {
    const Task t = parse_task(task);
    const EvalPlan deep = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u, true});
    std::map<std::string, int64_t> farthest;  // far layout -> the farthest K offset of a decode case
    for (const CaseSpec& c : deep.deep_cases) {
      if (c.shape.seq_q > 16 || (c.layout != "far_batches" && c.layout != "far_rows")) continue;
      const CaseLayout l = case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes());
      const int64_t reach = (c.shape.batch - 1) * l.k.stride[0] + (c.shape.seq_kv - 1) * l.k.stride[2];
      farthest[c.layout] = std::max(farthest[c.layout], reach);
      EXPECT_TRUE(c.device_check.on) << c.id;
    }
    for (const char* layout : {"far_batches", "far_rows"})
      EXPECT_GE(farthest[layout], int64_t(1) << 31) << task << ": no decode step over a " << layout << " cache";
  }
}

// split_cache_by_call.cu: a split kernel's gate case first runs on other inputs at its addresses
// (the worker's primer, gpu/worker.cpp run_gate); the case's first launch keeps what it left.
TEST(HackerRound9, AFirstLaunchAfterAPrimerFindsThePrimersPartials) {
  LaunchDraws d(0x5eed);
  EXPECT_FALSE(d.prefill(LaunchKind::gate_first).keep_partials) << "no primer: stale partials";
  EXPECT_TRUE(d.prefill(LaunchKind::gate_second).keep_partials);
  const uint64_t nonce = d.fresh_inputs();
  EXPECT_EQ(nonce & 1, 1u) << "never the fixed cases' counter 0";
  EXPECT_NE(nonce, d.fresh_inputs()) << "drawn each time";
  EXPECT_FALSE(d.prefill(LaunchKind::gate_primer).keep_partials) << "the primer finds stale partials";
  EXPECT_FALSE(d.verify(LaunchKind::gate_primer)) << "its output is the first launch's pre-fill";
  EXPECT_TRUE(d.prefill(LaunchKind::gate_first).keep_partials) << "the primer's partials";
  EXPECT_TRUE(d.prefill(LaunchKind::gate_second).keep_partials);
  EXPECT_FALSE(d.prefill(LaunchKind::gate_first).keep_partials) << "the next case, not primed";
  EXPECT_FALSE(d.prefill(LaunchKind::timed).keep_partials);
}

}  // namespace
}  // namespace evo::hacker_round9
