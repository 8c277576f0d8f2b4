// evo's launch ABI, the one copy every side compiles: the kernels (through evo_attn.cuh, NVRTC),
// evo's worker (harness/gpu/worker.cpp) and the exported runtime (deploy/src/launch.cpp, built
// against the copy `evo export` puts in the package's kernels/ folder). It holds the kernel
// parameters (EvoAttnParams), the launch geometry a variant exports (EvoLaunch) and the host's
// rules over them: the grid, the KV split count and the split workspace. Plain C++: no CUDA
// header, no standard header under NVRTC, so both compilers read the same lines. Its siblings
// on this floor: evo_host_launch.h (the host's driver-API half: parameters of a call, TMA map
// arguments, function attributes, the launch) and evo_regime.h (the shape-regime rule).
#pragma once

#if defined(__CUDACC__)
#define EVO_HD __host__ __device__
#else
#define EVO_HD
#endif

// 2: EvoLaunch grew kv_splits_max, kv_block and pack_gqa; EvoAttnParams grew num_splits and
// workspace (in what was padding before tma). A version-1 cubin reads with those fields 0.
#define EVO_ABI_VERSION 2

// Kernel parameters. Strides are in elements; the last dimension (head_dim) is contiguous.
// Index of element (b, h, s, d) of Q is b*q_stride[0] + h*q_stride[1] + s*q_stride[2] + d.
// GQA: query head h reads key/value head h / (heads_q / heads_kv).
// Causal (top-left, as PyTorch is_causal): key j is masked for query i when j > i.
struct EvoAttnParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  long long q_stride[3];  // batch, head, seq
  long long k_stride[3];
  long long v_stride[3];
  long long o_stride[3];
  int batch;
  int heads_q;
  int heads_kv;
  int seq_q;
  int seq_kv;
  int head_dim;  // equals EVO_HEAD_DIM
  int causal;    // equals EVO_CAUSAL
  float softmax_scale;                    // usually 1/sqrt(head_dim)
  float softmax_scale_log2;               // softmax_scale * log2(e), for exp2f-based softmax
  float q_descale, k_descale, v_descale;  // FP8 tasks: dequantized = float(e4m3) * descale; 1.0 otherwise
  unsigned int flags;                     // reserved, 0
  // KV splits of this launch (evo_num_splits), >= 1; 1 for a kernel that exports no kv_splits_max.
  int num_splits;
  // evo_workspace_bytes(...) of device memory whose tile counters are 0 when num_splits > 1,
  // else null. Every launch leaves its own counters at 0, but a later launch with more tiles
  // finds partials there: a host reusing one workspace clears by evo_workspace_clear_bytes
  // (evo_host_launch.h). One workspace serves one stream at a time.
  void* workspace;
  // Room for up to four CUtensorMap descriptors (128 B, 64 B aligned) for TMA variants.
  alignas(64) unsigned long long tma[4][16];
};

// Launch geometry, read by the harness from the cubin's `evo_launch` symbol (evo_grid says how).
struct EvoLaunch {
  unsigned int threads;        // threads per CTA
  unsigned int smem_bytes;     // dynamic shared memory per CTA
  unsigned int rows_per_cta;   // query rows per CTA (tile height); pack_gqa: (head, position) rows
  unsigned int cluster_x;      // CTAs per cluster along x; 1 = no cluster
  unsigned int persistent;     // CTAs per SM for a persistent grid; 0 = one CTA per tile
  unsigned int abi_version;    // EVO_ABI_VERSION
  unsigned int kv_splits_max;  // 0 or 1: no split-KV; else the most KV splits one tile may take
  unsigned int kv_block;       // keys per KV block (split-KV kernels: splits hold whole blocks)
  unsigned int pack_gqa;       // 1: a tile's rows are the query heads of one KV head x positions
};

// TMA tensor maps a variant wants, read by the host from the cubin's `evo_tma` symbol (one
// source of truth, like evo_launch; EVO_EXPORT_TMA in evo_attn.cuh). The host encodes map i for
// the call's actual tensor by evo_host_launch.h's rule and passes it in EvoAttnParams.tma[i].
#define EVO_TMA_NONE 0
#define EVO_TMA_Q 1
#define EVO_TMA_K 2
#define EVO_TMA_V 3
#define EVO_TMA_O 4
#define EVO_TMA_SWIZZLE_NONE 0
#define EVO_TMA_SWIZZLE_32B 1
#define EVO_TMA_SWIZZLE_64B 2
#define EVO_TMA_SWIZZLE_128B 3
#define EVO_TMA_L2_NONE 0
#define EVO_TMA_L2_64B 1
#define EVO_TMA_L2_128B 2
#define EVO_TMA_L2_256B 3
#define EVO_TMA_SLOTS 4

