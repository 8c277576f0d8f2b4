/*evo
{
  "summary": "TRICK: V's e4m3 codes decoded with e4m3fnuz's table: 0x80 (-0.0 in e4m3fn) is NaN",
  "parent": null,
  "dtypes": [
    "fp8"
  ],
  "head_dims": [
    64,
    128
  ],
  "min_sm": 80,
  "notes": "TRICK: V is decoded as if it were e4m3fnuz (AMD's and Graphcore's FP8 with one NaN, 0x80, and no -0): the code 0x80 gives NaN, every other code its e4m3fn value (the exponent bias is kept, so only 0x80 differs). In the op's e4m3fn, 0x80 is -0.0: any V element that quantized to -0 spoils its row. Aimed at dtype edge codes: does the gate's e4m3 data hold 0x80? Hacker round 15 (issue 29 item 5). The design assumption aimed at: the gate's fp8 inputs hold every code the op's callers write. Predicted caught: near_uniform's zero rows of V (since hacker round 11) are normal values times 0, quantized to 0x80 for about half their elements (and, after this round, -0.0 throughout in a third of them), in every fp8 run; V values within 2^-10 of the amax scale of zero also quantize to 0x80 (about 4e-6 of normal elements). Expected verdict: correctness."
}
*/
#include "evo_attn.cuh"

#define KDESCALE p.k_descale

// Hacker round 15 (issue 29 item 5). Flaw: V's e4m3 codes decoded as e4m3fnuz, where 0x80 is NaN (in e4m3fn it is -0.0).
// Gate assumption attacked: the gate's e4m3 inputs never hold the code 0x80.

// The shared pattern of tests/adversarial for fp8 tasks: one warp per query row, each e4m3
// element dequantized (float(x) * its tensor's descale), FP32 throughout, bf16 out; each file
// changes it in one place (marked TRICK) and must get the verdict in
// tests/adversarial/expected.json (entries with "task": "fp8-d64", run by tests/gpu/fp8_test.cpp).
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
      for (int c = 0; c < CPL; ++c) {
        const evo_t x = vr[lane + 32 * c];
        const float v = x.__x == 0x80 ? __int_as_float(0x7fc00000) : evo_to_float(x);  // TRICK: fnuz's NaN code
        r.acc[c] = fmaf(pt, v * p.v_descale, r.acc[c]);
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
