/*evo
{
  "summary": "Stage 1 plus vectorised P·V: 16-byte evo_t2 (half2/bf162) loads of V, float2 accumulators, register tile of rows x 8 columns per lane",
  "parent": "1-cp-async/cp_async_kv",
  "params": {
    "BLOCK_M": [64, 32],
    "BLOCK_N": [64],
    "NWARPS": [8, 4]
  },
  "dtypes": ["fp16", "bf16"],
  "head_dims": [64, 128],
  "min_sm": 80,
  "notes": "Stage 2. Same pipeline as 1-cp-async/cp_async_kv (cp.async double-buffered K/V, WMMA Q·Kᵀ, warp-shuffle online softmax). P·V is re-tiled for vector access: lane = 2*cg + rg owns the VW = D/16 contiguous columns cg*VW.. (8 at D=128, 4 at D=64) of the warp rows rg, rg+2, ... (BLOCK_M/(2*NWARPS) rows). Per key it does one 16-byte (8-byte at D=64) smem load of V as evo_t2 pairs, evo2_to_float2, and VW/2 float2 FMA pairs per row; per 4 keys one broadcast float4 load of P per row. Per 4 keys and warp (8 rows, D=128) that is 4 P float4 + 4 V 16-byte loads for 128 FFMA per lane, against 8 P float4 + 16 scalar V loads (+16 cvt) in stage 1. Output stored as 16-byte (8-byte) evo_t2 chunks. FMA order per output element unchanged, so results are bit-identical to stages 0 and 1."
}
*/
#include "evo_attn.cuh"
#include <mma.h>

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
static_assert(EVO_HEAD_DIM == 64 || EVO_HEAD_DIM == 128, "head dim 64 or 128");
constexpr int VW = HD / 16;           // P·V: contiguous output columns per lane (8 or 4)
constexpr int RG = 2;                 // P·V: lanes 2cg, 2cg+1 share a column chunk
constexpr int RPL = RPW / RG;         // P·V: rows per lane (rg, rg + 2, ...)
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
constexpr int STAGES = 2;  // K/V buffers (double buffering)
constexpr int SMEM_BYTES = Q_BYTES + 2 * STAGES * KV_BYTES + S_BYTES + ST_BYTES;

}  // namespace

EVO_CONSTRAINT(BLOCK_M % 16 == 0 && BLOCK_N % 32 == 0, "BLOCK_M must be a multiple of 16, BLOCK_N of 32");
EVO_CONSTRAINT(BLOCK_M % NWARPS == 0, "BLOCK_M must be a multiple of NWARPS");
EVO_CONSTRAINT(TM % NWARPS == 0 || NWARPS % TM == 0, "WMMA strips must divide evenly among warps");
EVO_CONSTRAINT(TN % WPS == 0, "WMMA column tiles must divide evenly among the warps of a strip");
EVO_CONSTRAINT((BLOCK_M * CPR) % THREADS == 0 && (BLOCK_N * CPR) % THREADS == 0,
               "tile copies must divide evenly among threads");
EVO_CONSTRAINT(RPW % RG == 0, "BLOCK_M / NWARPS must be even");
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

// 16-byte global->shared async copy; src_bytes = 0 zero-fills the destination without reading.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool pred) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int n = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(n) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// Issue async copies of ROWS rows of HD elements; rows >= valid (valid >= 1) are zero-filled,
// their source address clamped to row 0 so no out-of-range address is ever formed.
template <int ROWS>
__device__ __forceinline__ void cp_tile(evo_t* __restrict__ dst, const evo_t* __restrict__ src,
                                        long long stride, int valid, int tid) {
  constexpr int ITERS = ROWS * CPR / THREADS;
#pragma unroll
  for (int it = 0; it < ITERS; ++it) {
    const int idx = tid + it * THREADS;
    const int row = idx / CPR, ch = idx % CPR;
    const bool ok = row < valid;
    cp_async16(dst + row * LDH + ch * 8, src + (ok ? row : 0) * stride + ch * 8, ok);
  }
}

// Explicit vector smem loads: NVVM otherwise splits them when the parts are used separately.
__device__ __forceinline__ float4 lds_f4(const float* ptr) {
  float4 v;
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(ptr));
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
  return v;
}
// VW contiguous elements of a V row as VW/2 evo_t2 pairs, one 16-byte (8-byte) load.
struct VChunk {
  unsigned w[VW / 2];
  __device__ __forceinline__ float2 f2(int q) const {
    const unsigned x = w[q];
    return evo2_to_float2(*reinterpret_cast<const evo_t2*>(&x));
  }
};
__device__ __forceinline__ VChunk lds_chunk(const evo_t* ptr) {
  VChunk c;
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(ptr));
#if EVO_HEAD_DIM == 128
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3]) : "r"(a) : "memory");
#else
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(c.w[0]), "=r"(c.w[1]) : "r"(a) : "memory");
#endif
  return c;
}
__device__ __forceinline__ unsigned t2_bits(evo_t2 h) { return *reinterpret_cast<const unsigned*>(&h); }

}  // namespace

