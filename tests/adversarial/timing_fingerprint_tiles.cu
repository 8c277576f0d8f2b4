/*evo
{
  "summary": "ADVERSARIAL: skips a fifth of its tiles when a fingerprint of its inputs repeats",
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
  "notes": "TRICK: input-keyed caching. A fingerprint of 8 sampled input elements, the pointers and the sizes is kept from the last launch; when it repeats, the CTAs of every fifth query tile (blockIdx.x % 5 == 0) copy their cached output instead of computing, about 20 % of the work on a long shape. The output is right (same inputs, cached from a launch that computed it). Before timing integrity every timed sample repeated the inputs (1.25x faster) and the post-timing launch on fresh inputs missed the cache and computed, under the 3x replay rule: admitted. Caught by: timed samples have fresh inputs (no hit, full work, honest time), and the repeat probes, launches that repeat a timed sample's inputs right after it, hit the cache and run about 20 % faster than their samples on long-smoke (many waves; on the one-wave mission shape no gain shows), beyond the 5 % limit. Expected verdict: integrity."
}
*/
#include "evo_attn.cuh"
#include <mma.h>

// The timing family of tests/adversarial: the real stage-0 kernel (variants/0-baseline/
// wmma_scalar_pv.cu at BLOCK_M 64, BLOCK_N 64, NWARPS 8), its body unchanged as attend_tile();
// each file wraps it in a kernel that plays one timing trick (marked TRICK) and must get the
// verdict in tests/adversarial/expected.json. Self-contained: variants may include only
// evo_attn.cuh and toolkit headers.

#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef NWARPS
#define NWARPS 8
#endif

namespace {

constexpr int HD = EVO_HEAD_DIM;
constexpr int THREADS = NWARPS * 32;
constexpr int LDH = HD + 8;           // smem row stride of Q/K/V tiles, elements (+16 B pad)
constexpr int LDF = BLOCK_N + 4;      // smem row stride of the float S/P tile
constexpr int RPW = BLOCK_M / NWARPS; // softmax / P·V rows per warp
constexpr int CPL = HD / 32;          // output columns per lane
constexpr int KPL = BLOCK_N / 32;     // S columns per lane in the softmax
constexpr int CPR = HD / 8;           // 16-byte chunks per row
constexpr int TM = BLOCK_M / 16;      // WMMA row strips
constexpr int TN = BLOCK_N / 16;      // WMMA column tiles
constexpr int WPS = NWARPS >= TM ? NWARPS / TM : 1;  // warps sharing one strip
constexpr int SPW = TM >= NWARPS ? TM / NWARPS : 1;  // strips per warp
constexpr int CTW = TN / WPS;                        // column tiles per warp

constexpr int Q_BYTES = BLOCK_M * LDH * 2;
constexpr int KV_BYTES = BLOCK_N * LDH * 2;
constexpr int S_BYTES = BLOCK_M * LDF * 4;
constexpr int ST_BYTES = BLOCK_M * 33 * 4;  // per row: alpha, 32 per-lane partial row sums
constexpr int SMEM_BYTES = Q_BYTES + 2 * KV_BYTES + S_BYTES + ST_BYTES;

}  // namespace

EVO_CONSTRAINT(BLOCK_M % 16 == 0 && BLOCK_N % 32 == 0, "BLOCK_M must be a multiple of 16, BLOCK_N of 32");
EVO_CONSTRAINT(BLOCK_M % NWARPS == 0, "BLOCK_M must be a multiple of NWARPS");
EVO_CONSTRAINT(TM % NWARPS == 0 || NWARPS % TM == 0, "WMMA strips must divide evenly among warps");
EVO_CONSTRAINT(TN % WPS == 0, "WMMA column tiles must divide evenly among the warps of a strip");
EVO_CONSTRAINT((BLOCK_M * CPR) % THREADS == 0 && (BLOCK_N * CPR) % THREADS == 0,
               "tile copies must divide evenly among threads");
EVO_CONSTRAINT(SMEM_BYTES <= 160 * 1024, "shared memory must fit sm_80");

EVO_EXPORT_LAUNCH(THREADS, SMEM_BYTES, BLOCK_M, 1, 0);

