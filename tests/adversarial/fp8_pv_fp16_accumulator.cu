/*evo
{
  "summary": "TRICK: P.V over the raw e4m3 V accumulated in fp16 (an fp16 wgmma accumulator), descaled once at the end",
  "parent": null,
  "dtypes": [
    "fp8"
  ],
  "head_dims": [
    64,
    128
  ],
  "min_sm": 80,
  "notes": "TRICK: the P.V product runs on the raw e4m3 values of V (up to 448, the per-tensor scale puts V's largest at 448) and keeps its unnormalised sum in fp16, as an FP8 wgmma with an f16 accumulator (half the accumulator registers of f32) does; V's descale and 1/l are applied at the end. The fp16 sum overflows to Inf once l * mean(raw V) passes 65 504. Exact on every case the gate draws for an fp8 task: every V it gives an fp8 task is zero-mean (v_offset, the one distribution with a V offset, is for fp16 and bf16 only: gates.json inputs.v_offset.dtypes), so the raw sum grows like 90 * sqrt(l) (about 11 500 at 16k keys of a near-uniform row, under 6 sigma short of 65 504). Wrong where V has a mean, which the op accepts and models have (V projections with a bias, a V after an activation): with V's values around 256 the raw values sit near 448 and a near-uniform row overflows past about 150 keys. Hacker round 10 (issue 29 item 5). The design assumption aimed at: an input distribution's dtypes list (v_offset: fp16, bf16) leaves fp8 tasks with zero-mean V only. Should be caught by: v_offset drawn for fp8 tasks too. Expected verdict: ok (admitted) on main (fp8-d64; a deep case of near-uniform rows over 128k keys may overflow it too)."
}
*/
#include "evo_attn.cuh"

#define KDESCALE p.k_descale

// Hacker round 10 (issue 29 item 5). Flaw: P.V over raw e4m3 V accumulated in fp16 (an f16 wgmma accumulator).
// Gate assumption attacked: fp8 tasks never draw a V with an offset (v_offset's dtypes are fp16 and bf16).
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
  for (int d = lane; d < HD; d += 32) sq[d] = evo_to_float(q[d]) * p.q_descale * p.softmax_scale_log2;
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
      const evo_t* kr = K + (long long)j * p.k_stride[2];
      float dot = 0.f;
#pragma unroll 8
      for (int d = 0; d < HD; ++d) dot = fmaf(sq[d], evo_to_float(kr[d]) * KDESCALE, dot);
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
      // TRICK: raw e4m3 V (descale left for the end), the running sum rounded to fp16 each step.
      for (int c = 0; c < CPL; ++c)
        r.acc[c] = __half2float(__float2half_rn(fmaf(pt, evo_to_float(vr[lane + 32 * c]), r.acc[c])));
    }
    m = m_new;
  }
  return r;
}

__device__ __forceinline__ evo_out_t* out_row(const EvoAttnParams& p, int b, int h, int i) {
  return evo_o_ptr(p, b, h) + (long long)i * p.o_stride[2];
}

__device__ __forceinline__ void store_row(const EvoAttnParams& p, int b, int h, int i, const RowResult& r) {
  const int lane = threadIdx.x & 31;
  evo_out_t* o = out_row(p, b, h, i);
  const float inv = 1.f / r.l;
#pragma unroll
  for (int c = 0; c < CPL; ++c) o[lane + 32 * c] = evo_out_from_float(r.acc[c] * p.v_descale * inv);
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