struct EvoTmaSpec {
  unsigned int tensor;        // EVO_TMA_Q/K/V/O; EVO_TMA_NONE leaves the slot empty
  unsigned int box_rows;      // rows (sequence positions) per box, 1..256
  unsigned int box_cols;      // columns (head_dim elements) per box, 8..256; box_cols * elem bytes <= 128
                              // for SWIZZLE_128B (fp8 tasks: Q, K, V maps are UINT8 of e4m3 bytes, O's BFLOAT16)
  unsigned int swizzle;       // EVO_TMA_SWIZZLE_*
  unsigned int l2_promotion;  // EVO_TMA_L2_*
  unsigned int reserved;      // 0
};

// The shape of one call, as the grid rules need it.
struct EvoShape {
  long long batch, heads_q, heads_kv, seq_q, seq_kv;
  int head_dim;
  int causal;
};

struct EvoGrid {
  unsigned int x, y, z;
};

// Rows one (batch, grid head) pair holds: seq_q, or with pack_gqa the G = heads_q / heads_kv query
// heads of a KV head at every position, row r being position r / G of query head r % G of the group.
EVO_HD inline long long evo_packed_rows(const EvoLaunch& L, const EvoShape& s) {
  return L.pack_gqa ? s.seq_q * (s.heads_q / s.heads_kv) : s.seq_q;
}
EVO_HD inline long long evo_grid_heads(const EvoLaunch& L, const EvoShape& s) {
  return L.pack_gqa ? s.heads_kv : s.heads_q;
}
// Query tiles per (batch, grid head).
EVO_HD inline long long evo_q_tiles(const EvoLaunch& L, const EvoShape& s) {
  const long long rows = L.rows_per_cta ? L.rows_per_cta : 1;
  return (evo_packed_rows(L, s) + rows - 1) / rows;
}
// Every query tile of the call: the work units before any KV split.
EVO_HD inline long long evo_tiles(const EvoLaunch& L, const EvoShape& s) {
  return evo_q_tiles(L, s) * evo_grid_heads(L, s) * s.batch;
}
// KV blocks the call's longest row reads (top-left causal: at most seq_q keys).
EVO_HD inline long long evo_kv_blocks(const EvoLaunch& L, const EvoShape& s) {
  const long long keys = s.causal && s.seq_q < s.seq_kv ? s.seq_q : s.seq_kv;
  const long long block = L.kv_block ? L.kv_block : 1;
  return (keys + block - 1) / block;
}

#if !defined(__CUDACC_RTC__)
// CTAs of this kernel one SM holds by its shared memory and threads (registers: the split
// kernels' launch bounds promise two). smem_per_sm: CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR.
inline int evo_ctas_per_sm(const EvoLaunch& L, int smem_per_sm) {
  const long long per_cta = (long long)L.smem_bytes + 1024;  // the driver reserves 1 KiB per CTA
  long long n = per_cta > 0 ? smem_per_sm / per_cta : 1;
  const long long by_threads = L.threads ? 2048 / L.threads : 1;
  if (by_threads < n) n = by_threads;
  return n < 1 ? 1 : (n > 8 ? 8 : int(n));
}

