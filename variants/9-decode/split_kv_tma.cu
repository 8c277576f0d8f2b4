/*evo
{
  "summary": "Decode: split_kv with K/V blocks loaded by TMA (128-byte swizzle) into a producer-warp mbarrier ring",
  "parent": "9-decode/split_kv",
  "params": {
    "BLOCK_M": [16, 32],
    "BLOCK_N": [64, 128],
    "NWARPS": [4, 8],
    "STAGES": [3, 2, 4],
    "KV_SPLITS": [64, 16]
  },
  "dtypes": ["fp16", "bf16"],
  "head_dims": [64, 128],
  "min_sm": 90,
  "notes": "split_kv's algorithm and launch ABI (EVO_EXPORT_LAUNCH_SPLIT: pack-GQA rows, the host's evo_num_splits, the FP32 partial workspace and the last-CTA combine), with the K/V loads moved to the copy engine. An extra producer warp (warp NWARPS) has one thread issue, per KV block, cp.async.bulk.tensor.4d boxes of BLOCK_N keys x 64 columns (one per 64-column half at D=128) with the 128-byte swizzle, over the host-encoded 4-D maps of K and V (the call's real strides, so BSHD caches work; keys past seq_kv zero-filled by the copy engine and still masked), into a STAGES-deep ring whose full barriers count the transaction bytes and whose empty barriers count one arrival per consumer warp, each after a fence.proxy.async (the warp read the slot with ldmatrix, the generic proxy; its next writer is the copy engine, the async proxy). The NWARPS consumer warps do what split_kv's warps do: each takes BLOCK_N / NWARPS keys of every block for all BLOCK_M rows, mma.sync m16n8k16 with ldmatrix addresses XOR-swizzled (16-byte chunk c of row r at c ^ (r & 7)), FP32 online softmax in the log2 domain, the warps' partials merged in shared memory. Q (a pack-GQA gather of BLOCK_M rows from G heads) is loaded once with ordinary 16-byte loads. The producer warp costs registers: two CTAs of 4 + 1 warps put 3 warps on some SM sub-partition, 168 registers a thread (D=128 configs use 150-168). Prediction (before any measurement): split_kv issues 16 LDGSTS per thread per D=128, BLOCK_N 64 block (2048 per CTA, plus their address arithmetic and a __syncthreads that makes every warp wait for the slowest before the refill); this issues 4 UTMALDG per block from one thread, and the refill of a slot waits only for its own empty barrier. Bytes in flight per SM at the default (BLOCK_N 64, STAGES 3, D=128: 32 KB of K+V per block, 101 KiB smem, 2 CTAs per SM): up to 3 blocks per CTA, ~192 KB, against ~128 KB for split_kv and ~36 KB needed to cover 1 us of latency at 4.8 TB/s; the unpadded swizzled ring also saves split_kv's 6 % padding. Expected: 76-88 % of 4.8 TB/s on the >= 134 MB decode shapes (Llama-3 70B B16 at 64-73 us, 0.95-1.1x cuDNN), the small shapes (8B B1, MQA) unchanged within 10 % since launch, fill and combine dominate there."
}
*/
#include "evo_attn.cuh"
#include "evo_split_kv.cuh"  // split_tile, mask_keys, softmax_step, write_warp_partial, combine_and_store

#ifndef BLOCK_M
#define BLOCK_M 16
#endif
#ifndef BLOCK_N
#define BLOCK_N 64
#endif
#ifndef NWARPS
#define NWARPS 4
#endif
#ifndef STAGES
#define STAGES 3
#endif
#ifndef KV_SPLITS
#define KV_SPLITS 64
#endif

#define HD EVO_HEAD_DIM
#define NTHREADS ((NWARPS + 1) * 32)  // NWARPS consumer warps and one producer warp
#define MT (BLOCK_M / 16)             // m16 tiles: every consumer warp holds all rows of the CTA
#define WN (BLOCK_N / NWARPS)         // keys of each block one warp takes
#define DB (HD / 64)                  // 64-column (128-byte) boxes per K or V row: one TMA box each
#define LDS (HD + 8)                  // padded smem row of Q (elements): conflict-free ldmatrix
#define LDO (HD + 4)                  // padded FP32 row of the warps' partial outputs

