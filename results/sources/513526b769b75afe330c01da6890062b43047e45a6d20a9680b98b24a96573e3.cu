/*evo
{
  "summary": "Stage 7's TMA ring, setmaxnreg producer and ping-pong consumers with e4m3 wgmma (k32): the producer warpgroup transposes V in shared memory, P goes to e4m3 registers",
  "parent": "7-tma-ws/tma_ws",
  "params": {
    "STAGES": [4, 3, 2],
    "NCONS": [2, 3],
    "PINGPONG": [0, 1],
    "CONS_REGS": [224, 232, 216, 160],
    "PROD_REGS": [56, 48, 40, 32],
    "EXP_POLY": [0, 1]
  },
  "dtypes": ["fp8"],
  "head_dims": [64, 128],
  "min_sm": 90,
  "notes": "FP8 wgmma (m64nNk32 .e4m3.e4m3, f32 accumulate) reads both operands K-major. S = Q·Kᵀ reduces over d, and Q and K rows are d-contiguous, so Q and K go by TMA straight into swizzled tiles (rows of HD bytes: 128-byte swizzle at D=128, 64-byte swizzle at D=64). O = P·V reduces over keys, so V must be keys-contiguous: V arrives unswizzled by TMA into a raw stage and producer warps 1-3 transpose it (warp 0 only issues the copies, as far ahead as the ring allows) into a 128-byte-swizzled Vt stage (D rows of 128 keys), 4x4-byte blocks with prmt, bank-conflict-free stores, then fence.proxy.async and one arrival per warp on the stage's vt_full barrier. P comes from the f32 accumulator into e4m3 registers (cvt.rn.satfinite.e4m3x2); the fp8 A fragment holds 4 consecutive k per register where the accumulator holds 2+2 keys 8 apart, so instead of shuffling P the transposer writes V's keys in the fragment's order (within each 16 keys, position 4t+q holds key 2t+(q&1)+8(q>>1)): the permutation costs nothing. Descales: q_descale·k_descale folds into the softmax's log2 scale, v_descale into the final 1/l. P is quantized as exp2(x - max + 8), i.e. scaled by 256 (≤ 448, e4m3's largest finite value), so probabilities down to 2^-17 stay representable instead of flushing below 2^-9; l sums the same scaled f32 values, so the scale cancels. Output bf16 from the fragments. BLOCK_N is 128 (one 128-byte Vt row per d; k32 steps)."
}
*/
#include "evo_attn.cuh"

#ifndef STAGES
#define STAGES 4
#endif
#ifndef NCONS
#define NCONS 2
#endif
#ifndef PINGPONG
#define PINGPONG 0
#endif
#ifndef CONS_REGS
#define CONS_REGS 224
#endif
#ifndef PROD_REGS
#define PROD_REGS 56
#endif
#ifndef EXP_POLY
#define EXP_POLY 0  // 1: every second exp2 of the softmax by a polynomial on the FMA pipe instead of MUFU
#endif

#define HD EVO_HEAD_DIM
#define BLOCK_N 128
#define BLOCK_M (NCONS * 64)
#define NTHREADS ((NCONS + 1) * 128)

EVO_CONSTRAINT(NCONS == 2 || NCONS == 3, "NCONS must be 2 or 3 consumer warpgroups");
EVO_CONSTRAINT(STAGES >= 2 && STAGES <= 4, "STAGES must be 2..4");
EVO_CONSTRAINT(PINGPONG == 0 || NCONS == 2, "PINGPONG alternates exactly two consumer warpgroups");
EVO_CONSTRAINT(CONS_REGS % 8 == 0 && PROD_REGS % 8 == 0 && PROD_REGS >= 24 && CONS_REGS <= 256,
               "setmaxnreg takes multiples of 8 in 24..256");
EVO_CONSTRAINT(EXP_POLY == 0 || EXP_POLY == 1, "EXP_POLY is 0 or 1");
EVO_CONSTRAINT(PROD_REGS + NCONS * CONS_REGS <= 512, "the register split must fit 64 K registers per SM");

