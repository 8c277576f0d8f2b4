#include "run/view_layout_cases.h"

#include "run/batch_cases.h"
#include "run/sampler.h"

namespace evo {

namespace {

// Unmasked, `rows[0]` to `rows[1]` query rows over a cache of kLayoutCacheKeys keys; causal, a
// prefill of kLayoutPrefillTokens tokens; drawn from `r`.
void draw_lengths(const Task& task, SplitMix& r, const int (&rows)[2], Shape& s) {
  if (task.causal) {
    s.seq_q = s.seq_kv = r.uniform(kLayoutPrefillTokens[0], kLayoutPrefillTokens[1]);
  } else {
    s.seq_q = r.uniform(rows[0], rows[1]);
    s.seq_kv = r.uniform(kLayoutCacheKeys[0], kLayoutCacheKeys[1]);
  }
}

constexpr int kDecodeRows[2] = {1, kBeamDecodeRows};

}  // namespace

// Round 32's two views (run/view_layout_cases.h).
void append_view_layout_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                              const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                              std::vector<CaseSpec>& out) {
  if (!space.view_layout_cases) return;
  SplitMix r{rng.state ^ fnv1a("view_layout_cases")};
  Shape q;  // GPT-2's Q as c_attn's view, K and V its cache's
  q.batch = r.uniform(1, 2);
  q.heads_kv = r.uniform(1, 4);
  q.heads_q = q.heads_kv * r.uniform(1, kLayoutGroup);
  q.head_dim = task.head_dim;
  q.layout = Layout::bhsd;
  draw_lengths(task, r, kVerifyRows, q);
  if (cut_cache_case(task, rows, "fused_q", q))
    out.push_back(layout_case(gates, space, q, r, "fused_q",
                              task.causal ? "gpt_2_fused_q_prefill" : "gpt_2_fused_q_verify",
                              prefix + std::to_string(out.size())));
  Shape k;  // gpt-fast's head-major cache of a power of two of rows
  k.batch = r.uniform(kLayoutBatch[0], kLayoutBatch[1]);
  k.heads_kv = r.uniform(2, 4);
  k.heads_q = k.heads_kv * r.uniform(1, kLayoutGroup);
  k.head_dim = task.head_dim;
  k.layout = Layout::bshd;
  draw_lengths(task, r, kDecodeRows, k);
  if (cut_cache_case(task, rows, "pow2_cache_bhsd", k))
    out.push_back(layout_case(gates, space, k, r, "pow2_cache_bhsd",
                              task.causal ? "gpt_fast_pow2_cache_prefill" : "gpt_fast_pow2_cache_decode",
                              prefix + std::to_string(out.size())));
}

// Round 33's KV-packed cache (run/view_layout_cases.h).
void append_kv_packed_cases(const GatesConfig& gates, const Task& task, const SampleSpace& space,
                            const SampleRows& rows, const SplitMix& rng, const std::string& prefix,
                            std::vector<CaseSpec>& out) {
  if (!space.kv_packed_cases) return;
  SplitMix r{rng.state ^ fnv1a("kv_packed_cases")};
  Shape s;
  s.batch = r.uniform(1, 4);
  s.heads_kv = r.uniform(1, 4);
  s.heads_q = s.heads_kv * r.uniform(1, kLayoutGroup);
  s.head_dim = task.head_dim;
  s.layout = Layout::bshd;
  draw_lengths(task, r, kDecodeRows, s);
  if (cut_cache_case(task, rows, "kv_packed", s))
    out.push_back(layout_case(gates, space, s, r, "kv_packed",
                              task.causal ? "flash_attn_kv_cache_prefill" : "flash_attn_kv_cache_decode",
                              prefix + std::to_string(out.size())));
}

}  // namespace evo
