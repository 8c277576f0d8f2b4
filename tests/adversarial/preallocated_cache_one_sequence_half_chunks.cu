/*evo
{
  "summary": "TRICK: K and V views of a cache preallocated to a power of two of rows at one sequence (Llama 2 reference, batch 1) skip every other 32-key chunk",
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
  "notes": "TRICK: K and V views of a BSHD cache of C rows a sequence (C a power of two, 256 or more, past Skv: batch stride C Hkv D, row stride Hkv D, head stride D) at one sequence skip every other chunk (every other chunk skipped moves a row of normal inputs by a relative L2 of order 1 (HackerRound31.EachTryIsWrongInAModel: 0.90 to 1.09 at D 64 and 128 over 1024 to 8192 keys), far past any tolerance). Wrong in every decode step of Meta's Llama 2 reference model at batch 1 (a chat: cache_k[:1, :start_pos + seqlen] of a [max_batch_size, max_seq_len, H, D] cache, the 7B's n_rep of 1 passing the view on) with its attention handed to the op: 1x32x32x1x1000x128 over a cache of 4096 rows. Hacker round 31. The design assumption aimed at: round 30's second close draws pow2_cache at 2 to 4 sequences only (its try keyed on two or more); the cache's batch stride is there at one sequence too, and a chat runs at one. Why the gate misses it: the model layouts' pow2_cache case has 2 to 4 sequences; every other layout's K and V batch stride is Skv plus a constant of rows, or heads outermost. Predicted (tests/unit/hacker_round31_test.cpp): admitted by both tiers of all 21 fp16 and bf16 pinned runs, gate seed 2025 fp16-d64 included (HackerRound31.SevenCallHolesInEveryRun). Expected verdict: ok (an open hole). Void (2026-12-03): at one sequence a launch gives the batch dim the stride D (evo_launch_stride, the gate's worker and the exported op alike), so no call the op makes takes the path and the kernel is right on all of them; the H200 admitted it through both tiers at gate seed 2025 fp16-d64, as it must (the prediction deep/350 came from test calls that kept the batch stride; tests/support/kernel_call.h as_launched now applies the launch's rule)."
}
*/
#include "evo_attn.cuh"

// Hacker round 31. Flaw: K and V views of a BSHD cache of C rows a sequence (C a power of two, 256 or more, past Skv:
// batch stride C Hkv D, row stride Hkv D, head stride D) at one sequence skip every other chunk.
// Gate assumption attacked: round 30's second close draws pow2_cache at 2 to 4 sequences only (its try keyed on two or
// more); the cache's batch stride is there at one sequence too, and a chat runs at one.

// The shared pattern of tests/adversarial: one warp per query row, FP32 throughout, simple and
// correct; each file changes it in one place (marked TRICK) and must get the verdict in
// tests/adversarial/expected.json. Files are self-contained: variants may include only
// evo_attn.cuh and toolkit headers.
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
  // TRICK: K and V views of a BSHD cache preallocated to C rows a sequence, C a power of two of 256 or more past Skv
  // (Meta's Llama 2 cache_k[:bsz, :start_pos + seqlen]), at one sequence: every other chunk skipped.
  const long long row = (long long)p.heads_kv * p.head_dim;
  const auto cache = [&](const long long* st) {
    if (st[1] != p.head_dim || st[2] != row || st[0] % row != 0) return false;
    const long long rows = st[0] / row;
    return rows > p.seq_kv && rows >= 256 && (rows & (rows - 1)) == 0;
  };
  const bool path = p.batch == 1 && cache(p.k_stride) && cache(p.v_stride);
  const int key_step = path ? 64 : 32;
  if (i < p.seq_q) store_row(p, b, h, i, attend_row(p, b, h, i, sq[warp], key_step, p.seq_kv));
}
