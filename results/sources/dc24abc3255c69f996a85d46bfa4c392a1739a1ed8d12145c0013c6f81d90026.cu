/*evo
{
  "summary": "Stage 7's TMA ring, producer warpgroup and ping-pong consumers, plus clusters of CLUSTER CTAs of one head sharing every K/V tile by TMA multicast, and a persistent tile scheduler (causal: heaviest tiles first)",
  "parent": "7-tma-ws/tma_ws",
  "params": {
    "BLOCK_N": [128, 64],
    "CLUSTER": [2, 1],
    "PERSISTENT": [1, 0],
    "STAGES": [3, 2, 4],
    "CONS_REGS": [208, 240, 232, 224, 216],
    "PROD_REGS": [40, 24, 32],
    "PINGPONG": [1, 0],
    "RESCALE_SKIP": [1, 0]
  },
  "dtypes": ["fp16", "bf16"],
  "head_dims": [64, 128],
  "min_sm": 90,
  "notes": "CLUSTER=2: the two CTAs of a cluster take adjacent 128-row query tiles of the same (batch, head) and read the same K/V tiles; each loads half of every K/V tile (BLOCK_N/2 rows per 64-column box) with cp.async.bulk.tensor...multicast::cluster into the same offset of both CTAs' shared memory, so a K/V tile leaves L2 once per cluster instead of once per CTA. Each CTA's full barrier expects the whole tile's bytes (both halves land there); its empty barrier counts one arrival per consumer warp of every CTA of the cluster (mapa + mbarrier.arrive.shared::cluster), so no CTA overwrites a slot its partner still reads. Under the causal mask the pair walks the longer CTA's key range; the shorter CTA waits for and releases the tiles it does not need (no math on them). A cluster barrier after the barrier init and before exit keeps remote writes and arrivals inside both CTAs' lifetimes. PERSISTENT=1: a grid of one CTA per SM (the worker's persistent launch) walks work items (pair of query tiles, head, batch) round-robin, pair-major so the heaviest causal tiles go first; the mbarrier ring runs on across items, so the producer prefetches the next item's K/V during this item's last tile and epilogue, and Q gets its own empty barrier (released after the item's last Q·Kᵀ). RESCALE_SKIP=1 skips the O rescale when no row of the warp raised its running max (alpha == 1 exactly). Causal masking, GQA, BSHD strides and ragged tails as in stage 7 (TMA zero-fills rows past the sequence). O is written from the fragments."
}
*/
#include "evo_attn.cuh"

#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef CLUSTER
#define CLUSTER 2
#endif
#ifndef PERSISTENT
#define PERSISTENT 1
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef PINGPONG
#define PINGPONG 1
#endif
#ifndef CONS_REGS
#define CONS_REGS 208
#endif
#ifndef PROD_REGS
#define PROD_REGS 40
#endif
#ifndef RESCALE_SKIP
#define RESCALE_SKIP 1
#endif

#define HD EVO_HEAD_DIM
#define NCONS 2
#define BLOCK_M (NCONS * 64)
#define NTHREADS ((NCONS + 1) * 128)
#define DB (HD / 64)                 // 64-column (128-byte) blocks per row: one TMA box each
#define KV_ROWS (BLOCK_N / CLUSTER)  // rows of every K/V tile this CTA loads for the whole cluster

EVO_CONSTRAINT(BLOCK_N == 64 || BLOCK_N == 128, "BLOCK_N must be 64 or 128 (wgmma n64 / n128)");
EVO_CONSTRAINT(CLUSTER == 1 || CLUSTER == 2, "CLUSTER must be 1 or 2 CTAs");
EVO_CONSTRAINT(PERSISTENT == 0 || PERSISTENT == 1, "PERSISTENT is 0 (one CTA per tile) or 1 (one CTA per SM)");
EVO_CONSTRAINT(STAGES >= 2 && STAGES <= 4, "STAGES must be 2..4");
EVO_CONSTRAINT(PINGPONG == 0 || PINGPONG == 1, "PINGPONG is 0 or 1");
EVO_CONSTRAINT(RESCALE_SKIP == 0 || RESCALE_SKIP == 1, "RESCALE_SKIP is 0 or 1");
EVO_CONSTRAINT(CONS_REGS % 8 == 0 && PROD_REGS % 8 == 0 && PROD_REGS >= 24 && CONS_REGS <= 256,
               "setmaxnreg takes multiples of 8 in 24..256");
EVO_CONSTRAINT(PROD_REGS + NCONS * CONS_REGS <= 512, "the register split must fit 64 K registers per SM");