EVO_CONSTRAINT(BLOCK_M == 16 || BLOCK_M == 32, "BLOCK_M must be 16 or 32");
EVO_CONSTRAINT(BLOCK_N == 64 || BLOCK_N == 128, "BLOCK_N must be 64 or 128 (a TMA box holds at most 256 rows)");
EVO_CONSTRAINT(BLOCK_M * HD <= 2048, "every warp holds all rows' FP32 accumulators: BLOCK_M * HD <= 2048 (no spills)");
EVO_CONSTRAINT(BLOCK_N % (16 * NWARPS) == 0, "each warp takes a multiple of 16 keys of a block: BLOCK_N % (16*NWARPS) == 0");
EVO_CONSTRAINT(MT * WN * HD <= 4096, "S, P and O fragments of a warp: MT * (BLOCK_N / NWARPS) * HD <= 4096 (no spills)");
// Two CTAs of NWARPS + 1 = 5 warps put 3 warps on some SM sub-partition: 168 registers a thread.
EVO_CONSTRAINT(NWARPS >= 8 || BLOCK_M == 16 || WN <= 16,
               "two CTAs of 5 warps cap a thread at 168 registers: BLOCK_M 32 with 4 warps takes <= 16 keys per warp");
EVO_CONSTRAINT(STAGES >= 2 && STAGES <= 4, "STAGES must be 2..4");
EVO_CONSTRAINT(KV_SPLITS >= 1, "KV_SPLITS must be >= 1");

#define TILE_BYTES (BLOCK_N * HD * 2)  // one K or V block, unpadded (DB boxes of BLOCK_N x 128 B)
#define KV_BYTES (STAGES * 2 * TILE_BYTES)
#define PARTIAL_BYTES (NWARPS * BLOCK_M * (LDO + 2) * 4)  // the warps' (O, max, sum)
#define SPLIT_BYTES (2 * BLOCK_M * KV_SPLITS * 4)           // the splits' (max, sum) per row
#define COMBINE_BYTES (PARTIAL_BYTES > SPLIT_BYTES ? PARTIAL_BYTES : SPLIT_BYTES)
#define RING_MAX (KV_BYTES > COMBINE_BYTES ? KV_BYTES : COMBINE_BYTES)
#define RING_BYTES ((RING_MAX + 127) / 128 * 128)  // the ring, or the combine's scratch over it
#define Q_BYTES (BLOCK_M * LDS * 2)
#define SMEM_BYTES (1024 + RING_BYTES + Q_BYTES)  // + 1 KiB to align the swizzled ring to 1024 B
EVO_CONSTRAINT(SMEM_BYTES <= 227 * 1024, "shared memory past 227 KiB");

EVO_EXPORT_LAUNCH_SPLIT(NTHREADS, SMEM_BYTES, BLOCK_M, KV_SPLITS, BLOCK_N);
EVO_EXPORT_TMA(EVO_TMA(EVO_TMA_K, BLOCK_N, 64, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_256B),
               EVO_TMA(EVO_TMA_V, BLOCK_N, 64, EVO_TMA_SWIZZLE_128B, EVO_TMA_L2_256B));
#define TMA_K 0
#define TMA_V 1

namespace {

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

// A box of the 4-D map at (col, row, head, batch) into shared memory, completing on `bar`.
__device__ __forceinline__ void tma_load(unsigned dst, const void* map, int col, int row, int h, int b, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"(map), "r"(col), "r"(row), "r"(h), "r"(b), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_prefetch_map(const void* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}
// Orders this thread's generic-proxy shared memory accesses before later async-proxy ones (TMA).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Named barrier of the consumer warps only (0 is __syncthreads).
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, %0;\n" ::"n"(NWARPS * 32) : "memory"); }

}  // namespace

// Two CTAs per SM (the split count assumes them) up to 4 consumer warps (the producer warp makes
// it 10 warps an SM, 168 registers a thread); at 8 two would cap a thread at 112 and spill.
#if NWARPS >= 8
#define EVO_MIN_CTAS 1
#else
#define EVO_MIN_CTAS 2
#endif

extern "C" __global__ void __launch_bounds__(NTHREADS, EVO_MIN_CTAS) evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long bar_full[STAGES], bar_empty[STAGES];
  // The ring starts on a 1024-byte boundary (the 128-byte swizzle repeats every 8 rows of 128 B):
  // STAGES K tiles, then STAGES V tiles, each DB boxes of BLOCK_N rows x 128 B. After the KV loop
  // it holds the warps' partials (sO, then sM, sL). Q (padded rows) follows it.
  const unsigned raw_u = smem_u32(smem_raw);
  const unsigned sK_u = (raw_u + 1023u) & ~1023u;
  const unsigned sV_u = sK_u + STAGES * TILE_BYTES;
  const unsigned sQ_u = sK_u + RING_BYTES;
  unsigned char* ring = smem_raw + (sK_u - raw_u);
  float* sO = reinterpret_cast<float*>(ring);
  float* sM = sO + NWARPS * BLOCK_M * LDO;
  float* sL = sM + NWARPS * BLOCK_M;
  evo_t* sQ = reinterpret_cast<evo_t*>(smem_raw + (sQ_u - raw_u));

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;

