/*evo
{
  "summary": "TRICK: fp8 V read up to 7 rows past seq_kv (weights 0), the byte 0xFF taken as 0; e4m3's other NaN (0x7F) is not",
  "parent": null,
  "dtypes": [
    "fp8"
  ],
  "head_dims": [
    64,
    128
  ],
  "min_sm": 80,
  "notes": "TRICK: the fp8 control's P.V tail rounded up to 8 keys (round 3f's reads_v_past_skv.cu: up to 7 V rows past seq_kv read without a bounds check, each weighted by 0), with the guard a generator adds after the gate's non-finite junk rejected that: a V code of 0xFF counts as 0, tested on the raw byte before the conversion. 0 times a finite value is 0, so it is exact wherever the memory after the keys is finite or the byte 0xFF: every case of both tiers on main. Non-finite junk in e4m3 buffers is 0xFF throughout (junk_bytes; round 13's NaN and +-Inf rows are for fp16 and bf16 only, e4m3 has no infinity), finite junk is quantized normal values (finite codes) and the 0xA5 bands, the fixed cases are dense (an over-read lands in the next head's keys or the 0xA5 guard band), and the deep far cases' padding (0x7F) follows Skv = 1024, a multiple of 8 (nothing read past it). Wrong where the memory after a sequence's keys holds 0x7F, e4m3's positive NaN (a cache's spare rows written by a saturating-off conversion, torch.empty's stale bytes: one byte in 128): the row is NaN. Hacker round 14 (issue 29 item 5). The design assumption aimed at: e4m3 non-finite junk is one NaN code of two (round 5's canonical-NaN guard and round 13's NaN guard, on fp8). Should be caught by: e4m3 non-finite junk holding both NaN codes, in a padded V with a ragged key tail (the cheap triple layout x junk x Skv residue: every run). Expected verdict: ok (admitted) on main."
}
*/
#include "evo_attn.cuh"

#define KDESCALE p.k_descale

// Hacker round 14 (issue 29 item 5). Flaw: round 3f's masked V over-read on the fp8 path, the code 0xFF (a NaN) counted as 0; 0x7F, e4m3's other NaN, is not.
// Gate assumption attacked: e4m3 non-finite junk is the byte 0xFF throughout: one of e4m3's two NaN codes (round 13 varied fp16 and bf16 junk only).
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
    const int n = min(32, (kv_end - j0 + 7) & ~7);  // TRICK: the tail rounded up to 8 keys (weights 0)
    for (int t = 0; t < n; ++t) {
      const float pt = __shfl_sync(0xffffffffu, pj, t);
      const evo_t* vr = V + (long long)(j0 + t) * p.v_stride[2];
#pragma unroll
      for (int c = 0; c < CPL; ++c) {
        // TRICK: the byte 0xFF (a NaN read past the keys) counts as 0; e4m3's other NaN, 0x7F, does not.
        const unsigned char code = reinterpret_cast<const unsigned char*>(vr)[lane + 32 * c];
        const float v = code == 0xFFu ? 0.f : evo_to_float(vr[lane + 32 * c]) * p.v_descale;
        r.acc[c] = fmaf(pt, v, r.acc[c]);
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
