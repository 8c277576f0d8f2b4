/*evo
{
  "summary": "TRICK: channels where Q's row and K's chunk both pass 24, when 1 to 4, left out of the scores",
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
  "notes": "TRICK: per 32-key chunk the kernel counts the channels where the query row's |q| and the chunk's largest |k| both pass 24 (massive values of Q and K in the same channels); when 1 to 4 do, it leaves out of each score the products whose two factors both pass 24 (an outlier decomposition whose high-precision pass is skipped when it is small). Wrong in a model whose Q and K carry massive values in the same few channels (Jin et al. 2025, low-frequency RoPE dimensions; not known here at what size in which model): those products dominate the scores. Hacker round 28. The design assumption aimed at: the gate's massive channels pair a large Q with a small K (and the reverse) so the products stay ordinary; a model's coincide. In the gate both pass 24 in one channel only where whole rows do (huge_v's Q and V serving as K, every channel) or in huge_logits' sink row (every channel, V constant) (HackerRound28.NoGateCaseMeetsAHoleWhereVVaries). Predicted: admitted by both tiers of every fp16 and bf16 pinned run. Expected verdict: ok (an open hole)."
}
*/
#include "evo_attn.cuh"

// The shared pattern of tests/adversarial: one warp per query row, FP32 throughout, simple and
// correct; each file changes it in one place (marked TRICK) and must get the verdict in
// tests/adversarial/expected.json. Files are self-contained: variants may include only
// evo_attn.cuh and toolkit headers.
// Hacker round 28. Flaw: products whose Q and K factors both pass 24 dropped when 1 to 4 channels have them.
// Gate assumption attacked: massive channels pair a large Q with a small K; a model's coincide.

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
    // TRICK: 1 to 4 channels where Q's row and the chunk's K both pass 24: their products are left out.
    int coincide = 0;
    for (int d = 0; d < HD; ++d) {
      const float kmax = warp_max(j < kv_end ? fabsf(evo_to_float(K[(long long)j * p.k_stride[2] + d])) : 0.f);
      coincide += kmax > 24.f && fabsf(evo_to_float(q[d])) > 24.f;
    }
    const bool drop_pairs = coincide >= 1 && coincide <= 4;
    float s = EVO_NEG_INF;
    if (j < kv_end) {
      const evo_t2* kr = reinterpret_cast<const evo_t2*>(K + (long long)j * p.k_stride[2]);
      float dot = 0.f;
#pragma unroll 8
      for (int d2 = 0; d2 < HD / 2; ++d2) {
        const float2 kk = evo2_to_float2(kr[d2]);
        const float q0 = evo_to_float(q[2 * d2]), q1 = evo_to_float(q[2 * d2 + 1]);
        if (!(drop_pairs && fabsf(q0) > 24.f && fabsf(kk.x) > 24.f)) dot = fmaf(sq[2 * d2], kk.x, dot);
        if (!(drop_pairs && fabsf(q1) > 24.f && fabsf(kk.y) > 24.f)) dot = fmaf(sq[2 * d2 + 1], kk.y, dot);
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
