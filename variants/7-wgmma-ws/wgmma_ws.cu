/*evo
{
  "summary": "Stage 6's wgmma kernel with producer warps: cp.async into an mbarrier ring, no CTA-wide barrier per tile",
  "parent": "6-wgmma/wgmma",
  "params": {
    "BLOCK_M": [128, 64],
    "BLOCK_N": [64, 128],
    "STAGES": [3, 2],
    "PRODUCER_WARPS": [4, 1]
  },
  "dtypes": ["fp16", "bf16"],
  "head_dims": [64, 128],
  "min_sm": 90,
  "notes": "Consumers: BLOCK_M/64 warpgroups doing stage 6's math unchanged (wgmma Q·Kᵀ from smem, P in registers, V N-major). Producer: PRODUCER_WARPS extra warps after the last warpgroup (the consumer warpgroups stay aligned at warps 0 and 4) issue every cp.async into a STAGES-deep ring of 128-byte-swizzled K/V tiles (Q with tile 0). It signals a tile only after its copies have landed (cp.async.wait_group 1 after issuing the next tile, so two tiles are in flight), then fence.proxy.async (the writes must be visible to wgmma's async proxy; the fence is the writer's, as the PTX memory model requires) and a plain mbarrier.arrive on FULL(stage) (count: every producer thread). A single producer warp was measured first and starved the consumers (0.53-0.80x stage 6: 64 cp.async instructions and a wait per 32 KiB tile from one warp; results/experiments/): cp.async is issued per thread, so the producer needs threads, which is what TMA removes. Consumers wait on FULL with try_wait.parity and arrive on EMPTY(stage) (count: every consumer thread) after the wgmma that read the stage has completed; the producer waits on EMPTY before refilling. No __syncthreads after the barrier init, so the two warpgroups drift apart by up to STAGES-1 tiles instead of meeting every tile (stage 6's ncu: 23 % barrier stalls)."
}
*/
#include "evo_attn.cuh"

#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef PRODUCER_WARPS
#define PRODUCER_WARPS 4
#endif

#define HD EVO_HEAD_DIM
#define NWG (BLOCK_M / 64)            // consumer warpgroups, 64 query rows each
#define NCONS (NWG * 128)             // consumer threads
#define NPROD (PRODUCER_WARPS * 32)   // producer threads
#define NTHREADS (NCONS + NPROD)

EVO_CONSTRAINT(BLOCK_M == 64 || BLOCK_M == 128, "BLOCK_M must be 64 or 128 (one or two warpgroups)");
EVO_CONSTRAINT(BLOCK_N == 64 || BLOCK_N == 128, "BLOCK_N must be 64 or 128 (wgmma n64 / n128)");
EVO_CONSTRAINT(HD == 64 || BLOCK_N == 64, "D=128 with BLOCK_N=128 needs 128 accumulator registers for S and O alone");
EVO_CONSTRAINT(STAGES == 2 || STAGES == 3, "STAGES must be 2 or 3");
EVO_CONSTRAINT(PRODUCER_WARPS == 1 || PRODUCER_WARPS == 2 || PRODUCER_WARPS == 4, "PRODUCER_WARPS must be 1, 2 or 4");

#define Q_BYTES (BLOCK_M * HD * 2)
#define KV_BYTES (BLOCK_N * HD * 2)
#define BAR_OFF (Q_BYTES + 2 * STAGES * KV_BYTES)          // from the 1024-aligned base
#define SMEM_BYTES (BAR_OFF + 2 * STAGES * 8 + 1024)        // FULL and EMPTY per stage; +1 KiB alignment slack
EVO_CONSTRAINT(SMEM_BYTES <= 232448, "the ring does not fit in shared memory");

EVO_EXPORT_LAUNCH(NTHREADS, SMEM_BYTES, BLOCK_M, 1, 0);

#if EVO_DTYPE == EVO_DTYPE_FP16
#define WG_AB "f16"
#else
#define WG_AB "bf16"
#endif

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
// cp.async writes through the generic proxy; wgmma reads through the async proxy.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading
// and stride byte offsets (all >> 4), layout type 1 = 128-byte swizzle in bits 62-63.
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr, unsigned lbo_bytes, unsigned sbo_bytes) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo_bytes >> 4) << 16) |
         ((unsigned long long)(sbo_bytes >> 4) << 32) | (1ull << 62);
}

// D(64x64) (+)= A(64x16, smem desc) * B(16x64, smem desc, K-major); scale_d = 0 overwrites D.
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], unsigned long long da, unsigned long long db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." WG_AB "." WG_AB " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(scale_d));
}

// D(64x128) (+)= A(64x16, smem desc) * B(16x128, smem desc, K-major); scale_d = 0 overwrites D.
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], unsigned long long da, unsigned long long db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." WG_AB "." WG_AB " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}

// D(64x64) += A(64x16, registers) * B(16x64, smem desc, N-major: trans-b = 1).
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const unsigned (&a)[4], unsigned long long db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." WG_AB "." WG_AB " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