#define Q_BYTES (BLOCK_M * HD * 2)
#define KV_BYTES (BLOCK_N * HD * 2)
#define BAR_BYTES 256
#define SMEM_BYTES (Q_BYTES + 2 * STAGES * KV_BYTES + 1024 + BAR_BYTES)  // + 1 KiB to align tiles to 1024 B
EVO_CONSTRAINT(SMEM_BYTES <= 232448, "tiles and stages exceed 227 KiB of shared memory");

EVO_EXPORT_LAUNCH(NTHREADS, SMEM_BYTES, BLOCK_M, CLUSTER, PERSISTENT);
EVO_EXPORT_TMA(EVO_TMA(EVO_TMA_Q, BLOCK_M, 64, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_128B),
               EVO_TMA(EVO_TMA_K, KV_ROWS, 64, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_256B),
               EVO_TMA(EVO_TMA_V, KV_ROWS, 64, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_256B));
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
// Generic-proxy writes to shared memory made visible to the async proxy (wgmma, TMA).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// ---- named barriers (0 is __syncthreads): ping-pong 1 + c, consumer epilogue 3 + c
__device__ __forceinline__ void named_sync(unsigned id, unsigned count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void named_arrive(unsigned id, unsigned count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
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


// ---- clusters (PTX ISA: %cluster_ctarank, mapa, barrier.cluster, multicast::cluster)
__device__ __forceinline__ unsigned cluster_rank() {
#if CLUSTER > 1
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
#else
  return 0;
#endif
}
// Every thread of every CTA of the cluster (CTA-wide __syncthreads without clusters).
__device__ __forceinline__ void cluster_sync_all() {
#if CLUSTER > 1
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
#else
  __syncthreads();
#endif
}
// Arrive on the mbarrier at the same shared-memory offset in CTA `rank` of the cluster.
__device__ __forceinline__ void mbar_arrive_in(unsigned bar, unsigned rank) {
#if CLUSTER > 1
  asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\nmbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
               "r"(rank)
               : "memory");
#else
  (void)rank;
  mbar_arrive(bar);
#endif
}
// A box of the 4-D map into the same offset of every CTA of the cluster; each CTA's mbarrier
// at `bar`'s offset counts the bytes that land in that CTA.
__device__ __forceinline__ void tma_load_all(unsigned dst, const void* map, int col, int row, int h, int b, unsigned bar) {
#if CLUSTER > 1
  const unsigned short mask = (1u << CLUSTER) - 1;
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(dst),
      "l"(map), "r"(col), "r"(row), "r"(h), "r"(b), "r"(bar), "h"(mask)
      : "memory");
#else
  tma_load(dst, map, col, row, h, b, bar);
#endif
}

// One work item: a pair (CLUSTER query tiles of BLOCK_M rows) of one (batch, head); this CTA
// takes tile pair * CLUSTER + rank. The pair walks the key tiles of its longest row tile.
struct Item {
  int m0, q_rows;  // this CTA's rows (q_rows <= 0: a tile past seq_q that only helps load)
  int h, b;
  int my_tiles;    // key tiles this CTA computes on
  int pair_tiles;  // key tiles the pair loads (>= my_tiles)
};

__device__ __forceinline__ Item item_at(const EvoAttnParams& p, int w, unsigned rank) {
  Item it;
#if PERSISTENT
  // Pair-major order: all heads' pairs of one row band before the next band.
  const int hb = w % (p.heads_q * p.batch);
  int pair = w / (p.heads_q * p.batch);
  it.h = hb % p.heads_q;
  it.b = hb / p.heads_q;
#else
  (void)w;
  int pair = blockIdx.x / CLUSTER;
  it.h = blockIdx.y;
  it.b = blockIdx.z;
#endif
#if EVO_CAUSAL
  const int npairs = ((p.seq_q + BLOCK_M - 1) / BLOCK_M + CLUSTER - 1) / CLUSTER;
  pair = npairs - 1 - pair;  // the longest row tiles first
#endif
  const int pair_row0 = pair * CLUSTER * BLOCK_M;
  const int pair_rows = min(CLUSTER * BLOCK_M, p.seq_q - pair_row0);
  it.pair_tiles = (evo_kv_limit(p, pair_row0, pair_rows) + BLOCK_N - 1) / BLOCK_N;
  it.m0 = pair_row0 + int(rank) * BLOCK_M;
  it.q_rows = min(BLOCK_M, p.seq_q - it.m0);
  it.my_tiles = it.q_rows > 0 ? (evo_kv_limit(p, it.m0, it.q_rows) + BLOCK_N - 1) / BLOCK_N : 0;
  return it;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(NTHREADS, 1) evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  extern __shared__ unsigned char smem_raw[];
  // Swizzled tiles start on 1024-byte boundaries (the 128-byte pattern repeats every 8 rows).
  // Every CTA of a cluster has the same layout: a multicast writes the issuer's offsets.
  const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const unsigned sQ = base;
  const unsigned sK = sQ + Q_BYTES;              // STAGES K tiles
  const unsigned sV = sK + STAGES * KV_BYTES;    // STAGES V tiles
  const unsigned bars = sV + STAGES * KV_BYTES;  // q_full, q_empty, full[STAGES], empty[STAGES]
  const unsigned q_full = bars, q_empty = bars + 8u;
  auto full = [&](int s) { return bars + 8u * (2 + s); };
  auto empty = [&](int s) { return bars + 8u * (2 + STAGES + s); };

  const int tid = threadIdx.x;
  const unsigned rank = cluster_rank();
  if (tid == 0) {
    mbar_init(q_full, 1);
    mbar_init(q_empty, NCONS * 4);  // one arrival per consumer warp
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), 1);
      mbar_init(empty(s), CLUSTER * NCONS * 4);  // every consumer warp of every CTA of the cluster
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster_sync_all();  // no CTA multicasts into, or arrives on, a partner's barrier before its init

