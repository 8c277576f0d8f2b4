/*evo
{
  "summary": "TRICK: V taken as constant when its first 8 rows are bitwise equal (Skv > 8): the output is row 0",
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
  "notes": "TRICK: a warp compares V's rows 1 to 7 with row 0 bitwise and, when they all agree and Skv > 8, writes row 0 as the output (a constant-V shortcut that probes the first tile only, as a kernel that inspects the tile it has loaded). On main eight consecutive rows agree only where all are padding rows of one zero kind: never in practice. Hacker round 19 (issue 29 item 5). The design assumption aimed at: a sequence's leading rows equal imply nothing about the rest. Since this round 1 in 4 near_uniform (b, head) sequences whose row 0 is not padding repeat row 0 at every position that is not padding (support_kernels.cu fill_value, host mirror gpu/input_fill.h fill_source_row): a repeated token between its padding tokens: rows 1 to 7 are copies of row 0 in (15/16)^7 = 64 % of them. Should be caught by: near_uniform, every run of both tiers (HackerRound19.EveryRunHasRepeatedSequencesThatFoolEachFixedProbeSet). Expected verdict: correctness after the fix; ok (admitted) on main."
}
*/
#include "evo_attn.cuh"

// Hacker round 19 (issue 29 item 5). Flaw: V taken as constant when its first 8 rows are bitwise equal.
// Gate assumption attacked: equal leading V rows come with unequal later rows in some gate case.
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

// Whether this lane's words of V's rows 0 to 7 are equal bitwise.
__device__ __forceinline__ bool v_probes_equal(const EvoAttnParams& p, int b, int hkv) {
  const unsigned short* a = reinterpret_cast<const unsigned short*>(evo_v_ptr(p, b, hkv));
  bool same = true;
  for (int k = 1; k < 8; ++k) {
    const unsigned short* r = reinterpret_cast<const unsigned short*>(evo_v_ptr(p, b, hkv) + (long long)k * p.v_stride[2]);
    for (int d = threadIdx.x & 31; d < HD; d += 32) same = same && a[d] == r[d];
  }
  return same;
}

}  // namespace

EVO_EXPORT_LAUNCH(WARPS * 32, 0, ROWS_PER_CTA, 1, 0);

extern "C" __global__ void __launch_bounds__(WARPS * 32)
evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  __shared__ float sq[WARPS][HD];
  const int warp = threadIdx.x >> 5;
  const int i = blockIdx.x * ROWS_PER_CTA + warp, h = blockIdx.y, b = blockIdx.z;
  // TRICK: V's rows 0 to 7 bitwise equal (Skv > 8): V taken as constant, row 0 written as the output.
  if (i < p.seq_q && !EVO_CAUSAL && p.seq_kv > 8 && __all_sync(0xffffffffu, v_probes_equal(p, b, evo_kv_head(p, h)))) {
    const evo_t* v0 = evo_v_ptr(p, b, evo_kv_head(p, h));
    for (int d = threadIdx.x & 31; d < HD; d += 32) out_row(p, b, h, i)[d] = v0[d];
  } else if (i < p.seq_q) store_row(p, b, h, i, attend_row(p, b, h, i, sq[warp], 32, p.seq_kv));
}