// D(64x128) += A(64x16, registers) * B(16x128, smem desc, N-major: trans-b = 1).
__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const unsigned (&a)[4], unsigned long long db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." WG_AB "." WG_AB " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
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

// Byte offset of 16-byte chunk c (0 .. HD/8-1) of row r in a ROWS-row tile stored as 64-column
// blocks of 128-byte rows, chunk c % 8 at (c % 8) ^ (r % 8): SWIZZLE_128B with the block 1024-aligned.
template <int ROWS>
__device__ __forceinline__ unsigned sw128(int r, int c) {
  return (c >> 3) * (ROWS * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

__device__ __forceinline__ void cp_async_wait_1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

// ---- mbarrier ----
__device__ __forceinline__ void mbar_init(unsigned addr, unsigned count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(addr), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned addr) {
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared.b64 st, [%0];\n\t}\n" ::"r"(addr) : "memory");
}
// Wait until the phase with parity `parity` has completed (try_wait may suspend the warp).
__device__ __forceinline__ void mbar_wait(unsigned addr, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred P;\n\tmbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n\tselp.u32 %0, 1, 0, P;\n\t}\n"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (!done);
  __syncwarp();  // reconverge before the .aligned wgmma that follow
}

// ROWS x HD tile from global into the swizzled layout, by the NPROD producer threads (`pt` is
// this thread's index among them); rows >= valid are zero-filled (src-size 0, nothing read).
template <int ROWS>
__device__ __forceinline__ void load_tile_prod(unsigned s_base, const evo_t* g, long long gstride, int valid, int pt) {
  constexpr int CPR = HD / 8;
  constexpr int TOTAL = ROWS * CPR;
  static_assert(TOTAL % NPROD == 0, "whole producer iterations");
#pragma unroll 8
  for (int c = pt; c < TOTAL; c += NPROD) {
    const int r = c / CPR;
    const int ch = c % CPR;
    const bool ok = r < valid;
    const evo_t* src = ok ? g + r * gstride + ch * 8 : g;
    cp_async16(s_base + sw128<ROWS>(r, ch), src, ok ? 16 : 0);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(NTHREADS, 1) evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  extern __shared__ unsigned char smem_raw[];
  const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;  // swizzled tiles: 1024-byte aligned
  const unsigned sQ = base;
  const unsigned sK = sQ + Q_BYTES;            // STAGES tiles
  const unsigned sV = sK + STAGES * KV_BYTES;  // STAGES tiles
  const unsigned bars = base + BAR_OFF;
#define FULL(s) (bars + (s) * 8)
#define EMPTY(s) (bars + (STAGES + (s)) * 8)

  const int tid = threadIdx.x;
  const int lane = tid & 31;

#if EVO_CAUSAL
  const int m0 = (gridDim.x - 1 - blockIdx.x) * BLOCK_M;  // longest tiles first
#else
  const int m0 = blockIdx.x * BLOCK_M;
#endif
  const int h = blockIdx.y;
  const int b = blockIdx.z;
  const int hkv = evo_kv_head(p, h);
  const int seq_q = p.seq_q;
  const int seq_kv = p.seq_kv;
  const int q_rows = min(BLOCK_M, seq_q - m0);
  const int kv_end = evo_kv_limit(p, m0, q_rows);
  const int ntiles = (kv_end + BLOCK_N - 1) / BLOCK_N;

  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(FULL(s), NPROD);   // every producer thread, once its copies of the tile have landed
      mbar_init(EMPTY(s), NCONS);  // every consumer thread, once its wgmma read the tile
    }
  }
  __syncthreads();  // barrier init visible to all; the only CTA-wide barrier

  // =========================== producer warps ===========================
  if (tid >= NCONS) {
    const int pt = tid - NCONS;
    const evo_t* Kg = evo_k_ptr(p, b, hkv);
    const evo_t* Vg = evo_v_ptr(p, b, hkv);
    const long long ks = p.k_stride[2];
    const long long vs = p.v_stride[2];
    for (int it = 0; it < ntiles; ++it) {
      const int stage = it % STAGES;
      const int n0 = it * BLOCK_N;
      if (it >= STAGES) mbar_wait(EMPTY(stage), ((it / STAGES) & 1) ^ 1u);  // tile it - STAGES released
      if (it == 0) load_tile_prod<BLOCK_M>(sQ, evo_q_ptr(p, b, h) + (long long)m0 * p.q_stride[2], p.q_stride[2], q_rows, pt);
      load_tile_prod<BLOCK_N>(sK + stage * KV_BYTES, Kg + n0 * ks, ks, seq_kv - n0, pt);
      load_tile_prod<BLOCK_N>(sV + stage * KV_BYTES, Vg + n0 * vs, vs, seq_kv - n0, pt);
      cp_async_commit();
      if (it >= 1) {  // tile it-1 has landed once at most one group (tile it) is pending
        cp_async_wait_1();
        fence_proxy_async();
        mbar_arrive(FULL((it - 1) % STAGES));
      }
    }
    cp_async_wait_all();
    fence_proxy_async();
    mbar_arrive(FULL((ntiles - 1) % STAGES));
    return;
  }

  // =========================== consumer warpgroups ===========================
  const int wg = tid >> 7;
  const int warp_in_wg = (tid >> 5) & 3;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int r0 = wg * 64 + warp_in_wg * 16 + g;  // this thread's rows: r0 and r0 + 8 of the tile
  const float sl2 = p.softmax_scale_log2;
