#include "gpu/case_layout.h"

#include <algorithm>
#include <numeric>

#include "core/errors.h"
#include "core/splitmix.h"

namespace evo {

TensorPlacement dense_placement(const Shape& s, Layout layout, int heads, int seq) {
  Shape t = s;
  t.layout = layout;
  TensorPlacement p;
  t.strides(heads, seq, p.stride);
  p.buffer_elements = t.elements(heads, seq);
  return p;
}

namespace {

// One tensor's view of a fused [B, S, Hq + 2·Hkv, D] projection, starting at head `first`.
TensorPlacement packed(const Shape& s, int seq, int first) {
  const int64_t row = int64_t(s.heads_q + 2 * s.heads_kv) * s.head_dim;
  TensorPlacement p;
  p.stride[0] = row * seq;
  p.stride[1] = s.head_dim;
  p.stride[2] = row;
  p.offset = int64_t(first) * s.head_dim;
  p.buffer_elements = row * seq * s.batch;
  return p;
}

// A BHSD tensor with `row_pad` elements after each row (its rows are not a whole number of D
// elements apart: a D-wide view of wider rows), gaps between its heads (`head_gap` rows) and
// between its batches (`batch_gap` rows): a KV cache with capacity for more than `seq`
// positions, a Q slice.
TensorPlacement gapped_bhsd(const Shape& s, int heads, int seq, int row_pad, int head_gap, int batch_gap) {
  TensorPlacement p;
  p.stride[2] = s.head_dim + row_pad;
  p.stride[1] = int64_t(seq + head_gap) * p.stride[2];
  p.stride[0] = p.stride[1] * heads + int64_t(batch_gap) * p.stride[2];
  p.buffer_elements = p.stride[0] * s.batch;
  return p;
}

// Heads outermost [H, B, S, D] (a head-parallel buffer: tensor-parallel shards side by side, a
// per-head cache pool): the batch stride below the head stride (hacker round 7: every view had
// its batch stride at least its heads' span). `row_pad` elements after each row, `batch_gap`
// rows after each sequence, `head_gap` rows after each head's batches.
TensorPlacement heads_outermost(const Shape& s, int heads, int seq, int row_pad, int batch_gap, int head_gap) {
  TensorPlacement p;
  p.stride[2] = s.head_dim + row_pad;
  p.stride[0] = int64_t(seq + batch_gap) * p.stride[2];
  p.stride[1] = p.stride[0] * s.batch + int64_t(head_gap) * p.stride[2];
  p.buffer_elements = p.stride[1] * heads;
  return p;
}

// A tensor of `heads` heads of `seq` rows per batch, each batch's 2^31 elements from the next
// (kFarBatchStride): K or V of a cache holding each sequence far from the next, or a decode step's
// Q or O in per-sequence slots of a large pool; the one stride at or past 2^31 a call within the
// domain's 2^32-element span can have.
TensorPlacement far_batches(const Shape& s, int heads, int seq) {
  TensorPlacement p;
  p.stride[2] = s.head_dim;
  p.stride[1] = int64_t(seq) * s.head_dim;
  p.stride[0] = kFarBatchStride;
  if (p.stride[1] * heads > kFarBatchStride)
    throw usage_error("case layout far_batches: a batch holds more than 2^31 elements");
  p.buffer_elements = kFarBatchStride * (s.batch - 1) + p.stride[1] * heads;
  return p;
}

// K or V of one sequence of one KV head whose rows lie kFarRowStride elements apart: a row offset
// (row index times row stride) past 2^31 inside the sequence. The size-1 dims' strides are never
// stepped over; they are the span, as a dense tensor's would be.
TensorPlacement far_rows(const Shape& s) {
  if (s.batch != 1 || s.heads_kv != 1) throw usage_error("case layout far_rows: one batch and one KV head");
  if ((s.seq_kv - 1) * kFarRowStride < kFarBatchStride)
    throw usage_error("case layout far_rows: Skv must be at least 1024 for a row 2^31 elements past the first");
  TensorPlacement p;
  p.stride[2] = kFarRowStride;
  p.stride[1] = p.stride[0] = kFarRowStride * s.seq_kv;
  p.buffer_elements = kFarRowStride * (s.seq_kv - 1) + s.head_dim;
  return p;
}

// A tensor of one sequence whose heads lie far apart, heads outermost: head h at h times the
// smallest multiple of 16 elements (16 bytes for every element size) that puts the last head 2^31
// elements or more past the first (two heads: kFarBatchStride apart). A per-head cache pool [Hkv,
// B, S_cache, D] at scale (kv_cache's K) or a head-parallel buffer [H, B, S, D] has its heads that
// far apart; a head offset past int32 (hacker round 14: the far set moved batches and rows, never
// heads; round 15: then K's and V's heads only, so a 32-bit query head offset passed). The size-1
// batch's stride is the span, never stepped.
TensorPlacement far_heads(const Shape& s, int heads, int seq) {
  if (s.batch != 1 || heads < 2) throw usage_error("case layout far_heads: one batch and at least two heads");
  TensorPlacement p;
  p.stride[2] = s.head_dim;
  p.stride[1] = (kFarBatchStride / (heads - 1) + 15) / 16 * 16;
  p.buffer_elements = p.stride[1] * (heads - 1) + int64_t(seq) * s.head_dim;
  p.stride[0] = p.buffer_elements;
  return p;
}

// Q or O of one sequence, token-major, whose rows lie kFarRowStride elements apart (its heads D
// apart inside each row): a slice of a wide fused activation buffer [S, C] at long context, so the
// last of 1024 rows lies past 2^31 elements from the first (hacker round 15: far_rows moved K's
// and V's rows only, and a 32-bit output row offset passed).
TensorPlacement far_token_rows(const Shape& s, int heads, int seq) {
  if (s.batch != 1 || int64_t(heads) * s.head_dim > kFarRowStride)
    throw usage_error("case layout far_rows: one batch, and a row's heads within kFarRowStride elements");
  TensorPlacement p;
  p.stride[1] = s.head_dim;
  p.stride[2] = kFarRowStride;
  p.buffer_elements = kFarRowStride * (seq - 1) + int64_t(heads) * s.head_dim;
  p.stride[0] = p.buffer_elements;
  return p;
}

// A token-major (BSHD) tensor with `room` rows of S after each batch's sequence: a KV cache laid
// out [B, S_cache, H, D] (flash_attn_with_kvcache's k_cache), or a slice of a padded projection
// [B, S_max, H, D]; the batch stride is not S rows (hacker round 4: every token-major view was
// dense over its sequence).
TensorPlacement token_major_room(const Shape& s, int heads, int seq, int room) {
  TensorPlacement p;
  p.stride[1] = s.head_dim;
  p.stride[2] = int64_t(heads) * s.head_dim;
  p.stride[0] = int64_t(seq + room) * p.stride[2];
  p.buffer_elements = p.stride[0] * s.batch;
  return p;
}

// A seq-major [S, B, H, D] tensor (Megatron's layout): the batch inside the row, its stride H·D
// below the row stride B·H·D (hacker round 5: every view had its batch stride largest). With
// `head_pad` elements after each head, a D-wide view of wider heads: Megatron's and GPT-NeoX's
// fused QKV interleaved per head ([S, B, H, 3·D] split on the last dim), MLA's q_nope sliced out of
// 192 columns (hacker round 9: every token-major view drawn had its heads exactly D apart). With
// `batch_room` spare batch slots in each row, [S, B + room, H, D]: a seq-major cache or output
// preallocated for more sequences than the call has (hacker round 10: every seq-major view drawn
// had its row stride B times its batch stride). With `head_room` more heads in each batch's slot,
// [S, B, H + room, D]: a slice of Megatron's fused seq-major projection [S, B, Hq + 2·Hkv, D]
// (hacker round 14: every seq-major view drawn had its batch stride H head strides).
TensorPlacement seq_major(const Shape& s, int heads, int seq, int head_pad = 0, int batch_room = 0, int head_room = 0) {
  TensorPlacement p;
  p.stride[1] = s.head_dim + head_pad;
  p.stride[0] = int64_t(heads + head_room) * p.stride[1];
  p.stride[2] = p.stride[0] * (s.batch + batch_room);
  p.buffer_elements = p.stride[2] * seq;
  return p;
}

// O as a BSHD slice of a bigger buffer: a row of Hq + 1 heads, `batch_gap` rows between batches.
TensorPlacement inside_bigger(const Shape& s, int batch_gap) {
  TensorPlacement p;
  p.stride[1] = s.head_dim;
  p.stride[2] = int64_t(s.heads_q + 1) * s.head_dim;
  p.stride[0] = p.stride[2] * s.seq_q + int64_t(batch_gap) * s.head_dim;
  p.buffer_elements = p.stride[0] * s.batch;
  return p;
}

// Moves a tensor `lead` bytes further into its buffer: its address becomes `align` mod 256.
void offset_view(TensorPlacement& p, int align, int bytes) {
  const int64_t target = align % 256, at = p.offset * bytes;
  const int64_t lead = 256 + ((target - at) % 256 + 256) % 256;
  p.offset += lead / bytes;
  p.buffer_elements += lead / bytes;
}

}  // namespace

int tensor_alignment(int align, int tensor) {
  if (align % 256 == 0) return align;  // every pointer on a 256-byte boundary: the aligned case
  return align ^ (64 * tensor);        // bits 4-5 kept, bits 6-7 flipped per tensor
}

int tensor_alignment(int align, int tensor, uint32_t draw) {
  const int d = int(draw >> (4 * tensor)) & 15;
  if (draw == 0) return tensor_alignment(align, tensor);
  if (align % 256 == 0) {
    // Four kinds by bits 16 and 20 of the draw: all four aligned; Q aligned and K, V, O each in an
    // odd class of 16 (16, 48, ..., 240); and in half the cases Q at a multiple of 32 drawn from
    // bits 17-19 (32 mod 64 five times in eight: hacker round 6, Q's class was one of four) with
    // K, V, O each aligned or in an odd class.
    const int kind = int(draw >> 16 & 1) | int(draw >> 20 & 1) << 1;
    if (tensor == 0) return kind < 2 ? align : 32 * (1 + int((draw >> 17 & 7) % 7));
    if (kind == 0) return align;
    if (kind == 1) return 16 * (2 * (d & 7) + 1);
    return d < 8 ? align : 16 * (2 * (d - 8) + 1);
  }
  // Bits 6-7 drawn for every tensor from bits 24-31 (hacker round 7: Q's odd classes were 16, 48
  // and 208, K's and V's bits 6-7 fixed by the case's alignment), so each of the four reaches
  // every odd class; Q keeps the case's class mod 64, which the name records.
  const int high = 64 * int(draw >> (24 + 2 * tensor) & 3);
  if (tensor == 0) return tensor_alignment(align, 0) ^ high;
  return tensor_alignment(align, tensor) ^ (16 * (d & 3)) ^ high;  // bits 4-5 drawn too
}

BufferPool buffer_pool(const CaseLayout& lay, int in_bytes, int out_bytes, int64_t guard_bytes, uint32_t draw) {
  BufferPool pool;
  const TensorPlacement* const tensors[4] = {&lay.q, &lay.k, &lay.v, &lay.o};
  int64_t total = 0;
  for (int t = 0; t < 4; ++t) {
    const int64_t bytes = tensors[t]->buffer_elements * (t == 3 ? out_bytes : in_bytes) + 2 * guard_bytes;
    pool.region[t] = (bytes + 255) / 256 * 256;
    total += pool.region[t] + 63 * 256;
  }
  if (draw == 0 || guard_bytes == 0 || total > kPoolLimitBytes) return pool;
  pool.pooled = true;
  // splitmix64 of the draw: bits independent of those tensor_alignment reads from the draw itself.
  const uint64_t h = SplitMix{draw}.next();
  // The order: the (h mod 24)-th of the 24 in lexicographic order.
  std::iota(pool.order, pool.order + 4, 0);
  for (uint64_t n = h % 24; n > 0; --n) std::next_permutation(pool.order, pool.order + 4);
  int64_t at = 0;
  for (int i = 0; i < 4; ++i) {
    at += 256 * int64_t(h >> (8 + 6 * i) & 63);  // the gap before this region
    pool.start[pool.order[i]] = at;
    at += pool.region[pool.order[i]];
  }
  pool.bytes = at;
  return pool;
}

std::string far_layout(const Shape& s) {
  if (s.batch > 1) return "far_batches";
  return s.heads_kv == 1 ? "far_rows" : "far_heads";
}

bool shared_with_q(const std::string& shared) { return shared == "qk" || shared == "qv" || shared == "qkv"; }

bool q_prefix(const std::string& shared) { return shared == kQPrefixOfK || shared == kQPrefixOfKV; }
bool k_at_q(const std::string& shared) { return shared == "qk" || shared == "qkv" || q_prefix(shared); }
bool v_at_q(const std::string& shared) { return shared == "qv" || shared == "qkv" || shared == kQPrefixOfKV; }

std::string base_layout(const std::string& layout) { return layout.substr(0, layout.find_first_of("@+")); }

std::string layout_shared(const std::string& layout) {
  const auto plus = layout.find('+');
  if (plus == std::string::npos) return "";
  const std::string pair = layout.substr(plus + 1);
  if (pair != "qk" && pair != "kv" && pair != "qv" && pair != "qkv" && !q_prefix(pair) && pair != kFusedQkv)
    throw usage_error("bad case layout '" + layout +
                      "': after '+' comes qk, kv, qv, qkv, qk_prefix, qkv_prefix or fused");
  return pair;
}

int layout_alignment(const std::string& layout) {
  const auto at = layout.find('@');
  if (at == std::string::npos) return 0;
  const std::string a = layout.substr(at + 1, layout.find('+', at) - at - 1);  // npos: to the end
  for (int v = 16; v <= 256; v += 16)
    if (a == std::to_string(v)) return v;
  throw usage_error("bad case layout '" + layout + "': the alignment after '@' is a multiple of 16 up to 256");
}

namespace {
// A layout's "@A" alignment class per tensor and its "+qk", "+kv", "+qv", "+qkv", "+qk_prefix" or
// "+qkv_prefix" sharing, on the placements its base layout made.
void align_and_share(CaseLayout& c, const Shape& s, const std::string& full, int align, int in_bytes, int out_bytes,
                     uint32_t draw) {
  if (align) {
    TensorPlacement* const tensors[4] = {&c.q, &c.k, &c.v, &c.o};
    for (int t = 0; t < 4; ++t)
      offset_view(*tensors[t], tensor_alignment(align, t, draw), t == 3 ? out_bytes : in_bytes);
  }
  const std::string shared = layout_shared(full);
  if (shared_with_q(shared) && (s.heads_q != s.heads_kv || s.seq_q != s.seq_kv))
    throw usage_error("case layout '" + full + "': a view shared with Q needs Hq = Hkv and Sq = Skv");
  if (q_prefix(shared)) {
    // Q the first Sq rows of K's view: K's strides from Q's base (Q keeps its alignment class, as
    // K takes Q's in "+qk"), in a buffer that holds K's whole span from there.
    if (s.heads_q != s.heads_kv || s.seq_q >= s.seq_kv)
      throw usage_error("case layout '" + full + "': Q a prefix of K's view needs Hq = Hkv and Sq < Skv");
    TensorPlacement p = c.k;
    p.buffer_elements += c.q.offset - c.k.offset;
    p.offset = c.q.offset;
    c.q = c.k = p;
    if (shared == kQPrefixOfKV) c.v = p;
  }
  if (shared == kFusedQkv) {
    // K and V in Q's buffer at their head offsets, with Q's strides: one fused projection's
    // output [B, S, Hq + 2 Hkv, D] (packed_qkv's placements, which put K and V in buffers of
    // their own, each as large as Q's, which holds the whole projection from its start).
    if (base_layout(full) != "packed_qkv" || s.seq_q != s.seq_kv)
      throw usage_error("case layout '" + full + "': one fused buffer is packed_qkv's, with Sq = Skv");
    c.k = c.v = c.q;
    c.k.offset += int64_t(s.heads_q) * s.head_dim;
    c.v.offset += int64_t(s.heads_q + s.heads_kv) * s.head_dim;
  }
  if (shared == "qk" || shared == "qkv") c.k = c.q;
  if (shared == "qv" || shared == "qkv") c.v = c.q;
  if (shared == "kv") c.v = c.k;
}

// The far set's layouts (far_layout): false for any other name.
bool far_placements(CaseLayout& c, const Shape& s, const std::string& layout) {
  if (layout == "far_batches") {
    // A decode step (Sq <= 16) writes its O, and reads its Q, in per-sequence slots 2^31 elements
    // apart too (hacker round 10: every decode case's Q and O were small and dense).
    const bool decode = s.seq_q <= kFarDecodeRows;
    c.q = decode ? far_batches(s, s.heads_q, s.seq_q) : dense_placement(s, Layout::bhsd, s.heads_q, s.seq_q);
    c.o = decode ? far_batches(s, s.heads_q, s.seq_q) : c.q;
    c.k = c.v = far_batches(s, s.heads_kv, s.seq_kv);
  } else if (layout == "far_rows") {
    // Q's and O's rows far apart too (hacker round 15), token-major: every tensor's row offset
    // passes 2^31 in one case (a decode twin's single row only moves K and V).
    c.q = c.o = far_token_rows(s, s.heads_q, s.seq_q);
    c.k = c.v = far_rows(s);
  } else if (layout == "far_heads") {
    // Q's and O's heads far apart too (hacker round 15): every tensor's head offset passes 2^31.
    c.q = c.o = far_heads(s, s.heads_q, s.seq_q);
    c.k = c.v = far_heads(s, s.heads_kv, s.seq_kv);
  } else {
    return false;
  }
  return true;
}
}  // namespace

CaseLayout case_layout(const Shape& s, const std::string& full, int in_bytes, int out_bytes, uint32_t draw) {
  const std::string layout = base_layout(full);
  const int align = layout_alignment(full);
  CaseLayout c;
  if (layout.empty() || layout == "bhsd" || layout == "bshd") {
    const Layout l = layout.empty() ? s.layout : (layout == "bshd" ? Layout::bshd : Layout::bhsd);
    c.q = c.o = dense_placement(s, l, s.heads_q, s.seq_q);
    c.k = c.v = dense_placement(s, l, s.heads_kv, s.seq_kv);
  } else if (layout == "packed_qkv") {
    c.q = packed(s, s.seq_q, 0);
    c.k = packed(s, s.seq_kv, s.heads_q);
    c.v = packed(s, s.seq_kv, s.heads_q + s.heads_kv);
    c.o = dense_placement(s, Layout::bshd, s.heads_q, s.seq_q);
  } else if (layout == "mixed") {
    // Q and V token-major with room after each batch (3 and 37 rows: no tile size divides them),
    // K seq-major [Skv, B + 1, Hkv, D + pad] (padded heads, a spare batch slot: hacker round 11,
    // as kv_cache's Q, V, O), O dense with its heads outermost [H, B, S, D] (hacker round 7).
    c.q = token_major_room(s, s.heads_q, s.seq_q, 3);
    c.k = seq_major(s, s.heads_kv, s.seq_kv, 16 / in_bytes, 1);
    c.v = token_major_room(s, s.heads_kv, s.seq_kv, 37);
    c.o = heads_outermost(s, s.heads_q, s.seq_q, 0, 0, 0);
  } else if (layout == "kv_cache") {
    // K a per-head cache pool [Hkv, B, Skv + 37, D] (heads outermost: hacker round 11, only Q and
    // O had a batch stride below their heads' span), V a seq-major cache [Skv + 37, B, Hkv, D] (37:
    // room no tile size divides), Q and O seq-major [S, B, H, D] (Megatron's activations; hacker
    // round 6), the three with heads 16 bytes wider than D, the least gap the domain allows (hacker
    // round 9: head strides not D), and a spare batch slot in each row, [S, B + 1, H, D] (hacker
    // round 10: row stride not B times the batch stride); Q a slice of a fused seq-major projection,
    // its batch's slot holding K's and V's heads too (hacker round 14: every seq-major view's batch
    // stride was H head strides).
    c.q = seq_major(s, s.heads_q, s.seq_q, 16 / in_bytes, 1, 2 * s.heads_kv);
    c.o = seq_major(s, s.heads_q, s.seq_q, 16 / out_bytes, 1);
    c.k = heads_outermost(s, s.heads_kv, s.seq_kv, 0, 37, 0);
    c.v = seq_major(s, s.heads_kv, s.seq_kv + 37, 16 / in_bytes, 1);
  } else if (layout == "strided") {
    // Every batch and head stride above dense, by amounts no tile size divides; Q, K and V rows
    // 16 bytes wider than D elements (the least gap the domain allows), so no stride is a whole
    // number of D-element rows; Q and V with their heads outermost [H, B, S + gap, D + pad] and
    // rows after each head (hacker rounds 7 and 11: no view of Q, then of K or V, had its batch
    // stride below its heads' span); K BHSD with gaps after each head and batch.
    const int pad = 16 / in_bytes;
    c.q = heads_outermost(s, s.heads_q, s.seq_q, pad, 5, 3);
    c.k = gapped_bhsd(s, s.heads_kv, s.seq_kv, pad, 19, 7);  // Skv capacity: Skv + 19
    c.v = heads_outermost(s, s.heads_kv, s.seq_kv, pad, 19, 11);
    c.o = inside_bigger(s, 2);
  } else if (!far_placements(c, s, layout) && !model_layout_placements(c, s, layout)) {
    throw usage_error(
        "unknown case layout '" + layout +
        "': use packed_qkv, mixed, kv_cache, strided, pow2_cache, pow2_cache_bhsd, kv_packed, neox_v, fused_v, "
        "fused_q, far_batches, far_rows or far_heads");
  }
  align_and_share(c, s, full, align, in_bytes, out_bytes, draw);
  return c;
}

}  // namespace evo
