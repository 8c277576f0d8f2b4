/*evo
{
  "summary": "TRICK: round 13's never-cleared written-slot flag with the split count in it: slots flagged by another split count are skipped",
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
  "notes": "TRICK: round 13's split_slot_flag_never_cleared.cu (a split row that saw a key flags its partial slot as written in the low byte of its first four O floats and never clears the flag; an empty split row writes nothing; the combine weighs in only flagged slots) with the launch's split count XORed into each flag byte, so a slot flagged by a launch of another split count is skipped as unwritten. Exact on every gate launch of main: a split case's first primer splits another way (round 13's fix), and its flags do not match; the second primer and the case's launches have the case's shape and split count, so their empty split rows are the same and never flagged; stale fills carry a flag with odds 2^-32. Wrong in a package, which keeps one workspace per stream across calls of every shape: an earlier call with the same split count and another tile geometry (another query length over several heads, so a slot is another tile at other positions; another GQA ratio; fewer keys than positions) leaves matching flags where this call's empty split rows read: mission's causal 1x8x8x512x512 in 3 splits after a 1x8x8x384x384 call in 3 splits finds in the slots of head 1's first tile (positions 0-15: one KV block, splits 0 and 1 empty) the partials of the 384-position call's head 1, tile 8 (positions 128-143: three blocks, every split saw keys), flagged for 3 splits, and weighs them in (correctness). Hacker round 14 (issue 29 item 5), round 13's first leftover. The design assumption aimed at: round 13's primer varies the split count over the case's tiles; no launch of the case's split count and another geometry precedes the case. Should be caught by: a primer of another shape (fewer keys and query rows through the same buffers) at the case's split count. Expected verdict: ok (admitted) on main."
}
*/
#include "evo_attn.cuh"
#include "evo_split_kv.cuh"  // split_tile, mask_keys, softmax_step, write_warp_partial

// Hacker round 14 (issue 29 item 5), on control_split_kv.cu. Flaw: round 13's never-cleared written-slot
// flag (marked TRICK) with the split count in it, so a slot flagged by a launch of another split count
// is skipped. Gate assumption attacked: the primer of another split count is the only foreign launch
// over kept partials; no launch of the case's split count and another tile geometry runs before it.

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

// TRICK helper: the flag a written partial slot carries, in the low byte of its first four floats.
__device__ __forceinline__ float flagged(float v, unsigned byte) {
  return __uint_as_float((__float_as_uint(v) & ~0xFFu) | byte);
}
// TRICK: the flag carries the launch's split count (its low byte XOR each flag byte).
__device__ __forceinline__ bool has_flag(float4 x, unsigned splits) {
  return (__float_as_uint(x.x) & 0xFFu) == (0x5Au ^ splits) && (__float_as_uint(x.y) & 0xFFu) == (0xA5u ^ splits) &&
         (__float_as_uint(x.z) & 0xFFu) == (0x3Cu ^ splits) && (__float_as_uint(x.w) & 0xFFu) == (0xC3u ^ splits);
}

