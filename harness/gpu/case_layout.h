// Where a case's tensors live in memory. Besides a shape's own BHSD or BSHD, sampled gate cases
// use the layouts real callers hand to attention kernels:
//  - packed_qkv: each of Q, K, V is a view of a fused projection output [B, S, Hq + 2·Hkv, D]
//    at head offset 0, Hq and Hq + Hkv (each view in its own buffer so Sq may differ from
//    Skv; the strides and offsets are those of the fused tensor); O is BSHD;
//  - mixed: Q BSHD with 3 rows of room after each batch's sequence, K seq-major [Skv, B, Hkv, D]
//    (Megatron's layout: batch stride below the row stride, hacker round 5), V a BSHD cache
//    [B, Skv + 37, Hkv, D], O BHSD (no two neighbours share strides; the token-major views'
//    batch strides are not S rows: hacker round 4);
//  - kv_cache: K a BHSD slice of a cache with room for more keys than Skv (head and batch
//    strides larger than Skv·D), V a seq-major cache [Skv + 37, B, Hkv, D] with the same room
//    after the sequence, Q and O seq-major [S, B, H, D] (Megatron's activations; hacker round 6:
//    only mixed's K was seq-major, so a flaw only a seq-major Q, V or O shows was unseen); Q's,
//    V's and O's heads 16 bytes wider than D (hacker round 9: every token-major view had its
//    heads exactly D apart, as a fused QKV interleaved per head or MLA's q_nope slice has not),
//    and a spare batch slot in each of their rows, [S, B + 1, H, D] (hacker round 10: every
//    seq-major view had its row stride B times its batch stride, as a cache preallocated for more
//    sequences than the call has, or a micro-batch's slice, has not); Q a slice of a fused
//    seq-major projection [S, B + 1, Hq + 2·Hkv, D] (hacker round 14: every seq-major view had its
//    batch stride H head strides);
//  - strided: every stride larger than dense: Q BHSD with gaps between heads and batches, K and
//    V a KV cache with capacity (Skv + 19) and gaps between batches, each of Q, K, V with rows
//    16 bytes wider than D elements (no stride a whole number of rows), O a BSHD slice of a
//    buffer with Hq + 1 heads per row and gaps between batches.
//  - pow2_cache (hacker round 30's second close, not a covering-array layout: run/batch_cases.h):
//    K and V token-major views of a KV cache preallocated to pow2_cache_rows(s) rows a sequence
//    [B, C, Hkv, D] (batch stride C·Hkv·D), a power of two past Skv, as Meta's Llama 2 reference
//    slices cache_k[:bsz, :start_pos + seqlen]; Q and O dense BSHD;
//  - neox_v (the same close): V a slice of GPT-NeoX's fused projection interleaved per head,
//    [B, Skv, Hkv, (g + 2)·D] (g = Hq / Hkv; in MHA [B, S, H, 3·D], V the last D of each head:
//    head stride 3·D, row stride 3·Hkv·D, as transformers' GPT-NeoX passes it), in a buffer of its
//    own; Q and K dense BHSD (the rotary embedding's new tensors), O dense BSHD.
//  - fused_v (hacker round 31's close): V alone a view of a fused projection with each kind's heads
//    together [B, Skv, (Hq + 2·Hkv)·D], its last Hkv·D channels (head stride D, row stride
//    (Hq + 2·Hkv)·D, as transformers' Phi-3 and Phi-4 pass qkv[..., (Hq + Hkv)·D:] on), in a buffer
//    of its own; Q and K dense BHSD (the rotary embedding's new tensors), O dense BSHD.
//  - fused_q and pow2_cache_bhsd (hacker round 32's close of its open holes, run/view_layout_cases.h):
//    Q alone a view of a fused projection [B, Sq, (Hq + 2·Hkv)·D], its first Hq·D channels (head
//    stride D, row stride (Hq + 2·Hkv)·D: GPT-2's c_attn split in transformers), K and V dense BHSD
//    (a DynamicCache's), O dense BSHD; and K and V head-major views of a cache preallocated to
//    pow2_cache_rows(s) rows a head [B, Hkv, C, D] (head stride C·D, batch stride Hkv·C·D: gpt-fast's
//    and torchtune's KVCache, k_cache[:, :, :pos + 1]), Q and O dense BSHD.
//  - kv_packed (hacker round 33's close, run/view_layout_cases.h): K and V views of flash-attn's MHA
//    inference cache [B, C, 2, Hkv, D], C the next multiple of 256 rows past Skv (head stride D, row stride 2·Hkv·D,
//    batch stride 2·C·Hkv·D; V Hkv·D elements into each row), each in a buffer of that form; Q and
//    O dense BSHD.
//  - far_batches (the deep tier's fixed `far` set, not sampled): Q and O BHSD, K and V BHSD per
//    batch with a batch stride of 2^31 elements (kFarBatchStride): one stride past int32, as a
//    cache of two sequences far apart in a large pool has it. A decode step's (Sq <= 16, the far
//    set's decode twins) Q and O lie in such slots too, each batch 2^31 elements from the next
//    (hacker round 10: a decode step writing into a large preallocated output).
//  - far_rows (the `far` set's shapes of one batch and one KV head, not sampled): K and V rows
//    kFarRowStride elements apart, so the last row of the sequence lies past 2^31 elements from
//    its first: a seq-major [S, B, H, D] view of a wide fused buffer (Megatron's layout, a packed
//    QKV of a 128-head model at long context) has it; Q and O token-major with their rows as far
//    apart (hacker round 15: they were BHSD, so a 32-bit Q or O row offset passed).
//  - far_heads (the `far` set's shapes of one batch and several KV heads, not sampled): K and V
//    heads outermost, each KV head 2^31 elements (kFarBatchStride) from the next: a per-head
//    cache pool at scale (hacker round 14); Q and O heads outermost with their last head 2^31
//    elements or more past the first (hacker round 15: they were BHSD). far_layout picks one of
//    the three.
// Any of them (and bhsd, bshd) may end in "@A", A a multiple of 16 up to 256: an offset view
// whose tensors start past a 256-byte boundary by tensor_alignment(A, t) bytes mod 256 (A = 256:
// all four on one), at least 256 bytes into their buffers. Buffers start 256-byte aligned, so
// "@16" makes every Q, K, V and O address 16-byte aligned and no more, whatever the layout's own
// offsets (packed views of a D = 128 projection are otherwise always 256-byte aligned), and puts
// each of the four in another class mod 256 (hacker round 4: a kernel that realigned K by Q's
// misalignment was exact when all four shared one).
// A layout may end further in "+qk" (K is Q's view: the same pointer and strides; Hq = Hkv and
// Sq = Skv), "+kv" (V is K's view), "+qv" (V is Q's view, K apart; Hq = Hkv and Sq = Skv) or
// "+qkv" (K and V are Q's view: attention(x, x, x)), as a caller that passes one tensor twice
// does (the domain lets Q, K and V share memory): the second tensor's placement is the first's.
// "+qk_prefix" (kQPrefixOfK; hacker round 24): Q is the first Sq rows of K's view, one base and
// K's strides, Hq = Hkv and Sq < Skv (x[:, :, :Sq] beside x: a prefix of a sequence querying all
// of it); Q keeps its alignment class, K starts there. "+qkv_prefix" (kQPrefixOfKV): the same
// with V K's view too (attention(x[:, :, :Sq], x, x)).
// "packed_qkv+fused" (kFusedQkv; hacker round 29): Q, K and V views of ONE buffer, the fused
// projection [B, S, Hq + 2 Hkv, D] (Sq = Skv): K Hq·D elements after Q, V Hkv·D after K, all three
// with its strides, as nanoGPT's q, k, v = c_attn(x).split(C, 2) passes them. The placements give
// K and V Q's buffer size and their offsets in it; the worker points them into Q's buffer (their
// own stay allocated, unused), whose guard bands surround the whole projection.
// Bytes of a buffer outside the tensor's elements hold the case's junk (gpu/input_fill.h:
// non-finite or finite, drawn per case): a kernel that reads them may spoil its output, one
// that writes O's gaps leaves its elements unwritten.
#pragma once
#include <cstdint>
#include <string>

