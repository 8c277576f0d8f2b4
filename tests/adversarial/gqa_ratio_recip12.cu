/*evo
{
  "summary": "TRICK: the KV head h / ratio as a 12-bit fixed-point reciprocal rounded up (exact for ratios up to 20; wrong on Falcon-180B's 232/8)",
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
  "notes": "TRICK: the KV head of query head h computed as (h * M) >> 12 with M = ceil(2^12 / ratio): the standard magic-number division, rounded up as it should be, but with 12 bits, sized for h < 256 and ratios up to 16 (the error h * (M * ratio - 2^12) / 2^12 stays below 1 / ratio there). Past a ratio of about 20 the product overshoots at the last head of a group: Falcon-180B (232 query heads on 8 KV heads, D = 64, ratio 29) reads KV head 8 for query head 231 (231 * 142 >> 12; there are 8 KV heads, so that is past K's last head: another batch's rows or junk) where 231 / 29 = 7; also 224/8 (28), 248/8 (31), 176/4 (44), 140/4 (35), 112/2 (56). Exact on every configuration the gate draws (enumerated for every h < Hq): the sampled classes' GQA ratios are 2-9, 12, 15, 16, 32, 64 (Hq at most 192 with Hkv > 1) and MQA 32, 71, 256 ((Hq - 1) * M stays below 2^12: 3968, 4060, 4080), the fixed shapes 2, 4, 8, 16 and 32. Of the reciprocal divisions a generator writes (fixed point rounded up or to nearest at 6 to 24 bits, an fp16, bf16 or fp32 reciprocal), 6 are wrong on some head configuration the op accepts and right on every one the gate draws: rounded up at 11 to 15 bits, and the fp32 reciprocal h * (1.0f / ratio) (wrong at ratios 41, 47, 55, 61, 82, ...: 41 * fl(1/41) rounds to 0.99999994). Hacker round 13 (issue 29 item 5). The design assumption aimed at: round 12 added GQA ratios between the listed ones up to 15, but above 16 the ratios are still 32, 64 and MQA's 71 and 256, and no GQA configuration has more than 192 query heads. Should be caught by: head configurations on which every such reciprocal that is wrong anywhere in the domain is wrong (a GQA config of many heads on few KV heads, and an MQA one of more than 192 heads). Expected verdict: ok (admitted) on main, both tiers."
}
*/
#include "evo_attn.cuh"

// Hacker round 13 (issue 29 item 5). Flaw: h / ratio by a 12-bit reciprocal rounded up (wrong past a ratio of about 20).
// Gate assumption attacked: the head configurations above ratio 16 are a short list (32, 64, 71, 256).
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
  // TRICK: h / ratio as (h * M) >> 12, M = ceil(2^12 / ratio): exact for h < 256 up to a ratio of about 20.
  const int ratio = p.heads_q / p.heads_kv;
  const int hkv = (h * ((4096 + ratio - 1) / ratio)) >> 12;
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
  if (i < p.seq_q) store_row(p, b, h, i, attend_row(p, b, h, i, sq[warp], 32, p.seq_kv));
}
