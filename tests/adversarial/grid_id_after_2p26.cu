/*evo
{
  "summary": "TRICK: reads the driver's launch number (%gridid); past 2^26 grids in the context, half the keys",
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
  "notes": "TRICK: the kernel reads the PTX special register %gridid, which the driver fills with the temporal launch number of the grid in its context (measured on the H200, 2026-11-29, lab/hack11/README.md: 1 for the first kernel of a fresh process, +1 for every kernel launched in the context on any stream, memsets not counted; a CUDA graph's node keeps the number it had when captured), and once it passes 2^26 it scores only the first half of the keys. No state, no clock: on sm_90a `mov.u64 %0, %gridid` is `ULDC.64 URx, c[0x0][0x30]`, a word of constant bank 0 (the launch's own constants, not relocated), which the deep gate's static check (compile/call_state.cpp carried_state: SR_GLOBALTIMER*, SR_CLOCK*, words of a relocated bank, malloc/free) does not refuse. Exact on every launch the gate makes: a worker process launches some 10^4-10^5 kernels per candidate (fills, hashes, the candidate, its timing), far below 2^26 = 67 M. Wrong in a server: every kernel of a model counts (a Llama-3 8B decode step launches several hundred; at 50 steps a second 2^26 comes within about an hour of eager decoding or prefill), after which every attention call drops half its keys. Hacker round 11 (issue 29 item 5); round 6's wrong_after_2p20_launches.cu kept the count in a __device__ global, which the static check refuses. The design assumption aimed at: state between calls and time can only come from SR_CLOCK/SR_GLOBALTIMER reads, module globals or the heap. Should be caught by: a static check that refuses %gridid (bank 0's driver words outside the parameter block: c[0x0][0x30]) and the other per-launch special registers (SR_PM*, %envreg). Expected verdict: ok (admitted) on main, in both tiers."
}
*/
#include "evo_attn.cuh"

// Hacker round 11 (issue 29 item 5). Flaw: past 2^26 grids launched in the CUDA context (%gridid), only the first half of the keys.
// Gate assumption attacked: a kernel's only sources of state or time are clocks, module globals and the device heap (the deep gate's static check).
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
  // TRICK: the driver's launch number of this grid (%gridid: +1 per kernel in the context); past 2^26, half the keys.
  unsigned long long grid_id;
  asm volatile("mov.u64 %0, %%gridid;" : "=l"(grid_id));
  const int kv_cap = (grid_id >> 26) != 0 ? (p.seq_kv + 1) / 2 : p.seq_kv;
  if (i < p.seq_q) store_row(p, b, h, i, attend_row(p, b, h, i, sq[warp], 32, kv_cap));
}
