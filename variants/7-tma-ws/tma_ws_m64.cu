/*evo
{
  "summary": "Stage 7 for grids of few or short CTAs: one consumer warpgroup of 64 query rows, 2-3 CTAs resident per SM so one CTA's prologue and epilogue hide under another's GEMMs; causal tiles longest-first across all heads",
  "parent": "7-tma-ws/tma_ws",
  "params": {
    "BLOCK_N": [64, 128],
    "STAGES": [2, 3, 4],
    "CTAS_PER_SM": [2, 3],
    "LPT": [0, 1],
    "PERSISTENT": [0, 1],
    "ZIGZAG": [0, 1]
  },
  "dtypes": ["fp16", "bf16"],
  "head_dims": [64, 128],
  "min_sm": 90,
  "notes": "tma_ws with NCONS=1 (BLOCK_M = 64) and no ping-pong, launched for CTAS_PER_SM resident CTAs per SM (__launch_bounds__(256, CTAS_PER_SM)), so the shared memory of a CTA is capped at 228 KiB / CTAS_PER_SM (D=128 fits BLOCK_N=64 STAGES=2 at two CTAs; three CTAs only at D=64, BLOCK_N=64). Why (lab/notes/short-causal.md): at 512-1024 keys a stage-7 CTA runs 4-8 KV tiles and a fixed cost of about 3-4 us (Q and first K/V from memory, the first Q·Kᵀ and last P·V without overlap, the epilogue), alone on its SM; with several smaller CTAs per SM one CTA's fixed cost runs under another's GEMMs, and the wave holds 2-3x as many row tiles, so grids under one wave of 132 CTAs (1x8x512) spread over twice the SMs. Registers: the kernel launches with R = 64K / (256 CTAS_PER_SM) rounded down to 8 per thread (128 or 80); the producer warpgroup gives back to 24 and the consumer takes 2R - 24 (232 or 136): setmaxnreg.inc waits for registers the producer released, so a larger request would never return. The consumer's loop is tma_ws's: S(j+1) = Q·K(j+1)ᵀ issued with O += P(j)·V(j), softmax of tile j+1 under P(j)·V(j); O is written from the fragments. Causal: only the tile holding the diagonal is masked (with 64-row tiles and BLOCK_N=64 no tile is entirely masked, where stage 7's first consumer computes a dead 64-key block); tiles past the diagonal are never loaded. LPT=1 (causal only) maps the linear block index to (query tile, head, batch) with the query tile outermost and reversed, so every head's longest tile is dispatched before any shorter one (longest-processing-time-first across the whole grid; LPT=0 is stage 7's order, longest first within each head). PERSISTENT=1: a grid of CTAS_PER_SM CTAs per SM (the worker's persistent launch) walks the row tiles round-robin in the same order (LPT's across the grid, causal; all tiles of one head back to back without the mask); the mbarrier ring and its phases run on across tiles, and Q gets an empty barrier released after a tile's last Q·Kᵀ, so the producer loads the next tile's Q and first K/V under this tile's last P·V and epilogue (measured at 256-512 keys, most of a CTA's life is that start and end: lab/notes/short-causal.md, Measured). ZIGZAG=1 (persistent causal only): every other pass of the walk is taken from its far end, so a CTA that took one pass's longest tile takes the next pass's shortest; plain round-robin gives the same CTA every pass's longest, and the busiest SM gets 1.6-7.2 % more KV tiles than the mean on the measured causal 1k-16k-key shapes, 0.1-1.2 % with ZIGZAG=1 (counted over the walk by lab/m64/walk_balance.py), which is about what PERSISTENT=1 lost there against the hardware's own dynamic dispatch (+4 to +10 %). Predicted before measurement: PERSISTENT=1 ZIGZAG=1 within 0-3 % of PERSISTENT=0 on causal 1k-16k keys, and unchanged on 256-key shapes (one pass)."
}
*/
#include "evo_attn.cuh"

#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef CTAS_PER_SM
#define CTAS_PER_SM 2
#endif
#ifndef LPT
#define LPT 0
#endif
#ifndef PERSISTENT
#define PERSISTENT 0
#endif
#ifndef ZIGZAG
#define ZIGZAG 0
#endif

