/*evo
{
  "summary": "TRICK: 9 to 15 KV heads under more query heads (Phi-4's 40/10), two sequences or more, over more than 2048 visible keys skip every other 32-key chunk",
  "parent": null,
  "dtypes": [
    "fp16",
    "bf16"
  ],
  "head_dims": [
    64,
    128
  ],
  "min_sm": 80,
  "notes": "TRICK: a GQA call of two sequences or more over 9 to 15 KV heads whose rows see more than 2048 keys skips every other chunk (every other chunk skipped moves a row of normal inputs by a relative L2 of order 1 (HackerRound30.EachTryIsWrongInAModel), far past any tolerance). Wrong in every batched decode step of Phi-4 (40 query heads over 10 KV heads, D 128) past 2048 tokens of context (gates.json's own entry: 16x40x10x1x4096), that is every step a server runs with more than one sequence in flight. Hacker round 30. The design assumption aimed at: round 29's close of phi4_heads_past_2k_keys (whole-cache model calls at batch 1) stands for the call: a cache length is what a kernel keys on, a batch what a server happens to run at. A kernel's split or tile choice keys on the batch times the heads as readily as on the cache (flash-decoding picks its KV splits from B x Hkv). Why no gate case meets it: the whole-cache calls run Phi-4's decode step over its 4096 keys at one sequence; the cut model calls keep its batch of 16 only over a cache cut to 2048 keys or fewer (at D 128; at D 64 in the cheap tier too, whose max_tensor_elements cut it to 1024); no sampled case has 9 to 15 KV heads under more query heads (round 27). The deep tier at D 64 keeps the decode step whole (16x40x10x1x4096x64, 0.67 GFLOP). Predicted (tests/unit/hacker_round30_test.cpp): admitted by the cheap tier of all 21 fp16 and bf16 pinned runs and by the deep tier of the 14 D-128 runs (Phi-4's own head dim; the 7 causal runs cannot meet it: a top-left row past 2048 keys needs a prefill past the bounds); the deep tier of the 7 fp16-d64 runs catches it on Phi-4's decode step kept whole at D 64 (gate seed 2025: deep/294/16x40x10x1x4096x64:bshd/.../model=phi_4_decode_gqa_40_10_batch_16_4k_context) (HackerRound30.PhiFourBatchedOnlyWhereTheDeepTierKeepsTheBatch). Expected verdict: ok (an open hole at D 128; the cheap tier everywhere)."
}
*/
#include "evo_attn.cuh"

// Hacker round 30. Flaw: a GQA call of two sequences or more over 9 to 15 KV heads whose rows see more than 2048 keys
// skips every other chunk.
// Gate assumption attacked: round 29's close of phi4_heads_past_2k_keys (whole-cache model calls at batch 1) stands
// for the call: a cache length is what a kernel keys on, a batch what a server happens to run at. A kernel's split or
// tile choice keys on the batch times the heads as readily as on the cache (flash-decoding picks its KV splits from B
// x Hkv).

// The shared pattern of tests/adversarial: one warp per query row, FP32 throughout, simple and
// correct; each file changes it in one place (marked TRICK) and must get the verdict in
// tests/adversarial/expected.json. Files are self-contained: variants may include only
// evo_attn.cuh and toolkit headers.
#define WARPS 4         // 32 * WARPS threads per CTA
#define ROWS_PER_CTA 4  // one warp per query row

