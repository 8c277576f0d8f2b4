/*evo
{
  "summary": "TRICK: K below Q taken as a slice of Q's projection (a one-sided overlap test)",
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
  "notes": "TRICK: a packed-QKV fast path: when K starts inside Q's span (a slice of the same fused projection), K and V are addressed with Q's batch and row strides. The overlap test is one-sided: d = K - Q (bytes, signed) is compared with Q's span only (d != 0 && d < span), so any K below Q takes the fast path. Exact whenever K lies above Q: packed_qkv (K inside Q's rows, the same strides), shared=qk (d = 0, the plain path), and every case whose allocator put K's buffer after Q's (the worker allocates Q, K, V, O in that order, each case anew, so K lies above Q as far as the driver's allocator hands out rising addresses). In a model K and V are a cache allocated at start-up and Q a per-step activation: K below Q on every decode step, with its own strides (a cache's capacity, GQA heads), so every row is wrong. Hacker round 7 (issue 29 item 5). The design assumption aimed at: the tensors' order in memory is the allocator's, not drawn (round 6's leftover). Should be caught by: the tensors' order drawn per case (K below Q in some cases whose strides differ from Q's). Expected verdict: correctness once that exists; ok (admitted) before, as far as the allocator hands out rising addresses."
}
*/
#include "evo_attn.cuh"

// Hacker round 7 (issue 29 item 5). Flaw: K and V below Q take Q's batch and row strides (a one-sided overlap test).
// Gate assumption attacked: the tensors' order in memory is the allocator's (Q, K, V, O allocated in that order), never drawn.


// The shared pattern of tests/adversarial: one warp per query row, FP32 throughout, simple and
// correct; each file changes it in one place (marked TRICK) and must get the verdict in
// tests/adversarial/expected.json. Files are self-contained: variants may include only
// evo_attn.cuh and toolkit headers.
#define WARPS 4         // 32 * WARPS threads per CTA
#define ROWS_PER_CTA 4  // one warp per query row

namespace {

// TRICK helper: K inside Q's span (or, one-sided, anywhere below Q) takes Q's batch and row strides.
__device__ __forceinline__ bool k_in_q_projection(const EvoAttnParams& p) {
  const long long d = reinterpret_cast<const char*>(p.k) - reinterpret_cast<const char*>(p.q);
  const long long span = ((p.batch - 1) * p.q_stride[0] + (p.heads_q - 1) * p.q_stride[1] +
                          (long long)(p.seq_q - 1) * p.q_stride[2] + EVO_HEAD_DIM) * (long long)sizeof(evo_t);
  return d != 0 && d < span;
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
  // TRICK: K (and V) addressed with Q's batch and row strides when K is taken as Q's slice.
  const bool packed = k_in_q_projection(p);
  const evo_t* K = packed ? static_cast<const evo_t*>(p.k) + b * p.q_stride[0] + hkv * p.k_stride[1] : evo_k_ptr(p, b, hkv);
  const evo_t* V = packed ? static_cast<const evo_t*>(p.v) + b * p.q_stride[0] + hkv * p.v_stride[1] : evo_v_ptr(p, b, hkv);
  const long long k_row = packed ? p.q_stride[2] : p.k_stride[2], v_row = packed ? p.q_stride[2] : p.v_stride[2];
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
      const evo_t2* kr = reinterpret_cast<const evo_t2*>(K + (long long)j * k_row);
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
      const evo_t* vr = V + (long long)(j0 + t) * v_row;
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