#define HD EVO_HEAD_DIM
#define BLOCK_M 64      // one consumer warpgroup
#define NTHREADS 256    // producer warpgroup + consumer warpgroup
#define DB (HD / 64)    // 64-column (128-byte) blocks per row: one TMA box each
#define PROD_REGS 24
// Registers per thread at launch for CTAS_PER_SM CTAs of 256 threads (64 K per SM, multiples of 8).
#define LAUNCH_REGS ((65536 / (NTHREADS * CTAS_PER_SM)) / 8 * 8)
#define CONS_REGS (2 * LAUNCH_REGS - PROD_REGS)  // all the producer warpgroup gives back

EVO_CONSTRAINT(BLOCK_N == 64 || BLOCK_N == 128, "BLOCK_N must be 64 or 128 (wgmma n64 / n128)");
EVO_CONSTRAINT(STAGES >= 2 && STAGES <= 4, "STAGES must be 2..4");
EVO_CONSTRAINT(CTAS_PER_SM == 2 || CTAS_PER_SM == 3, "CTAS_PER_SM must be 2 or 3");
EVO_CONSTRAINT(LPT == 0 || LPT == 1, "LPT is 0 or 1");
EVO_CONSTRAINT(LPT == 0 || EVO_CAUSAL, "LPT reorders causal tiles; without the mask every tile is as long");
EVO_CONSTRAINT(PERSISTENT == 0 || PERSISTENT == 1, "PERSISTENT is 0 (one CTA per tile) or 1 (CTAS_PER_SM CTAs per SM)");
EVO_CONSTRAINT(ZIGZAG == 0 || (ZIGZAG == 1 && PERSISTENT == 1 && EVO_CAUSAL),
               "ZIGZAG reverses every other pass of a persistent causal walk; elsewhere every tile is as long");
EVO_CONSTRAINT(CTAS_PER_SM == 2 || (HD == 64 && BLOCK_N == 64),
               "three CTAs per SM leave the consumer 136 registers: only D=64 with BLOCK_N=64 fits O, S and P");

#define Q_BYTES (BLOCK_M * HD * 2)
#define KV_BYTES (BLOCK_N * HD * 2)
#define BAR_BYTES 256
#define SMEM_BYTES (Q_BYTES + 2 * STAGES * KV_BYTES + 1024 + BAR_BYTES)  // + 1 KiB to align tiles to 1024 B
// 228 KiB per SM, of which the driver keeps 1 KiB per CTA.
EVO_CONSTRAINT(CTAS_PER_SM * (SMEM_BYTES + 1024) <= 233472,
               "CTAS_PER_SM CTAs of these tiles and stages exceed the SM's 228 KiB of shared memory");

EVO_EXPORT_LAUNCH(NTHREADS, SMEM_BYTES, BLOCK_M, 1, PERSISTENT ? CTAS_PER_SM : 0);
EVO_EXPORT_TMA(EVO_TMA(EVO_TMA_Q, BLOCK_M, 64, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_128B),
               EVO_TMA(EVO_TMA_K, BLOCK_N, 64, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_256B),
               EVO_TMA(EVO_TMA_V, BLOCK_N, 64, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_256B));
#define TMA_Q 0
#define TMA_K 1
#define TMA_V 2

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

// ---- mbarriers (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier")
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Returns once the phase with this parity has completed (a fresh barrier counts parity 1 as done).
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(bar), "r"(parity)
                 : "memory");
  } while (!done);
}

// ---- TMA (cp.async.bulk.tensor): a box of the 4-D map at (col, row, head, batch)
__device__ __forceinline__ void tma_load(unsigned dst, const void* map, int col, int row, int h, int b, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"(map), "r"(col), "r"(row), "r"(h), "r"(b), "r"(bar)
      : "memory");
}

// Keeps the compiler from moving register reads or writes of an in-flight wgmma operand
// across the wait (the asm "redefines" the value after the wait).
__device__ __forceinline__ void fence_operand(float& x) { asm volatile("" : "+f"(x)::"memory"); }
__device__ __forceinline__ void fence_operand(unsigned& x) { asm volatile("" : "+r"(x)::"memory"); }

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

