/*evo
{
  "summary": "TRICK: a chunk whose K values are all e4m3 values takes an FP8 path that rounds Q to e4m3",
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
  "notes": "TRICK: when every K element of a 32-key chunk's visible keys is exactly an e4m3 value (3 mantissa bits, |k| <= 448: a cache stored in fp8 and upcast), the chunk's scores take an FP8 path that rounds Q to e4m3 too (2^-4 relative): a fast path keyed on the bits of K. Wrong wherever K was dequantized from e4m3 with a unit scale (an fp8 KV cache such as vLLM's kv_cache_dtype fp8 upcast before a 16-bit kernel; whether a deployment hands such a K to an fp16 or bf16 kernel is not known here): Q's rounding moves the scores by a few percent. Hacker round 28. The design assumption aimed at: the gate's K values have random low bits. In the gate a chunk's K is all e4m3 values only where it is zero rows (near_uniform's padding: every score 0 whatever Q's rounding) or one key (attention_sink's key 0 of 4.0 alone: weight 1) (HackerRound28.NoGateCaseMeetsAHoleWhereVVaries). Predicted: admitted by both tiers of every fp16 and bf16 pinned run. Expected verdict: ok (an open hole)."
}
*/
#include "evo_attn.cuh"

// The shared pattern of tests/adversarial: one warp per query row, FP32 throughout, simple and
// correct; each file changes it in one place (marked TRICK) and must get the verdict in
// tests/adversarial/expected.json. Files are self-contained: variants may include only
// evo_attn.cuh and toolkit headers.
// Hacker round 28. Flaw: Q rounded to e4m3 for a chunk whose K holds e4m3 values only.
// Gate assumption attacked: K's low mantissa bits are random; a dequantized cache's are zero.

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

// TRICK helpers: e4m3's values (3 mantissa bits, |x| <= 448, subnormals in steps of 2^-9).
__device__ __forceinline__ bool e4m3_exact(float x) {
  const float a = fabsf(x);
  if (a == 0.f) return true;
  if (a > 448.f) return false;
  if (a >= 0.015625f) return (__float_as_uint(a) & 0xFFFFFu) == 0;
  return rintf(a * 512.f) == a * 512.f;
}
__device__ __forceinline__ float e4m3_round(float x) {
  const float a = fabsf(x);
  float r;
  if (a >= 0.015625f) {
    const unsigned u = __float_as_uint(a);
    r = fminf(__uint_as_float((u + 0x7FFFFu + ((u >> 20) & 1u)) & ~0xFFFFFu), 448.f);
  } else {
    r = rintf(a * 512.f) / 512.f;
  }
  return copysignf(r, x);
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
    // TRICK: every visible K element of the chunk an e4m3 value: the chunk takes the FP8 path (Q in e4m3).
    bool exact = true;
    if (j < kv_end)
      for (int d = 0; d < HD; ++d) exact = exact && e4m3_exact(evo_to_float(K[(long long)j * p.k_stride[2] + d]));
    const bool fp8_chunk = __all_sync(0xffffffffu, exact);
    float s = EVO_NEG_INF;
    if (j < kv_end) {
      const evo_t2* kr = reinterpret_cast<const evo_t2*>(K + (long long)j * p.k_stride[2]);
      float dot = 0.f;
#pragma unroll 8
      for (int d2 = 0; d2 < HD / 2; ++d2) {
        const float2 kk = evo2_to_float2(kr[d2]);
        const float q0 = fp8_chunk ? e4m3_round(evo_to_float(q[2 * d2])) * p.softmax_scale_log2 : sq[2 * d2];
        const float q1 = fp8_chunk ? e4m3_round(evo_to_float(q[2 * d2 + 1])) * p.softmax_scale_log2 : sq[2 * d2 + 1];
        dot = fmaf(q0, kk.x, dot);
        dot = fmaf(q1, kk.y, dot);
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
