// Hacker round 10 (issue 29 item 5, docs/safety.md 3g): what the op accepts and no tier drew. Each
// test reads a new draw back from what the worker is given (seeds pinned) and fails on round 9's
// gate: every Hkv 1 or even and every MHA head count even, at most 16 sequences a sampled case,
// every seq-major view dense in the batch, a decode step's Q and O small and dense in every far
// case, no scale below 1/1024, no V offset for fp8 tasks. The views and inputs themselves run on
// the GPU only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
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
namespace evo::hacker_round10 {
namespace {

// kv_heads_in_pairs.cu, mha_heads_in_pairs.cu: a GQA case with an odd Hkv above 1 and an MHA case
// with an odd head count above 1 in every run (each head class's configs in turn, each class with
// an odd config).
TEST(HackerRound10, EveryRunHasAnOddKvHeadCountAndAnOddMhaHeadCount) {
  test::each_pinned_run([](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    bool odd_gqa = false, odd_mha = false;
    for (const CaseSpec& c : cases) {
      const Shape& s = c.shape;
      odd_gqa |= s.heads_kv > 1 && s.heads_kv % 2 == 1 && s.heads_q > s.heads_kv;
      odd_mha |= s.heads_q > 1 && s.heads_q % 2 == 1 && s.heads_q == s.heads_kv;
    }
    EXPECT_TRUE(odd_gqa) << run << ": no GQA case with an odd Hkv above 1";
    EXPECT_TRUE(odd_mha) << run << ": no MHA case with an odd head count above 1";
  });
}

// many_batches_dense_kv.cu: more than 16 sequences in every layout, in every run (the batch class
// `crowd`, a pair of the covering array with every layout).
TEST(HackerRound10, EveryRunHasMoreThan16SequencesInEveryLayout) {
  test::each_pinned_run([](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    std::map<std::string, int> most;  // base layout -> the largest batch
    for (const CaseSpec& c : cases) most[base_layout(c.layout)] = std::max(most[base_layout(c.layout)], c.shape.batch);
    for (const char* layout : {"bhsd", "bshd", "packed_qkv", "mixed", "kv_cache", "strided"})
      EXPECT_GT(most[layout], 16) << run << ": no " << layout << " case of more than 16 sequences";
  });
}

// A seq-major view (batch stride below row stride) of several batches and rows whose row stride
// is not B times its batch stride.
bool room_between_batches(const TensorPlacement& p, int batch, int seq) {
  return batch > 1 && seq > 1 && p.stride[0] < p.stride[2] && p.stride[2] != batch * p.stride[0];
}

// kv_seq_major_rows_from_batch.cu, o_seq_major_rows_from_batch.cu: kv_cache's seq-major V and O
// with a spare batch slot in each row, with several batches and rows, in every run.
TEST(HackerRound10, EveryRunHasSeqMajorViewsWithRoomBetweenTheirBatches) {
  test::each_pinned_run([](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    std::map<std::string, bool> seen;
    for (const CaseSpec& c : cases) {
      const Shape& s = c.shape;
      const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
      seen["K or V"] |= room_between_batches(l.k, s.batch, s.seq_kv) || room_between_batches(l.v, s.batch, s.seq_kv);
      seen["O"] |= room_between_batches(l.o, s.batch, s.seq_q);
    }
    for (const char* what : {"K or V", "O"})
      EXPECT_TRUE(seen[what]) << run << ": no seq-major " << what << " with room between its batches";
  });
}

// o_decode_offsets_int32.cu: the far set's decode twin over far batches reads Q and writes O past
// 2^31 elements from their bases (batch 1's slot).
TEST(HackerRound10, TheDeepTierDecodesIntoFarQAndO) {
  const GatesConfig g = test::repo_gates();
  for (const char* task : test::kPinnedTasks) {
    const Task t = parse_task(task);
    const EvalPlan deep = make_plan(g, {t, g.gate_sets, g.benchmark_sets, g.seeds, false, 2025u, true});
    int64_t q_reach = 0, o_reach = 0;
    for (const CaseSpec& c : deep.deep_cases) {
      if (c.shape.seq_q > 16 || c.layout != "far_batches") continue;
      const CaseLayout l = case_layout(c.shape, c.layout, t.input_bytes(), t.output_bytes());
      const int64_t rows = c.shape.seq_q - 1, heads = c.shape.heads_q - 1, last = c.shape.batch - 1;
      q_reach = std::max(q_reach, last * l.q.stride[0] + heads * l.q.stride[1] + rows * l.q.stride[2]);
      o_reach = std::max(o_reach, last * l.o.stride[0] + heads * l.o.stride[1] + rows * l.o.stride[2]);
      EXPECT_TRUE(c.device_check.on) << c.id;
    }
    EXPECT_GE(q_reach, int64_t(1) << 31) << task << ": no decode step reading Q past 2^31 elements";
    EXPECT_GE(o_reach, int64_t(1) << 31) << task << ": no decode step writing O past 2^31 elements";
  }
  // The prefill far case keeps its dense Q and O (its work is K's and V's offsets).
  const Shape s = parse_shape("2x16x16x1024x1024xD", 64);
  const CaseLayout l = case_layout(s, "far_batches");
  EXPECT_EQ(l.q.stride[0], int64_t(16) * 1024 * 64);
  EXPECT_EQ(l.k.stride[0], kFarBatchStride);
}

// scale_floor_2p10.cu: a scale below 2^-11 in every run (the range 1e-05..0.125/D in place of the
// point 0.125/D), where a floor at 2^-10 at least doubles the scores.
TEST(HackerRound10, EveryRunDrawsAScaleBelowOneIn2048) {
  test::each_pinned_run([](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    double least = 1;
    for (const CaseSpec& c : cases) least = std::min(least, c.scale);
    EXPECT_LT(least, 1.0 / 2048) << run;
    EXPECT_GE(least, 1e-5) << run;
  });
}

// fp8_pv_fp16_accumulator.cu: fp8 tasks draw V with an offset (v_offset) over rows of more than
// 256 keys, where a raw-e4m3 sum near 448 a key passes 65 504.
TEST(HackerRound10, Fp8RunsDrawVWithAnOffsetOverLongRows) {
  test::each_pinned_run([](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    if (t.dtype != DType::fp8) return;
    bool seen = false;
    for (const CaseSpec& c : cases) seen |= c.inputs == "v_offset" && c.v_mean != 0 && c.shape.seq_kv > 256;
    EXPECT_TRUE(seen) << run << ": no V with an offset over more than 256 keys";
  });
}

}  // namespace
}  // namespace evo::hacker_round10