// Bytes: one e4m3 element is one byte, so a row of Q/K/V is HD bytes and a row of Vt BLOCK_N bytes.
#define Q_BYTES (BLOCK_M * HD)
#define KV_BYTES (BLOCK_N * HD)                // a K, raw V or Vt stage
#define BAR_BYTES 256
#define SMEM_BYTES (Q_BYTES + 3 * STAGES * KV_BYTES + 1024 + BAR_BYTES)  // + 1 KiB to align tiles to 1024 B
EVO_CONSTRAINT(SMEM_BYTES <= 232448, "tiles and stages exceed 227 KiB of shared memory");

#if HD == 128
#define QK_SWIZZLE EVO_TMA_SWIZZLE_128B
#define QK_LAYOUT 1ull  // wgmma descriptor layout type: 128-byte swizzle
#else
#define QK_SWIZZLE EVO_TMA_SWIZZLE_64B
#define QK_LAYOUT 2ull  // 64-byte swizzle
#endif
#define QK_SBO (8 * HD)  // bytes between 8-row groups of a Q/K tile

EVO_EXPORT_LAUNCH(NTHREADS, SMEM_BYTES, BLOCK_M, 1, 0);
EVO_EXPORT_TMA(EVO_TMA(EVO_TMA_Q, BLOCK_M, HD, QK_SWIZZLE, EVO_TMA_L2_128B),
               EVO_TMA(EVO_TMA_K, BLOCK_N, HD, QK_SWIZZLE, EVO_TMA_L2_256B),
               EVO_TMA(EVO_TMA_V, BLOCK_N, HD, EVO_TMA_SWIZZLE_NONE, EVO_TMA_L2_256B));
#define TMA_Q 0
#define TMA_K 1
#define TMA_V 2

namespace {

#define NEG_INF (-__int_as_float(0x7f800000))
#define P_SCALE_LOG2 8.f  // P is quantized as 2^8 · softmax numerator (see notes)

__device__ __forceinline__ unsigned smem_u32(const void* ptr) {
  return static_cast<unsigned>(__cvta_generic_to_shared(ptr));
}

// ---- mbarriers
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}

__device__ __forceinline__ void tma_load(unsigned dst, const void* map, int col, int row, int h, int b, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"(map), "r"(col), "r"(row), "r"(h), "r"(b), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void named_sync(unsigned id, unsigned count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(unsigned id, unsigned count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

__device__ __forceinline__ void fence_operand(float& x) { asm volatile("" : "+f"(x)::"memory"); }
__device__ __forceinline__ void fence_operand(unsigned& x) { asm volatile("" : "+r"(x)::"memory"); }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_one() { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }

// Shared-memory matrix descriptor: start, leading and stride byte offsets (>> 4), layout type in bits 62-63.
__device__ __forceinline__ unsigned long long smem_desc(unsigned addr, unsigned sbo_bytes, unsigned long long layout) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((unsigned long long)(sbo_bytes >> 4) << 32) |
         (layout << 62);
}

