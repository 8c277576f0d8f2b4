// Hacker round 6 (issue 29 item 5, docs/safety.md 3g): the fixed rules round 6's tries keyed on,
// each replaced by a draw or a view, read back from what the worker is given (seeds pinned):
//  - seq-major Q, V and O in layout kv_cache (gpu/case_layout.cpp): q_, v_ and
//    o_batch_stride_at_least_seq.cu (only mixed's K was seq-major);
//  - two-stream cases whose second problem shares Q, or K and V, with the first
//    (CaseSpec::streams_share): q_prescaled_in_place.cu;
//  - Q's class drawn at align 256 (tensor_alignment): q_align_32_path.cu.
// The static check for state kept between calls is tests/unit/call_state_test.cpp's.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "gpu/case_layout.h"
#include "policy/config.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together, and rounds share helper
// names (PinnedRun, kSplitControl, ...).
namespace evo::hacker_round6 {
namespace {

// A view with its batch inside the row: batch stride below the row stride (Megatron's [S, B, H, D]).
bool seq_major(const TensorPlacement& p) { return p.stride[0] < p.stride[2]; }

TEST(HackerRound6, EveryRunDrawsSeqMajorQVAndOAndTwoStreamCasesThatShareInputs) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  for (const char* task : test::kPinnedTasks)
    for (uint32_t seed : test::kPinnedSeeds) {
      const Task t = parse_task(task);
      std::map<std::string, bool> seen;
      for (const CaseSpec& c : draw_sampled_cases(g, t, seed)) {
        const Shape& s = c.shape;
        const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
        const std::string shared = layout_shared(c.layout);
        seen["a seq-major Q, B > 1"] |= s.batch > 1 && seq_major(l.q);
        seen["a seq-major V, B > 1"] |= s.batch > 1 && shared != "kv" && seq_major(l.v);
        seen["a seq-major O, B > 1"] |= s.batch > 1 && seq_major(l.o);
        EXPECT_EQ(c.two_streams, !c.streams_share.empty()) << c.id;
        if (c.two_streams) {
          EXPECT_NE(c.id.find("/streams=2:" + c.streams_share), std::string::npos) << c.id << ": the name says what";
          seen["two streams, Q shared"] |= c.streams_share == "q";
          seen["two streams, K and V shared"] |= c.streams_share == "kv";
        }
      }
      EXPECT_EQ(seen.size(), 5u) << task << " seed " << seed;
      for (const auto& [what, yes] : seen) EXPECT_TRUE(yes) << task << " seed " << seed << ": no case with " << what;
    }
}

// Q at align 256: aligned, or (in the half where not all four are) a multiple of 32 drawn over
// every even class; at the other alignments the case's class mod 64, as the case name says.
TEST(HackerRound6, QIsDrawnIntoEveryEvenClassAtAlign256) {
  std::set<int> q_classes;
  for (uint32_t n = 1; n < 600; ++n) {
    const uint32_t draw = n * 0x9E3779B9u;
    for (int a : {16, 48, 208}) EXPECT_EQ(tensor_alignment(a, 0, draw) % 64, a % 64);  // round 7: bits 6-7 drawn
    const int q = tensor_alignment(256, 0, draw);
    EXPECT_EQ(q % 32, 0);
    q_classes.insert(q % 256);
  }
  EXPECT_EQ(q_classes, (std::set<int>{0, 32, 64, 96, 128, 160, 192, 224}));
}

// What the runs draw of Q at 32 mod 64 (q_align_32_path.cu's path): by odds, not by
// construction; printed with the count of runs that have it.
TEST(HackerRound6, MostRunsPutQAt32Mod64) {
  const GatesConfig g = load_gates_config(test::source_root() / "gates" / "gates.json");
  int runs = 0, with = 0, at256 = 0;
  for (const char* task : test::kPinnedTasks)
    for (uint32_t seed : test::kPinnedSeeds) {
      const Task t = parse_task(task);
      bool found = false;
      for (const CaseSpec& c : draw_sampled_cases(g, t, seed)) {
        const CaseLayout l = case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
        at256 += layout_alignment(c.layout) == 256;
        found |= l.q.offset * t.input_bytes() % 64 == 32;
      }
      ++runs;
      with += found;
    }
  std::cout << with << " of " << runs << " runs put Q at 32 mod 64 (" << double(at256) / runs
            << " align=256 cases a run)\n";
  EXPECT_GE(with * 10, runs * 9) << "nine runs in ten at least";
}

}  // namespace
}  // namespace evo::hacker_round6
