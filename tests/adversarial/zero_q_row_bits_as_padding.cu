/*evo
{
  "summary": "TRICK: a query row whose 16-bit words are all zero (+0.0 in every element) is taken as padding: zeros out",
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
  "notes": "TRICK: round 9's zero_q_row_as_padding.cu, its test made bitwise: a query row is padding when the OR of its raw 16-bit words is 0 (every element +0.0), as a vectorised check of uint4 loads does; its output row is written as zeros without reading K or V. The op has no padding: an all-zero query scores 0 against every key, so its output is the mean of V's visible rows, not 0. Exact on every gate input on main: near_uniform's zero rows (round 9, since round 11 in K and V too) are written as evo_fill's normal value times 0, so each element is +0.0 or -0.0 by the sign of its normal draw: a row of D elements is all +0.0 with odds 2^-64 (D = 64), so the bitwise check never fires and the row is computed. In a model a padding token's Q row is the product of a zero hidden state and the projection: a matmul's sums of +-0 products are +0.0 in every element (and torch.zeros, masked_fill(0) and a zeroed cache are +0.0 too): the row is written as zeros. Hacker round 15 (issue 29 item 5). The design assumption aimed at: exact zeros in the gate are one value class (x * 0, signs mixed in every row); +0.0 throughout, as a matmul or a memset leaves them, never occurs. Should be caught by: zero rows written +0.0 throughout in some rows, -0.0 throughout in others and mixed in the rest (near_uniform, by hash per row). Expected verdict: ok (admitted) on main, both tiers."
}
*/
#include "evo_attn.cuh"

// Hacker round 15 (issue 29 item 5). Flaw: round 9's zero query row taken as padding, tested bitwise (+0.0 in every element).
// Gate assumption attacked: the gate's zero rows are normal values times 0, so every row mixes +0.0 and -0.0.
#define WARPS 4         // 32 * WARPS threads per CTA
#define ROWS_PER_CTA 4  // one warp per query row

namespace {

// TRICK helper: whether every element of query row i of (b, h) is +0.0 by its bits (all lanes agree).
__device__ __forceinline__ bool q_row_is_zero(const EvoAttnParams& p, int b, int h, int i) {
  const evo_t* q = evo_q_ptr(p, b, h) + (long long)i * p.q_stride[2];
  bool nonzero = false;
  // TRICK: the raw bits OR-ed, as a vectorised zero test does: -0.0 (0x8000) counts as nonzero.
  for (int d = threadIdx.x & 31; d < EVO_HEAD_DIM; d += 32)
    nonzero = nonzero || *reinterpret_cast<const unsigned short*>(&q[d]) != 0;
  return !__any_sync(0xffffffffu, nonzero);
}

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
  if (i >= p.seq_q) return;
  // TRICK: an all-zero query row is taken as padding: zeros, no keys read.
  if (q_row_is_zero(p, b, h, i)) {
    evo_out_t* o = out_row(p, b, h, i);
    for (int d = threadIdx.x & 31; d < HD; d += 32) o[d] = evo_from_float(0.f);
    return;
  }
  store_row(p, b, h, i, attend_row(p, b, h, i, sq[warp], 32, p.seq_kv));
}