#define WG_D64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define WG_D32 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define OUT32(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define OUT64(d) OUT32(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// S(64x128) (+)= Q(64x32, smem, K-major) · K(128x32, smem, K-major)ᵀ; scale_d = 0 overwrites.
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], unsigned long long da, unsigned long long db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " WG_D64 ", %64, %65, p, 1, 1;\n}\n"
               : OUT64(d)
               : "l"(da), "l"(db), "r"(scale_d));
}
// O(64xHD) += P(64x32, e4m3 registers) · Vt(HDx32, smem, K-major).
__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long db) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " WG_D64 ", {%64, %65, %66, %67}, %68, 1, 1, 1;\n"
               : OUT64(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const unsigned (&a)[4], unsigned long long db) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " WG_D32 ", {%32, %33, %34, %35}, %36, 1, 1, 1;\n"
               : OUT32(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
// 2^x on the FMA/ALU pipes (x <= 8): n = round(x) by the 1.5·2^23 trick, 2^(x-n) by a cubic on
// [-0.5, 0.5] (relative error < 1e-3, far below e4m3's 2^-4 step), n added to the exponent bits.
// Clamped at -126 so masked (-inf) entries give 2^-126, which quantizes to 0.
__device__ __forceinline__ float poly_exp2(float x) {
  x = fmaxf(x, -126.f);
  const float t = __fadd_rn(x, 12582912.f);
  const float f = __fsub_rn(x, __fsub_rn(t, 12582912.f));
  float r = fmaf(f, 0.0555041f, 0.2402265f);
  r = fmaf(r, f, 0.6931472f);
  r = fmaf(r, f, 1.f);
  return __int_as_float(__float_as_int(r) + (__float_as_int(t) << 23));
}
__device__ __forceinline__ float fast_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Four floats to four e4m3 bytes, a in the lowest (cvt puts its first source in the upper byte).
__device__ __forceinline__ unsigned pack4_e4m3(float a, float b, float c, float d) {
  unsigned r;
  asm("{\n.reg .b16 lo, hi;\ncvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\ncvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
      "mov.b32 %0, {lo, hi};\n}\n"
      : "=r"(r)
      : "f"(a), "f"(b), "f"(c), "f"(d));
  return r;
}

// Producer warps 1..3 transpose the raw V stage (BLOCK_N keys x HD bytes, unswizzled) into Vt
// (HD rows x 128 key positions, 128-byte swizzle), d-words a0 = first, first + 3, ... Lane l
// owns position group G = l (positions 4G..4G+3 = keys 16(G/4) + 2(G%4) + {0, 1, 8, 9}: the P
// fragment's order) and d-word a = (a0 + l) % (HD/4): the loads hit 32 distinct banks (D=128;
// D=64 pairs lanes l, l+16), the swizzled stores land in chunk (G/4) ^ (d%8), word G%4: 32
// distinct banks.
__device__ __forceinline__ void transpose_v(unsigned raw, unsigned vt, int first, int lane) {
  const int G = lane;
  const int k0 = 16 * (G >> 2) + 2 * (G & 3);
#pragma unroll 2
  for (int a0 = first; a0 < HD / 4; a0 += 3) {
    const int a = (a0 + lane) & (HD / 4 - 1);
    unsigned x[4];
    const int keys[4] = {k0, k0 + 1, k0 + 8, k0 + 9};
#pragma unroll
    for (int i = 0; i < 4; ++i) asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(x[i]) : "r"(raw + keys[i] * HD + 4 * a));
    const unsigned t0 = __byte_perm(x[0], x[1], 0x5140), t1 = __byte_perm(x[2], x[3], 0x5140);
    const unsigned t2 = __byte_perm(x[0], x[1], 0x7362), t3 = __byte_perm(x[2], x[3], 0x7362);
    const unsigned y[4] = {__byte_perm(t0, t1, 0x5410), __byte_perm(t0, t1, 0x7632), __byte_perm(t2, t3, 0x5410),
                           __byte_perm(t2, t3, 0x7632)};
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int d = 4 * a + r;
      const unsigned addr = vt + d * 128 + ((((G >> 2) ^ (d & 7))) << 4) + (G & 3) * 4;
      asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(addr), "r"(y[r]) : "memory");
    }
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(NTHREADS, 1) evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  extern __shared__ unsigned char smem_raw[];
  const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const unsigned sQ = base;
  const unsigned sK = sQ + Q_BYTES;
  const unsigned sV = sK + STAGES * KV_BYTES;    // raw V from TMA
  const unsigned sVt = sV + STAGES * KV_BYTES;   // V transposed by the producer warps
  const unsigned bars = sVt + STAGES * KV_BYTES;  // q_full, full[S], empty[S], vt_full[S]
  const unsigned q_full = bars;
  auto full = [&](int s) { return bars + 8u * (1 + s); };
  auto empty = [&](int s) { return bars + 8u * (1 + STAGES + s); };
  auto vt_full = [&](int s) { return bars + 8u * (1 + 2 * STAGES + s); };

  const int tid = threadIdx.x;
#if EVO_CAUSAL
  const int m0 = (gridDim.x - 1 - blockIdx.x) * BLOCK_M;  // longest row tiles first
#else
  const int m0 = blockIdx.x * BLOCK_M;
