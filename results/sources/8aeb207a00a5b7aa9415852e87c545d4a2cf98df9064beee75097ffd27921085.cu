/*evo
{
  "summary": "Stage 3 mma.sync FA2 kernel with XOR-swizzled (unpadded) shared memory: chunk ^= row % 8",
  "parent": "3-wmma-pv/mma_pv",
  "params": {
    "BLOCK_M": [64, 128],
    "BLOCK_N": [64, 32],
    "NWARPS": [4, 8]
  },
  "dtypes": ["fp16", "bf16"],
  "head_dims": [64, 128],
  "min_sm": 80,
  "notes": "Identical math and schedule to 3-wmma-pv/mma_pv; only the shared-memory layout changes. Q/K/V/O tiles are stored unpadded (row = D*2 bytes) and the 16-byte chunk c of row r is stored at chunk c ^ (r % 8) (within each 128-byte segment), consistently for cp.async stores, ldmatrix (x4 and x4.trans) addresses and the O staging. Any 8 consecutive rows at one logical chunk hit 8 distinct 16-byte bank groups, so ldmatrix stays conflict-free without the +8-element pad; smem shrinks by 8/(D+8) (D=128: 87040 -> 81920 B at 64x64x4, 104448 -> 98304 B at 128x64x8). Same config domain as stage 3; launch bounds per config picked by measurement (none for 128x64x8 at D=64, which then fits 128 registers = 2 CTAs/SM; min 1 otherwise)."
}
*/
#include "evo_attn.cuh"

#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef NWARPS
#define NWARPS 4
#endif

#define HD EVO_HEAD_DIM
#define NTHREADS (NWARPS * 32)
#define WROWS (BLOCK_M / NWARPS)   // query rows per warp
#define MT (WROWS / 16)            // m16 tiles per warp
#define RB (HD * 2)                 // smem row bytes, unpadded; 16-byte chunks XOR-swizzled by row % 8

EVO_CONSTRAINT(BLOCK_M % (16 * NWARPS) == 0, "BLOCK_M must be a multiple of 16*NWARPS");
EVO_CONSTRAINT(MT == 1 || MT == 2, "each warp owns 16 or 32 query rows");
EVO_CONSTRAINT(BLOCK_N % 16 == 0 && BLOCK_N >= 16 && BLOCK_N <= 128, "BLOCK_N must be 16..128, multiple of 16");
EVO_CONSTRAINT(MT == 1 || (HD == 64 && BLOCK_N <= 32), "32 rows/warp only at D=64 with BLOCK_N <= 32 (registers)");
EVO_CONSTRAINT(MT == 2 || BLOCK_N >= 64, "at 16 rows/warp BLOCK_N=32 halves the work per barrier (measured 5-10% slower): pruned");

#define Q_BYTES (BLOCK_M * RB)
#define KV_BYTES (BLOCK_N * RB)
#define SMEM_BYTES (Q_BYTES + 4 * KV_BYTES)

EVO_EXPORT_LAUNCH(NTHREADS, SMEM_BYTES, BLOCK_M, 1, 0);

// Launch bounds. ptxas' register budget and schedule depend on whether a minimum CTA count is given
// (`.minnctapersm 1` vs none), and the two differ by up to 15% here for the same source. Both were measured
// on H200 per config; the faster one is hard-wired (none for 128x64x8 at D=64, which then fits 128
// registers = 2 CTAs/SM, min 1 otherwise).
#if HD == 64 && BLOCK_M == 128 && BLOCK_N == 64 && NWARPS == 8
#define EVO_LAUNCH_BOUNDS __launch_bounds__(NTHREADS)
#else
#define EVO_LAUNCH_BOUNDS __launch_bounds__(NTHREADS, 1)
#endif

namespace {

#define NEG_INF (-__int_as_float(0x7f800000))  // NVRTC has no <math.h> INFINITY

__device__ __forceinline__ unsigned smem_u32(const void* ptr) {
  return static_cast<unsigned>(__cvta_generic_to_shared(ptr));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// D += A(16x16, row) * B(16x8, col), f32 accumulate.
__device__ __forceinline__ void mma16816(float* d, const unsigned* a, unsigned b0, unsigned b1) {
#if EVO_DTYPE == EVO_DTYPE_FP16
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float fast_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  evo_t2 v = evo2_from_float2(lo, hi);
  return *reinterpret_cast<unsigned*>(&v);
}

// Byte offset of 16-byte chunk c of row r inside a tile: chunk index XOR (row % 8). Only the low 3 bits
// of c change, so a chunk never leaves its 128-byte segment (D=128 rows have two segments).
__device__ __forceinline__ unsigned swz(int r, int c) { return r * RB + ((c ^ (r & 7)) << 4); }

// ROWS x HD tile from global (row stride gstride elements) into swizzled smem at s_base; rows >= valid
// are zero-filled (src-size 0, nothing read).
template <int ROWS>
__device__ __forceinline__ void load_tile(unsigned s_base, const evo_t* g, long long gstride, int valid, int tid) {
  constexpr int CPR = HD / 8;  // 16-byte chunks per row
  constexpr int TOTAL = ROWS * CPR;
  constexpr int ITERS = (TOTAL + NTHREADS - 1) / NTHREADS;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    const int c = tid + i * NTHREADS;
    if (TOTAL % NTHREADS == 0 || c < TOTAL) {
      const int r = c / CPR;
      const int col = (c % CPR) * 8;
      const bool ok = r < valid;
      const evo_t* src = ok ? g + r * gstride + col : g;
      cp_async16(s_base + swz(r, c % CPR), src, ok ? 16 : 0);
    }
  }
}

}  // namespace

