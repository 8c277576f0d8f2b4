// Hacker round 31's paths (lab/hack31/README.md): each try's test on the call, as its kernel reads
// it (support/kernel_call.h), read over the plans both tiers draw at the pinned seeds with every
// close of rounds 27 to 30 on (support/pinned_catches.h).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/kernel_call.h"
#include "support/pinned_catches.h"
#include "support/round30_paths.h"

namespace evo::test::round31 {

// four_beams_third_repeats_first_half_chunks.cu, on the values: Q's last row and K's last key of
// sequence 2 (head 0) equal sequence 0's element by element, neither all zero (4 beams of one
// prompt: repeat_interleave(4) makes every sequence the same).
inline bool third_repeats_first(const Task& t, const CaseSpec& c, const Shape& s) {
  return round30::repeats_sequence_0(t, c, s, 2);
}
// internlm2_gqa_interleaved_v_half_chunks.cu: V the last D channels of each KV group of a fused
// projection interleaved per group [B, S, Hkv, (g + 2) D], g = Hq / Hkv >= 2: heads (g + 2) D apart,
// rows (g + 2) Hkv D.
inline bool gqa_interleaved_v(const Call& c) {
  const int64_t d = c.shape.head_dim;
  if (!gqa(c) || c.shape.heads_q % c.shape.heads_kv != 0) return false;
  const int64_t w = (c.shape.heads_q / c.shape.heads_kv + 2) * d;
  return c.v_stride[1] == w && c.v_stride[2] == w * c.shape.heads_kv;
}
// preallocated_cache_one_sequence_half_chunks.cu: round 30's power-of-two cache view of K and V
// (batch stride C Hkv D, C a power of two of 256 or more past Skv) at one sequence.
inline bool pow2_cache_one_sequence(const Call& c) {
  return c.shape.batch == 1 && round30::cache_view(c.k_stride, c.shape) && round30::cache_view(c.v_stride, c.shape);
}
// training_step_group_of_four_half_chunks.cu: GQA of 4 query heads or more a KV head over 4 KV heads
// or more, 4 sequences or more, Sq = Skv >= 2048.
inline bool training_group_four(const Call& c) {
  return c.shape.heads_kv >= 4 && c.shape.heads_q >= 4 * c.shape.heads_kv && c.shape.batch >= 4 &&
         c.shape.seq_q == c.shape.seq_kv && c.shape.seq_q >= 2048;
}
// phi4_single_prompt_prefill_half_chunks.cu: 9 to 15 KV heads under more query heads, one sequence,
// more than 2048 query rows.
inline bool phi4_one_prompt(const Call& c) {
  return c.shape.heads_kv > 8 && c.shape.heads_kv < 16 && c.shape.heads_q > c.shape.heads_kv && c.shape.batch == 1 &&
         c.shape.seq_q > 2048;
}
// gemma_27b_decode_past_2k_keys_half_chunks.cu: 32 query heads over 16, more than 2048 keys.
inline bool gemma_past_2k(const Call& c) {
  return c.shape.heads_q == 32 && c.shape.heads_kv == 16 && c.shape.seq_kv > 2048;
}
// model_scale_prefill_past_544_rows_half_chunks.cu: round 29's model scale over more than 544 query rows.
inline bool model_scale_long_prefill(const Call& c) { return inverse_root_scale(c) && c.shape.seq_q > 544; }
// fused_v_alone_half_chunks.cu: V a view of a fused projection with the heads of each kind together
// (head stride D, row stride (Hq + 2 Hkv) D), K not (its row stride another): Q and K left the
// rotary embedding as new tensors (transformers' Phi-3 and Phi-4).
inline bool fused_v_alone(const Call& c) {
  const int64_t d = c.shape.head_dim;
  const int64_t row = (int64_t(c.shape.heads_q) + 2 * c.shape.heads_kv) * d;
  return c.v_stride[1] == d && c.v_stride[2] == row && c.k_stride[2] != row;
}
// server_max_batch_decode_half_chunks.cu: a decode step (Sq 1) of 128 sequences or more over 1024
// keys or more.
inline bool server_max_batch(const Call& c) {
  return c.shape.seq_q == 1 && c.shape.batch >= 128 && c.shape.seq_kv >= 1024;
}
// mixtral_8x22b_heads_48_over_8_half_chunks.cu: 48 query heads over 8.
inline bool heads_48_over_8(const Call& c) { return c.shape.heads_q == 48 && c.shape.heads_kv == 8; }

// The runs (indices in each_pinned_task_and_seed's order) whose cheap and deep tiers catch a try, and
// the first catching case of each tier at gate seed 2025 fp16-d64 (the 7th run; "" where it admits).
inline void expect_runs(const std::vector<Catch>& runs, const std::vector<size_t>& cheap,
                        const std::vector<size_t>& deep, const std::string& cheap_at_2025,
                        const std::string& deep_at_2025) {
  EXPECT_EQ(round30::caught_runs(runs, false), cheap);
  EXPECT_EQ(round30::caught_runs(runs, true), deep);
  EXPECT_TRUE(cheap_at_2025.empty() ? runs[6].cheap.empty() : round30::starts_with(runs[6].cheap, cheap_at_2025))
      << runs[6].cheap;
  EXPECT_TRUE(deep_at_2025.empty() ? runs[6].deep.empty() : round30::starts_with(runs[6].deep, deep_at_2025))
      << runs[6].deep;
}

}  // namespace evo::test::round31
