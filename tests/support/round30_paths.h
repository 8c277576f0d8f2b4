// Hacker round 30's paths (lab/hack30/README.md): each try's test on the call, as its kernel reads
// it, and the pinned-run reading its tests and its close's tests share (support/pinned_catches.h).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "support/fill_mirror.h"
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
// training_step_four_kv_heads_half_chunks.cu: GQA over 4 KV heads or more, 4 sequences or more,
// Sq = Skv >= 2048.
inline bool training_wide_kv(const Call& c) {
  return test::gqa(c) && c.shape.heads_kv >= 4 && c.shape.batch >= 4 && c.shape.seq_q == c.shape.seq_kv &&
         c.shape.seq_q >= 2048;
}
// preallocated_cache_pow2_half_chunks.cu: K and V views of a BSHD cache of C rows a sequence, C a
// power of two of 256 or more past Skv (batch stride C Hkv D, row stride Hkv D, head stride D),
// two sequences or more.
inline bool pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }
inline bool cache_view(const int64_t* stride, const Shape& s) {
  const int64_t row = int64_t(s.heads_kv) * s.head_dim;
  if (stride[1] != s.head_dim || stride[2] != row || stride[0] % row != 0) return false;
  const int64_t rows = stride[0] / row;
  return rows > s.seq_kv && rows >= 256 && pow2(rows);
}
inline bool preallocated_cache(const Call& c) {
  return c.shape.batch >= 2 && cache_view(c.k_stride, c.shape) && cache_view(c.v_stride, c.shape);
}
// gpt_neox_interleaved_v_half_chunks.cu: V's heads 3 D apart and its rows 3 Hkv D: V the last third
// of each head of a fused projection [B, S, H, 3 D].
inline bool interleaved_v(const Call& c) {
  const int64_t d = c.shape.head_dim;
  return c.v_stride[1] == 3 * d && c.v_stride[2] == 3 * d * c.shape.heads_kv;
}
// beam_search_prefill_half_chunks.cu, on the values: Q's last row and K's last row of sequence 1
// (head 0) equal sequence 0's element by element, each with an element that is not zero.
inline bool same_nonzero(const std::vector<float>& a, const std::vector<float>& b) {
  return a == b && std::any_of(a.begin(), a.end(), [](float x) { return x != 0.f; });
}
inline bool beam_rows(const std::vector<float>& q0, const std::vector<float>& q1, const std::vector<float>& k0,
                      const std::vector<float>& k1) {
  return same_nonzero(q0, q1) && same_nonzero(k0, k1);
}
// The same on a case for sequence `other` against sequence 0 (round 31's four beams compare
// sequence 2), its rows read through the host mirror of the fill in the task's dtype.
inline bool repeats_sequence_0(const Task& t, const CaseSpec& c, const Shape& s, int other) {
  if (s.batch <= other || c.shape.batch <= other) return false;
  const test::Mirror m(c, t.dtype == DType::bf16);
  std::vector<float> rows[4];
  for (int d = 0; d < s.head_dim; ++d) {
    rows[0].push_back(m.q(0, 0, uint64_t(s.seq_q - 1), uint64_t(d)));
    rows[1].push_back(m.q(uint64_t(other), 0, uint64_t(s.seq_q - 1), uint64_t(d)));
    rows[2].push_back(m.k(0, 0, uint64_t(s.seq_kv - 1), uint64_t(d)));
    rows[3].push_back(m.k(uint64_t(other), 0, uint64_t(s.seq_kv - 1), uint64_t(d)));
  }
  return beam_rows(rows[0], rows[1], rows[2], rows[3]);
}
inline bool beam_case(const Task& t, const CaseSpec& c, const Shape& s) { return repeats_sequence_0(t, c, s, 1); }
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
// Per fp16 and bf16 pinned run under `g`: the cases of each tier whose call, as its kernel reads it
// (support/kernel_call.h), runs `path`.
inline std::vector<Catch> call_catches(const GatesConfig& g, const std::function<bool(const Call&)>& path,
                                       const char* name) {
  return test::pinned_catches(
      g,
      [&](const Task& t, const CaseSpec& c, const Shape& s) { return path(call_of(s, c.layout, c.scale, t.causal)); },
      name);
}
// A tier `cases` drawn with a kind appended last beside `before` drawn without it: every earlier case
// keeps its id and seed, and each case more (printed for gate seed 2025 fp16-d64, the GPU suite's
// run) carries the tier's prefix and passes `check`. Returns the added cases' FLOPs.
inline double expect_appended_last(const std::string& run, bool deep, const std::vector<CaseSpec>& cases,
                                   const std::vector<CaseSpec>& before,
                                   const std::function<void(const CaseSpec&)>& check) {
  for (size_t i = 0; i < before.size() && i < cases.size(); ++i)
    EXPECT_TRUE(cases[i].id == before[i].id && cases[i].seed == before[i].seed)
        << run << ": " << cases[i].id << " was " << before[i].id;
  double sum = 0;
  for (size_t i = before.size(); i < cases.size(); ++i) {
    if (run == "fp16-d64 cheap seed 2025" || run == "fp16-d64 deep seed 2025") std::cout << "  " << cases[i].id << "\n";
    EXPECT_TRUE(starts_with(cases[i].id, deep ? "deep/" : "sampled/")) << cases[i].id;
    check(cases[i]);
    const Shape& x = cases[i].shape;
    sum += 4.0 * x.batch * x.heads_q * double(x.seq_q) * x.seq_kv * x.head_dim;
  }
  return sum;
}
// Every case of either tier that runs the path names `token` (the GPU suite's caught_by).
inline void expect_every_catch_names(const std::vector<Catch>& runs, const std::string& token) {
  for (const Catch& k : runs)
    for (const auto* ids : {&k.cheap_ids, &k.deep_ids})
      for (const auto& id : *ids) EXPECT_TRUE(names(id, token)) << k.run << ": " << id;
}

}  // namespace evo::test::round30
