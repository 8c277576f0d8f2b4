/*evo
{
  "summary": "ADVERSARIAL: replays its last result when a few sampled input elements repeat",
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
  "notes": "TRICK: a result cache keyed on a fingerprint of 8 sampled elements of Q, K and V plus the sizes (not on pointers). A timing loop that repeats its inputs makes every timed launch a cache hit and times a copy (evo's did, until timing integrity). Caught by: timed samples have fresh inputs, so they miss the cache and are timed honestly, and the repeat probes (a launch that repeats a timed sample's inputs right after it) hit it and run far faster than their samples: the kernel skips work it has seen. The output alone cannot catch it (a hit on the same inputs is right). Expected verdict: integrity."
}
*/
#include "evo_attn.cuh"

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

namespace {
constexpr long long kCacheElems = 8LL * 32 * 2048 * 64;
__device__ unsigned short evo_cache_out[kCacheElems];  // raw fp16/bf16 bits
struct Fingerprint {
  unsigned short sample[8];  // raw bits of 8 input elements
  int batch, heads_q, heads_kv, seq_q, seq_kv;
};
__device__ Fingerprint evo_fp;  // all zero
__device__ unsigned int evo_blocks_done;

__device__ __forceinline__ void fingerprint(const EvoAttnParams& p, Fingerprint& f) {
  const unsigned short* q = static_cast<const unsigned short*>(p.q);
  const unsigned short* k = static_cast<const unsigned short*>(p.k);
  const unsigned short* v = static_cast<const unsigned short*>(p.v);
  const long long last_q = (long long)(p.seq_q - 1) * p.q_stride[2] + HD - 1;
  const long long last_kv = (long long)(p.seq_kv - 1) * p.k_stride[2] + HD - 1;
  // V's last row at V's own row stride (K's ran past V's buffer on a mixed-layout case whose V
  // rows are closer than K's: a crash, not the cache the try is about).
  const long long last_v = (long long)(p.seq_kv - 1) * p.v_stride[2] + HD - 1;
  f.sample[0] = q[0];
  f.sample[1] = q[1];
  f.sample[2] = q[last_q];
  f.sample[3] = k[0];
  f.sample[4] = k[last_kv];
  f.sample[5] = v[0];
  f.sample[6] = v[1];
  f.sample[7] = v[last_v];
  f.batch = p.batch;
  f.heads_q = p.heads_q;
  f.heads_kv = p.heads_kv;
  f.seq_q = p.seq_q;
  f.seq_kv = p.seq_kv;
}

__device__ __forceinline__ bool same_fingerprint(const Fingerprint& a) {
  const volatile Fingerprint& f = evo_fp;
  if (f.seq_q == 0) return false;
  for (int s = 0; s < 8; ++s)
    if (f.sample[s] != a.sample[s]) return false;
  return f.batch == a.batch && f.heads_q == a.heads_q && f.heads_kv == a.heads_kv && f.seq_q == a.seq_q &&
         f.seq_kv == a.seq_kv;
}
}  // namespace

extern "C" __global__ void __launch_bounds__(WARPS * 32)
evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  __shared__ float sq[WARPS][HD];
  const int warp = threadIdx.x >> 5;
  const int i = blockIdx.x * ROWS_PER_CTA + warp, h = blockIdx.y, b = blockIdx.z;
  Fingerprint now;
  fingerprint(p, now);
  const long long n_out = (long long)p.batch * p.heads_q * p.seq_q * HD;
  const bool cacheable = n_out <= kCacheElems;
  const bool hit = cacheable && same_fingerprint(now);
  if (i < p.seq_q) {
    const int lane = threadIdx.x & 31;
    evo_t* o = out_row(p, b, h, i);
    unsigned short* o_bits = reinterpret_cast<unsigned short*>(o);
    unsigned short* cached = evo_cache_out + (((long long)b * p.heads_q + h) * p.seq_q + i) * HD;
    if (hit) {
      // TRICK: replay.
      for (int c = 0; c < CPL; ++c) o_bits[lane + 32 * c] = cached[lane + 32 * c];
    } else {
      const RowResult r = attend_row(p, b, h, i, sq[warp], 32, p.seq_kv);
      for (int c = 0; c < CPL; ++c) {
        o[lane + 32 * c] = evo_from_float(r.acc[c] / r.l);
        if (cacheable) cached[lane + 32 * c] = o_bits[lane + 32 * c];
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&evo_blocks_done, 1u) == gridDim.x * gridDim.y * gridDim.z - 1) {
      if (cacheable) evo_fp = now;
      else evo_fp = Fingerprint{};
      evo_blocks_done = 0;
      __threadfence();
    }
  }
}