#include "core/shape.h"

namespace evo {

inline constexpr int64_t kFarBatchStride = int64_t(1) << 31;
// Query rows up to which a far_batches case is a decode step, its Q and O far apart too.
inline constexpr int kFarDecodeRows = 16;
// 2^21 + 4096 elements: 1023 rows of it pass 2^31 (a 1024-key sequence's last row), and it is a
// multiple of 16 bytes for every element size.
inline constexpr int64_t kFarRowStride = (int64_t(1) << 21) + 4096;

struct TensorPlacement {
  int64_t stride[3] = {0, 0, 0};  // batch, head, seq (elements)
  int64_t offset = 0;             // elements from the buffer's start to element (0, 0, 0, 0)
  int64_t buffer_elements = 0;    // what the buffer holds, padding included
};

struct CaseLayout {
  TensorPlacement q, k, v, o;
};

// Throws usage_error for an unknown layout name ("" is the shape's own layout). `in_bytes` and
// `out_bytes` (per element of Q/K/V and of O) place "@A" views in bytes; `draw` (a gate case's
// seed) moves Q, K, V and O of an "@A" view to classes drawn per case (tensor_alignment).
CaseLayout case_layout(const Shape& s, const std::string& layout, int in_bytes = 2, int out_bytes = 2,
                       uint32_t draw = 0);

// Where tensor `tensor` (0 Q, 1 K, 2 V, 3 O) of an "@align" view starts, in bytes mod 256: all
// four on a 256-byte boundary for align 256; else align with bits 6 and 7 flipped by the tensor
// index (Q align, K align ^ 64, V align ^ 128, O align ^ 192). Over the alignments 256, 16, 48 and
// 208 each tensor's bits 4 to 7 are each set in one case and clear in another, each tensor's class
// mod 64 is the case's, and no two tensors share a class mod 256.
int tensor_alignment(int align, int tensor);
// The same with K's, V's and O's classes drawn from `draw` (4 bits a tensor; draw 0 is the rule
// above), so no fixed rule ties a tensor's address to Q's (hacker round 5: a kernel realigned K by
// Q's misalignment mod 64, which the fixed XOR keeps, and one took every tensor to be 256-byte
// aligned when Q was). At align 256 a quarter of the cases have all four aligned, a quarter Q
// aligned and K, V, O each in an odd class of 16 (16, 48, ..., 240), and half Q at a multiple of
// 32 drawn from the draw (32, ..., 224; hacker round 6: Q was never at 32 mod 64, nor at 64 or
// 128 mod 256) with K, V, O each aligned or in an odd class; the case name's "align=256" means Q
// aligned or in an even class. At the other alignments Q keeps the case's class mod 64 and K's,
// V's, O's bits 4 and 5 are flipped by a drawn amount as well, so their class mod 64 is Q's one
// time in four; every tensor's bits 6 and 7 are drawn too (bits 24-31 of the draw; hacker round
// 7: Q was only at 16, 48 or 208, K and V never at 0-63 or 192-255 mod 256), so each tensor
// reaches every odd class of 16 (Q) or every class (K, V, O).
int tensor_alignment(int align, int tensor, uint32_t draw);

// Where a gate case's four buffers lie in one allocation (hacker round 8): Q, K, V and O each
// in its own region (its buffer between its two guard bands), the regions in an order drawn from
// the case's draw (all 24 orders), each after a drawn gap of 0 to 63 · 256 bytes. Each region
// starts on a 256-byte boundary, so every tensor keeps the class case_layout gave it. Before
// round 8 the worker allocated the four in the order Q, K, V, O, so as far as the driver handed
// out rising addresses K lay above Q, V above K and O above the inputs: a kernel that took any K
// below Q as Q's slice (k_below_q_takes_q_strides.cu), the lower of K and V as K, or a distance
// as unsigned was exact in every case. Not pooled (`pooled` false: four allocations as before)
// for draw 0 (the reference, the timing loop), without guard bands (compute-sanitizer: memcheck
// must see each tensor's own bounds) or above kPoolLimitBytes in all (the deep tier's large
// cases keep the allocator's placement, whose distances past 2^31 elements they were built on).
inline constexpr int64_t kPoolLimitBytes = int64_t(1) << 31;
struct BufferPool {
  bool pooled = false;
  int order[4] = {0, 1, 2, 3};       // tensors (0 Q, 1 K, 2 V, 3 O) from the lowest address up
  int64_t start[4] = {0, 0, 0, 0};   // bytes from the pool's start to tensor t's region
  int64_t region[4] = {0, 0, 0, 0};  // tensor t's region: its buffer and both guard bands, rounded to 256
  int64_t bytes = 0;                 // the whole pool
};
BufferPool buffer_pool(const CaseLayout& lay, int in_bytes, int out_bytes, int64_t guard_bytes, uint32_t draw);

// pow2_cache's rows a sequence: the least power of two of kPow2CacheMinRows or more past Skv, times
// 1, 2, 4, 8 or 16 by (Skv + B) mod 5 (a context preallocated past the next power of two).
inline constexpr int64_t kPow2CacheMinRows = 256;
int64_t pow2_cache_rows(const Shape& s);
// A dense tensor of `heads` heads of `seq` rows a sequence in `layout` (BHSD or BSHD).
TensorPlacement dense_placement(const Shape& s, Layout layout, int heads, int seq);
// pow2_cache's, pow2_cache_bhsd's, kv_packed's, neox_v's, fused_v's and fused_q's placements
// (gpu/model_layouts.cpp) into `c`: false for any other name.
bool model_layout_placements(CaseLayout& c, const Shape& s, const std::string& layout);

// The far set's layout for a shape: its batches far apart (far_batches), or, for one batch, its
// KV heads (far_heads), or, for one batch of one KV head, where no batch or head index steps, its
// rows (far_rows).
std::string far_layout(const Shape& s);

// The layout without its "@A" and "+..." suffixes, A (0 when none), and the shared views ("qk",
// "kv", "qv", "qkv", "qk_prefix", "qkv_prefix" or "" when none).
std::string base_layout(const std::string& layout);
int layout_alignment(const std::string& layout);
std::string layout_shared(const std::string& layout);
// Whether Q shares its view with K or V (so Hq = Hkv and Sq = Skv): "qk", "qv", "qkv".
bool shared_with_q(const std::string& shared);
// Q the first Sq < Skv rows of K's view (Hq = Hkv), and of K's and V's one view: their suffixes.
inline constexpr const char* kQPrefixOfK = "qk_prefix";
inline constexpr const char* kQPrefixOfKV = "qkv_prefix";
bool q_prefix(const std::string& shared);  // kQPrefixOfK or kQPrefixOfKV
inline constexpr const char* kFusedQkv = "fused";
// Whether K starts at Q's address ("qk", "qkv" and the prefixes), and V ("qv", "qkv", kQPrefixOfKV).
bool k_at_q(const std::string& shared);
bool v_at_q(const std::string& shared);

}  // namespace evo
