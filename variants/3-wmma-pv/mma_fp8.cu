/*evo
{
  "summary": "FP8 e4m3 FA2-style mma.sync m16n8k32 for Q·Kᵀ and P·V (sm_89+), V transposed by hand in smem, P as e4m3 scaled by 256",
  "parent": "3-wmma-pv/mma_pv",
  "params": {
    "BLOCK_M": [64, 128],
    "BLOCK_N": [32, 64],
    "NWARPS": [4, 8]
  },
  "dtypes": ["fp8"],
  "head_dims": [64, 128],
  "min_sm": 89,
  "notes": "mma_pv's structure with e4m3 operands: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32. 8-bit A/B fragments hold 4 consecutive k bytes per register, which is exactly what ldmatrix .b16 hands a lane (row lane/4, bytes 4*(lane%4)..+3), so Q and K come through ldmatrix.x4 with mma_pv's lane patterns counted in bytes. P·V: the S accumulator gives lane (g,t) keys 8j+2t, 8j+2t+1 of each n8 tile, but the A fragment wants 4 consecutive k positions; the k order of a sum is free, so the A fragment takes keys {2t,2t+1,8+2t,9+2t} (and +16) as positions 4t..4t+3 (and 16+4t..), and V is written to smem transposed (Vt[d][position], keys contiguous per d, as the col-major B operand needs) in that same permuted key order: cp.async stages V rows [key][d], then each thread turns a 4-key x 4-d block around with 6 byte permutes (no ldmatrix.trans for 8-bit) into 4 32-bit stores. P is quantized to e4m3 (cvt.rn.satfinite.e4m3x2.f32) as 256*P: the factor is folded into the exp2 exponent (+8) and cancels in O/l, it is exact (a power of two), the row max maps to 256 < 448, and P keeps e4m3's full 3-bit mantissa down to 2^-14 instead of 2^-6 (unscaled P in [0,1] would lose relative precision below 1/64 and flush below 2^-9). The row sum uses the unquantized P (unbiased rounding). Descales: q_descale*k_descale fold into the log2 softmax scale, v_descale into 1/l. O (bf16) is written straight from the accumulators as bf16x2. Two __syncthreads per KV tile (data landed; Vt transposed). Tiles: 16 query rows per warp, 32 keys per KV tile (64 only at D=64 non-causal: ptxas spills registers otherwise). min_sm 89: e4m3 mma.sync needs Ada or Hopper."
}
*/
#include "evo_attn.cuh"

#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_N
#define BLOCK_N 32
#endif
#ifndef NWARPS
#define NWARPS 4
#endif

#define HD EVO_HEAD_DIM
#define NTHREADS (NWARPS * 32)
#define LDS (HD + 16)       // bytes per smem row of Q, K and staged V: 16-byte rows on distinct banks
#define LDV (BLOCK_N + 16)  // bytes per row of the transposed V (one row per head-dim column)

EVO_CONSTRAINT(EVO_DTYPE == EVO_DTYPE_FP8, "e4m3 operands only");
EVO_CONSTRAINT(BLOCK_M == 16 * NWARPS, "each warp owns 16 query rows");
EVO_CONSTRAINT(BLOCK_N % 32 == 0 && BLOCK_N <= 64, "BLOCK_N must be 32 or 64 (a multiple of the mma's k = 32)");
EVO_CONSTRAINT(HD % 32 == 0, "head dim must be a multiple of 32");
// ptxas (CUDA 13, sm_90a) at 64 keys per tile: 255 registers and 36-88 spilled bytes at D=128,
// 8 spilled bytes at D=64 causal; 139 registers, no spill, at D=64 non-causal. 32 keys: 125-195.
EVO_CONSTRAINT(BLOCK_N == 32 || (HD == 64 && !EVO_CAUSAL), "64 keys per tile spill registers except at D=64 non-causal");

#define Q_BYTES (BLOCK_M * LDS)
#define KV_BYTES (BLOCK_N * LDS)
#define VT_BYTES (HD * LDV)
#define SMEM_BYTES (Q_BYTES + 4 * KV_BYTES + VT_BYTES)