extern "C" __global__ void __launch_bounds__(THREADS, 1)
evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  using namespace nvcuda;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  evo_t* sQ = reinterpret_cast<evo_t*>(smem_raw);
  evo_t* sK0 = reinterpret_cast<evo_t*>(smem_raw + Q_BYTES);                  // K[STAGES]
  evo_t* sV0 = reinterpret_cast<evo_t*>(smem_raw + Q_BYTES + STAGES * KV_BYTES);  // V[STAGES]
  float* sS = reinterpret_cast<float*>(smem_raw + Q_BYTES + 2 * STAGES * KV_BYTES);
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

  const int kv_end = evo_kv_limit(p, row0, BLOCK_M);
  const int ntiles = (kv_end + BLOCK_N - 1) / BLOCK_N;

  // Prologue: Q and K/V tile 0 in one group.
  cp_tile<BLOCK_M>(sQ, gQ, p.q_stride[2], seq_q - row0, tid);
  cp_tile<BLOCK_N>(sK0, gK, p.k_stride[2], seq_kv, tid);
  cp_tile<BLOCK_N>(sV0, gV, p.v_stride[2], seq_kv, tid);
  cp_async_commit();

  const int wrow0 = warp * RPW;  // first tile row owned by this warp (softmax, P·V, output)
  // Running max of row wrow0 + r lives in lane r; per-lane partial row sums in sL (each slot
  // is touched by one thread only). Keeping them out of register arrays lets the softmax
  // loop stay rolled, which keeps register use far from the 255 limit.
  float m_lane = neg_inf();
  const int cg = lane >> 1, rg = lane & 1;  // P·V tile: columns cg*VW.., rows wrow0 + rg + RG*i
  float2 acc[RPL][VW / 2];
#pragma unroll
  for (int r = 0; r < RPW; ++r) sL[(wrow0 + r) * 32 + lane] = 0.f;
#pragma unroll
  for (int i = 0; i < RPL; ++i)
#pragma unroll
    for (int q = 0; q < VW / 2; ++q) acc[i][q] = make_float2(0.f, 0.f);

#if EVO_CAUSAL
  const int warp_kv_end = min(seq_kv, row0 + wrow0 + RPW);  // keys visible to any row of this warp
#else
  const int warp_kv_end = seq_kv;
#endif

  for (int t = 0; t < ntiles; ++t) {
    const int n0 = t * BLOCK_N;
    const evo_t* sK = sK0 + (t % STAGES) * (BLOCK_N * LDH);
    const evo_t* sV = sV0 + (t % STAGES) * (BLOCK_N * LDH);
    // Tile t has landed (this thread's copies), and after the barrier everyone's copies are
    // visible and every warp is done with tile t-1, whose buffers and S tile may be reused.
    cp_async_wait_all();
    __syncthreads();
    if (t + 1 < ntiles) {
      const int n1 = n0 + BLOCK_N;
      evo_t* dK = sK0 + ((t + 1) % STAGES) * (BLOCK_N * LDH);
      evo_t* dV = sV0 + ((t + 1) % STAGES) * (BLOCK_N * LDH);
      cp_tile<BLOCK_N>(dK, gK + n1 * p.k_stride[2], p.k_stride[2], seq_kv - n1, tid);
      cp_tile<BLOCK_N>(dV, gV + n1 * p.v_stride[2], p.v_stride[2], seq_kv - n1, tid);
      cp_async_commit();
    }

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
    for (int i = 0; i < RPL; ++i) {
      const float alpha = sA[wrow0 + rg + RG * i];
#pragma unroll
      for (int q = 0; q < VW / 2; ++q) {
        acc[i][q].x *= alpha;
        acc[i][q].y *= alpha;
      }
    }

    // O += P·V: per 4 keys one broadcast float4 of P per row, per key one vector load of V.
    const int nkeys = min(BLOCK_N, warp_kv_end - n0);  // keys past this are masked for the warp
    for (int jj = 0; jj < nkeys; jj += 4) {
      float4 pp[RPL];
#pragma unroll
      for (int i = 0; i < RPL; ++i)
        pp[i] = lds_f4(sS + (wrow0 + rg + RG * i) * LDF + jj);
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const VChunk vc = lds_chunk(sV + (jj + u) * LDH + cg * VW);
        float2 v[VW / 2];
#pragma unroll
        for (int q = 0; q < VW / 2; ++q) v[q] = vc.f2(q);
#pragma unroll
        for (int i = 0; i < RPL; ++i) {
          const float pu = u == 0 ? pp[i].x : u == 1 ? pp[i].y : u == 2 ? pp[i].z : pp[i].w;
#pragma unroll
          for (int q = 0; q < VW / 2; ++q) {
            acc[i][q].x = fmaf(pu, v[q].x, acc[i][q].x);
            acc[i][q].y = fmaf(pu, v[q].y, acc[i][q].y);
          }
        }
      }
    }
  }

  // Row sums (softmax layout: partials per lane) -> 1/l in sA, then write the P·V tile.
  __syncwarp();  // every lane is done reading sA
#pragma unroll 4
  for (int r = 0; r < RPW; ++r) {
    const float l = warp_sum(sL[(wrow0 + r) * 32 + lane]);
    if (lane == 0) sA[wrow0 + r] = 1.f / l;
  }
  __syncwarp();
#pragma unroll
  for (int i = 0; i < RPL; ++i) {
    const int lr = wrow0 + rg + RG * i;
    const int qi = row0 + lr;
    if (qi < seq_q) {
      const float inv = sA[lr];
      unsigned w[VW / 2];
#pragma unroll
      for (int q = 0; q < VW / 2; ++q) w[q] = t2_bits(evo2_from_float2(acc[i][q].x * inv, acc[i][q].y * inv));
      evo_t* dst = gO + qi * p.o_stride[2] + cg * VW;
#if EVO_HEAD_DIM == 128
      asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
#else
      asm volatile("st.global.v2.u32 [%0], {%1, %2};\n" ::"l"(dst), "r"(w[0]), "r"(w[1]) : "memory");
#endif
    }
  }
}