  const SplitTile tile = split_tile<BLOCK_M, BLOCK_N, KV_SPLITS>(p);
  const int hkv = tile.hkv, b = tile.b, group = tile.group, r0 = tile.r0, rows = tile.rows;
  const int blk0 = tile.blk0, nb = tile.nb, seq_kv = p.seq_kv;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(smem_u32(&bar_full[s]), 1);
      mbar_init(smem_u32(&bar_empty[s]), NWARPS);  // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  // Q rows: each its own head and position (pack-GQA), zero past the last packed row; ordinary
  // 16-byte loads (a gather over G heads, read once), so no LDGSTS is left in the kernel.
  {
    constexpr int CPR = HD / 8;
    for (int c = tid; c < BLOCK_M * CPR; c += NTHREADS) {
      const int r = c / CPR, col = (c % CPR) * 8;
      uint4 v = make_uint4(0u, 0u, 0u, 0u);
      if (r < rows) {
        const RowAt at = row_at(r0 + r, group, hkv);
        v = *reinterpret_cast<const uint4*>(evo_q_ptr(p, b, at.head) + (long long)at.pos * p.q_stride[2] + col);
      }
      *reinterpret_cast<uint4*>(sQ + r * LDS + col) = v;
    }
  }
  __syncthreads();  // barriers initialized, Q in shared memory

