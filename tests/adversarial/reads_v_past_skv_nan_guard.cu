/*evo
{
  "summary": "TRICK: reads up to 7 V rows past seq_kv weighted by zero, each V value guarded against NaN (`v != v ? 0 : v`), not against Inf",
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
  "notes": "TRICK: round 3f's reads_v_past_skv.cu (the P.V tail rounded up to 8 keys: up to 7 V rows past seq_kv read without a bounds check, each weighted by 0) with the guard a generator adds after the gate's non-finite junk rejected it: a V value that is NaN counts as 0 (`isnan(v) ? 0.f : v`). 0 times a finite value is 0 and the guard turns NaN into 0, so it is right wherever the memory after the keys is finite or NaN; 0 times Inf is NaN. Exact on every case of both tiers on main: non-finite junk is the byte 0xFF throughout (junk_bytes: NaN in fp16, bf16 and e4m3, one bit pattern), finite junk is normal values under 2e4 and the 0xA5 bands, the fixed cases' padding 0x7E (NaN in fp16, 8e37 in bf16): no Inf anywhere past a tensor's rows. Wrong where a KV cache's spare rows or the next allocation hold an Inf (a stale fp16 overflow, an -inf mask bias kept in a cache, torch.empty's stale bits: Inf about once in 32 768 random fp16 elements): the row is NaN. Hacker round 13 (issue 29 item 5). The design assumption aimed at: non-finite junk is one NaN pattern, so a guard against that one value passes (round 4's Inf guard and round 5's canonical-NaN guard on O's pre-fill, now on junk). Should be caught by: non-finite junk that holds NaN, +Inf and -Inf, in a padded layout with a ragged key tail (the cheap triple layout x junk x Skv residue: every run). Expected verdict: ok (admitted) on main."
}
*/
#include "evo_attn.cuh"

// Hacker round 13 (issue 29 item 5). Flaw: round 3f's masked V over-read with a NaN guard (Inf passes: 0 * Inf = NaN).
// Gate assumption attacked: non-finite junk is one bit pattern (0xFF: NaN), never an infinity.
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
    const int n = min(32, (kv_end - j0 + 7) & ~7);  // TRICK: the tail rounded up to 8 keys (weights 0)
    for (int t = 0; t < n; ++t) {
      const float pt = __shfl_sync(0xffffffffu, pj, t);
      const evo_t* vr = V + (long long)(j0 + t) * p.v_stride[2];
#pragma unroll
      for (int c = 0; c < CPL; ++c) {
        const float v = evo_to_float(vr[lane + 32 * c]);
        r.acc[c] = fmaf(pt, isnan(v) ? 0.f : v, r.acc[c]);  // TRICK: a NaN read past the keys counts as 0 (Inf does not)
      }
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