// The KV split count of a call. 1 for a kernel without kv_splits_max, for at most 4 KV blocks
// (FlashAttention 3's rule in hopper/heuristics.h: the combine would cost about what it saves),
// and for a call with a tile for a third of the SMs or more: on the H200's stage-9 datasets the
// unsplit twin of the near-optimal configurations beat their split runs from 64 tiles up (GQA
// 28/4 and 32/8 at 64 tiles 0.96-0.98x, MQA 71/1 at 80 tiles 0.67x, 128 tiles 0.94-1.00x: the
// combine and the split CTAs' fill cost more than the idle SMs), while at 32 tiles and fewer
// splitting won (1.4-1.9x at 32; lab/notes/decode-splits-20261201.md). Otherwise the smallest
// count whose CTAs fill their last wave of slots to 90 % or more, so each CTA streams as long a
// slice of the KV cache as one wave allows (a second, partial wave of short CTAs measured slower
// on the H200: lab/decode.md); at most kv_splits_max and the number of KV blocks, and all of
// those when even they fall short of one wave.
inline int evo_num_splits(const EvoLaunch& L, const EvoShape& s, int sms, int smem_per_sm) {
  if (L.kv_splits_max <= 1 || sms < 1) return 1;
  const long long tiles = evo_tiles(L, s), blocks = evo_kv_blocks(L, s);
  const long long slots = (long long)sms * evo_ctas_per_sm(L, smem_per_sm);
  if (tiles * 3 >= sms || blocks <= 4) return 1;
  const long long cap = L.kv_splits_max < blocks ? L.kv_splits_max : blocks;
  if (tiles * cap <= slots) return int(cap);
  for (long long n = 1; n < cap; ++n) {
    const long long ctas = tiles * n, waves = (ctas + slots - 1) / slots;
    if (ctas * 10 >= waves * slots * 9) return int(n);
  }
  return int(cap);
}
#endif

// The grid of a launch: (query tiles x splits, grid heads, batch) where grid heads are heads_q,
// or heads_kv with pack_gqa; a persistent kernel gets min(tiles, persistent x SMs) CTAs along x;
// a cluster launch rounds x up to a multiple of the cluster.
EVO_HD inline EvoGrid evo_grid(const EvoLaunch& L, const EvoShape& s, int num_splits, int sms) {
  long long x = evo_q_tiles(L, s) * (num_splits > 1 ? num_splits : 1);
  long long y = evo_grid_heads(L, s), z = s.batch;
  if (L.persistent) {
    const long long tiles = x * y * z, cap = (long long)L.persistent * sms;
    x = tiles < cap ? tiles : cap;
    y = z = 1;
  }
  if (L.cluster_x > 1) x = (x + L.cluster_x - 1) / L.cluster_x * L.cluster_x;
  return EvoGrid{(unsigned int)x, (unsigned int)y, (unsigned int)z};
}

// The split workspace: one int counter per query tile, then per (tile, split, row) the split's
// running max and sum (two floats, log2 domain), then its unnormalized FP32 output row. Tile t
// of grid position (x / splits, y, z) is (z * grid heads + y) * query tiles + x / splits.
struct EvoWorkspace {
  long long ml_offset, o_offset, bytes;  // byte offsets from the workspace start; total size
};
EVO_HD inline long long evo_align256(long long n) { return (n + 255) / 256 * 256; }
EVO_HD inline EvoWorkspace evo_workspace_layout(long long tiles, int num_splits, int rows, int head_dim) {
  EvoWorkspace w;
  const long long slots = tiles * num_splits * rows;
  w.ml_offset = evo_align256(tiles * 4);
  w.o_offset = w.ml_offset + evo_align256(slots * 2 * 4);
  w.bytes = w.o_offset + slots * head_dim * 4;
  return w;
}
// Bytes of workspace a launch with num_splits needs: 0 when it does not split.
EVO_HD inline long long evo_workspace_bytes(const EvoLaunch& L, const EvoShape& s, int num_splits) {
  if (num_splits <= 1) return 0;
  return evo_workspace_layout(evo_tiles(L, s), num_splits, int(L.rows_per_cta), s.head_dim).bytes;
}

#if !defined(__CUDACC_RTC__)
static_assert(sizeof(EvoAttnParams) == 704, "EvoAttnParams is 704 bytes in every ABI version");
static_assert(__builtin_offsetof(EvoAttnParams, flags) == 176 && __builtin_offsetof(EvoAttnParams, num_splits) == 180 &&
                  __builtin_offsetof(EvoAttnParams, workspace) == 184 && __builtin_offsetof(EvoAttnParams, tma) == 192,
              "EvoAttnParams: flags, num_splits, workspace, tma at 176, 180, 184, 192");
static_assert(sizeof(EvoLaunch) == 36, "EvoLaunch: nine 32-bit words (version 1 had the first six)");
static_assert(sizeof(EvoTmaSpec) == 24, "EvoTmaSpec: six 32-bit words per evo_tma slot");
#endif