  if (warp == NWARPS) {
    // ---------------- producer warp: one thread issues every K/V box
    if (lane == 0 && nb > 0) {
      const void* mapK = &p.tma[TMA_K][0];
      const void* mapV = &p.tma[TMA_V][0];
      tma_prefetch_map(mapK);
      tma_prefetch_map(mapV);
      for (int i = 0; i < nb; ++i) {
        const int s = i % STAGES;
        mbar_wait(smem_u32(&bar_empty[s]), ((i / STAGES) & 1) ^ 1);
        const unsigned full = smem_u32(&bar_full[s]);
        mbar_expect_tx(full, 2 * TILE_BYTES);  // whole boxes: rows past seq_kv count, zero-filled
        const int n = (blk0 + i) * BLOCK_N;
#pragma unroll
        for (int db = 0; db < DB; ++db) {
          tma_load(sK_u + s * TILE_BYTES + db * (BLOCK_N * 128), mapK, db * 64, n, hkv, b, full);
          tma_load(sV_u + s * TILE_BYTES + db * (BLOCK_N * 128), mapV, db * 64, n, hkv, b, full);
        }
      }
    }
  } else {
    // ---------------- consumer warps: BLOCK_N / NWARPS keys of every block each, all rows
    const unsigned offA = (((lane & 7) + ((lane >> 3) & 1) * 8) * LDS + (lane >> 4) * 8) * 2;
    // Swizzled ring: 16-byte chunk c of row r sits at chunk c ^ (r & 7); every row an ldmatrix
    // lane addresses has r & 7 == lane & 7 (the warps' key ranges start on multiples of 16).
    const unsigned rowK = ((lane & 7) + (lane >> 4) * 8) * 128, xK = ((lane >> 3) & 1) ^ (lane & 7);
    const unsigned rowV = ((lane & 7) + ((lane >> 3) & 1) * 8) * 128, xV = (lane >> 4) ^ (lane & 7);

    unsigned qf[MT][HD / 16][4];
    float o[MT][HD / 8][4];
    float m_run[MT][2], l_run[MT][2];
    int pos[MT][2];  // query position of rows g and g + 8 of each m16 tile (the causal mask)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int kc = 0; kc < HD / 16; ++kc)
        ldsm_x4(sQ_u + (mt * 16 * LDS + kc * 16) * 2 + offA, qf[mt][kc][0], qf[mt][kc][1], qf[mt][kc][2], qf[mt][kc][3]);
#pragma unroll
      for (int j = 0; j < HD / 8; ++j) o[mt][j][0] = o[mt][j][1] = o[mt][j][2] = o[mt][j][3] = 0.f;
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        m_run[mt][hi] = EVO_NEG_INF;
        l_run[mt][hi] = 0.f;
#if EVO_CAUSAL
        pos[mt][hi] = (r0 + mt * 16 + g + hi * 8) / group;
#endif
      }
    }
    const float sl2 = p.softmax_scale_log2;

    for (int it = 0; it < nb; ++it) {
      const int stage = it % STAGES;
      mbar_wait(smem_u32(&bar_full[stage]), (it / STAGES) & 1);  // block `it` has landed
      const int n0 = (blk0 + it) * BLOCK_N + warp * WN;           // this warp's first key
      float s[MT][WN / 8][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < WN / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.f;
      const unsigned sK_s = sK_u + stage * TILE_BYTES + warp * WN * 128 + rowK;
#pragma unroll
      for (int kc = 0; kc < HD / 16; ++kc)
#pragma unroll
        for (int np = 0; np < WN / 16; ++np) {
          unsigned b0, b1, b2, b3;
          const unsigned chunk = ((kc & 3) * 2) ^ xK;
          ldsm_x4(sK_s + (kc >> 2) * (BLOCK_N * 128) + np * 16 * 128 + (chunk << 4), b0, b1, b2, b3);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma16816(s[mt][2 * np], qf[mt][kc], b0, b1);
            mma16816(s[mt][2 * np + 1], qf[mt][kc], b2, b3);
          }
        }
      // Mask keys past seq_kv (zero-filled by TMA) and, causal, past each row's position.
      mask_keys(s, n0, seq_kv, t, pos);
      // Online softmax (log2 domain), O rescale, O += P V.
      unsigned pa[MT][WN / 16][4];
      softmax_step(s, o, m_run, l_run, pa, sl2);
      const unsigned sV_s = sV_u + stage * TILE_BYTES + warp * WN * 128 + rowV;
#pragma unroll
      for (int kk = 0; kk < WN / 16; ++kk)
#pragma unroll
        for (int dp = 0; dp < HD / 16; ++dp) {
          unsigned b0, b1, b2, b3;
          const unsigned chunk = ((dp & 3) * 2) ^ xV;
          ldsm_x4_t(sV_s + (dp >> 2) * (BLOCK_N * 128) + kk * 16 * 128 + (chunk << 4), b0, b1, b2, b3);
#pragma unroll
          for (int mt = 0; mt < MT; ++mt) {
            mma16816(o[mt][2 * dp], pa[mt][kk], b0, b1);
            mma16816(o[mt][2 * dp + 1], pa[mt][kk], b2, b3);
          }
        }
      // The slot's next writer is the copy engine (async proxy) while this warp read it with
      // ldmatrix (generic proxy): without a proxy fence ptxas issued the arrive right after the
      // last ldmatrix of V was issued, not done, and the next block's V could land under it
      // (deep tier, 2026-11-29: two nondeterministic cases, the last 16 columns of a row wrong).
      fence_proxy_async();
      __syncwarp();
      if (lane == 0) mbar_arrive(smem_u32(&bar_empty[stage]));  // this warp is done with the slot
    }
    // Every box the producer issued has landed (each was waited for): once every consumer warp
    // is past its last ldmatrix, the ring becomes the warps' partials.
    consumers_sync();
    write_warp_partial<MT, HD / 8, BLOCK_M, LDO>(sO, sM, sL, warp, g, t, m_run, l_run, o);
  }
  __syncthreads();  // the partials are in shared memory; every thread, the producer's too, combines

  // The warps' partials combined: O of the tile, or this split's partial and the last CTA's combine
  // (every warp, the producer too, takes rows of it).
  combine_and_store<BLOCK_M, HD, LDO, KV_SPLITS, NWARPS, NTHREADS, NWARPS + 1>(p, tile, sO, sM, sL, tid, warp, lane);
}
