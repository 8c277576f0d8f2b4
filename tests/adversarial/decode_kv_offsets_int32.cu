/*evo
{
  "summary": "TRICK: the decode path (Sq <= 16) addresses K and V rows with 32-bit offsets",
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
  "notes": "TRICK: a decode-specialised address path (Sq <= 16, the regime a serving loop calls every step) computes each K and V row's offset from its base as b * batch stride + h * head stride + j * row stride in 32-bit ints (fewer registers for the split-KV decode kernels a generator writes apart from the prefill path); the prefill path keeps 64-bit offsets, so the huge set (8129 batches, Sq 129) and the far set (2xHxHx1024x1024 with a batch stride of 2^31, 1xHx1x1024x1024 with rows 2^21 + 4096 apart; Sq 1024) pass. Exact whenever every K and V offset of a decode call is below 2^31 elements: no decode case of any tier gets there (cheap cases at most 17 M elements a buffer, deep sampled ones 2^30; the deep fixed decode shapes 65535x1x1x1x64 (K 2^28 or 2^29 elements), 65535x256x1x1x1 and 1xHx1x1x131072 stay far below). Wrong on a call the op accepts once the kernel passed a case above 2^31 elements (max_checked_elements covers every regime of the kernel): a decode step over a KV cache of 2^31 elements or more (64 sequences of 32k keys, 8 KV heads, D = 128; a cache with capacity past its length), where a batch's or a row's offset wraps negative: K read from before its buffer (wrong values or an illegal address). Hacker round 9 (issue 29 item 5). The design assumption aimed at: offsets past int32 are tried at one length only (the far set's Sq 1024, the huge set's 129), never in the decode regime a serving loop runs. Should be caught by: a deep far case in the decode regime (a decode twin of each far shape). Expected verdict: ok (admitted) on main."
}
*/
#include "evo_attn.cuh"

// Hacker round 9 (issue 29 item 5). Flaw: K and V row offsets in 32-bit ints when Sq <= 16 (a decode path).
// Gate assumption attacked: offsets past int32 are tried only at Sq 1024 (far) and 129 (huge), never in the decode regime.
#define WARPS 4         // 32 * WARPS threads per CTA
#define ROWS_PER_CTA 4  // one warp per query row

namespace {

// TRICK helper: the decode path's row address, its offset in 32-bit int (wraps past 2^31).
__device__ __forceinline__ const evo_t* decode_row(const void* base, int b, int h, int j, const long long* s) {
  const int off = int(unsigned(b) * unsigned(s[0]) + unsigned(h) * unsigned(s[1]) + unsigned(j) * unsigned(s[2]));
  return static_cast<const evo_t*>(base) + off;
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
  const bool decode = p.seq_q <= 16;  // TRICK: the decode regime takes the 32-bit path
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
      // TRICK: in the decode regime the row's offset is a 32-bit int.
      const evo_t2* kr = reinterpret_cast<const evo_t2*>(decode ? decode_row(p.k, b, hkv, j, p.k_stride)
                                                                 : K + (long long)j * p.k_stride[2]);
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
      const evo_t* vr = decode ? decode_row(p.v, b, hkv, j0 + t, p.v_stride) : V + (long long)(j0 + t) * p.v_stride[2];
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
