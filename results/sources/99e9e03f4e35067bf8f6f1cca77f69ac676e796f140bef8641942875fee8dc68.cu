/*evo
{
  "summary": "Decode: pack-GQA rows, split-KV over a cp.async ring, warps split each KV block, in-kernel split combine",
  "parent": "3-wmma-pv/mma_pv",
  "params": {
    "BLOCK_M": [16, 32],
    "BLOCK_N": [64, 128, 32],
    "NWARPS": [4, 2, 8],
    "STAGES": [3, 2, 4],
    "KV_SPLITS": [64, 1, 16, 128]
  },
  "dtypes": ["fp16", "bf16"],
  "head_dims": [64, 128],
  "min_sm": 80,
  "notes": "A CTA owns BLOCK_M packed rows of one (batch, KV head): row r of query tile x is query position (x*BLOCK_M + r) / G of query head (x*BLOCK_M + r) % G of the KV head's group (G = heads_q / heads_kv), so K/V are read once per KV head, not G times. Its KV range is split KV_SPLITS ways at most (the host's evo_num_splits picks the count: about one wave of CTAs). K/V blocks of BLOCK_N keys stream through a STAGES-deep cp.async.cg ring (16-byte copies, zero-fill past seq_kv); each warp takes BLOCK_N / NWARPS keys of every block for all BLOCK_M rows (decode has few rows, many keys), with mma.sync m16n8k16 for Q.K^T and P.V (P repacked in registers) and an FP32 online softmax in the log2 domain. The warps' partial (max, sum, O) meet in shared memory; with one split the CTA writes O, otherwise its FP32 partial goes to the workspace, and the last CTA of the tile (threadfence, atomicAdd on the tile counter) combines the splits in split order, writes O and resets the counter to 0. Results do not depend on which CTA finishes last."
}
*/
#include "evo_attn.cuh"

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
#define NTHREADS (NWARPS * 32)
#define MT (BLOCK_M / 16)     // m16 tiles: every warp holds all rows of the CTA
#define WN (BLOCK_N / NWARPS)  // keys of each block one warp takes
#define LDS (HD + 8)           // padded smem row (elements): conflict-free ldmatrix
#define LDO (HD + 4)           // padded FP32 row of the warps' partial outputs

EVO_CONSTRAINT(BLOCK_M == 16 || BLOCK_M == 32, "BLOCK_M must be 16 or 32");
EVO_CONSTRAINT(BLOCK_M * HD <= 2048, "every warp holds all rows' FP32 accumulators: BLOCK_M * HD <= 2048 (no spills)");
EVO_CONSTRAINT(BLOCK_N % (16 * NWARPS) == 0, "each warp takes a multiple of 16 keys of a block: BLOCK_N % (16*NWARPS) == 0");
EVO_CONSTRAINT(MT * WN * HD <= 4096, "S, P and O fragments of a warp: MT * (BLOCK_N / NWARPS) * HD <= 4096 (no spills)");
EVO_CONSTRAINT(STAGES >= 2 && STAGES <= 4, "STAGES must be 2..4");
EVO_CONSTRAINT(KV_SPLITS >= 1, "KV_SPLITS must be >= 1");

#define Q_BYTES (BLOCK_M * LDS * 2)
#define KV_BYTES (STAGES * 2 * BLOCK_N * LDS * 2)
#define PARTIAL_BYTES (NWARPS * BLOCK_M * (LDO + 2) * 4)  // the warps' (O, max, sum)
#define SPLIT_BYTES (2 * BLOCK_M * KV_SPLITS * 4)           // the splits' (max, sum) per row
#define COMBINE_BYTES (PARTIAL_BYTES > SPLIT_BYTES ? PARTIAL_BYTES : SPLIT_BYTES)
#define SMEM_BYTES (Q_BYTES + (KV_BYTES > COMBINE_BYTES ? KV_BYTES : COMBINE_BYTES))
EVO_CONSTRAINT(SMEM_BYTES <= 227 * 1024, "shared memory past 227 KiB");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
EVO_CONSTRAINT(SMEM_BYTES <= 163 * 1024, "shared memory past sm_80's 163 KiB per CTA");
#endif