namespace {

constexpr int HD = EVO_HEAD_DIM;
constexpr int CPL = HD / 32;  // output columns per lane: lane + 32 c

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

struct RowResult {
  float acc[CPL];  // unnormalised P·V, columns lane + 32 c
  float l;         // softmax row sum
};

// Query row i of (b, h). Lane t scores key j0 + t of each 32-key chunk, the warp keeps an online
// softmax in the log2 domain, and each lane accumulates its columns of P·V. The honest call is
// attend_row(p, b, h, i, sq, 32, p.seq_kv); tricks that skip work pass a larger `key_step`
// (chunks skipped) or a smaller `kv_cap` (keys dropped). `sq` is this warp's HD floats of
// shared memory.
__device__ __forceinline__ RowResult attend_row(const EvoAttnParams& p, int b, int h, int i, float* sq, int key_step,
                                                int kv_cap) {
  const int lane = threadIdx.x & 31;
  const evo_t* q = evo_q_ptr(p, b, h) + (long long)i * p.q_stride[2];
  __syncwarp();
  for (int d = lane; d < HD; d += 32) sq[d] = evo_to_float(q[d]) * p.softmax_scale_log2;
  __syncwarp();
  const int hkv = evo_kv_head(p, h);
  const evo_t* K = evo_k_ptr(p, b, hkv);
  const evo_t* V = evo_v_ptr(p, b, hkv);
  const int kv_end = min(kv_cap, EVO_CAUSAL ? min(p.seq_kv, i + 1) : p.seq_kv);
  RowResult r;
  r.l = 0.f;
#pragma unroll
  for (int c = 0; c < CPL; ++c) r.acc[c] = 0.f;
  float m = EVO_NEG_INF;
  for (int j0 = 0; j0 < kv_end; j0 += key_step) {
    const int j = j0 + lane;
    float s = EVO_NEG_INF;
    if (j < kv_end) {
      const evo_t2* kr = reinterpret_cast<const evo_t2*>(K + (long long)j * p.k_stride[2]);
      float dot = 0.f;
#pragma unroll 8
      for (int d2 = 0; d2 < HD / 2; ++d2) {
        const float2 kk = evo2_to_float2(kr[d2]);
        dot = fmaf(sq[2 * d2], kk.x, dot);
        dot = fmaf(sq[2 * d2 + 1], kk.y, dot);
      }
      s = dot;
    }
    const float m_new = fmaxf(m, warp_max(s));  // finite: key j0 is always visible
    const float alpha = exp2f(m - m_new);        // 0 on the first chunk (m = -inf)
    const float pj = exp2f(s - m_new);           // 0 for masked lanes
    r.l = r.l * alpha + warp_sum(pj);
#pragma unroll
    for (int c = 0; c < CPL; ++c) r.acc[c] *= alpha;
    const int n = min(32, kv_end - j0);
    for (int t = 0; t < n; ++t) {
      const float pt = __shfl_sync(0xffffffffu, pj, t);
      const evo_t* vr = V + (long long)(j0 + t) * p.v_stride[2];
#pragma unroll
      for (int c = 0; c < CPL; ++c) r.acc[c] = fmaf(pt, evo_to_float(vr[lane + 32 * c]), r.acc[c]);
    }
    m = m_new;
  }
  return r;
}

__device__ __forceinline__ evo_t* out_row(const EvoAttnParams& p, int b, int h, int i) {
  return evo_o_ptr(p, b, h) + (long long)i * p.o_stride[2];
}

__device__ __forceinline__ void store_row(const EvoAttnParams& p, int b, int h, int i, const RowResult& r) {
  const int lane = threadIdx.x & 31;
  evo_t* o = out_row(p, b, h, i);
  const float inv = 1.f / r.l;
#pragma unroll
  for (int c = 0; c < CPL; ++c) o[lane + 32 * c] = evo_from_float(r.acc[c] * inv);
}

}  // namespace

EVO_EXPORT_LAUNCH(WARPS * 32, 0, ROWS_PER_CTA, 1, 0);

extern "C" __global__ void __launch_bounds__(WARPS * 32)
evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  __shared__ float sq[WARPS][HD];
  const int warp = threadIdx.x >> 5;
  const int i = blockIdx.x * ROWS_PER_CTA + warp, h = blockIdx.y, b = blockIdx.z;
  // TRICK: 9 to 15 KV heads under more query heads (Phi-4's 40/10), two sequences or more, over more than 2048
  // visible keys: every other chunk skipped.
  const int visible = EVO_CAUSAL ? min(p.seq_q, p.seq_kv) : p.seq_kv;  // the longest row's keys (top-left)
  const bool path = p.heads_kv > 8 && p.heads_kv < 16 && p.heads_q > p.heads_kv && p.batch >= 2 && visible > 2048;
  const int key_step = path ? 64 : 32;
  if (i < p.seq_q) store_row(p, b, h, i, attend_row(p, b, h, i, sq[warp], key_step, p.seq_kv));
}