namespace {

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000u); }  // no INFINITY in NVRTC
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

// Copy ROWS rows of HD elements (rows >= valid are zero-filled) with 16-byte loads.
template <int ROWS>
__device__ __forceinline__ void load_tile(evo_t* __restrict__ dst, const evo_t* __restrict__ src,
                                          long long stride, int valid, int tid) {
  constexpr int ITERS = ROWS * CPR / THREADS;
  uint4 buf[ITERS];
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int idx = tid + it * THREADS;
    const int row = idx / CPR, ch = idx % CPR;
    buf[it] = make_uint4(0u, 0u, 0u, 0u);
    if (row < valid) buf[it] = *reinterpret_cast<const uint4*>(src + row * stride + ch * 8);
  }
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int idx = tid + it * THREADS;
    const int row = idx / CPR, ch = idx % CPR;
    *reinterpret_cast<uint4*>(dst + row * LDH + ch * 8) = buf[it];
  }
}

}  // namespace

// The stage-0 kernel's body, unchanged: this CTA's BLOCK_M query rows of one (batch, head).
__device__ __forceinline__ void attend_tile(const EvoAttnParams& p) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  evo_t* sQ = reinterpret_cast<evo_t*>(smem_raw);
  evo_t* sK = reinterpret_cast<evo_t*>(smem_raw + Q_BYTES);
  evo_t* sV = reinterpret_cast<evo_t*>(smem_raw + Q_BYTES + KV_BYTES);
  float* sS = reinterpret_cast<float*>(smem_raw + Q_BYTES + 2 * KV_BYTES);
  float* sA = sS + BLOCK_M * LDF;  // per-row rescale factor of the current tile
  float* sL = sA + BLOCK_M;        // [BLOCK_M][32] per-lane partial row sums

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int row0 = blockIdx.x * BLOCK_M;
  const int h = blockIdx.y, b = blockIdx.z;
  const int hkv = evo_kv_head(p, h);
  const int seq_q = p.seq_q, seq_kv = p.seq_kv;
  const float sl2 = p.softmax_scale_log2;

  const evo_t* gQ = evo_q_ptr(p, b, h) + row0 * p.q_stride[2];
  const evo_t* gK = evo_k_ptr(p, b, hkv);
  const evo_t* gV = evo_v_ptr(p, b, hkv);
  evo_t* gO = evo_o_ptr(p, b, h);

  load_tile<BLOCK_M>(sQ, gQ, p.q_stride[2], seq_q - row0, tid);

  const int wrow0 = warp * RPW;  // first tile row owned by this warp (softmax, P·V, output)
  // Running max of row wrow0 + r lives in lane r; per-lane partial row sums in sL (each slot
  // is touched by one thread only). Keeping them out of register arrays lets the softmax
  // loop stay rolled, which keeps register use far from the 255 limit.
  float m_lane = neg_inf();
  float acc[RPW][CPL];  // columns lane + 32c
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    sL[(wrow0 + r) * 32 + lane] = 0.f;
#pragma unroll
    for (int c = 0; c < CPL; ++c) acc[r][c] = 0.f;
  }

  const int kv_end = evo_kv_limit(p, row0, BLOCK_M);
#if EVO_CAUSAL
  const int warp_kv_end = min(seq_kv, row0 + wrow0 + RPW);  // keys visible to any row of this warp
#else
  const int warp_kv_end = seq_kv;
