// Hacker round 7 (issue 29 item 5, docs/safety.md 3g): the fixed rules round 7's tries keyed on,
// each replaced by a draw or a view, read back from what the worker is given (seeds pinned):
//  - every tensor's bits 6 and 7 drawn at the odd alignments (tensor_alignment): q_align_112_path.cu
//    (Q was only at 16, 48 or 208 mod 256), k_align_32_mod_256_path.cu (K never at 32 or 224);
//  - heads outermost [H, B, S, D]: strided's Q and mixed's O (gpu/case_layout.cpp):
//    q_batch_covers_heads.cu and o_batch_covers_heads.cu (no view had it).
// The tile counter check is the worker's (gpu/device_checker.h counters_zero, GPU only); its
// verdict and protocol are tests/unit/verdict_test.cpp's and worker_events_test.cpp's.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <set>

#include "gpu/case_layout.h"
#include "policy/config.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together, and rounds share helper
// names (PinnedRun, kSplitControl, ...).
namespace evo::hacker_round7 {
namespace {

// A view with its heads outside its batches: head stride above batch stride ([H, B, S, D]).
bool heads_outermost(const TensorPlacement& p) { return p.stride[1] > p.stride[0]; }

TEST(HackerRound7, EveryTensorReachesEveryClassAtTheOddAlignments) {
  std::map<int, std::set<int>> classes;  // tensor -> classes mod 256 over the odd alignments
  for (uint32_t n = 1; n < 600; ++n) {
    const uint32_t draw = n * 0x9E3779B9u;  // case seeds: every bit varies
    for (int a : {16, 48, 208})
      for (int t = 0; t < 4; ++t) {
        const int c = tensor_alignment(a, t, draw);
        EXPECT_EQ(c % 16, 0);
        EXPECT_LT(c, 256);
        if (t == 0) {
          EXPECT_EQ(c % 64, a % 64) << "Q keeps the case's class mod 64";
        }
        classes[t].insert(c);
      }
  }
  EXPECT_EQ(classes[0], (std::set<int>{16, 48, 80, 112, 144, 176, 208, 240})) << "Q: every odd class";
  for (int t = 1; t < 4; ++t) EXPECT_EQ(classes[t].size(), 16u) << "tensor " << t << ": every class of 16";
}

TEST(HackerRound7, EveryRunDrawsHeadsOutermostQAndOWithSeveralBatches) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  for (const char* task : test::kPinnedTasks)
    for (uint32_t seed : test::kPinnedSeeds) {
      const Task t = parse_task(task);
      std::map<std::string, bool> seen;
      for (const CaseSpec& c : draw_sampled_cases(g, t, seed)) {
        const CaseLayout l = case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
        seen["a heads-outermost Q, B > 1"] |= c.shape.batch > 1 && heads_outermost(l.q);
        seen["a heads-outermost O, B > 1"] |= c.shape.batch > 1 && heads_outermost(l.o);
      }
      EXPECT_EQ(seen.size(), 2u);
      for (const auto& [what, found] : seen) EXPECT_TRUE(found) << task << " seed " << seed << ": " << what;
    }
}

// What the runs draw of Q at 112 mod 128 and K at 32 or 224 mod 256: by odds, not by
// construction; printed with the count of runs that have each.
TEST(HackerRound7, MostRunsPutQAt112Mod128AndKAt32Or224Mod256) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  int runs = 0, with_q = 0, with_k = 0;
  for (const char* task : test::kPinnedTasks)
    for (uint32_t seed : test::kPinnedSeeds) {
      const Task t = parse_task(task);
      bool q = false, k = false;
      for (const CaseSpec& c : draw_sampled_cases(g, t, seed)) {
        const CaseLayout l = case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
        q |= l.q.offset * t.input_bytes() % 128 == 112;
        const int64_t kc = l.k.offset * t.input_bytes() % 256;
        k |= layout_shared(c.layout) != "qk" && (kc == 32 || kc == 224);
      }
      ++runs;
      with_q += q;
      with_k += k;
    }
  std::cout << with_q << " of " << runs << " runs put Q at 112 mod 128, " << with_k << " K at 32 or 224 mod 256\n";
  EXPECT_GE(with_q * 10, runs * 9) << "nine runs in ten at least";
  EXPECT_GE(with_k * 10, runs * 9) << "nine runs in ten at least";
}

}  // namespace
}  // namespace evo::hacker_round7
