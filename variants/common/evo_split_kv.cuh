// The split-KV decode kernel's shared steps (stage 9: split_kv and split_kv_tma), so the variants
// differ only where their technique does (how K/V reach shared memory and are addressed there):
//   split_tile         which packed rows and which KV blocks a CTA owns (EVO_EXPORT_LAUNCH_SPLIT)
//   mask_keys          scores of keys past seq_kv or (causal) past the row's position to -inf
//   softmax_step       one KV block's online softmax over a warp's m16n8 S fragments, P packed
//   write_warp_partial a warp's (max, sum, O) per row into shared memory
//   combine_and_store  the warps' partials merged; O written, or this split's FP32 partial and,
//                      in the last CTA of the tile, every split combined in split order
// Template parameters, not the variants' macros, carry the sizes: the tunables are #defined
// before this header is read, so it names none of them. See evo_mma.cuh for the linkage.
// Include it after evo_attn.cuh (fp16 and bf16 tasks).
#pragma once

#include "evo_mma.cuh"

namespace {

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

// A CTA's tile: kRows packed rows of one (batch, KV head) and its split's whole kKeys-key blocks
// [blk0, blk0 + nb) of the keys the tile sees (top-left causal: up to its last position).
struct SplitTile {
  int splits, split, qtile, hkv, b, group, r0, rows, blk0, nb;
};
template <int kRows, int kKeys, int kMaxSplits>
__device__ __forceinline__ SplitTile split_tile(const EvoAttnParams& p) {
  SplitTile tl;
  tl.splits = p.num_splits > 1 ? p.num_splits : 1;
  if (tl.splits > kMaxSplits) __trap();  // the host broke evo_launch.h's rule: the combine has room for kMaxSplits
  tl.qtile = blockIdx.x / tl.splits;
  tl.split = blockIdx.x % tl.splits;
  tl.hkv = blockIdx.y;
  tl.b = blockIdx.z;
  tl.group = p.heads_q / p.heads_kv;
  const int rows_total = tl.group * p.seq_q;  // packed rows of this (batch, KV head)
  tl.r0 = tl.qtile * kRows;
  tl.rows = min(kRows, rows_total - tl.r0);
#if EVO_CAUSAL
  const int kv_end = min(p.seq_kv, (tl.r0 + tl.rows - 1) / tl.group + 1);
#else
  const int kv_end = p.seq_kv;
#endif
  const int nblk = (kv_end + kKeys - 1) / kKeys;
  tl.blk0 = int((long long)tl.split * nblk / tl.splits);
  tl.nb = int((long long)(tl.split + 1) * nblk / tl.splits) - tl.blk0;
  return tl;
}

// Scores of keys past seq_kv and, causal, past the row's position (pos: query position of rows g
// and g + 8 of each m16 tile; not read without EVO_CAUSAL) to -inf, for the warp's kNj n8 key
// fragments from key n0. Without the causal mask only a block that runs past seq_kv is touched.
template <int kMt, int kNj>
__device__ __forceinline__ void mask_keys(float (&s)[kMt][kNj][4], int n0, int seq_kv, int t,
                                          const int (&pos)[kMt][2]) {
#if EVO_CAUSAL
  const bool need_mask = true;
#else
  const bool need_mask = n0 + kNj * 8 > seq_kv;
  (void)pos;
#endif
  if (need_mask) {
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int j = 0; j < kNj; ++j)
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
}

// Online softmax (log2 domain) of one KV block for kMt m16 tiles of a warp: S (kNj n8 fragments,
// scaled by sl2 here) becomes P, rows g and g + 8 keep their running max and sum, O (kNd n8
// fragments) is rescaled, and P is packed as the A operand of P·V (kNj / 2 k16 chunks).
template <int kMt, int kNj, int kNd>
__device__ __forceinline__ void softmax_step(float (&s)[kMt][kNj][4], float (&o)[kMt][kNd][4],
                                             float (&m_run)[kMt][2], float (&l_run)[kMt][2],
                                             unsigned (&pa)[kMt][kNj / 2][4], float sl2) {
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      float mx = EVO_NEG_INF;
#pragma unroll
      for (int j = 0; j < kNj; ++j) mx = fmaxf(mx, fmaxf(s[mt][j][2 * hi], s[mt][j][2 * hi + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m_run[mt][hi], mx * sl2);
      const float m_use = m_new == EVO_NEG_INF ? 0.f : m_new;  // no key yet: keep -inf - -inf out
      const float alpha = fast_exp2(m_run[mt][hi] - m_use);
      m_run[mt][hi] = m_new;
      float rs = 0.f;
#pragma unroll
      for (int j = 0; j < kNj; ++j) {
        const float p0 = fast_exp2(fmaf(s[mt][j][2 * hi], sl2, -m_use));
        const float p1 = fast_exp2(fmaf(s[mt][j][2 * hi + 1], sl2, -m_use));
        s[mt][j][2 * hi] = p0;
        s[mt][j][2 * hi + 1] = p1;
        rs += p0 + p1;
      }
      l_run[mt][hi] = l_run[mt][hi] * alpha + rs;
#pragma unroll
      for (int d = 0; d < kNd; ++d) {
        o[mt][d][2 * hi] *= alpha;
        o[mt][d][2 * hi + 1] *= alpha;
      }
    }
#pragma unroll
    for (int kk = 0; kk < kNj / 2; ++kk) {
      pa[mt][kk][0] = pack2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[mt][kk][1] = pack2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[mt][kk][2] = pack2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[mt][kk][3] = pack2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
  }
}

// A warp's (max, sum over its quad, O) of each of its rows into shared memory: sM and sL
// [warp][row], sO [warp][row] rows of kLdo floats.
template <int kMt, int kNd, int kRows, int kLdo>
__device__ __forceinline__ void write_warp_partial(float* sO, float* sM, float* sL, int warp, int g, int t,
                                                   const float (&m_run)[kMt][2], const float (&l_run)[kMt][2],
                                                   const float (&o)[kMt][kNd][4]) {
#pragma unroll
  for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int r = mt * 16 + g + hi * 8;
      float l = l_run[mt][hi];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      if (t == 0) {
        sM[warp * kRows + r] = m_run[mt][hi];
        sL[warp * kRows + r] = l;
      }
      float* orow = sO + (warp * kRows + r) * kLdo + 2 * t;
#pragma unroll
      for (int d = 0; d < kNd; ++d)
        *reinterpret_cast<float2*>(orow + d * 8) = make_float2(o[mt][d][2 * hi], o[mt][d][2 * hi + 1]);
    }
}

// The kPartials warps' partials (write_warp_partial, visible to every thread) combined per
// (row, 4 columns): O of the tile with one split, else this split's FP32 partial into the
// workspace; the last CTA of the tile to finish (threadfence, atomicAdd on the tile counter)
// combines every split in split order, writes O and resets the counter to 0. All kThreads
// threads of the CTA (kWarps warps) take part; sO's space is reused for the splits' weights
// (kRows * kMaxSplits * 2 floats). Returns from the kernel's last step: nothing may follow it.
template <int kRows, int kHd, int kLdo, int kMaxSplits, int kPartials, int kThreads, int kWarps>
__device__ __forceinline__ void combine_and_store(const EvoAttnParams& p, const SplitTile& tl, float* sO,
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
    sMs[r * kMaxSplits + s] = ml.x;
    sLs[r * kMaxSplits + s] = ml.y;
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