EVO_EXPORT_LAUNCH_SPLIT(NTHREADS, SMEM_BYTES, BLOCK_M, KV_SPLITS, BLOCK_N);

namespace {

__device__ __forceinline__ unsigned smem_u32(const void* ptr) {
  return static_cast<unsigned>(__cvta_generic_to_shared(ptr));
}
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
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
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
__device__ __forceinline__ float fast_exp2(float x) {  // ex2.approx(-inf) = 0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  evo_t2 v = evo2_from_float2(lo, hi);
  return *reinterpret_cast<unsigned*>(&v);
}

// ROWS x HD K or V rows from global into padded smem; rows >= valid are zero-filled.
__device__ __forceinline__ void load_kv(unsigned s_base, const evo_t* g, long long gstride, int valid, int tid) {
  constexpr int CPR = HD / 8;
  constexpr int TOTAL = BLOCK_N * CPR;
#pragma unroll
  for (int i = 0; i < (TOTAL + NTHREADS - 1) / NTHREADS; ++i) {
    const int c = tid + i * NTHREADS;
    if (TOTAL % NTHREADS == 0 || c < TOTAL) {
      const int r = c / CPR, col = (c % CPR) * 8;
      const bool ok = r < valid;
      cp_async16(s_base + (r * LDS + col) * 2, ok ? g + r * gstride + col : g, ok ? 16 : 0);
    }
  }
}

// Four output elements (8 bytes: the row's stride and the column keep them aligned).
__device__ __forceinline__ void store4(evo_out_t* dst, float4 acc, float inv) {
  evo_out_t2* d2 = reinterpret_cast<evo_out_t2*>(dst);
  d2[0] = evo_out2_from_float2(acc.x * inv, acc.y * inv);
  d2[1] = evo_out2_from_float2(acc.z * inv, acc.w * inv);
}

// Where packed row `gr` of KV head hkv lives: query head and position.
struct RowAt {
  int head, pos;
};
__device__ __forceinline__ RowAt row_at(int gr, int group, int hkv) { return {hkv * group + gr % group, gr / group}; }

}  // namespace

// Two CTAs per SM (the split count assumes them) up to 4 warps; at 8 warps two would cap a
// thread at 128 registers and spill.
#if NWARPS >= 8
#define EVO_MIN_CTAS 1
#else
#define EVO_MIN_CTAS 2
#endif