EVO_EXPORT_LAUNCH(NTHREADS, SMEM_BYTES, BLOCK_M, 1, 0);

namespace {

#define NEG_INF (-__int_as_float(0x7f800000))

__device__ __forceinline__ unsigned smem_u32(const void* ptr) {
  return static_cast<unsigned>(__cvta_generic_to_shared(ptr));
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void ldsm_x4(unsigned addr, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// D += A(16x32 e4m3, row) * B(32x8 e4m3, col), f32 accumulate.
__device__ __forceinline__ void mma_e4m3(float* d, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Four floats -> four e4m3 bytes, the first in the lowest byte (the lowest k position).
__device__ __forceinline__ unsigned pack_e4m3x4(float x0, float x1, float x2, float x3) {
  unsigned short lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(x1), "f"(x0));  // first operand -> upper byte
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(x3), "f"(x2));
  return static_cast<unsigned>(lo) | (static_cast<unsigned>(hi) << 16);
}

// ROWS x HD bytes from global (row stride gstride bytes) into smem rows of LDS bytes; rows >= valid
// are zero-filled (src-size 0, nothing read): zero keys and values, never NaN padding.
template <int ROWS>
__device__ __forceinline__ void load_tile(unsigned s_base, const evo_t* g, long long gstride, int valid, int tid) {
  constexpr int CPR = HD / 16;  // 16-byte chunks per row
  constexpr int TOTAL = ROWS * CPR;
  constexpr int ITERS = (TOTAL + NTHREADS - 1) / NTHREADS;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    const int c = tid + i * NTHREADS;
    if (TOTAL % NTHREADS == 0 || c < TOTAL) {
      const int r = c / CPR;
      const int col = (c % CPR) * 16;
      const bool ok = r < valid;
      const evo_t* src = ok ? g + r * gstride + col : g;
      cp_async16(s_base + r * LDS + col, src, ok ? 16 : 0);
    }
  }
}

// Staged V rows [key][d] -> Vt[d][position]: position 4q+i of a 32-key chunk holds key
// half*16 + (i>>1)*8 + 2*(q%4) + (i&1) (half = q/4), the keys lane t of the P fragment owns.
// One unit = 4 keys x 4 head-dim bytes: four 32-bit loads, six byte permutes, four stores.
__device__ __forceinline__ void transpose_v(const unsigned char* staged, unsigned char* vt, int tid) {
  constexpr int UNITS = (BLOCK_N / 32) * 8 * (HD / 4);
  constexpr int ITERS = (UNITS + NTHREADS - 1) / NTHREADS;
#pragma unroll
  for (int i = 0; i < ITERS; ++i) {
    const int u = tid + i * NTHREADS;
    if (UNITS % NTHREADS != 0 && u >= UNITS) break;
    const int q = u & 7;  // position quad inside the chunk: lanes of a warp vary q first (fewer bank conflicts)
    const int dq = (u >> 3) % (HD / 4);
    const int chunk = (u >> 3) / (HD / 4);
    const int key0 = chunk * 32 + (q >> 2) * 16 + 2 * (q & 3);
    const unsigned* src = reinterpret_cast<const unsigned*>(staged + key0 * LDS + 4 * dq);
    const unsigned w0 = src[0], w1 = src[LDS / 4], w2 = src[8 * LDS / 4], w3 = src[9 * LDS / 4];
    const unsigned lo01 = __byte_perm(w0, w1, 0x5140), hi01 = __byte_perm(w0, w1, 0x7362);
    const unsigned lo23 = __byte_perm(w2, w3, 0x5140), hi23 = __byte_perm(w2, w3, 0x7362);
    unsigned char* dst = vt + (4 * dq) * LDV + chunk * 32 + 4 * q;
    *reinterpret_cast<unsigned*>(dst) = __byte_perm(lo01, lo23, 0x5410);
    *reinterpret_cast<unsigned*>(dst + LDV) = __byte_perm(lo01, lo23, 0x7632);
    *reinterpret_cast<unsigned*>(dst + 2 * LDV) = __byte_perm(hi01, hi23, 0x5410);
    *reinterpret_cast<unsigned*>(dst + 3 * LDV) = __byte_perm(hi01, hi23, 0x7632);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(NTHREADS) evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const unsigned sQ_u = smem_u32(smem_raw);
  const unsigned sK_u = sQ_u + Q_BYTES;          // 2 stages
  const unsigned sV_u = sK_u + 2 * KV_BYTES;     // 2 stages, rows [key][d] as loaded
  unsigned char* sVt = smem_raw + Q_BYTES + 4 * KV_BYTES;
  const unsigned sVt_u = sQ_u + Q_BYTES + 4 * KV_BYTES;

  const int tid = threadIdx.x;
  const int warp = tid >> 5;
  const int lane = tid & 31;
  const int g = lane >> 2;
  const int t = lane & 3;

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

  // ldmatrix lane offsets in bytes. A (Q): row (lane&7) + ((lane>>3)&1)*8, k bytes (lane>>4)*16.
  const unsigned offA = ((lane & 7) + ((lane >> 3) & 1) * 8) * LDS + (lane >> 4) * 16;
  // B (K rows, Vt rows): n row (lane&7) + (lane>>4)*8, k bytes ((lane>>3)&1)*16.
  const unsigned offK = ((lane & 7) + (lane >> 4) * 8) * LDS + ((lane >> 3) & 1) * 16;
  const unsigned offV = ((lane & 7) + (lane >> 4) * 8) * LDV + ((lane >> 3) & 1) * 16;

  const int wrow0 = warp * 16;
  unsigned qf[HD / 32][4];
  float o[HD / 8][4];
#pragma unroll
  for (int j = 0; j < HD / 8; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
  float m_run[2] = {NEG_INF, NEG_INF}, l_run[2] = {0.f, 0.f};
  // Scores are dot products of e4m3 codes: the Q and K descales join the softmax scale.
  const float sl2 = p.softmax_scale_log2 * p.q_descale * p.k_descale;
#if EVO_CAUSAL
  const int wlast = m0 + wrow0 + 15;
#endif

  auto load_k = [&](int n, int stage) { load_tile<BLOCK_N>(sK_u + stage * KV_BYTES, Kg + n * ks, ks, seq_kv - n, tid); };
  auto load_v = [&](int n, int stage) { load_tile<BLOCK_N>(sV_u + stage * KV_BYTES, Vg + n * vs, vs, seq_kv - n, tid); };

  load_tile<BLOCK_M>(sQ_u, Qg, p.q_stride[2], q_rows, tid);
  load_k(0, 0);
  load_v(0, 0);
  cp_async_commit();
  for (int it = 0; it < ntiles; ++it) {
    const int n0 = it * BLOCK_N;
    const int stage = it & 1;
    cp_async_wait_all();
    __syncthreads();  // tile `it` landed; every warp is done with tile it-1 (its stage and Vt)
    if (it + 1 < ntiles) {
      load_k(n0 + BLOCK_N, stage ^ 1);
      load_v(n0 + BLOCK_N, stage ^ 1);
      cp_async_commit();
    }
    transpose_v(smem_raw + Q_BYTES + 2 * KV_BYTES + stage * KV_BYTES, sVt, tid);
    if (it == 0) {
#pragma unroll
      for (int kc = 0; kc < HD / 32; ++kc)
        ldsm_x4(sQ_u + wrow0 * LDS + kc * 32 + offA, qf[kc][0], qf[kc][1], qf[kc][2], qf[kc][3]);
    }
    __syncthreads();  // Vt complete
#if EVO_CAUSAL
    if (n0 > wlast) continue;  // every row of this warp lies above the tile
#endif
    // S = Q Kᵀ (codes)
    float s[BLOCK_N / 8][4];
#pragma unroll
    for (int j = 0; j < BLOCK_N / 8; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
    const unsigned sK_s = sK_u + stage * KV_BYTES + offK;
#pragma unroll
    for (int kc = 0; kc < HD / 32; ++kc)
#pragma unroll
      for (int np = 0; np < BLOCK_N / 16; ++np) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(sK_s + np * 16 * LDS + kc * 32, b0, b1, b2, b3);
        mma_e4m3(s[2 * np], qf[kc], b0, b1);
        mma_e4m3(s[2 * np + 1], qf[kc], b2, b3);
      }
    // ragged tail and causal diagonal
    bool need = n0 + BLOCK_N > seq_kv;
#if EVO_CAUSAL
    need = need || (n0 + BLOCK_N - 1 > m0 + wrow0);
#endif
    if (need) {
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = n0 + j * 8 + 2 * t + (e & 1);
          bool masked = key >= seq_kv;
#if EVO_CAUSAL
          masked = masked || key > m0 + wrow0 + g + (e >> 1) * 8;
#endif
          if (masked) s[j][e] = NEG_INF;
        }
    }
    // online softmax (log2 domain); P' = 256 * P
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float mx = NEG_INF;
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) mx = fmaxf(mx, fmaxf(s[j][2 * hi], s[j][2 * hi + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_run[hi], mx * sl2);
      const float m_use = (m_new == NEG_INF) ? 0.f : m_new;
      const float alpha = fast_exp2(m_run[hi] - m_use);
      m_run[hi] = m_new;
      const float m8 = m_use - 8.f;
      float rs = 0.f;
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) {
        const float p0 = fast_exp2(fmaf(s[j][2 * hi], sl2, -m8));
        const float p1 = fast_exp2(fmaf(s[j][2 * hi + 1], sl2, -m8));
        s[j][2 * hi] = p0;
        s[j][2 * hi + 1] = p1;
        rs += p0 + p1;
      }
      l_run[hi] = l_run[hi] * alpha + rs;
#pragma unroll
      for (int d = 0; d < HD / 8; ++d) {
        o[d][2 * hi] *= alpha;
        o[d][2 * hi + 1] *= alpha;
      }
    }
    // P' -> e4m3 A fragments in the permuted key order (see transpose_v), then O += P' Vt
    const unsigned sV_s = sVt_u + offV;
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 32; ++kk) {
      const int j = 4 * kk;
      unsigned pa[4];
      pa[0] = pack_e4m3x4(s[j][0], s[j][1], s[j + 1][0], s[j + 1][1]);
      pa[1] = pack_e4m3x4(s[j][2], s[j][3], s[j + 1][2], s[j + 1][3]);
      pa[2] = pack_e4m3x4(s[j + 2][0], s[j + 2][1], s[j + 3][0], s[j + 3][1]);
      pa[3] = pack_e4m3x4(s[j + 2][2], s[j + 2][3], s[j + 3][2], s[j + 3][3]);
#pragma unroll
      for (int dp = 0; dp < HD / 16; ++dp) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(sV_s + dp * 16 * LDV + kk * 32, b0, b1, b2, b3);
        mma_e4m3(o[2 * dp], pa, b0, b1);
        mma_e4m3(o[2 * dp + 1], pa, b2, b3);
      }
    }
  }

  // epilogue: O * v_descale / l, bf16 pairs straight from the accumulators
  evo_out_t* Og = evo_o_ptr(p, b, h);
  const long long os = p.o_stride[2];
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    float l = l_run[hi];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const float inv = l > 0.f ? p.v_descale / l : 0.f;
    const int row = m0 + wrow0 + g + hi * 8;
    if (row < seq_q) {
      evo_out_t* orow = Og + row * os + 2 * t;
#pragma unroll
      for (int d = 0; d < HD / 8; ++d)
        *reinterpret_cast<evo_out_t2*>(orow + d * 8) = evo_out2_from_float2(o[d][2 * hi] * inv, o[d][2 * hi + 1] * inv);
    }
  }
}
