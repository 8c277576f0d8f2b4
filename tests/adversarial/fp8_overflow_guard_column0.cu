/*evo
{
  "summary": "TRICK: P.V accumulated in fp16 unless V's first element (key 0, column 0) is large: round 5's column-0 guard on fp8",
  "parent": null,
  "dtypes": [
    "fp8"
  ],
  "head_dims": [
    64,
    128
  ],
  "min_sm": 80,
  "notes": "TRICK: the P.V sum kept in an fp16 accumulator (as an FP8 wgmma with an f16 accumulator), with an overflow guard decided once per row from V's first element: when |V[key 0][column 0]| (dequantized) is 64 or more the row accumulates in fp32. Round 5's fp16_overflow_guard_column0.cu on the fp8 task. Exact on every case the gate draws for an fp8 task: v_offset, the one distribution whose V sums can pass 65 504, offsets every column of an fp8 V (gpu/worker_device.h: each fill_e4m3 takes its own amax, so the bands fp16 and bf16 get since round 5 are not drawn for fp8), so column 0 of key 0 sits near +-256 and the guard takes fp32 whenever an overflow is possible; every other fp8 V is zero-mean (sums grow like sqrt(l): about 360 at 128k keys). Wrong where V's large mean sits in a few channels and column 0 is ordinary (massive activations, a bias channel: what the bands model): the fp16 sum of those columns is Inf past about 256 keys of a near-uniform row. Hacker round 12 (issue 29 item 5). The design assumption aimed at: a V offset on some columns only (round 5's closure) holds for fp16 and bf16, not for fp8. Should be caught by: fp8 v_offset on two bands (one of each sign, the rest zero-mean), quantized with one amax over the whole of V. Expected verdict: ok (admitted, both tiers) on main; correctness once fp8 draws the bands."
}
*/
#include "evo_attn.cuh"

#define KDESCALE p.k_descale

// Hacker round 12 (issue 29 item 5). Flaw: an fp16 P.V accumulator whose overflow guard is V's column 0 of key 0.
// Gate assumption attacked: round 5's banded V offset (column 0 unbiased) is drawn for fp16 and bf16, not fp8.
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
      // TRICK: the running sum rounded to fp16 each step unless V's first element (key 0, column 0) is large.
      const bool wide = fabsf(evo_to_float(V[0]) * p.v_descale) >= 64.f;
      for (int c = 0; c < CPL; ++c) {
        const float a = fmaf(pt, evo_to_float(vr[lane + 32 * c]) * p.v_descale, r.acc[c]);
        r.acc[c] = wide ? a : __half2float(__float2half_rn(a));
      }
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
  for (int c = 0; c < CPL; ++c) o[lane + 32 * c] = evo_out_from_float(r.acc[c] * inv);
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