extern "C" __global__ void __launch_bounds__(NTHREADS, EVO_MIN_CTAS) evo_attn_fwd(const __grid_constant__ EvoAttnParams p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  const unsigned sQ_u = smem_u32(smem_raw);
  const unsigned sK_u = sQ_u + Q_BYTES;
  const unsigned sV_u = sK_u + STAGES * BLOCK_N * LDS * 2;
  // After the KV loop the ring is reused for the warps' partials (sO, then sM, sL).
  float* sO = reinterpret_cast<float*>(smem_raw + Q_BYTES);
  float* sM = sO + NWARPS * BLOCK_M * LDO;
  float* sL = sM + NWARPS * BLOCK_M;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;

  const int splits = p.num_splits > 1 ? p.num_splits : 1;
  if (splits > KV_SPLITS) __trap();  // the host broke evo_launch.h's rule: the combine has room for KV_SPLITS
  const int qtile = blockIdx.x / splits, split = blockIdx.x % splits;
  const int hkv = blockIdx.y, b = blockIdx.z;
  const int group = p.heads_q / p.heads_kv;
  const int rows_total = group * p.seq_q;  // packed rows of this (batch, KV head)
  const int r0 = qtile * BLOCK_M;
  const int rows = min(BLOCK_M, rows_total - r0);
  const int seq_kv = p.seq_kv;

  // Keys this tile sees (top-left causal: up to its last position), in whole blocks per split.
#if EVO_CAUSAL
  const int kv_end = min(seq_kv, (r0 + rows - 1) / group + 1);
#else
  const int kv_end = seq_kv;
#endif
  const int nblk = (kv_end + BLOCK_N - 1) / BLOCK_N;
  const int blk0 = int((long long)split * nblk / splits), blk1 = int((long long)(split + 1) * nblk / splits);
  const int nb = blk1 - blk0;

  const evo_t* Kg = evo_k_ptr(p, b, hkv);
  const evo_t* Vg = evo_v_ptr(p, b, hkv);
  const long long ks = p.k_stride[2], vs = p.v_stride[2];

  // Q rows: each its own head and position (pack-GQA), zero past the last packed row.
  {
    constexpr int CPR = HD / 8;
    for (int c = tid; c < BLOCK_M * CPR; c += NTHREADS) {
      const int r = c / CPR, col = (c % CPR) * 8;
      const bool ok = r < rows;
      const RowAt at = row_at(r0 + (ok ? r : 0), group, hkv);
      const evo_t* src = evo_q_ptr(p, b, at.head) + (long long)at.pos * p.q_stride[2] + col;
      cp_async16(sQ_u + (r * LDS + col) * 2, src, ok ? 16 : 0);
    }
  }
  auto load_block = [&](int blk, int stage) {
    const int n = blk * BLOCK_N;
    load_kv(sK_u + stage * BLOCK_N * LDS * 2, Kg + n * ks, ks, seq_kv - n, tid);
    load_kv(sV_u + stage * BLOCK_N * LDS * 2, Vg + n * vs, vs, seq_kv - n, tid);
  };
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) {
    if (i < nb) load_block(blk0 + i, i);
    cp_async_commit();  // one group per slot, empty or not: the wait counts stay fixed
  }

  const unsigned offA = (((lane & 7) + ((lane >> 3) & 1) * 8) * LDS + (lane >> 4) * 8) * 2;
  const unsigned offK = (((lane & 7) + (lane >> 4) * 8) * LDS + ((lane >> 3) & 1) * 8) * 2;

  unsigned qf[MT][HD / 16][4];
  float o[MT][HD / 8][4];
  float m_run[MT][2], l_run[MT][2];
#if EVO_CAUSAL
  int pos[MT][2];  // query position of rows g and g + 8 of each m16 tile (the mask)
#endif
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
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
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // block `it` (and Q) visible; every warp is done with the slot refilled next
    if (it + STAGES - 1 < nb) load_block(blk0 + it + STAGES - 1, (it + STAGES - 1) % STAGES);
    cp_async_commit();
    if (it == 0) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int kc = 0; kc < HD / 16; ++kc)
          ldsm_x4(sQ_u + (mt * 16 * LDS + kc * 16) * 2 + offA, qf[mt][kc][0], qf[mt][kc][1], qf[mt][kc][2],
                  qf[mt][kc][3]);
    }
    const int stage = it % STAGES;
    const int n0 = (blk0 + it) * BLOCK_N + warp * WN;  // this warp's first key
    float s[MT][WN / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int j = 0; j < WN / 8; ++j) s[mt][j][0] = s[mt][j][1] = s[mt][j][2] = s[mt][j][3] = 0.f;
    const unsigned sK_s = sK_u + (stage * BLOCK_N + warp * WN) * LDS * 2 + offK;
#pragma unroll
    for (int kc = 0; kc < HD / 16; ++kc)
#pragma unroll
      for (int np = 0; np < WN / 16; ++np) {
        unsigned b0, b1, b2, b3;
        ldsm_x4(sK_s + (np * 16 * LDS + kc * 16) * 2, b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816(s[mt][2 * np], qf[mt][kc], b0, b1);
          mma16816(s[mt][2 * np + 1], qf[mt][kc], b2, b3);
        }
      }
    // Mask keys past seq_kv and, causal, past each row's position.
#if EVO_CAUSAL
    const bool need_mask = true;