#endif
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int hkv = evo_kv_head(p, h);
  const int q_rows = min(BLOCK_M, p.seq_q - m0);
  const int kv_end = evo_kv_limit(p, m0, q_rows);
  const int ntiles = (kv_end + BLOCK_N - 1) / BLOCK_N;

  if (tid == 0) {
    mbar_init(q_full, 1);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), NCONS * 4);  // one arrival per consumer warp
      mbar_init(vt_full(s), 3);        // one arrival per transposing warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (tid < 128) {
    // ---------------- producer warpgroup: warp 0 (one thread) issues every copy as soon as its
    // stage is free; warps 1..3 transpose each V tile once it has landed.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PROD_REGS));
    const int pw = tid >> 5, lane = tid & 31;
    if (pw == 0) {
      if (lane == 0) {
        mbar_expect_tx(q_full, Q_BYTES);
        tma_load(sQ, &p.tma[TMA_Q][0], 0, m0, h, b, q_full);
        for (int j = 0; j < ntiles; ++j) {
          const int s = j % STAGES;
          mbar_wait(empty(s), ((j / STAGES) & 1) ^ 1);
          mbar_expect_tx(full(s), 2 * KV_BYTES);
          tma_load(sK + s * KV_BYTES, &p.tma[TMA_K][0], 0, j * BLOCK_N, hkv, b, full(s));
          tma_load(sV + s * KV_BYTES, &p.tma[TMA_V][0], 0, j * BLOCK_N, hkv, b, full(s));
        }
      }
      return;
    }
    for (int j = 0; j < ntiles; ++j) {
      const int s = j % STAGES;
      mbar_wait(full(s), (j / STAGES) & 1);
      transpose_v(sV + s * KV_BYTES, sVt + s * KV_BYTES, pw - 1, lane);
      fence_proxy_async();  // the generic-proxy stores are read by wgmma (async proxy)
      __syncwarp();
      if (lane == 0) mbar_arrive(vt_full(s));
    }
    return;
  }

  // ---------------- consumer warpgroups: 64 query rows each
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONS_REGS));
  const int ctid = tid - 128;
  const int c = ctid >> 7;
  const int warp_in_wg = (ctid >> 5) & 3;
  const int lane = ctid & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int r0 = warp_in_wg * 16 + g;
  const int row_base = m0 + c * 64;
  const float sl2 = p.softmax_scale_log2 * p.q_descale * p.k_descale;  // S = descale_q descale_k (Q8 · K8ᵀ)
  const unsigned qa = sQ + c * (64 * HD);

  float o[HD / 2];
