// Hacker round 30's paths (lab/hack30/README.md): each try's test on the call, as its kernel reads
// it, and the pinned-run reading its tests and its close's tests share (support/pinned_catches.h).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/kernel_call.h"
#include "support/pinned_catches.h"

namespace evo::test::round30 {

// phi4_heads_batched_past_2k_keys_half_chunks.cu: 9 to 15 KV heads under more query heads, two
// sequences or more, a row over more than 2048 keys.
inline bool phi4_batched(const Call& c) {
  return c.shape.heads_kv > 8 && c.shape.heads_kv < 16 && c.shape.heads_q > c.shape.heads_kv && c.shape.batch >= 2 &&
         c.shape.visible_kv(c.causal) > 2048;
}
// gemma_scale_past_512_keys_half_chunks.cu: round 29's model scale over more than 512 keys.
inline bool model_scale_long(const Call& c) { return test::inverse_root_scale(c) && c.shape.seq_kv > 512; }
// fused_qkv_past_512_tokens_half_chunks.cu: round 29's fused projection of more than 512 tokens.
inline bool fused_long(const Call& c) { return test::fused_qkv(c) && c.shape.seq_q > 512; }
// padded_decode_batch_half_chunks.cu: a GQA decode step (Sq 1) of 32 sequences or more, a multiple
// of 8, over 2048 keys or more.
inline bool padded_decode(const Call& c) {
  return c.shape.seq_q == 1 && c.shape.batch >= 32 && c.shape.batch % 8 == 0 && test::gqa(c) && c.shape.seq_kv >= 2048;
}
// gemma_27b_heads_32_over_16_half_chunks.cu: 32 query heads over 16 KV heads.
inline bool gemma_27b_heads(const Call& c) { return c.shape.heads_q == 32 && c.shape.heads_kv == 16; }
// k_outlier_channels_bhsd_cache_half_chunks.cu: a head's keys contiguous and its heads a
// sequence apart (dense BHSD, transformers' DynamicCache), more than 512 keys, and 1 to 4 channels
// of K's first 32 keys past 24 (round 29's test: support/value_paths.h).
inline bool bhsd_long(const Call& c) {
  const int64_t d = c.shape.head_dim;
  return c.k_stride[2] == d && c.k_stride[1] == d * c.shape.seq_kv && c.shape.seq_kv > 512;
}
// The runs (each_pinned_task_and_seed's order: fp16-d64 0 to 6, bf16-d128 7 to 13,
// fp16-d128-causal 14 to 20) where a tier catches the try.
inline std::vector<size_t> caught_runs(const std::vector<Catch>& runs, bool deep) {
  std::vector<size_t> at;
  for (size_t i = 0; i < runs.size(); ++i)
    if (!(deep ? runs[i].deep : runs[i].cheap).empty()) at.push_back(i);
  return at;
}
inline std::vector<size_t> span(size_t from, size_t to) {
  std::vector<size_t> at;
  for (size_t i = from; i < to; ++i) at.push_back(i);
  return at;
}
inline bool names(const std::string& id, const std::string& token) { return id.find(token) != std::string::npos; }
inline bool starts_with(const std::string& id, const std::string& head) { return id.rfind(head, 0) == 0; }
// Every case of either tier that runs the path names `token` (the GPU suite's caught_by).
inline void expect_every_catch_names(const std::vector<Catch>& runs, const std::string& token) {
  for (const Catch& k : runs)
    for (const auto* ids : {&k.cheap_ids, &k.deep_ids})
      for (const auto& id : *ids) EXPECT_TRUE(names(id, token)) << k.run << ": " << id;
}

}  // namespace evo::test::round30