extern "C" __global__ void EVO_LAUNCH_BOUNDS evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const unsigned sQ_u = smem_u32(smem_raw);
  const unsigned sK_u = sQ_u + Q_BYTES;          // 2 stages
  const unsigned sV_u = sK_u + 2 * KV_BYTES;     // 2 stages

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;  // row within an 8-row group
  const int t = lane & 3;   // thread within quad

#if EVO_CAUSAL
  const int m0 = (gridDim.x - 1 - blockIdx.x) * BLOCK_M;  // longest (bottom) tiles start first
#else
  const int m0 = blockIdx.x * BLOCK_M;
#endif
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int hkv = evo_kv_head(p, h);
  const int seq_q = p.seq_q;
  const int seq_kv = p.seq_kv;

  const evo_t* Qg = evo_q_ptr(p, b, h) + (long long)m0 * p.q_stride[2];
  const evo_t* Kg = evo_k_ptr(p, b, hkv);
  const evo_t* Vg = evo_v_ptr(p, b, hkv);
  const long long ks = p.k_stride[2];
  const long long vs = p.v_stride[2];

  const int q_rows = min(BLOCK_M, seq_q - m0);
  const int kv_end = evo_kv_limit(p, m0, q_rows);
  const int ntiles = (kv_end + BLOCK_N - 1) / BLOCK_N;

  // per-lane ldmatrix offsets (bytes) for chunk-pair 0 of a 16-row block. Every 16-row block starts at a
  // multiple of 8 rows, so row % 8 == lane % 8, and the chunk of k-step kc is reached by XOR-ing
  // (2*kc) << 4 into the offset: it only flips chunk bits 4..7, never the row bits (RB >= 128).
  // A-operand / V(.trans) pattern: row = (lane&7) + ((lane>>3)&1)*8, chunk = lane>>4
  const unsigned offA = swz((lane & 7) + ((lane >> 3) & 1) * 8, lane >> 4);
  // K (B operand, non-trans) pattern: row = (lane&7) + (lane>>4)*8, chunk = (lane>>3)&1
  const unsigned offK = swz((lane & 7) + (lane >> 4) * 8, (lane >> 3) & 1);

  const int wrow0 = warp * WROWS;  // first row of this warp inside the CTA tile

  unsigned qf[MT][HD / 16][4];
  float o[MT][HD / 8][4];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int j = 0; j < HD / 8; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.f;
  float m_run[MT][2], l_run[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    m_run[mt][0] = m_run[mt][1] = NEG_INF;
    l_run[mt][0] = l_run[mt][1] = 0.f;
  }
  const float sl2 = p.softmax_scale_log2;
#if EVO_CAUSAL
  const int wlast = m0 + wrow0 + WROWS - 1;  // last query row of this warp
#endif

  auto load_q_frags = [&]() {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int kc = 0; kc < HD / 16; ++kc)
        ldsm_x4(sQ_u + (wrow0 + mt * 16) * RB + (offA ^ (kc * 32)), qf[mt][kc][0], qf[mt][kc][1], qf[mt][kc][2],
                qf[mt][kc][3]);
  };

  // S = Q Kᵀ for the K tile in `stage`
  auto qk = [&](float (&s)[MT][BLOCK_N / 8][4], int stage) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.f;
    const unsigned sK_s = sK_u + stage * KV_BYTES;