#pragma unroll
  for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
  float s[BLOCK_N / 2];
  unsigned pa[BLOCK_N / 8];
  float m_run[2] = {NEG_INF, NEG_INF}, l_run[2] = {0.f, 0.f}, alpha[2] = {1.f, 1.f};

  auto issue_qk = [&](int stage) {
    const unsigned kb = sK + stage * KV_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kstep = 0; kstep < HD / 32; ++kstep)
      wgmma_ss_n128(s, smem_desc(qa + kstep * 32, QK_SBO, QK_LAYOUT), smem_desc(kb + kstep * 32, QK_SBO, QK_LAYOUT),
                    kstep > 0);
    wgmma_commit();
  };
  // O += P V: P from registers (fragment order), Vt K-major with 128-byte rows.
  auto issue_pv = [&](int stage) {
    const unsigned vb = sVt + stage * KV_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 32; ++kk) {
      const unsigned a[4] = {pa[4 * kk], pa[4 * kk + 1], pa[4 * kk + 2], pa[4 * kk + 3]};
#if HD == 64
      wgmma_rs_n64(o, a, smem_desc(vb + kk * 32, 1024, 1ull));
#else
      wgmma_rs_n128(o, a, smem_desc(vb + kk * 32, 1024, 1ull));
#endif
    }
    wgmma_commit();
  };
  auto softmax = [&](int n0) {
#pragma unroll
    for (int i = 0; i < BLOCK_N / 2; ++i) fence_operand(s[i]);
    bool need = n0 + BLOCK_N > p.seq_kv;
#if EVO_CAUSAL
    need = need || (n0 + BLOCK_N - 1 > row_base);
#endif
    if (need) {
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = n0 + j * 8 + 2 * t + (e & 1);
          bool masked = key >= p.seq_kv;
#if EVO_CAUSAL
          masked = masked || key > row_base + r0 + (e >> 1) * 8;
#endif
          if (masked) s[j * 4 + e] = NEG_INF;
        }
    }
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float mx = NEG_INF;
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) mx = fmaxf(mx, fmaxf(s[j * 4 + 2 * hi], s[j * 4 + 2 * hi + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_run[hi], mx * sl2);
      const float m_use = (m_new == NEG_INF) ? 0.f : m_new;
      alpha[hi] = fast_exp2(m_run[hi] - m_use);
      m_run[hi] = m_new;
      const float m_off = m_use - P_SCALE_LOG2;
      float rs = 0.f;
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) {
        const float p0 = fast_exp2(fmaf(s[j * 4 + 2 * hi], sl2, -m_off));
#if EXP_POLY
        const float p1 = poly_exp2(fmaf(s[j * 4 + 2 * hi + 1], sl2, -m_off));
#else
        const float p1 = fast_exp2(fmaf(s[j * 4 + 2 * hi + 1], sl2, -m_off));
#endif
        s[j * 4 + 2 * hi] = p0;
        s[j * 4 + 2 * hi + 1] = p1;
        rs += p0 + p1;
      }
      l_run[hi] = l_run[hi] * alpha[hi] + rs;
    }
  };
  // After P·V of the previous tile: rescale O, pack P into the e4m3 A fragment (registers
  // 0..3 of k-step kk: rows g/g+8 x keys {2t, 2t+1, 2t+8, 2t+9} and the same + 16).
  auto rescale_and_pack = [&]() {
#pragma unroll
    for (int i = 0; i < HD / 2; ++i) fence_operand(o[i]);
#pragma unroll
    for (int i = 0; i < BLOCK_N / 8; ++i) fence_operand(pa[i]);
#pragma unroll
    for (int d = 0; d < HD / 8; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[d * 4 + e] *= alpha[e >> 1];
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 32; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = 16 * kk + 8 * (r >> 1) + 2 * (r & 1);
        pa[4 * kk + r] = pack4_e4m3(s[i], s[i + 1], s[i + 4], s[i + 5]);
      }
  };
  auto gemm_turn_begin = [&]() {
    if (PINGPONG) named_sync(1 + c, 256);
  };
  auto gemm_turn_end = [&](bool last) {
    if (PINGPONG && !(c == 1 && last)) named_arrive(1 + (c ^ 1), 256);
  };

  if (PINGPONG && c == 1) named_arrive(1, 256);  // consumer 0 goes first
  mbar_wait(q_full, 0);
  mbar_wait(full(0), 0);
  gemm_turn_begin();
  issue_qk(0);
  gemm_turn_end(false);
  wgmma_wait_all();
  softmax(0);
  rescale_and_pack();

  for (int j = 0; j + 1 < ntiles; ++j) {
    const int stage = j % STAGES;
    mbar_wait(full((j + 1) % STAGES), ((j + 1) / STAGES) & 1);
    mbar_wait(vt_full(stage), (j / STAGES) & 1);
    gemm_turn_begin();
    issue_qk((j + 1) % STAGES);  // S(j+1) = Q K(j+1)ᵀ ...
    issue_pv(stage);             // ... and O += P(j) V(j), back to back
    gemm_turn_end(false);
    wgmma_wait_one();
    softmax((j + 1) * BLOCK_N);
    wgmma_wait_all();
    if (lane == 0) mbar_arrive(empty(stage));
    rescale_and_pack();
  }
  {
    const int stage = (ntiles - 1) % STAGES;
    mbar_wait(vt_full(stage), ((ntiles - 1) / STAGES) & 1);
    gemm_turn_begin();
    issue_pv(stage);
    gemm_turn_end(true);
    wgmma_wait_all();
    if (lane == 0) mbar_arrive(empty(stage));
  }
#pragma unroll
  for (int i = 0; i < HD / 2; ++i) fence_operand(o[i]);

  // ---- epilogue: O · v_descale / l in bf16, straight from the fragments (rows r0, r0 + 8)
  evo_out_t* Og = evo_o_ptr(p, b, h);  // bf16 for fp8 tasks
  const long long os = p.o_stride[2];
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    float l = l_run[hi];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const float inv = l > 0.f ? p.v_descale * fast_rcp(l) : 0.f;
    const int r = r0 + hi * 8;
    if (row_base + r < p.seq_q) {
      evo_out_t* orow = Og + (long long)(row_base + r) * os;
#pragma unroll
      for (int d = 0; d < HD / 8; ++d)
        *reinterpret_cast<evo_out_t2*>(orow + d * 8 + 2 * t) =
            evo_out2_from_float2(o[d * 4 + 2 * hi] * inv, o[d * 4 + 2 * hi + 1] * inv);
    }
  }
}
