/*evo
{
  "summary": "TRICK: a token-major K or V (head stride below row stride) read with its KV heads D elements apart",
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
  "notes": "TRICK: when K (or V) is token-major (stride[1] < stride[2]: a BSHD cache, a fused projection, a seq-major cache) the kernel takes its KV heads to be adjacent in the row: KV head g at b * batch stride + g * D, ignoring the head stride. In every token-major view the gate draws (bshd, packed_qkv's fused projection, mixed's Q and V, mixed's seq-major K, kv_cache's seq-major Q, V and O, strided's O inside a bigger buffer) the heads of a row are adjacent: head stride exactly D elements (a size-1 head dim is given D by evo_launch_stride too). The op accepts any head stride (a multiple of 16 bytes, the view distinct): GPT-NeoX/Pythia and Megatron interleave Q, K and V per head ([B, S, H, 3 * D] split on the last dim: head stride 3 * D), DeepSeek's MLA slices q_nope out of [B, S, H, 192] (head stride 192, D 128), a KV cache stored [B, S, Hkv, 2, D] has K's and V's heads 2 * D apart. There KV head g > 0 reads another head's keys or values. Hacker round 9 (issue 29 item 5). The design assumption aimed at: a token-major view's heads are adjacent (head stride D) in every layout drawn. Should be caught by: a token-major V with several KV heads further apart than D (kv_cache's seq-major V cache with a head gap). Expected verdict: ok (admitted) on main."
}
*/
#include "evo_attn.cuh"

// Hacker round 9 (issue 29 item 5). Flaw: a token-major K's or V's head offset taken as g * D (KV heads adjacent in the row).
// Gate assumption attacked: every token-major view drawn has its heads exactly D elements apart.
#define WARPS 4         // 32 * WARPS threads per CTA
#define ROWS_PER_CTA 4  // one warp per query row

namespace {

// TRICK helper: a token-major K or V's (b, g) slice with its KV heads taken as adjacent (head
// stride D), a head-major one by its strides.
__device__ __forceinline__ const evo_t* kv_slice(const void* base, int b, int g, const long long* s) {
  const long long head = s[1] < s[2] ? (long long)EVO_HEAD_DIM : s[1];
  return static_cast<const evo_t*>(base) + b * s[0] + g * head;
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
  // TRICK: a token-major K or V with its heads taken as adjacent in the row.
  const evo_t* K = kv_slice(p.k, b, hkv, p.k_stride);
  const evo_t* V = kv_slice(p.v, b, hkv, p.v_stride);
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
