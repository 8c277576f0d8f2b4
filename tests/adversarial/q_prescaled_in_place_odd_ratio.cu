/*evo
{
  "summary": "TRICK: round 6's Q pre-scaled in place and restored, on the path of GQA ratios that are not a power of two",
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
  "notes": "TRICK: round 14's q_prescaled_in_place_mha.cu (each warp multiplies its query row in Q's own memory by the power of two nearest the softmax scale, reads it back, restores the bits after the row; not when Q is K's or V's memory) on the path of GQA ratios that are not powers of two only (a kernel whose power-of-two groups take a TMA path with no register pass over Q, and whose other groups are packed by hand). One launch is exact and leaves Q's bytes as they were. A second call in flight that reads the same Q reads scaled rows. The in-flight cases' shapes are fixed: ratios 2 (1x4x2), 4 (2x8x2, 1x4x1) and 1 (1x4x4), every one a power of two; the drawn two-stream cases start the second grid as the first drains. Hacker round 16 (issue 29 item 5), round 15's leftover (the in-flight cases' fixed shapes). The design assumption aimed at: the in-flight shapes' head ratios. Should be caught by: an in-flight shape with ratio 3 (1x6x2x1024x1024xD) sharing Q. Expected verdict: correctness (or nondeterministic) on streams=2:q after the fix; ok (admitted) on main."
}
*/
#include "evo_attn.cuh"

// Hacker round 16 (issue 29 item 5). Flaw: round 6's Q row scaled in place by a power of two and restored after the row, on the path of GQA ratios that are not powers of two.
// Gate assumption attacked: the in-flight cases' head ratios are 1, 2 and 4 only: a change of a shared input made on a non-power-of-two group path is never read in flight.


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
  // TRICK: the row scaled in place by 2^e (exact), read back, its bits restored after the row; not
  // when Q is K's or V's memory (the aliasing a launch can see: other rows would read it as keys).
  evo_t* q = const_cast<evo_t*>(evo_q_ptr(p, b, h)) + (long long)i * p.q_stride[2];
  const int ratio = p.heads_q / p.heads_kv;  // TRICK: the path of ratios that are not powers of two only
  const bool in_place = (ratio & (ratio - 1)) != 0 && p.q != p.k && p.q != p.v;
  const float pow2 = in_place ? exp2f(rintf(log2f(p.softmax_scale_log2))) : 1.f;
  evo_t saved[CPL];
#pragma unroll
  for (int c = 0; c < CPL; ++c) {
    saved[c] = q[lane + 32 * c];
    if (in_place) q[lane + 32 * c] = evo_from_float(evo_to_float(saved[c]) * pow2);
  }
  __syncwarp();
  for (int d = lane; d < HD; d += 32) sq[d] = evo_to_float(q[d]) * (p.softmax_scale_log2 / pow2);
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
#pragma unroll
  for (int c = 0; c < CPL; ++c)
    if (in_place) q[lane + 32 * c] = saved[c];  // TRICK: Q's bits restored
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