#pragma unroll
    for (int kc = 0; kc < HD / 16; ++kc) {
      const unsigned kaddr = sK_s + (offK ^ (kc * 32));
#pragma unroll
      for (int np = 0; np < BLOCK_N / 16; ++np) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(kaddr + np * 16 * RB, b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816(s[mt][2 * np], qf[mt][kc], b0, b1);
          mma16816(s[mt][2 * np + 1], qf[mt][kc], b2, b3);
        }
      }
    }
  };

  // ragged tail (last tile) and causal diagonal tiles only
  auto mask = [&](float (&s)[MT][BLOCK_N / 8][4], int n0) {
    bool need = n0 + BLOCK_N > seq_kv;
#if EVO_CAUSAL
    need = need || (n0 + BLOCK_N - 1 > m0 + wrow0);
#endif
    if (need) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < BLOCK_N / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = n0 + j * 8 + 2 * t + (e & 1);
            bool masked = key >= seq_kv;
#if EVO_CAUSAL
            const int row = m0 + wrow0 + mt * 16 + g + (e >> 1) * 8;
            masked = masked || key > row;
#endif
            if (masked) s[mt][j][e] = NEG_INF;
          }
    }
  };

  // online softmax of S (rows g and g+8 of each m16 tile; a quad shares a row), O rescale, O += P V
  auto softmax_pv = [&](float (&s)[MT][BLOCK_N / 8][4], int stage) {
    unsigned pa[MT][BLOCK_N / 16][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        float mx = NEG_INF;
#pragma unroll
        for (int j = 0; j < BLOCK_N / 8; ++j) mx = fmaxf(mx, fmaxf(s[mt][j][2 * hi], s[mt][j][2 * hi + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_run[mt][hi], mx * sl2);
        const float m_use = (m_new == NEG_INF) ? 0.f : m_new;  // no valid key yet: avoid -inf - -inf
        const float alpha = fast_exp2(m_run[mt][hi] - m_use);
        m_run[mt][hi] = m_new;
        float rs = 0.f;
#pragma unroll
        for (int j = 0; j < BLOCK_N / 8; ++j) {
          const float p0 = fast_exp2(fmaf(s[mt][j][2 * hi], sl2, -m_use));
          const float p1 = fast_exp2(fmaf(s[mt][j][2 * hi + 1], sl2, -m_use));
          s[mt][j][2 * hi] = p0;
          s[mt][j][2 * hi + 1] = p1;
          rs += p0 + p1;
        }
        l_run[mt][hi] = l_run[mt][hi] * alpha + rs;
#pragma unroll
        for (int d = 0; d < HD / 8; ++d) {
          o[mt][d][2 * hi] *= alpha;
          o[mt][d][2 * hi + 1] *= alpha;
        }
      }
      // S accumulator (16x8 per j) -> A fragment (16x16 per kk), no smem round trip
#pragma unroll
      for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
        pa[mt][kk][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][kk][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][kk][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][kk][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
    }
    const unsigned sV_s = sV_u + stage * KV_BYTES;
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
#pragma unroll
      for (int dp = 0; dp < HD / 16; ++dp) {
        unsigned b0, b1, b2, b3;
        ldsm_x4_t(sV_s + kk * 16 * RB + (offA ^ (dp * 32)), b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816(o[mt][2 * dp], pa[mt][kk], b0, b1);
          mma16816(o[mt][2 * dp + 1], pa[mt][kk], b2, b3);
        }
      }
    }
  };

  auto load_k = [&](int n, int stage) { load_tile<BLOCK_N>(sK_u + stage * KV_BYTES, Kg + n * ks, ks, seq_kv - n, tid); };
  auto load_v = [&](int n, int stage) { load_tile<BLOCK_N>(sV_u + stage * KV_BYTES, Vg + n * vs, vs, seq_kv - n, tid); };

  // ---- prologue: Q tile + KV tile 0 in one group
  load_tile<BLOCK_M>(sQ_u, Qg, p.q_stride[2], q_rows, tid);
  load_k(0, 0);
  load_v(0, 0);
  cp_async_commit();
  for (int it = 0; it < ntiles; ++it) {
    const int n0 = it * BLOCK_N;
    const int stage = it & 1;
    cp_async_wait<0>();
    __syncthreads();  // tile `it` visible to all; everyone is done with tile it-1 (the other stage)
    if (it + 1 < ntiles) {
      load_k(n0 + BLOCK_N, stage ^ 1);
      load_v(n0 + BLOCK_N, stage ^ 1);
      cp_async_commit();
    }
    if (it == 0) load_q_frags();
#if EVO_CAUSAL
    if (n0 > wlast) continue;  // all rows of this warp lie above the tile: nothing to do for this warp
#endif
    float s[MT][BLOCK_N / 8][4];
    qk(s, stage);
    mask(s, n0);
    softmax_pv(s, stage);
  }

  // ---- epilogue: O / l -> smem (this warp's own Q rows) -> 16-byte global stores
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float l = l_run[mt][hi];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.f ? fast_rcp(l) : 0.f;
      const int r = wrow0 + mt * 16 + g + hi * 8;
#pragma unroll
      for (int d = 0; d < HD / 8; ++d)
        *reinterpret_cast<evo_t2*>(smem_raw + swz(r, d) + 4 * t) =
            evo2_from_float2(o[mt][d][2 * hi] * inv, o[mt][d][2 * hi + 1] * inv);
    }
  }
  __syncwarp();
  evo_t* Og = evo_o_ptr(p, b, h);
  const long long os = p.o_stride[2];
  constexpr int CPR = HD / 8;
#pragma unroll
  for (int i = 0; i < WROWS * CPR / 32; ++i) {
    const int c = lane + i * 32;
    const int r = c / CPR;
    const int row = m0 + wrow0 + r;
    if (row < seq_q)
      *reinterpret_cast<uint4*>(Og + row * os + (c % CPR) * 8) =
          *reinterpret_cast<const uint4*>(smem_raw + swz(wrow0 + r, c % CPR));
  }
}
