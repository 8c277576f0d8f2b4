/*evo
{
  "summary": "TRICK: a view whose batch stride is below its row stride taken as seq-major [S, B, H, D]: batch offset b * H head strides",
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
  "notes": "TRICK: every tensor's batch offset is b * batch stride, except when the batch stride is below the row stride: such a view is taken as seq-major [S, B, H, D] (Megatron's activations, the only token-major order with the batch inside the row a generator has seen) and its batch offset as b * H * head stride (heads outermost inside a batch's slot). Exact on every view of both tiers on main: the seq-major views (kv_cache's Q, V and O, mixed's K: [S, B + 1, H, D + pad]) have batch stride = H head strides, whatever their head padding and spare batch slot; every other view has its batch stride at or above its row stride (heads-outermost Q, V, O and K: the batch stride is S rows; decode views with Sq = 1 have them equal). Wrong on views the op accepts: a Q, K or V sliced out of Megatron's fused projection [S, B, Hq + 2 Hkv, D] (batch stride (Hq + 2 Hkv) D: the un-interleaved QKV linear's output, before any copy), and the batch-innermost views [S, H, B, D] and [H, S, B, D] (batch stride D, drawn by no tier): batch b > 0 reads another batch's or another head's rows, or past the tensor. Hacker round 14 (issue 29 item 5), round 13's batch-innermost leftover. The design assumption aimed at: the seq-major views are one stride order with one relation (batch stride = H x head stride) in every tier. Should be caught by: a seq-major view whose batch slot holds more than its tensor's heads (kv_cache's Q as a slice of a fused seq-major projection). Expected verdict: ok (admitted) on main, both tiers."
}
*/
#include "evo_attn.cuh"

// Hacker round 14 (issue 29 item 5). Flaw: a view whose batch stride is below its row stride is taken as Megatron's [S, B, H, D]: batch offset b * H * head stride.
// Gate assumption attacked: every view drawn with its batch below its rows (seq-major) has its heads exactly filling a batch's slot (batch stride = H x head stride).
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

// TRICK: a view whose batch stride is below its row stride is taken as seq-major [S, B, H, D]
// (Megatron's), its batch offset b * H head strides; every other view's is b * its batch stride.
__device__ __forceinline__ long long batch_offset(const long long* stride, int heads, int b) {
  return stride[0] < stride[2] ? (long long)b * heads * stride[1] : (long long)b * stride[0];
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
  const evo_t* q = static_cast<const evo_t*>(p.q) + batch_offset(p.q_stride, p.heads_q, b) + h * p.q_stride[1] +
                   (long long)i * p.q_stride[2];
  __syncwarp();
  for (int d = lane; d < HD; d += 32) sq[d] = evo_to_float(q[d]) * p.softmax_scale_log2;
  __syncwarp();
  const int hkv = evo_kv_head(p, h);
  const evo_t* K = static_cast<const evo_t*>(p.k) + batch_offset(p.k_stride, p.heads_kv, b) + hkv * p.k_stride[1];
  const evo_t* V = static_cast<const evo_t*>(p.v) + batch_offset(p.v_stride, p.heads_kv, b) + hkv * p.v_stride[1];
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
  return static_cast<evo_t*>(p.o) + batch_offset(p.o_stride, p.heads_q, b) + h * p.o_stride[1] +
         (long long)i * p.o_stride[2];
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
  if (i < p.seq_q) store_row(p, b, h, i, attend_row(p, b, h, i, sq[warp], 32, p.seq_kv));
}
