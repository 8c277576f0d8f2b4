/*evo
{
  "summary": "TRICK: key 0 whose V row is 64 times smaller than its chunk's others, and not zero, is dropped",
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
  "notes": "TRICK: in the first chunk (2 keys or more visible), when key 0's V row is not zero and its largest |v| is under 1/64 of the largest over the chunk's other rows, key 0 is taken as an attention sink with a null value, an update that does nothing, and is dropped, weight and all. Wrong in a model whose first token is an attention sink with a small value: the sink takes much of the weight (StreamingLLM, Xiao et al. 2023: evicting the first tokens breaks the model) and its value is small (reported by Sun et al. 2024 and Gu et al. 2024; the ratio 1/64 is not known here for any one model), so dropping it divides the other weights by 1 - w0. Hacker round 28. The design assumption aimed at: a sequence's V rows are alike in size. They are in the gate but for one combination: a shared prefix draws an odd batch's first rows as batch b - 1's, whose sequence decides whether they carry V's offset bands (kept in 3 of 4 sequences), so where b - 1's is dropped and b's kept, row 0 holds no offset and the rows after the prefix hold +-256 (v_offset) or +-16 384 (large_o). Predicted (HackerRound28.NullSinkCaughtWhereAPrefixMeetsAnOffsetBand): caught by the deep tier in all 21 fp16 and bf16 pinned runs and by the cheap tier in 17 (every fp16-d64 run; gate seed 2025 fp16-d64: sampled/64/5x256x256x1x66x64/.../large_o/prefix=19), every catching case a /prefix= one. Expected verdict: correctness."
}
*/
#include "evo_attn.cuh"

// The shared pattern of tests/adversarial: one warp per query row, FP32 throughout, simple and
// correct; each file changes it in one place (marked TRICK) and must get the verdict in
// tests/adversarial/expected.json. Files are self-contained: variants may include only
// evo_attn.cuh and toolkit headers.
// Hacker round 28. Flaw: key 0 dropped when its V row is tiny beside the others (a null-valued sink).
// Gate assumption attacked: a sequence's V rows are alike in size (they are but where a shared prefix meets V's offset bands).

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
    // TRICK: key 0's V row under 1/64 of the chunk's others (not zero): a null sink, dropped with its weight.
    if (j0 == 0 && kv_end >= 2) {
      float a = 0.f;
      if (j < kv_end)
        for (int d = 0; d < HD; ++d) a = fmaxf(a, fabsf(evo_to_float(V[(long long)j * p.v_stride[2] + d])));
      const float a0 = __shfl_sync(0xffffffffu, a, 0), others = warp_max(lane > 0 ? a : 0.f);
      if (lane == 0 && a0 > 0.f && a0 * 64.f < others) s = EVO_NEG_INF;
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
