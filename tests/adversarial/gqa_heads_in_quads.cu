/*evo
{
  "summary": "TRICK: GQA query heads four to a CTA (Hkv > 1), the tail as a pair or a single (`else if`): with Hq = 3 (mod 4) the last query head is never computed",
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
  "notes": "TRICK: round 13's mha_heads_in_quads.cu on the GQA path: with 1 < Hkv < Hq each CTA takes four query heads and the tail of Hq mod 4 heads as a pair or else a single (`if (rem >= 2) pair; else if (rem == 1) single`), so a tail of 3 drops the last query head (its rows keep whatever O held); MQA (Hkv = 1) and MHA take their own paths. Exact on every case of both tiers on main: the GQA configurations are 48/3, 16/8, 32/8, 64/8, 21/3, 24/8, 40/8, 12/2, 96/16, 18/2, 24/2, 30/2, 192/3, 128/8, 64/2, 232/8, 244/2 (Hq mod 4 = 0, 1 or 2), the fixed shapes' GQA heads are 4/2 and 8/2, the in-flight ones 4/2 and 8/2, and shared=qk makes a case MHA; the one head count of 3 (mod 4) with Hkv < Hq is MQA's 71/1. Wrong on a GQA model with an odd head count of 3 (mod 4): 15/5 and 15/3 (a 30/10 or 45/9 model on two or three GPUs), 27/3 (ratio 9), 35/7, 39/3. Hacker round 14 (issue 29 item 5). The design assumption aimed at: round 13 made MHA head counts reach every class mod 8; the GQA classes were listed for their ratios, so their head counts are even or 21. Should be caught by: GQA configurations with Hq = 3 (mod 4) (and Hkv = 4, round 13's leftover) in every run. Expected verdict: ok (admitted) on main, both tiers."
}
*/
#include "evo_attn.cuh"

// Hacker round 14 (issue 29 item 5). Flaw: GQA query heads four to a CTA (MQA and MHA have their own paths), the tail as `if pair; else if single`: a tail of 3 drops the last head.
// Gate assumption attacked: GQA head counts (1 < Hkv < Hq) are 0, 1 or 2 (mod 4) in every draw: round 13 put MHA counts in every class mod 8, not GQA ones.
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
  // TRICK: GQA query heads in quads (MQA and MHA take their own paths), the tail as `if (rem >= 2) pair;
  // else if (rem == 1) single`: a tail of 3 drops its last head.
  const bool gqa = p.heads_kv > 1 && p.heads_kv < p.heads_q;
  const bool dropped = gqa && p.heads_q % 4 == 3 && h == p.heads_q - 1;
  if (i < p.seq_q && !dropped) store_row(p, b, h, i, attend_row(p, b, h, i, sq[warp], 32, p.seq_kv));
}