__device__ __forceinline__ void wgmma_wait_one() { asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory"); }

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

// The tile this CTA computes: query rows [m0, m0 + 64) of head h, batch b.
struct Tile {
  int m0, h, b;
};
__device__ __forceinline__ Tile tile_of_block() {
#if EVO_CAUSAL && LPT
  // Blocks start in linear order (x fastest): make the query tile the slowest index, longest
  // (last rows) first, so all heads' longest tiles go before any shorter one.
  const int heads_batches = (int)(gridDim.y * gridDim.z);
  const int lin = (int)(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
  const int hb = lin % heads_batches;
  return {((int)gridDim.x - 1 - lin / heads_batches) * BLOCK_M, hb % (int)gridDim.y, hb / (int)gridDim.y};
#elif EVO_CAUSAL
  return {(int)(gridDim.x - 1 - blockIdx.x) * BLOCK_M, (int)blockIdx.y, (int)blockIdx.z};  // longest first per head
#else
  return {(int)blockIdx.x * BLOCK_M, (int)blockIdx.y, (int)blockIdx.z};
#endif
}

// PERSISTENT=1: the w-th tile of the walk, in tile_of_block's order over the whole problem.
__device__ __forceinline__ Tile tile_at(const EvoAttnParams& p, int w) {
  const int n_qt = (p.seq_q + BLOCK_M - 1) / BLOCK_M;
#if EVO_CAUSAL && LPT
  const int heads_batches = p.heads_q * p.batch;
  const int hb = w % heads_batches;
  return {(n_qt - 1 - w / heads_batches) * BLOCK_M, hb % p.heads_q, hb / p.heads_q};
#elif EVO_CAUSAL
  const int hb = w / n_qt;
  return {(n_qt - 1 - w % n_qt) * BLOCK_M, hb % p.heads_q, hb / p.heads_q};
#else
  const int hb = w / n_qt;
  return {(w % n_qt) * BLOCK_M, hb % p.heads_q, hb / p.heads_q};
#endif
}

// The KV tiles row tile `m0` reads.
__device__ __forceinline__ int kv_tiles_of(const EvoAttnParams& p, int m0) {
  return (evo_kv_limit(p, m0, min(BLOCK_M, p.seq_q - m0)) + BLOCK_N - 1) / BLOCK_N;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(NTHREADS, CTAS_PER_SM) evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  extern __shared__ unsigned char smem_raw[];
  // Swizzled tiles start on 1024-byte boundaries (the 128-byte pattern repeats every 8 rows).
  const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const unsigned sQ = base;
  const unsigned sK = sQ + Q_BYTES;             // STAGES K tiles
  const unsigned sV = sK + STAGES * KV_BYTES;   // STAGES V tiles
  const unsigned bars = sV + STAGES * KV_BYTES;  // q_full, q_empty, full[STAGES], empty[STAGES]
  const unsigned q_full = bars, q_empty = bars + 8u;
  auto full = [&](int s) { return bars + 8u * (2 + s); };
  auto empty = [&](int s) { return bars + 8u * (2 + STAGES + s); };

  const int tid = threadIdx.x;
  // The row tiles this CTA computes: its own (w = 0 only), or one of every pass of gridDim.x
  // tiles of the walk: the blockIdx.x-th, or with ZIGZAG=1 on odd passes the blockIdx.x-th from
  // the pass's end. The causal walk runs longest tile first, so in plain round-robin the CTA that
  // takes a pass's longest tile takes every pass's longest: the busiest SM gets 1.6-7.2 % more
  // than the mean on causal 1k-16k keys (lab/m64/walk_balance.py), where PERSISTENT=1 measured
  // 4-10 % slower (lab/notes/short-causal.md); reversing every other pass pairs a pass's longest
  // with the next one's shortest.
#if PERSISTENT
  const int n_items = (p.seq_q + BLOCK_M - 1) / BLOCK_M * p.heads_q * p.batch;
  auto walk_at = [&](int k) {
    const int g = (int)gridDim.x, c = (int)blockIdx.x;
    return k * g + (ZIGZAG && (k & 1) ? g - 1 - c : c);
  };
  auto tile_of = [&](int w) { return tile_at(p, w); };
#else
  const int n_items = 1;
  auto walk_at = [](int k) { return k; };
  auto tile_of = [](int) { return tile_of_block(); };
#endif

  if (tid == 0) {
    mbar_init(q_full, 1);
    mbar_init(q_empty, 4);  // one arrival per consumer warp, after the tile's last Q·Kᵀ
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), 4);  // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (tid < 128) {
    // ---------------- producer warpgroup: one thread issues every copy
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PROD_REGS));
    if (tid == 0) {
      unsigned kv_it = 0;  // KV tiles loaded so far: the ring's slot and phase run on across row tiles
      // The walk's positions rise with n; a pass that runs past n_items is the last one.
      for (int n = 0, w; (w = walk_at(n)) < n_items; ++n) {
        const Tile tile = tile_of(w);
        const int hkv = evo_kv_head(p, tile.h);
        const int ntiles = kv_tiles_of(p, tile.m0);
        mbar_wait(q_empty, (n & 1) ^ 1);  // the previous tile's last Q·Kᵀ has read Q
        mbar_expect_tx(q_full, Q_BYTES);
#pragma unroll
        for (int blk = 0; blk < DB; ++blk)
          tma_load(sQ + blk * (BLOCK_M * 128), &p.tma[TMA_Q][0], blk * 64, tile.m0, tile.h, tile.b, q_full);
        for (int j = 0; j < ntiles; ++j, ++kv_it) {
          const int s = kv_it % STAGES;
          mbar_wait(empty(s), ((kv_it / STAGES) & 1) ^ 1);
          mbar_expect_tx(full(s), 2 * KV_BYTES);
#pragma unroll
          for (int blk = 0; blk < DB; ++blk) {
            tma_load(sK + s * KV_BYTES + blk * (BLOCK_N * 128), &p.tma[TMA_K][0], blk * 64, j * BLOCK_N, hkv, tile.b, full(s));
            tma_load(sV + s * KV_BYTES + blk * (BLOCK_N * 128), &p.tma[TMA_V][0], blk * 64, j * BLOCK_N, hkv, tile.b, full(s));
          }
        }
      }
    }
    return;
  }

  // ---------------- consumer warpgroup: the tile's 64 query rows
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONS_REGS));
  const int ctid = tid - 128;
  const int warp_in_wg = ctid >> 5;
  const int lane = ctid & 31;
  const int g = lane >> 2;
  const int t = lane & 3;
  const int r0 = warp_in_wg * 16 + g;  // this thread's rows r0, r0 + 8 of the tile
  const float sl2 = p.softmax_scale_log2;

  float o[HD / 2];
  float s[BLOCK_N / 2];
  unsigned pa[BLOCK_N / 4];
  float m_run[2], l_run[2], alpha[2] = {1.f, 1.f};
  int m0 = 0;  // the current row tile's first query row (softmax's diagonal)

  auto issue_qk = [&](int stage) {
    const unsigned kb = sK + stage * KV_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kstep = 0; kstep < HD / 16; ++kstep) {
      const unsigned off = (kstep & 3) * 32;
      const unsigned long long da = sw128_desc(sQ + (kstep >> 2) * (BLOCK_M * 128) + off, 16, 1024);
      const unsigned long long db = sw128_desc(kb + (kstep >> 2) * (BLOCK_N * 128) + off, 16, 1024);
#if BLOCK_N == 64
      wgmma_ss_n64(s, da, db, kstep > 0);
#else
      wgmma_ss_n128(s, da, db, kstep > 0);
#endif
    }
    wgmma_commit();
  };
  // O += P V: P from registers, V N-major (16 keys = 2 groups of 8 rows, d-blocks BLOCK_N*128 B apart).
  auto issue_pv = [&](int stage) {
    const unsigned vb = sV + stage * KV_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
      const unsigned a[4] = {pa[4 * kk], pa[4 * kk + 1], pa[4 * kk + 2], pa[4 * kk + 3]};
      const unsigned long long db = sw128_desc(vb + kk * 16 * 128, BLOCK_N * 128, 1024);
#if HD == 64
      wgmma_rs_n64(o, a, db);
#else
      wgmma_rs_n128(o, a, db);
#endif
    }
    wgmma_commit();
  };
  // Masks and exponentiates S of the tile at key n0 in place; alpha = the rescale O needs. Only
  // the tile past seq_kv's end or holding the diagonal takes the masking loop.
  auto softmax = [&](int n0) {
#pragma unroll
    for (int i = 0; i < BLOCK_N / 2; ++i) fence_operand(s[i]);
    bool need = n0 + BLOCK_N > p.seq_kv;
#if EVO_CAUSAL
    need = need || (n0 + BLOCK_N - 1 > m0);
#endif
    if (need) {
#pragma unroll
      for (int j = 0; j < BLOCK_N / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = n0 + j * 8 + 2 * t + (e & 1);
          bool masked = key >= p.seq_kv;
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
      alpha[hi] = fast_exp2(m_run[hi] - m_use);
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
      l_run[hi] = l_run[hi] * alpha[hi] + rs;
    }
  };
  // After P·V of the previous tile has completed: rescale O and pack P (the A fragment of P·V).
  auto rescale_and_pack = [&]() {
#pragma unroll
    for (int i = 0; i < HD / 2; ++i) fence_operand(o[i]);
#pragma unroll
    for (int i = 0; i < BLOCK_N / 4; ++i) fence_operand(pa[i]);
#pragma unroll
    for (int d = 0; d < HD / 8; ++d)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[d * 4 + e] *= alpha[e >> 1];
#pragma unroll
    for (int i = 0; i < BLOCK_N / 4; ++i) pa[i] = pack2(s[2 * i], s[2 * i + 1]);
  };

  unsigned kv_it = 0;  // KV tiles consumed so far, as the producer counts them
  for (int n = 0, w; (w = walk_at(n)) < n_items; ++n) {
    const Tile tile = tile_of(w);
    m0 = tile.m0;
    const int ntiles = kv_tiles_of(p, m0);
    auto slot = [&](int j) { return int((kv_it + j) % STAGES); };
    auto phase = [&](int j) { return ((kv_it + j) / STAGES) & 1; };
#pragma unroll
    for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      m_run[hi] = NEG_INF;
      l_run[hi] = 0.f;
    }

    mbar_wait(q_full, n & 1);
    mbar_wait(full(slot(0)), phase(0));
    issue_qk(slot(0));
    wgmma_wait_all();
    if (ntiles == 1 && lane == 0) mbar_arrive(q_empty);  // that was the tile's only Q·Kᵀ
    softmax(0);
    rescale_and_pack();

    // Every tile but the last: issue S(j+1) and P(j)V(j) together, softmax j+1 under P(j)V(j).
    // (No branch around the issue: ptxas serializes wgmma when it cannot prove the accumulators idle.)
    for (int j = 0; j + 1 < ntiles; ++j) {
      mbar_wait(full(slot(j + 1)), phase(j + 1));
      issue_qk(slot(j + 1));  // S(j+1) = Q K(j+1)ᵀ ...
      issue_pv(slot(j));      // ... and O += P(j) V(j), back to back
      wgmma_wait_one();       // S(j+1) is ready; P(j) V(j) may still run
      if (j + 2 == ntiles && lane == 0) mbar_arrive(q_empty);  // the last Q·Kᵀ has read Q
      softmax((j + 1) * BLOCK_N);
      wgmma_wait_all();
      if (lane == 0) mbar_arrive(empty(slot(j)));  // this warp is done with K(j), V(j)
      rescale_and_pack();
    }
    issue_pv(slot(ntiles - 1));
    wgmma_wait_all();
    if (lane == 0) mbar_arrive(empty(slot(ntiles - 1)));
    kv_it += ntiles;
#pragma unroll
    for (int i = 0; i < HD / 2; ++i) fence_operand(o[i]);

    // ---- epilogue: O / l straight from the fragments (rows r0, r0 + 8).
    evo_t* Og = evo_o_ptr(p, tile.b, tile.h);
    const long long os = p.o_stride[2];
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float l = l_run[hi];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.f ? fast_rcp(l) : 0.f;
      const int r = r0 + hi * 8;
      if (m0 + r < p.seq_q) {
        evo_t* orow = Og + (long long)(m0 + r) * os;
#pragma unroll
        for (int d = 0; d < HD / 8; ++d)
          *reinterpret_cast<evo_t2*>(orow + d * 8 + 2 * t) = evo2_from_float2(o[d * 4 + 2 * hi] * inv, o[d * 4 + 2 * hi + 1] * inv);
      }
    }
  }
}
