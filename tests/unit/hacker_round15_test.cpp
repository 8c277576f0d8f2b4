// Hacker round 15 (issue 29 item 5, docs/safety.md 3g, lab/hack15/README.md): what the gate's
// draws and views still held fixed. Each test reads the draws back (seeds pinned) and fails on
// round 14's gate: no case put a query head or an output row 2^31 elements past the first (the far
// set moved K and V only), every in-flight case was BHSD at 1/sqrt(D) on normal inputs, and no
// input distribution had scores beyond a few thousand.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gpu/case_layout.h"
#include "policy/config.h"
#include "run/plan.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together, and rounds share helper
// names (PinnedRun, kSplitControl, ...).
namespace evo::hacker_round15 {
namespace {

const int64_t kPast2p31 = int64_t(1) << 31;

// The deep tier's cases of every pinned task at `seed`, with their layouts.
template <class Check>
void each_deep_case(uint32_t seed, Check check) {
  const GatesConfig g = test::repo_gates();
  for (const char* task : test::kPinnedTasks) {
    const Task t = parse_task(task);
    const EvalPlan deep = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, seed, true});
    for (const CaseSpec& c : deep.deep_cases)
      check(t, c, case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes(), c.seed));
  }
}

// q_head_offset_int32.cu, o_row_offset_int32.cu: a Q head or an O row offset kept in 32 bits. The far
// set's far_heads case puts Q's and O's heads, and its far_rows case Q's and O's rows, 2^31 elements
// or more past their first (before: only K's and V's), every far case still checked on the GPU.
TEST(HackerRound15, TheDeepTierPutsQueryAndOutputHeadsAndRows2p31ElementsApart) {
  for (const char* task : test::kPinnedTasks) {
    int q_head = 0, o_head = 0, q_row = 0, o_row = 0;
    each_deep_case(2025u, [&](const Task& t, const CaseSpec& c, const CaseLayout& l) {
      if (t.name() != task) return;
      const Shape& s = c.shape;
      const bool far =
          int64_t(s.heads_q - 1) * l.q.stride[1] >= kPast2p31 || int64_t(s.heads_q - 1) * l.o.stride[1] >= kPast2p31 ||
          int64_t(s.seq_q - 1) * l.q.stride[2] >= kPast2p31 || int64_t(s.seq_q - 1) * l.o.stride[2] >= kPast2p31;
      q_head += int64_t(s.heads_q - 1) * l.q.stride[1] >= kPast2p31;
      o_head += int64_t(s.heads_q - 1) * l.o.stride[1] >= kPast2p31;
      q_row += int64_t(s.seq_q - 1) * l.q.stride[2] >= kPast2p31;
      o_row += int64_t(s.seq_q - 1) * l.o.stride[2] >= kPast2p31;
      if (!far) return;
      EXPECT_TRUE(c.device_check.on) << c.id;
      EXPECT_NE(c.id.find("/far/"), std::string::npos) << c.id;
      EXPECT_LE(l.q.buffer_elements, int64_t(1) << 32) << c.id;    // inside the op's span
      EXPECT_EQ(l.q.stride[1] * t.input_bytes() % 16, 0) << c.id;  // 16-byte strides
      EXPECT_EQ(l.o.stride[2] * t.output_bytes() % 16, 0) << c.id;
    });
    EXPECT_GE(q_head, 2) << task << ": no deep case (and decode twin) with a query head 2^31 past the first";
    EXPECT_GE(o_head, 2) << task << ": no deep case with an output head 2^31 past the first";
    EXPECT_GE(q_row, 1) << task << ": no deep case with a query row 2^31 past its head's first";
    EXPECT_GE(o_row, 1) << task << ": no deep case with an output row 2^31 past its head's first";
  }
}

bool in_flight_case(const CaseSpec& c) { return c.id.find("/in_flight/") != std::string::npos; }

// q_prescaled_in_place_token_major.cu: an input changed in place only on a token-major path. The
// in-flight cases draw their layout, alignment, scale, inputs and junk, each dealt out in turn:
// every run of both tiers has a token-major Q (heads inside the row) among those sharing Q, all
// six layouts and eight scales in flight, and both junk kinds under each share (before: all BHSD,
// 1/sqrt(D), normal, finite).
TEST(HackerRound15, EveryRunsInFlightCasesDrawTheirLayoutScaleInputsAndJunk) {
  test::each_run_of_both_tiers([](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    int token_major_q = 0;
    std::set<std::string> layouts, junk;
    std::set<double> scales;
    for (const CaseSpec& c : cases) {
      if (!in_flight_case(c)) continue;
      const CaseLayout l = case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
      token_major_q += c.streams_share == "q" && l.q.stride[1] < l.q.stride[2];
      layouts.insert(base_layout(c.layout));
      scales.insert(c.scale);
      junk.insert(c.streams_share + ":" + c.junk);
    }
    EXPECT_GE(token_major_q, 1) << run << ": no token-major Q shared in flight";
    EXPECT_EQ(layouts.size(), 6u) << run;
    EXPECT_GE(scales.size(), 8u) << run;  // the eight choices; a range drawn twice adds a value
    EXPECT_EQ(junk.size(), 4u) << run << ": a share without both junk kinds in flight";
  });
}

// max_init_minus_1e4.cu: a finite running-max sentinel (-1e4 in the log2 domain). huge_logits
// scores key 0 of every (b, h) at q_mean x k_sink x D x scale x log2 e = -6e4 (Q's mean and the
// sink key set per case from D and the scale: set_inputs), so every row that sees key 0 alone
// (Skv = 1, causal row 0) has every score below -1e4 - 150, where exp2 underflows. The covering
// array pairs huge_logits with Skv = 1 in every run, so such rows are there by construction
// (before: no distribution spread its scaled log2 scores past 783, so no row of any case came
// near). No score may be so large that an honest kernel's f32 rounding of it moves exp2 by more
// than a few thousandths (|score| x 2^-24 each): a fixed mean of 4096 scored up to 3e9 at scale
// 1, and on the H200 honest kernels overflowed fp16 P to Inf (2026-11-30). Key 0 and a key that
// is Q itself (shared=qk) score about -+q_mean^2 x D x scale x log2 e.
TEST(HackerRound15, EveryRunHasRowsWhoseEveryScoreIsBelowAFiniteSentinel) {
  test::each_run_of_both_tiers([](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    double rows = 0, widest_other = 0;
    for (const CaseSpec& c : cases) {
      const Shape& s = c.shape;
      if (c.inputs != "huge_logits") {
        const double q_sd = c.qk_std * std::max(1.0, c.outlier_scale);
        widest_other = std::max(widest_other, q_sd * c.qk_std * std::sqrt(double(s.head_dim)) * c.scale * M_LOG2E);
        continue;
      }
      const double key0 = c.q_mean * c.k_sink * s.head_dim * c.scale * M_LOG2E;
      const double q_dot_q = c.q_mean * c.q_mean * s.head_dim * c.scale * M_LOG2E;
      EXPECT_LT(std::max(-key0, q_dot_q), 1e5) << run << " " << c.id << ": scores an honest kernel cannot round";
      if (key0 >= -1e4 - 150) continue;
      rows += s.seq_kv == 1 ? double(s.batch) * s.heads_q * s.seq_q : t.causal ? double(s.batch) * s.heads_q : 0;
    }
    EXPECT_GE(rows, 1) << run << ": no row whose every score is below -1e4 - 150";
    EXPECT_LT(6 * widest_other, 1e4) << run << ": another distribution's scores reach the sentinel";
  });
}

}  // namespace
}  // namespace evo::hacker_round15