#if PERSISTENT
  const int n_items = ((p.seq_q + BLOCK_M - 1) / BLOCK_M + CLUSTER - 1) / CLUSTER * p.heads_q * p.batch;
  const int w_first = blockIdx.x / CLUSTER, w_step = gridDim.x / CLUSTER;
#else
  const int n_items = 1, w_first = 0, w_step = 1;
#endif

  if (tid < 128) {
    // ---------------- producer warpgroup: one thread issues every copy
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PROD_REGS));
    if (tid == 0) {
      int ring = 0, q_uses = 0;  // K/V tiles and Q tiles loaded so far, across items
      for (int w = w_first; w < n_items; w += w_step) {
        const Item it = item_at(p, w, rank);
        if (it.q_rows > 0) {
          mbar_wait(q_empty, (q_uses & 1) ^ 1);  // the consumers' last Q·Kᵀ of the previous item is done
          mbar_expect_tx(q_full, Q_BYTES);
#pragma unroll
          for (int blk = 0; blk < DB; ++blk)
            tma_load(sQ + blk * (BLOCK_M * 128), &p.tma[TMA_Q][0], blk * 64, it.m0, it.h, it.b, q_full);
          ++q_uses;
        }
        const int hkv = evo_kv_head(p, it.h);
        for (int j = 0; j < it.pair_tiles; ++j, ++ring) {
          const int s = ring % STAGES;
          mbar_wait(empty(s), ((ring / STAGES) & 1) ^ 1);  // free in every CTA of the cluster
          mbar_expect_tx(full(s), 2 * KV_BYTES);           // the whole tile lands here, from all CTAs
          const int row = j * BLOCK_N + int(rank) * KV_ROWS;
          const unsigned off = rank * (KV_ROWS * 128);
#pragma unroll
          for (int blk = 0; blk < DB; ++blk) {
            tma_load_all(sK + s * KV_BYTES + blk * (BLOCK_N * 128) + off, &p.tma[TMA_K][0], blk * 64, row, hkv, it.b, full(s));
            tma_load_all(sV + s * KV_BYTES + blk * (BLOCK_N * 128) + off, &p.tma[TMA_V][0], blk * 64, row, hkv, it.b, full(s));
          }
        }
      }
    }
  } else {
    // ---------------- consumer warpgroups: 64 query rows each
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONS_REGS));
    const int ctid = tid - 128;
    const int c = ctid >> 7;
    const int warp_in_wg = (ctid >> 5) & 3;
    const int lane = ctid & 31;
    const int g = lane >> 2;
    const int t = lane & 3;
    const int r0 = warp_in_wg * 16 + g;  // this thread's rows r0, r0 + 8 of the consumer's 64
    const float sl2 = p.softmax_scale_log2;
    const unsigned qa = sQ + c * (64 * 128);

    float o[HD / 2];
    float s[BLOCK_N / 2];
    unsigned pa[BLOCK_N / 4];
    float m_run[2], l_run[2], alpha[2];
    int row_base = 0, ring = 0, q_uses = 0;

    auto stage_of = [&](int j) { return (ring + j) % STAGES; };
    auto parity_of = [&](int j) { return unsigned((ring + j) / STAGES) & 1u; };
    // This warp is done with K/V tile j: tell the producer of every CTA that writes the slot.
    auto release = [&](int j) {
      if (lane == 0)
#pragma unroll
        for (unsigned r = 0; r < CLUSTER; ++r) mbar_arrive_in(empty(stage_of(j)), r);
    };
    auto issue_qk = [&](int stage) {
      const unsigned kb = sK + stage * KV_BYTES;
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
    // Masks and exponentiates S of the tile at key n0 in place; alpha = the rescale O needs.
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
    // RESCALE_SKIP: once the running maxima settle alpha is exactly 1 and the 64 (D=128)
    // multiplies are skipped for the whole warp.
    auto rescale_and_pack = [&]() {
#pragma unroll
      for (int i = 0; i < HD / 2; ++i) fence_operand(o[i]);
#pragma unroll
      for (int i = 0; i < BLOCK_N / 4; ++i) fence_operand(pa[i]);
      if (!RESCALE_SKIP || !__all_sync(0xffffffffu, alpha[0] == 1.f && alpha[1] == 1.f)) {
#pragma unroll
        for (int d = 0; d < HD / 8; ++d)
#pragma unroll
          for (int e = 0; e < 4; ++e) o[d * 4 + e] *= alpha[e >> 1];
      }
#pragma unroll
      for (int i = 0; i < BLOCK_N / 4; ++i) pa[i] = pack2(s[2 * i], s[2 * i + 1]);
    };
    // Ping-pong: consumer c issues its GEMMs after the other consumer has issued its own.
    auto gemm_turn_begin = [&]() {
      if (PINGPONG) named_sync(1 + c, 256);
    };
    auto gemm_turn_end = [&](bool last) {
      // Consumer 1 opened consumer 0's first turn up front, so it skips its last hand-over and
      // both named barriers end balanced (per item).
      if (PINGPONG && !(c == 1 && last)) named_arrive(1 + (c ^ 1), 256);
    };

    for (int w = w_first; w < n_items; w += w_step) {
      const Item it = item_at(p, w, rank);
      const int n = it.my_tiles;
      if (n > 0) {
        row_base = it.m0 + c * 64;
#pragma unroll
        for (int i = 0; i < HD / 2; ++i) o[i] = 0.f;
        m_run[0] = m_run[1] = NEG_INF;
        l_run[0] = l_run[1] = 0.f;
        if (PINGPONG && c == 1) named_arrive(1, 256);  // consumer 0 goes first
        mbar_wait(q_full, unsigned(q_uses) & 1u);
        ++q_uses;
        mbar_wait(full(stage_of(0)), parity_of(0));
        gemm_turn_begin();
        issue_qk(stage_of(0));
        gemm_turn_end(false);
        wgmma_wait_all();
        if (n == 1 && lane == 0) mbar_arrive(q_empty);  // Q read for the last time
        softmax(0);
        rescale_and_pack();
        // Every tile but the last: issue S(j+1) and P(j)V(j) together, softmax j+1 under P(j)V(j).
        for (int j = 0; j + 1 < n; ++j) {
          mbar_wait(full(stage_of(j + 1)), parity_of(j + 1));
          gemm_turn_begin();
          issue_qk(stage_of(j + 1));  // S(j+1) = Q K(j+1)ᵀ ...
          issue_pv(stage_of(j));      // ... and O += P(j) V(j), back to back
          gemm_turn_end(false);
          wgmma_wait_one();  // S(j+1) is ready; P(j) V(j) may still run
          if (j + 2 == n && lane == 0) mbar_arrive(q_empty);
          softmax((j + 1) * BLOCK_N);
          wgmma_wait_all();
          release(j);
          rescale_and_pack();
        }
        gemm_turn_begin();
        issue_pv(stage_of(n - 1));
        gemm_turn_end(true);
        wgmma_wait_all();
        release(n - 1);
#pragma unroll
        for (int i = 0; i < HD / 2; ++i) fence_operand(o[i]);

        // ---- epilogue: O / l straight from the fragments (rows r0, r0 + 8)
        evo_t* Og = evo_o_ptr(p, it.b, it.h);
        const long long os = p.o_stride[2];
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          float l = l_run[hi];
          l += __shfl_xor_sync(0xffffffffu, l, 1);
          l += __shfl_xor_sync(0xffffffffu, l, 2);
          const float inv = l > 0.f ? fast_rcp(l) : 0.f;
          const int r = r0 + hi * 8;
          if (row_base + r < p.seq_q) {
            evo_t* orow = Og + (long long)(row_base + r) * os;
#pragma unroll
            for (int d = 0; d < HD / 8; ++d)
              *reinterpret_cast<evo_t2*>(orow + d * 8 + 2 * t) =
                  evo2_from_float2(o[d * 4 + 2 * hi] * inv, o[d * 4 + 2 * hi + 1] * inv);
          }
        }
      }
      // Tiles the partner needs and this CTA does not (causal, or a tile past seq_q): wait for
      // them to land, then free the slot, so both CTAs' rings stay in step.
      for (int j = n; j < it.pair_tiles; ++j) {
        mbar_wait(full(stage_of(j)), parity_of(j));
        release(j);
      }
      ring += it.pair_tiles;
    }
  }
#if CLUSTER > 1
  cluster_sync_all();  // no CTA exits while its partner may still multicast into it or arrive on it
#endif
}
