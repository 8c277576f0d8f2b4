// Hacker round 11 (issue 29 item 5, docs/safety.md 3g): what the op accepts and no tier drew. Each
// test reads a draw back from what the worker is given (seeds pinned) and fails on round 10's
// gate: a view's stride class was drawn for the tensor a try used (Q, V or O) and not for K, and
// no V row was ever zero. The rule the rounds missed is tested for each tensor on its own: every
// stride class the layouts know, for each of Q, K, V and O, in every run. The views and inputs
// themselves run on the GPU only.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gpu/case_layout.h"
#include "gpu/input_fill.h"
#include "policy/config.h"
#include "run/sampler.h"
#include "support/pinned_runs.h"
#include "support/test_support.h"

// A namespace of its own: the unity build batches test files together, and rounds share helper
// names (PinnedRun, kSplitControl, ...).
namespace evo::hacker_round11 {
namespace {

// The stride classes of one view of [B, H, S, D] (strides in elements: batch, head, row), each
// read only where the dims it is about step (B > 1, H > 1, S > 1): a kernel that assumes the
// dense relation between two strides is exact on every view without the class.
std::vector<std::string> stride_classes(const TensorPlacement& p, int batch, int heads, int seq, int dim) {
  const int64_t sb = p.stride[0], sh = p.stride[1], ss = p.stride[2];
  std::vector<std::string> out;
  if (batch < 2 || heads < 2 || seq < 2) return out;
  if (sh > sb) out.push_back("heads outermost");                                // [H, B, S, D]
  if (ss > sh && sh != dim) out.push_back("token-major, heads not D apart");    // round 9's class
  if (ss > sb && ss != batch * sb) out.push_back("seq-major with batch room");  // round 10's
  if (sb > heads * sh && sb > seq * ss) out.push_back("batch gap");             // capacity after a sequence
  return out;
}

// kv_batch_covers_heads.cu, k_token_major_head_stride_d.cu, k_seq_major_rows_from_batch.cu: every
// stride class above for each of Q, K, V and O, in every run (a view added for one tensor does not
// close the class for the others).
TEST(HackerRound11, EveryRunDrawsEveryStrideClassForEachTensor) {
  const char* const names[4] = {"Q", "K", "V", "O"};
  const char* const classes[] = {"heads outermost", "token-major, heads not D apart", "seq-major with batch room",
                                 "batch gap"};
  test::each_pinned_run([&](const Task& t, const std::string& run, const std::vector<CaseSpec>& cases) {
    std::map<std::string, bool> seen;
    for (const CaseSpec& c : cases) {
      const Shape& s = c.shape;
      const CaseLayout l = case_layout(s, c.layout, t.input_bytes(), t.output_bytes(), c.seed);
      const TensorPlacement* const views[4] = {&l.q, &l.k, &l.v, &l.o};
      for (int i = 0; i < 4; ++i) {
        const bool query_side = i == 0 || i == 3;
        for (const std::string& k : stride_classes(*views[i], s.batch, query_side ? s.heads_q : s.heads_kv,
                                                   query_side ? s.seq_q : s.seq_kv, s.head_dim))
          seen[std::string(names[i]) + ": " + k] = true;
      }
    }
    for (const char* n : names)
      for (const char* k : classes)
        EXPECT_TRUE(seen[std::string(n) + ": " + k]) << run << ": no " << n << " view is " << k;
  });
}

// zero_kv_row_as_empty_slot.cu: near_uniform's padding tokens are exactly zero in K and in V, the
// same tokens (one hash of the logical row), in every run.
TEST(HackerRound11, EveryRunHasKeysWhoseKAndVRowsAreBothZero) {
  test::each_pinned_run([](const Task&, const std::string& run, const std::vector<CaseSpec>& cases) {
    int64_t both = 0;
    for (const CaseSpec& c : cases) {
      if (!padding_rows(c)) continue;
      const TensorFills f = tensor_fills(c);
      EXPECT_EQ(f.v.outlier_scale, 0.f) << c.id;
      EXPECT_EQ(f.v.outlier_every, f.k.outlier_every) << c.id << ": V's zero rows are K's";
      const int64_t rows = int64_t(c.shape.batch) * c.shape.heads_kv * c.shape.seq_kv;
      for (int64_t r = 0; r < std::min<int64_t>(rows, 1 << 16); ++r)
        both += fill_outlier_row(f.k.outlier_every, uint64_t(r), c.seed) &&
                fill_outlier_row(f.v.outlier_every, uint64_t(r), c.seed);
    }
    EXPECT_GE(both, 1) << run << ": no key whose K and V rows are both zero";
  });
}

// The views the round added, on one shape: mixed's seq-major K with padded heads and a spare batch
// slot, kv_cache's K and strided's V with their heads outermost.
TEST(HackerRound11, KAndVGetTheViewsQAndOHad) {
  const Shape s = parse_shape("3x8x4x100x200xD", 64);
  const CaseLayout mixed = case_layout(s, "mixed", 2, 2);
  EXPECT_EQ(mixed.k.stride[1], 64 + 8) << "heads 16 bytes wider than D";
  EXPECT_EQ(mixed.k.stride[2], (3 + 1) * mixed.k.stride[0]) << "a spare batch slot in each row";
  const CaseLayout cache = case_layout(s, "kv_cache", 2, 2);
  EXPECT_GT(cache.k.stride[1], cache.k.stride[0]) << "K heads outermost";
  EXPECT_EQ(cache.k.stride[0], (200 + 37) * 64);
  const CaseLayout strided = case_layout(s, "strided", 2, 2);
  EXPECT_GT(strided.v.stride[1], strided.v.stride[0]) << "V heads outermost";
  EXPECT_LT(strided.k.stride[1], strided.k.stride[0]) << "K keeps its gapped BHSD view";
}

}  // namespace
}  // namespace evo::hacker_round11