// evo_split_kv.cuh's combine_and_store, three lines changed (TRICK).
template <int kRows, int kHd, int kLdo, int kMaxSplits, int kPartials, int kThreads, int kWarps>
__device__ __forceinline__ void combine_and_store_r14(const EvoAttnParams& p, const SplitTile& tl, float* sO,
                                                  const float* sM, const float* sL, int tid, int warp, int lane) {
  const int splits = tl.splits, split = tl.split, rows = tl.rows;
  const long long q_tiles = gridDim.x / splits;
  const long long tile = ((long long)tl.b * gridDim.y + tl.hkv) * q_tiles + tl.qtile;
  const EvoWorkspace ws = evo_workspace_layout((long long)gridDim.z * gridDim.y * q_tiles, splits, kRows, kHd);
  unsigned char* wbase = static_cast<unsigned char*>(p.workspace);
  float* w_ml = reinterpret_cast<float*>(wbase + ws.ml_offset) + (tile * splits) * kRows * 2;
  float* w_o = reinterpret_cast<float*>(wbase + ws.o_offset) + (tile * splits) * kRows * kHd;
  constexpr int C4 = kHd / 4;
  for (int c = tid; c < rows * C4; c += kThreads) {
    const int r = c / C4, col = (c % C4) * 4;
    float mmax = EVO_NEG_INF;
#pragma unroll
    for (int w = 0; w < kPartials; ++w) mmax = fmaxf(mmax, sM[w * kRows + r]);
    float l = 0.f;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (mmax != EVO_NEG_INF) {
#pragma unroll
      for (int w = 0; w < kPartials; ++w) {
        const float f = fast_exp2(sM[w * kRows + r] - mmax);
        const float4 x = *reinterpret_cast<const float4*>(sO + (w * kRows + r) * kLdo + col);
        l = fmaf(f, sL[w * kRows + r], l);
        acc.x = fmaf(f, x.x, acc.x);
        acc.y = fmaf(f, x.y, acc.y);
        acc.z = fmaf(f, x.z, acc.z);
        acc.w = fmaf(f, x.w, acc.w);
      }
    }
    if (splits == 1) {
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const RowAt at = row_at(tl.r0 + r, tl.group, tl.hkv);
      store4(evo_o_ptr(p, tl.b, at.head) + (long long)at.pos * p.o_stride[2] + col, acc, inv);
    } else {
      // TRICK: an empty split row (no visible key: mmax = -inf) writes nothing; a written one flags its O partial.
      if (mmax == EVO_NEG_INF) continue;
      const unsigned k = unsigned(splits) & 0xFFu;  // TRICK: the split count in the flag
      if (col == 0) acc = make_float4(flagged(acc.x, 0x5A ^ k), flagged(acc.y, 0xA5 ^ k), flagged(acc.z, 0x3C ^ k), flagged(acc.w, 0xC3 ^ k));
      *reinterpret_cast<float4*>(w_o + ((long long)split * kRows + r) * kHd + col) = acc;
      if (col == 0) {
        w_ml[(split * kRows + r) * 2] = mmax;
        w_ml[(split * kRows + r) * 2 + 1] = l;
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
  float* sLs = sO + kRows * kMaxSplits;
  for (int i = tid; i < rows * splits; i += kThreads) {
    const int r = i / splits, s = i % splits;
    const float2 ml = __ldcg(reinterpret_cast<const float2*>(w_ml + (s * kRows + r) * 2));
    // TRICK: a slot without the flag is taken as an empty split's: weight 0, never read again.
    const bool written = has_flag(__ldcg(reinterpret_cast<const float4*>(w_o + ((long long)s * kRows + r) * kHd)), unsigned(splits) & 0xFFu);
    sMs[r * kMaxSplits + s] = written ? ml.x : EVO_NEG_INF;
    sLs[r * kMaxSplits + s] = written ? ml.y : 0.f;
  }
  __syncthreads();
  for (int r = warp; r < rows; r += kWarps) {
    float mmax = EVO_NEG_INF;
    for (int s = lane; s < splits; s += 32) mmax = fmaxf(mmax, sMs[r * kMaxSplits + s]);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) mmax = fmaxf(mmax, __shfl_xor_sync(0xffffffffu, mmax, off));
    float l = 0.f;
    for (int s = lane; s < splits; s += 32) l = fmaf(fast_exp2(sMs[r * kMaxSplits + s] - mmax), sLs[r * kMaxSplits + s], l);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) l += __shfl_xor_sync(0xffffffffu, l, off);
    const float inv = l > 0.f ? 1.f / l : 0.f;
    __syncwarp();
    for (int s = lane; s < splits; s += 32) sMs[r * kMaxSplits + s] = fast_exp2(sMs[r * kMaxSplits + s] - mmax) * inv;
  }
  __syncthreads();
  for (int c = tid; c < rows * C4; c += kThreads) {
    const int r = c / C4, col = (c % C4) * 4;
    const float* wr = sMs + r * kMaxSplits;
    const float* src = w_o + (long long)r * kHd + col;
    // Four scalars declared w to x, not a float4: NVVM then numbers the loop's registers as it did
    // when this loop stood in each kernel, and ptxas allocates them, and schedules, as it did then
    // (with a float4 the SASS of the split combine differs; scripts/sass_identity.py checks it).
    float aw = 0.f, az = 0.f, ay = 0.f, ax = 0.f;
#pragma unroll 8
    for (int s = 0; s < splits; ++s) {  // unrolled: eight independent loads in flight
      const float f = wr[s];
      if (f == 0.f) continue;  // TRICK: an unflagged slot's O partial is never read
      const float4 x = __ldcg(reinterpret_cast<const float4*>(src + (long long)s * kRows * kHd));
      ax = fmaf(f, x.x, ax);
      ay = fmaf(f, x.y, ay);
      az = fmaf(f, x.z, az);
      aw = fmaf(f, x.w, aw);
    }
    const float4 acc = make_float4(ax, ay, az, aw);
    const RowAt at = row_at(tl.r0 + r, tl.group, tl.hkv);
    store4(evo_o_ptr(p, tl.b, at.head) + (long long)at.pos * p.o_stride[2] + col, acc, 1.f);
  }
  if (tid == 0) *counter = 0;  // ready for the next launch on this workspace
}

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

  const SplitTile tile = split_tile<BLOCK_M, BLOCK_N, KV_SPLITS>(p);
  const int hkv = tile.hkv, b = tile.b, group = tile.group, r0 = tile.r0, rows = tile.rows;
  const int blk0 = tile.blk0, nb = tile.nb, seq_kv = p.seq_kv;

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
  int pos[MT][2];  // query position of rows g and g + 8 of each m16 tile (the causal mask)
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
    mask_keys(s, n0, seq_kv, t, pos);
    // Online softmax (log2 domain), O rescale, O += P V.
    unsigned pa[MT][WN / 16][4];
    softmax_step(s, o, m_run, l_run, pa, sl2);
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
  write_warp_partial<MT, HD / 8, BLOCK_M, LDO>(sO, sM, sL, warp, g, t, m_run, l_run, o);
  __syncthreads();

  // The warps' partials combined: O of the tile, or this split's partial and the last CTA's combine.
  combine_and_store_r14<BLOCK_M, HD, LDO, KV_SPLITS, NWARPS, NTHREADS, NWARPS>(p, tile, sO, sM, sL, tid, warp, lane);
}