#endif

  for (int n0 = 0; n0 < kv_end; n0 += BLOCK_N) {
    __syncthreads();  // previous tile's K/V/P fully consumed
    load_tile<BLOCK_N>(sK, gK + n0 * p.k_stride[2], p.k_stride[2], seq_kv - n0, tid);
    load_tile<BLOCK_N>(sV, gV + n0 * p.v_stride[2], p.v_stride[2], seq_kv - n0, tid);
    __syncthreads();

    // S = Q·Kᵀ on tensor cores.
#pragma unroll
    for (int s = 0; s < SPW; ++s) {
      const int strip = warp / WPS + s * (NWARPS / WPS);
      const int ct0 = (warp % WPS) * CTW;
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> c[CTW];
#pragma unroll
      for (int ct = 0; ct < CTW; ++ct) wmma::fill_fragment(c[ct], 0.f);
#pragma unroll 2  // full unrolling lets ptxas hoist every fragment load (bf16: 255 regs)
      for (int kk = 0; kk < HD / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, evo_t, wmma::row_major> a;
        wmma::load_matrix_sync(a, sQ + strip * 16 * LDH + kk * 16, LDH);
#pragma unroll
        for (int ct = 0; ct < CTW; ++ct) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, evo_t, wmma::col_major> bf;
          wmma::load_matrix_sync(bf, sK + (ct0 + ct) * 16 * LDH + kk * 16, LDH);
          wmma::mma_sync(c[ct], a, bf, c[ct]);
        }
      }
#pragma unroll
      for (int ct = 0; ct < CTW; ++ct)
        wmma::store_matrix_sync(sS + strip * 16 * LDF + (ct0 + ct) * 16, c[ct], LDF, wmma::mem_row_major);
    }
    __syncthreads();

    // Online softmax over this warp's rows; P overwrites S in place, alpha goes to sA.
    static_assert(RPW <= 32, "row max is kept one row per lane");
#pragma unroll 4
    for (int r = 0; r < RPW; ++r) {
      const int lr = wrow0 + r;
      float* srow = sS + lr * LDF;
      float x[KPL];
      float mx = neg_inf();
#pragma unroll
      for (int k = 0; k < KPL; ++k) {
        const int kj = n0 + lane + 32 * k;
        bool ok = kj < seq_kv;
#if EVO_CAUSAL
        ok = ok && kj <= row0 + lr;
#endif
        x[k] = ok ? srow[lane + 32 * k] * sl2 : neg_inf();
        mx = fmaxf(mx, x[k]);
      }
      mx = warp_max(mx);
      const float m_old = __shfl_sync(0xffffffffu, m_lane, r);
      const float m_new = fmaxf(m_old, mx);
      const float m_use = m_new == neg_inf() ? 0.f : m_new;  // never -inf - -inf
      const float alpha = exp2f(m_old - m_use);
      if (lane == r) m_lane = m_new;
      float ls = 0.f;
#pragma unroll
      for (int k = 0; k < KPL; ++k) {
        const float pk = exp2f(x[k] - m_use);
        srow[lane + 32 * k] = pk;
        ls += pk;
      }
      float* lp = sL + lr * 32 + lane;
      *lp = *lp * alpha + ls;  // per-lane partial sum, reduced at the end
      if (lane == 0) sA[lr] = alpha;
    }
    __syncwarp();

    // Rescale the accumulators by this tile's alpha.
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const float alpha = sA[wrow0 + r];
#pragma unroll
      for (int c = 0; c < CPL; ++c) acc[r][c] *= alpha;
    }

    // O += P·V with scalar FP32 FMAs; lane owns columns lane + 32c.
    const int nkeys = min(BLOCK_N, warp_kv_end - n0);  // keys past this are masked for the warp
    for (int jj = 0; jj < nkeys; jj += 4) {
      float v[4][CPL];
#pragma unroll
      for (int u = 0; u < 4; ++u)
#pragma unroll
        for (int c = 0; c < CPL; ++c) v[u][c] = evo_to_float(sV[(jj + u) * LDH + lane + 32 * c]);
#pragma unroll
      for (int r = 0; r < RPW; ++r) {
        const float4 pp = *reinterpret_cast<const float4*>(sS + (wrow0 + r) * LDF + jj);
#pragma unroll
        for (int c = 0; c < CPL; ++c) {
          float a = acc[r][c];
          a = fmaf(pp.x, v[0][c], a);
          a = fmaf(pp.y, v[1][c], a);
          a = fmaf(pp.z, v[2][c], a);
          a = fmaf(pp.w, v[3][c], a);
          acc[r][c] = a;
        }
      }
    }
  }

  // Normalise and write this warp's rows.
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const float inv = 1.f / warp_sum(sL[(wrow0 + r) * 32 + lane]);
    const int qi = row0 + wrow0 + r;
    if (qi < seq_q) {
      evo_t* orow = gO + qi * p.o_stride[2];
#pragma unroll
      for (int c = 0; c < CPL; ++c) orow[lane + 32 * c] = evo_from_float(acc[r][c] * inv);
    }
  }
}

