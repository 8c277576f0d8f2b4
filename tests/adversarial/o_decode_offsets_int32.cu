/*evo
{
  "summary": "TRICK: the decode path (Sq <= 16) addresses Q's and O's rows with 32-bit offsets",
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
  "notes": "TRICK: a decode-specialised address path (Sq <= 16) computes each Q and O row's offset from its base as b * batch stride + h * head stride + i * row stride in 32-bit ints (round 9's decode_kv_offsets_int32 did it for K and V, which the far set's decode twins now catch); the prefill path keeps 64-bit offsets. Exact whenever every Q and O offset of a decode call is below 2^31 elements: no decode case of any tier has one (the far set's decode twins put only K and V 2^31 apart; Q and O there are dense, a few thousand elements; the frontier's 65535x256x1x1x1 O spans 2^24 or 2^25). Wrong on a call the op accepts once the kernel passed a case above 2^31 elements: a decode step writing into a large preallocated output (one slot of O per sequence of a pool, 2^31 elements apart: the same pool the far set's K and V model), where batch 1's offset wraps negative: O written before its buffer (an illegal address, or another tensor's memory). Hacker round 10 (issue 29 item 5). The design assumption aimed at: offsets past int32 in the decode regime are tried for K and V only; Q and O of every decode case are small and dense. Should be caught by: a far decode case whose Q and O lie 2^31 elements apart per sequence. Expected verdict: ok (admitted) on main."
}
*/
#include "evo_attn.cuh"

// Hacker round 10 (issue 29 item 5). Flaw: Q and O row offsets in 32-bit ints when Sq <= 16 (a decode path).
// Gate assumption attacked: offsets past int32 in decode steps are tried for K and V only (far decode twins); Q and O stay small.
#define WARPS 4         // 32 * WARPS threads per CTA
#define ROWS_PER_CTA 4  // one warp per query row

namespace {

constexpr int HD = EVO_HEAD_DIM;

// TRICK helper: the decode path's row address, its offset in 32-bit int (wraps past 2^31).
template <class T>
__device__ __forceinline__ T* decode_row(T* base, int b, int h, int i, const long long* s) {
  const int off = int(unsigned(b) * unsigned(s[0]) + unsigned(h) * unsigned(s[1]) + unsigned(i) * unsigned(s[2]));
  return base + off;
}
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
  // TRICK: in the decode regime Q's row offset is a 32-bit int.
  const evo_t* q = p.seq_q <= 16 ? decode_row(static_cast<const evo_t*>(p.q), b, h, i, p.q_stride)
                                 : evo_q_ptr(p, b, h) + (long long)i * p.q_stride[2];
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
  // TRICK: in the decode regime O's row offset is a 32-bit int.
  if (p.seq_q <= 16) return decode_row(static_cast<evo_t*>(p.o), b, h, i, p.o_stride);
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
