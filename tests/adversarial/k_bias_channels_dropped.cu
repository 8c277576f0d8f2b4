/*evo
{
  "summary": "TRICK: K's bias channels (a full chunk's mean past 8, spread under it), when 1 to 4, left out of the scores",
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
  "notes": "TRICK: per full 32-key chunk the kernel marks K's channels whose mean over the chunk passes 8 in magnitude while their spread (max - min) stays under it (a per-channel bias shared by the keys); when 1 to 4 channels are so marked it leaves them out of the chunk's scores, as a softmax-invariant shift (true only of a bias equal in every key of the row, not of one per chunk). Wrong in a model whose K has a few large per-channel offsets that vary from key to key (SageAttention, Zhang et al. 2025, reports a channel-wise bias in K shared by its tokens and subtracts the mean over all of them; Qwen2's k_proj has a bias; whether any model's offset channel keeps its spread under its mean over 32 keys is not known here): the offsets' variation moves the scores and dropping it loses it. Hacker round 28. The design assumption aimed at: K carries no per-channel mean. In the gate K's channel means are zero but for V's offset bands serving as K (D/2 channels) and whole rows (huge_v's Q as K: every channel) (HackerRound28.NoGateCaseMeetsAHoleWhereVVaries). Predicted: admitted by both tiers of every fp16 and bf16 pinned run. Expected verdict: ok (an open hole)."
}
*/
#include "evo_attn.cuh"

// The shared pattern of tests/adversarial: one warp per query row, FP32 throughout, simple and
// correct; each file changes it in one place (marked TRICK) and must get the verdict in
// tests/adversarial/expected.json. Files are self-contained: variants may include only
// evo_attn.cuh and toolkit headers.
// Hacker round 28. Flaw: K's few bias channels (large mean, small spread over a full chunk) dropped from the scores.
// Gate assumption attacked: K's channels carry no mean; a model's K has a few offset channels.

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
  __shared__ float keep_all[WARPS][HD];  // TRICK: a channel's weight in the scores, 0 for a bias channel
  float* keep = keep_all[threadIdx.x >> 5];
  for (int j0 = 0; j0 < kv_end; j0 += key_step) {
    const int j = j0 + lane;
    // TRICK: 1 to 4 bias channels over a full chunk (|mean| > 8, max - min < |mean|): left out of its scores.
    int biased = 0;
    __syncwarp();
    if (kv_end - j0 >= 32) {
      for (int d = 0; d < HD; ++d) {
        const float x = evo_to_float(K[(long long)j * p.k_stride[2] + d]);
        const float mean = warp_sum(x) / 32.f, spread = warp_max(x) + warp_max(-x);
        const bool bias = fabsf(mean) > 8.f && spread < fabsf(mean);
        biased += bias;
        if (lane == 0) keep[d] = bias ? 0.f : 1.f;
      }
    }
    __syncwarp();
    const bool drop_bias = biased >= 1 && biased <= 4;
    float s = EVO_NEG_INF;
    if (j < kv_end) {
      const evo_t2* kr = reinterpret_cast<const evo_t2*>(K + (long long)j * p.k_stride[2]);
      float dot = 0.f;
#pragma unroll 8
      for (int d2 = 0; d2 < HD / 2; ++d2) {
        const float2 kk = evo2_to_float2(kr[d2]);
        dot = fmaf(drop_bias ? sq[2 * d2] * keep[2 * d2] : sq[2 * d2], kk.x, dot);
        dot = fmaf(drop_bias ? sq[2 * d2 + 1] * keep[2 * d2 + 1] : sq[2 * d2 + 1], kk.y, dot);
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
  if (i < p.seq_q) store_row(p, b, h, i, attend_row(p, b, h, i, sq[warp], 32, p.seq_kv));
}
