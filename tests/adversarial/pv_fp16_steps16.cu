/*evo
{
  "summary": "TRICK: P·V of each 16-key step summed in fp16 (an fp16-accumulating mma), then added to the fp32 sum",
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
  "notes": "TRICK: the unnormalised P·V of each step of 16 keys is accumulated in fp16 (mma.sync with f16 accumulators, a common shortcut on the fp16 path) and only then added to the fp32 accumulator. A step's sum reaches 16 x |V| with near-uniform weights: past 65 504 (Inf) once |V| passes ~4 100. On main before round 18 no fp16 V passed ~600 (v_offset's 256 x 16 = 4 096, steps of 4: rounding of 2 per step, averaged over the row's keys). Hacker round 19 (issue 29 item 5). The design assumption aimed at: a kernel correct only while V's mean is small. Should be caught by: large_o (round 18: V's bands at +-16 384) at scales 1/D or below, where the weights of a 16-key step are near uniform (a step's sum ~ 16 x 16 384), over 8 keys or more: Inf. Expected verdict: correctness on main (since round 18) and after this round."
}
*/
#include "evo_attn.cuh"

// Hacker round 19 (issue 29 item 5). Flaw: each 16-key step of P·V summed in fp16.
// Gate assumption attacked: a kernel correct only while V's mean is small.
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

// P·V of keys j0 .. j0 + n - 1 for this lane's columns: each step of 16 keys summed in fp16, then
// added to acc (fp32).
__device__ __forceinline__ void pv_fp16_steps(const EvoAttnParams& p, const evo_t* V, int j0, int n, float pj, float* acc) {
  const int lane = threadIdx.x & 31;
  for (int t0 = 0; t0 < n; t0 += 16) {
    __half part[CPL];
#pragma unroll
    for (int c = 0; c < CPL; ++c) part[c] = __float2half(0.f);
    for (int t = t0; t < min(n, t0 + 16); ++t) {
      const float pt = __shfl_sync(0xffffffffu, pj, t);
      const evo_t* vr = V + (long long)(j0 + t) * p.v_stride[2];
#pragma unroll
      for (int c = 0; c < CPL; ++c) part[c] = __float2half(fmaf(pt, evo_to_float(vr[lane + 32 * c]), __half2float(part[c])));
    }
#pragma unroll
    for (int c = 0; c < CPL; ++c) acc[c] += __half2float(part[c]);
  }
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
    pv_fp16_steps(p, V, j0, n, pj, r.acc);  // TRICK: each 16-key step of P·V summed in fp16
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