#else
    const bool need_mask = n0 + WN > seq_kv;
#endif
    if (need_mask) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int j = 0; j < WN / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = n0 + j * 8 + 2 * t + (e & 1);
            bool masked = key >= seq_kv;
#if EVO_CAUSAL
            masked = masked || key > pos[mt][e >> 1];
#endif
            if (masked) s[mt][j][e] = EVO_NEG_INF;
          }
    }
    // Online softmax (log2 domain), O rescale, O += P V.
    unsigned pa[MT][WN / 16][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        float mx = EVO_NEG_INF;
#pragma unroll
        for (int j = 0; j < WN / 8; ++j) mx = fmaxf(mx, fmaxf(s[mt][j][2 * hi], s[mt][j][2 * hi + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_run[mt][hi], mx * sl2);
        const float m_use = m_new == EVO_NEG_INF ? 0.f : m_new;  // no key yet: keep -inf - -inf out
        const float alpha = fast_exp2(m_run[mt][hi] - m_use);
        m_run[mt][hi] = m_new;
        float rs = 0.f;
#pragma unroll
        for (int j = 0; j < WN / 8; ++j) {
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
#pragma unroll
      for (int kk = 0; kk < WN / 16; ++kk) {
        pa[mt][kk][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][kk][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][kk][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][kk][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
    }
    const unsigned sV_s = sV_u + (stage * BLOCK_N + warp * WN) * LDS * 2 + offA;
#pragma unroll
    for (int kk = 0; kk < WN / 16; ++kk)
#pragma unroll
      for (int dp = 0; dp < HD / 16; ++dp) {
        unsigned b0, b1, b2, b3;
        ldsm_x4_t(sV_s + (kk * 16 * LDS + dp * 16) * 2, b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816(o[mt][2 * dp], pa[mt][kk], b0, b1);
          mma16816(o[mt][2 * dp + 1], pa[mt][kk], b2, b3);
        }
      }
  }
  cp_async_wait<0>();
  __syncthreads();  // the ring is free: it becomes the warps' partials

  // Each warp's (max, sum, O) per row into shared memory.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int r = mt * 16 + g + hi * 8;
      float l = l_run[mt][hi];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      if (t == 0) {
        sM[warp * BLOCK_M + r] = m_run[mt][hi];
        sL[warp * BLOCK_M + r] = l;
      }
      float* orow = sO + (warp * BLOCK_M + r) * LDO + 2 * t;
#pragma unroll
      for (int d = 0; d < HD / 8; ++d)
        *reinterpret_cast<float2*>(orow + d * 8) = make_float2(o[mt][d][2 * hi], o[mt][d][2 * hi + 1]);
    }
  __syncthreads();

  // The warps' partials combined per (row, 4 columns): O of the tile, or this split's partial.
  const long long q_tiles = gridDim.x / splits;
  const long long tile = ((long long)b * gridDim.y + hkv) * q_tiles + qtile;
  const EvoWorkspace ws = evo_workspace_layout((long long)gridDim.z * gridDim.y * q_tiles, splits, BLOCK_M, HD);
  unsigned char* wbase = static_cast<unsigned char*>(p.workspace);
  float* w_ml = reinterpret_cast<float*>(wbase + ws.ml_offset) + (tile * splits) * BLOCK_M * 2;
  float* w_o = reinterpret_cast<float*>(wbase + ws.o_offset) + (tile * splits) * BLOCK_M * HD;
  constexpr int C4 = HD / 4;
  for (int c = tid; c < rows * C4; c += NTHREADS) {
    const int r = c / C4, col = (c % C4) * 4;
    float mmax = EVO_NEG_INF;
#pragma unroll
    for (int w = 0; w < NWARPS; ++w) mmax = fmaxf(mmax, sM[w * BLOCK_M + r]);
    float l = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (mmax != EVO_NEG_INF) {
#pragma unroll
      for (int w = 0; w < NWARPS; ++w) {
        const float f = fast_exp2(sM[w * BLOCK_M + r] - mmax);
        const float4 x = *reinterpret_cast<const float4*>(sO + (w * BLOCK_M + r) * LDO + col);
        l = fmaf(f, sL[w * BLOCK_M + r], l);
        acc.x = fmaf(f, x.x, acc.x);
        acc.y = fmaf(f, x.y, acc.y);
        acc.z = fmaf(f, x.z, acc.z);
        acc.w = fmaf(f, x.w, acc.w);
      }
    }
    if (splits == 1) {
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const RowAt at = row_at(r0 + r, group, hkv);
      store4(evo_o_ptr(p, b, at.head) + (long long)at.pos * p.o_stride[2] + col, acc, inv);
    } else {
      *reinterpret_cast<float4*>(w_o + ((long long)split * BLOCK_M + r) * HD + col) = acc;
      if (col == 0) {
        w_ml[(split * BLOCK_M + r) * 2] = mmax;
        w_ml[(split * BLOCK_M + r) * 2 + 1] = l;
      }
    }
  }
  if (splits == 1) return;

  // The last split of the tile to finish combines them all, in split order.
  __shared__ int last;
  __threadfence();
  __syncthreads();
  int* counter = reinterpret_cast<int*>(wbase) + tile;
  if (tid == 0) last = atomicAdd(counter, 1) == splits - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  // Every split's (max, sum) of every row into shared memory at once (loads in flight together),
  // then one warp per row turns them into weights exp2(m_s - M) / L with shuffle reductions.
  float* sMs = sO;  // the warps' partials are consumed: [row][split] maxima, then weights
  float* sLs = sO + BLOCK_M * KV_SPLITS;
  for (int i = tid; i < rows * splits; i += NTHREADS) {
    const int r = i / splits, s = i % splits;
    const float2 ml = __ldcg(reinterpret_cast<const float2*>(w_ml + (s * BLOCK_M + r) * 2));
    sMs[r * KV_SPLITS + s] = ml.x;
    sLs[r * KV_SPLITS + s] = ml.y;
  }
  __syncthreads();
  for (int r = warp; r < rows; r += NWARPS) {
    float mmax = EVO_NEG_INF;
    for (int s = lane; s < splits; s += 32) mmax = fmaxf(mmax, sMs[r * KV_SPLITS + s]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) mmax = fmaxf(mmax, __shfl_xor_sync(0xffffffffu, mmax, off));
    float l = 0.f;
    for (int s = lane; s < splits; s += 32) l = fmaf(fast_exp2(sMs[r * KV_SPLITS + s] - mmax), sLs[r * KV_SPLITS + s], l);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
    const float inv = l > 0.f ? 1.f / l : 0.f;
    __syncwarp();
    for (int s = lane; s < splits; s += 32) sMs[r * KV_SPLITS + s] = fast_exp2(sMs[r * KV_SPLITS + s] - mmax) * inv;
  }
  __syncthreads();
  for (int c = tid; c < rows * C4; c += NTHREADS) {
    const int r = c / C4, col = (c % C4) * 4;
    const float* wr = sMs + r * KV_SPLITS;
    const float* src = w_o + (long long)r * HD + col;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
    for (int s = 0; s < splits; ++s) {  // unrolled: eight independent loads in flight
      const float f = wr[s];
      const float4 x = __ldcg(reinterpret_cast<const float4*>(src + (long long)s * BLOCK_M * HD));
      acc.x = fmaf(f, x.x, acc.x);
      acc.y = fmaf(f, x.y, acc.y);
      acc.z = fmaf(f, x.z, acc.z);
      acc.w = fmaf(f, x.w, acc.w);
    }
    const RowAt at = row_at(r0 + r, group, hkv);
    store4(evo_o_ptr(p, b, at.head) + (long long)at.pos * p.o_stride[2] + col, acc, 1.f);
  }
  if (tid == 0) *counter = 0;  // ready for the next launch on this workspace
}