#if EVO_CAUSAL
  const int wg_last = m0 + wg * 64 + 63;
#endif

  float o[HD / 2];
#pragma unroll
  for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
  float m_run[2] = {NEG_INF, NEG_INF}, l_run[2] = {0.f, 0.f};

  for (int it = 0; it < ntiles; ++it) {
    const int stage = it % STAGES;
    const int n0 = it * BLOCK_N;
    mbar_wait(FULL(stage), (it / STAGES) & 1);
#if EVO_CAUSAL
    if (n0 > wg_last) {  // every row of this warpgroup lies above the tile
      mbar_arrive(EMPTY(stage));
      continue;
    }
#endif
    // ---- S = Q Kᵀ (stage 6)
    float s[BLOCK_N / 2];
    const unsigned qa = sQ + wg * 64 * 128, kb = sK + stage * KV_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kstep = 0; kstep < HD / 16; ++kstep) {
      const unsigned off = (kstep & 3) * 32;
      const unsigned long long da = sw128_desc(qa + (kstep >> 2) * (BLOCK_M * 128) + off, 16, 1024);
      const unsigned long long db = sw128_desc(kb + (kstep >> 2) * (BLOCK_N * 128) + off, 16, 1024);
#if BLOCK_N == 64
      wgmma_ss_n64(s, da, db, kstep > 0);
#else
      wgmma_ss_n128(s, da, db, kstep > 0);
#endif
    }
    wgmma_commit();
    wgmma_wait_all();

    bool need = n0 + BLOCK_N > seq_kv;
#if EVO_CAUSAL
    need = need || (n0 + BLOCK_N - 1 > m0 + wg * 64);
#endif
    if (need) {
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = n0 + j * 8 + 2 * t + (e & 1);
          bool masked = key >= seq_kv;
#if EVO_CAUSAL
          masked = masked || key > m0 + r0 + (e >> 1) * 8;
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
      const float alpha = fast_exp2(m_run[hi] - m_use);
      m_run[hi] = m_new;
      float rs = 0.f;
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j) {
        const float p0 = fast_exp2(fmaf(s[j * 4 + 2 * hi], sl2, -m_use));
        const float p1 = fast_exp2(fmaf(s[j * 4 + 2 * hi + 1], sl2, -m_use));
        s[j * 4 + 2 * hi] = p0;
        s[j * 4 + 2 * hi + 1] = p1;
        rs += p0 + p1;
      }
      l_run[hi] = l_run[hi] * alpha + rs;
#pragma unroll
      for (int d = 0; d < HD / 8; ++d) {
        o[d * 4 + 2 * hi] *= alpha;
        o[d * 4 + 2 * hi + 1] *= alpha;
      }
    }

    // ---- O += P V (stage 6)
    const unsigned vb = sV + stage * KV_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
      const unsigned a[4] = {pack2(s[(2 * kk) * 4 + 0], s[(2 * kk) * 4 + 1]), pack2(s[(2 * kk) * 4 + 2], s[(2 * kk) * 4 + 3]),
                             pack2(s[(2 * kk + 1) * 4 + 0], s[(2 * kk + 1) * 4 + 1]),
                             pack2(s[(2 * kk + 1) * 4 + 2], s[(2 * kk + 1) * 4 + 3])};
      const unsigned long long db = sw128_desc(vb + kk * 16 * 128, BLOCK_N * 128, 1024);
#if HD == 64
      wgmma_rs_n64(o, a, db);
#else
      wgmma_rs_n128(o, a, db);
#endif
    }
    wgmma_commit();
    wgmma_wait_all();
    mbar_arrive(EMPTY(stage));  // this thread's wgmma reads of the stage are complete
  }

  evo_t* Og = evo_o_ptr(p, b, h);
  const long long os = p.o_stride[2];
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    float l = l_run[hi];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const float inv = l > 0.f ? fast_rcp(l) : 0.f;
    const int row = m0 + r0 + hi * 8;
    if (row < seq_q) {
      evo_t* orow = Og + row * os;
#pragma unroll
      for (int d = 0; d < HD / 8; ++d)
        *reinterpret_cast<evo_t2*>(orow + d * 8 + 2 * t) = evo2_from_float2(o[d * 4 + 2 * hi] * inv, o[d * 4 + 2 * hi + 1] * inv);
    }
  }
#undef FULL
#undef EMPTY
}