namespace {

// An output cache: raw 16-bit values, [B][Hq][Sq][D], for outputs up to kCacheElems.
constexpr long long kCacheElems = 8LL * 32 * 2048 * 64;
__device__ unsigned short evo_cache[kCacheElems];

__device__ __forceinline__ bool cacheable(const EvoAttnParams& p) {
  return (long long)p.batch * p.heads_q * p.seq_q * HD <= kCacheElems;
}

// This CTA's output rows into the cache, or back from it into O.
__device__ __forceinline__ void copy_tile(const EvoAttnParams& p, bool to_cache) {
  __syncthreads();  // the CTA's own writes to O are visible to all its threads
  const int row0 = blockIdx.x * BLOCK_M, h = blockIdx.y, b = blockIdx.z;
  unsigned short* o = reinterpret_cast<unsigned short*>(evo_o_ptr(p, b, h));
  const int rows = min(BLOCK_M, p.seq_q - row0);
  for (int idx = threadIdx.x; idx < rows * HD; idx += THREADS) {
    const int r = idx / HD, d = idx % HD;
    unsigned short* g = o + (long long)(row0 + r) * p.o_stride[2] + d;
    unsigned short* c = evo_cache + (((long long)b * p.heads_q + h) * p.seq_q + row0 + r) * HD + d;
    if (to_cache)
      *c = *g;
    else
      *g = *c;
  }
}

}  // namespace

namespace {
struct Fingerprint {
  unsigned short sample[8];  // raw bits of 8 input elements
  const void *q, *o;
  int batch, heads_q, heads_kv, seq_q, seq_kv;
};
__device__ Fingerprint evo_fp;  // the last launch's; all zero before the first
__device__ unsigned evo_fp_ctas;

__device__ __forceinline__ Fingerprint fingerprint(const EvoAttnParams& p) {
  const unsigned short* q = static_cast<const unsigned short*>(p.q);
  const unsigned short* k = static_cast<const unsigned short*>(p.k);
  const unsigned short* v = static_cast<const unsigned short*>(p.v);
  const long long last_q = (long long)(p.seq_q - 1) * p.q_stride[2] + HD - 1;
  const long long last_kv = (long long)(p.seq_kv - 1) * p.k_stride[2] + HD - 1;
  // V's last row at V's own row stride (K's ran past V's buffer on a mixed-layout case whose V
  // rows are closer than K's: a crash, not the cache the try is about).
  const long long last_v = (long long)(p.seq_kv - 1) * p.v_stride[2] + HD - 1;
  return Fingerprint{{q[0], q[1], q[last_q], k[0], k[last_kv], v[0], v[1], v[last_v]},
                     p.q, p.o, p.batch, p.heads_q, p.heads_kv, p.seq_q, p.seq_kv};
}

__device__ __forceinline__ bool repeats(const Fingerprint& a) {
  const volatile Fingerprint& f = evo_fp;
  if (f.seq_q == 0) return false;
  for (int s = 0; s < 8; ++s)
    if (f.sample[s] != a.sample[s]) return false;
  return f.q == a.q && f.o == a.o && f.batch == a.batch && f.heads_q == a.heads_q && f.heads_kv == a.heads_kv &&
         f.seq_q == a.seq_q && f.seq_kv == a.seq_kv;
}
}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS, 1)
evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  const Fingerprint now = fingerprint(p);
  const bool skip = cacheable(p) && repeats(now) && blockIdx.x % 5 == 0;
  if (skip) {
    copy_tile(p, false);  // TRICK: a fifth of the tiles replayed from the cache
  } else {
    attend_tile(p);
    if (cacheable(p) && blockIdx.x % 5 == 0) copy_tile(p, true);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&evo_fp_ctas, 1u) == gridDim.x * gridDim.y * gridDim.z - 1) {
      evo_fp = cacheable(p) ? now : Fingerprint{};
      evo_fp_ctas = 0;
      __threadfence();
    }
  }
}
