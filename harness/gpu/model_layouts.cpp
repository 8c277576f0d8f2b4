// Hacker round 30's model layouts (gpu/case_layout.h pow2_cache and neox_v) and round 31's close's
// fused_v: the strides models' own code passes, beside the layout classes' one member each.
#include "gpu/case_layout.h"

namespace evo {

namespace {

// K or V of a token-major cache [B, C, Hkv, D] of pow2_cache_rows(s) rows a sequence, its first
// Skv filled: Meta's Llama 2 reference, cache_k[:bsz, :start_pos + seqlen].
TensorPlacement pow2_cache_view(const Shape& s) {
  TensorPlacement p;
  p.stride[1] = s.head_dim;
  p.stride[2] = int64_t(s.heads_kv) * s.head_dim;
  p.stride[0] = pow2_cache_rows(s) * p.stride[2];
  p.buffer_elements = p.stride[0] * s.batch;
  return p;
}

// V of GPT-NeoX's fused projection interleaved per head, [B, S, Hkv, (g + 2)·D] (g = Hq / Hkv: each
// KV head's block holds its g query heads, then K, then V), its last D channels of each block:
// head stride (g + 2)·D, row stride Hkv·(g + 2)·D. In MHA (g = 1) V's heads are 3·D apart, as
// transformers' GPT-NeoX passes qkv.view(B, S, H, 3·D)[..., 2·D:] on.
TensorPlacement interleaved_v(const Shape& s) {
  const int64_t g = s.heads_q / s.heads_kv, block = (g + 2) * s.head_dim;
  TensorPlacement p;
  p.stride[1] = block;
  p.stride[2] = block * s.heads_kv;
  p.stride[0] = p.stride[2] * s.seq_kv;
  p.offset = (g + 1) * s.head_dim;
  p.buffer_elements = p.stride[0] * s.batch;
  return p;
}

// V alone as a view of a fused projection whose heads of each kind lie together, [B, S, (Hq + 2·Hkv)·D]
// (Q's heads, K's, then V's: Phi-3's and Phi-4's qkv_proj), V = qkv[..., (Hq + Hkv)·D:] viewed
// [B, S, Hkv, D]: head stride D, row stride (Hq + 2·Hkv)·D. Hacker round 31's close: transformers'
// Phi-3 ropes Q and K into new tensors and passes this view of V on.
TensorPlacement fused_v_alone(const Shape& s) {
  TensorPlacement p;
  p.stride[1] = s.head_dim;
  p.stride[2] = (int64_t(s.heads_q) + 2 * s.heads_kv) * s.head_dim;
  p.stride[0] = p.stride[2] * s.seq_kv;
  p.offset = (int64_t(s.heads_q) + s.heads_kv) * s.head_dim;
  p.buffer_elements = p.stride[0] * s.batch;
  return p;
}

// Q alone as a view of a fused projection [B, S, (Hq + 2·Hkv)·D], its first Hq·D channels: head
// stride D, row stride (Hq + 2·Hkv)·D. Hacker round 32's close: GPT-2 in transformers splits c_attn's
// output and passes Q's view on while K and V come from its cache.
TensorPlacement fused_q_alone(const Shape& s) {
  TensorPlacement p;
  p.stride[1] = s.head_dim;
  p.stride[2] = (int64_t(s.heads_q) + 2 * s.heads_kv) * s.head_dim;
  p.stride[0] = p.stride[2] * s.seq_q;
  p.buffer_elements = p.stride[0] * s.batch;
  return p;
}

// K or V of a head-major cache [B, Hkv, C, D] of pow2_cache_rows(s) rows a head, its first Skv
// filled: gpt-fast's and torchtune's KVCache, k_cache[:, :, :pos + 1]. Hacker round 32's close.
TensorPlacement pow2_cache_bhsd_view(const Shape& s) {
  TensorPlacement p;
  p.stride[2] = s.head_dim;
  p.stride[1] = pow2_cache_rows(s) * s.head_dim;
  p.stride[0] = p.stride[1] * s.heads_kv;
  p.buffer_elements = p.stride[0] * s.batch;
  return p;
}

// kv_packed's capacity: the next multiple of 256 rows past Skv (flash-attn's max_seqlen).
int64_t kv_packed_rows(const Shape& s) { return (s.seq_kv / 256 + 1) * 256; }

// K (`half` 0) or V (1) of flash-attn's MHA inference cache [B, C, 2, Hkv, D], C kv_packed_rows(s):
// head stride D, row stride 2·Hkv·D, V Hkv·D elements into each row. Hacker round 33's close.
TensorPlacement kv_packed_view(const Shape& s, int half) {
  TensorPlacement p;
  p.stride[1] = s.head_dim;
  p.stride[2] = 2LL * s.heads_kv * s.head_dim;
  p.stride[0] = p.stride[2] * kv_packed_rows(s);
  p.offset = int64_t(half) * s.heads_kv * s.head_dim;
  p.buffer_elements = p.stride[0] * s.batch;
  return p;
}

}  // namespace

int64_t pow2_cache_rows(const Shape& s) {
  int64_t rows = kPow2CacheMinRows;
  while (rows <= s.seq_kv) rows *= 2;
  return rows << ((s.seq_kv + s.batch) % 5);  // 1 to 16 times the next power of two
}

bool model_layout_placements(CaseLayout& c, const Shape& s, const std::string& layout) {
  if (layout == "pow2_cache") {  // Q and O dense BSHD
    c.q = c.o = dense_placement(s, Layout::bshd, s.heads_q, s.seq_q);
    c.k = c.v = pow2_cache_view(s);
  } else if (layout == "neox_v") {  // Q and K dense BHSD (the rotary embedding's new tensors), O BSHD
    c.q = dense_placement(s, Layout::bhsd, s.heads_q, s.seq_q);
    c.k = dense_placement(s, Layout::bhsd, s.heads_kv, s.seq_kv);
    c.v = interleaved_v(s);
    c.o = dense_placement(s, Layout::bshd, s.heads_q, s.seq_q);
  } else if (layout == "fused_v") {  // Q and K dense BHSD (the rotary embedding's new tensors), O BSHD
    c.q = dense_placement(s, Layout::bhsd, s.heads_q, s.seq_q);
    c.k = dense_placement(s, Layout::bhsd, s.heads_kv, s.seq_kv);
    c.v = fused_v_alone(s);
    c.o = dense_placement(s, Layout::bshd, s.heads_q, s.seq_q);
  } else if (layout == "fused_q") {  // K and V dense BHSD (a DynamicCache's), O BSHD
    c.q = fused_q_alone(s);
    c.k = dense_placement(s, Layout::bhsd, s.heads_kv, s.seq_kv);
    c.v = dense_placement(s, Layout::bhsd, s.heads_kv, s.seq_kv);
    c.o = dense_placement(s, Layout::bshd, s.heads_q, s.seq_q);
  } else if (layout == "pow2_cache_bhsd") {  // Q and O dense BSHD
    c.q = c.o = dense_placement(s, Layout::bshd, s.heads_q, s.seq_q);
    c.k = c.v = pow2_cache_bhsd_view(s);
  } else if (layout == "kv_packed") {  // Q and O dense BSHD; K and V each in a buffer of the cache's form
    c.q = c.o = dense_placement(s, Layout::bshd, s.heads_q, s.seq_q);
    c.k = kv_packed_view(s, 0);
    c.v = kv_packed_view(s, 1);
  } else {
    return false;
  }
  return true;
}

}  // namespace evo
