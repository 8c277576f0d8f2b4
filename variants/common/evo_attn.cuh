// evo device-side ABI: the one header every variant includes.
//
// The harness compiles each variant with NVRTC after prepending the task macros
// (EVO_DTYPE, EVO_HEAD_DIM, EVO_CAUSAL) and the variant's tunables as #defines,
// followed by `#line 1 "<file>"` so diagnostics point at the author's lines.
// Every variant exports
//   extern "C" __global__ void evo_attn_fwd(const __grid_constant__ EvoAttnParams p);
// and its launch geometry through EVO_EXPORT_LAUNCH(...), which is the single source of
// truth the harness reads back from the compiled cubin.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "evo_launch.h"  // EvoAttnParams, EvoLaunch, EVO_ABI_VERSION: the ABI the host shares

#define EVO_DTYPE_FP16 0
#define EVO_DTYPE_BF16 1
// Q, K, V in e4m3 (__nv_fp8_e4m3) with per-tensor descales (EvoAttnParams.q/k/v_descale: the
// value is float(x) * descale); O in bf16 (evo_out_t). docs/fp8.md says why.
#define EVO_DTYPE_FP8 2

// Defaults so a variant compiles alone (e.g. in an editor); the harness always sets them.
#ifndef EVO_DTYPE
#define EVO_DTYPE EVO_DTYPE_FP16
#endif
#ifndef EVO_HEAD_DIM
#define EVO_HEAD_DIM 64
#endif
#ifndef EVO_CAUSAL
#define EVO_CAUSAL 0
#endif

#if EVO_DTYPE == EVO_DTYPE_FP16
typedef __half evo_t;
typedef __half2 evo_t2;
__device__ __forceinline__ float evo_to_float(evo_t x) { return __half2float(x); }
__device__ __forceinline__ evo_t evo_from_float(float x) { return __float2half_rn(x); }
__device__ __forceinline__ float2 evo2_to_float2(evo_t2 x) { return __half22float2(x); }
__device__ __forceinline__ evo_t2 evo2_from_float2(float a, float b) { return __floats2half2_rn(a, b); }
#elif EVO_DTYPE == EVO_DTYPE_BF16
typedef __nv_bfloat16 evo_t;
typedef __nv_bfloat162 evo_t2;
__device__ __forceinline__ float evo_to_float(evo_t x) { return __bfloat162float(x); }
__device__ __forceinline__ evo_t evo_from_float(float x) { return __float2bfloat16_rn(x); }
__device__ __forceinline__ float2 evo2_to_float2(evo_t2 x) { return __bfloat1622float2(x); }
__device__ __forceinline__ evo_t2 evo2_from_float2(float a, float b) { return __floats2bfloat162_rn(a, b); }
#elif EVO_DTYPE == EVO_DTYPE_FP8
#include <cuda_fp8.h>
typedef __nv_fp8_e4m3 evo_t;  // inputs only; no evo_t2: pack e4m3 pairs/quads by hand
__device__ __forceinline__ float evo_to_float(evo_t x) { return static_cast<float>(x); }
__device__ __forceinline__ evo_t evo_from_float(float x) { return __nv_fp8_e4m3(x); }  // saturating
#else
#error "evo: EVO_DTYPE must be EVO_DTYPE_FP16, EVO_DTYPE_BF16 or EVO_DTYPE_FP8"
#endif

// The output element: the input type for fp16 and bf16, bf16 for fp8 tasks.
#if EVO_DTYPE == EVO_DTYPE_FP8
typedef __nv_bfloat16 evo_out_t;
typedef __nv_bfloat162 evo_out_t2;
__device__ __forceinline__ evo_out_t evo_out_from_float(float x) { return __float2bfloat16_rn(x); }
__device__ __forceinline__ evo_out_t2 evo_out2_from_float2(float a, float b) { return __floats2bfloat162_rn(a, b); }
#else
typedef evo_t evo_out_t;
typedef evo_t2 evo_out_t2;
__device__ __forceinline__ evo_out_t evo_out_from_float(float x) { return evo_from_float(x); }
__device__ __forceinline__ evo_out_t2 evo_out2_from_float2(float a, float b) { return evo2_from_float2(a, b); }
#endif

// EvoAttnParams and EvoLaunch are in evo_launch.h. The grid (evo_grid there):
//   (ceil(seq_q / rows_per_cta), heads_q, batch) when persistent == 0,
//   (min(persistent * SM count, number of tiles), 1, 1) otherwise;
//   split-KV and pack-GQA kernels (EVO_EXPORT_LAUNCH_SPLIT): (query tiles * p.num_splits,
//   heads_kv, batch), query tiles = ceil(heads_q / heads_kv * seq_q / rows_per_cta).
#define EVO_EXPORT_LAUNCH(threads, smem_bytes, rows_per_cta, cluster_x, persistent) \
  extern "C" __constant__ EvoLaunch evo_launch = {                                  \
      (threads), (smem_bytes), (rows_per_cta), (cluster_x), (persistent), EVO_ABI_VERSION, 0, 0, 0}
// A split-KV kernel with pack-GQA rows: at most kv_splits_max splits of whole kv_block-key blocks,
// no cluster, not persistent; the host passes p.num_splits and, past 1, p.workspace.
#define EVO_EXPORT_LAUNCH_SPLIT(threads, smem_bytes, rows_per_cta, kv_splits_max, kv_block) \
  extern "C" __constant__ EvoLaunch evo_launch = {                                          \
      (threads), (smem_bytes), (rows_per_cta), 1, 0, EVO_ABI_VERSION, (kv_splits_max), (kv_block), 1}

// TMA tensor maps a variant wants: EvoTmaSpec and the EVO_TMA_* codes are in evo_launch.h, as
// is the rule the host encodes each map by (evo_tma_args). Slot i of `evo_tma` is encoded for
// the call's actual tensor and passed in EvoAttnParams.tma[i]: 4-D over (d, s, h, b) =
// (head_dim, seq, heads, batch), element strides the tensor's q/k/v/o_stride (BHSD, BSHD, GQA
// alike), so a box is addressed by coordinates (col, row, head, batch); rows past the sequence
// read as zeros and are not written.
#define EVO_TMA(tensor, box_rows, box_cols, swizzle, l2) {(tensor), (box_rows), (box_cols), (swizzle), (l2), 0}
// Up to four maps, slot i -> EvoAttnParams.tma[i]: EVO_EXPORT_TMA(EVO_TMA(EVO_TMA_Q, 128, 64, ...), ...).
#define EVO_EXPORT_TMA(...) extern "C" __constant__ EvoTmaSpec evo_tma[EVO_TMA_SLOTS] = {__VA_ARGS__}

// Invalid tunable combinations must be rejected at compile time with this, so the harness
// classifies them as `constraints` rather than `compile` failures.
#define EVO_CONSTRAINT(cond, msg) static_assert((cond), "evo:constraint " msg)

// Pointers to the (b, h) slices.
__device__ __forceinline__ const evo_t* evo_q_ptr(const EvoAttnParams& p, int b, int h) {
  return static_cast<const evo_t*>(p.q) + b * p.q_stride[0] + h * p.q_stride[1];
}
__device__ __forceinline__ const evo_t* evo_k_ptr(const EvoAttnParams& p, int b, int hkv) {
  return static_cast<const evo_t*>(p.k) + b * p.k_stride[0] + hkv * p.k_stride[1];
}
__device__ __forceinline__ const evo_t* evo_v_ptr(const EvoAttnParams& p, int b, int hkv) {
  return static_cast<const evo_t*>(p.v) + b * p.v_stride[0] + hkv * p.v_stride[1];
}
__device__ __forceinline__ evo_out_t* evo_o_ptr(const EvoAttnParams& p, int b, int h) {
  return static_cast<evo_out_t*>(p.o) + b * p.o_stride[0] + h * p.o_stride[1];
}
__device__ __forceinline__ int evo_kv_head(const EvoAttnParams& p, int h) {
  return h / (p.heads_q / p.heads_kv);
}
// Number of keys query rows [row0, row0 + rows) may see: all of them, or under the causal
// mask up to the last row's diagonal.
__device__ __forceinline__ int evo_kv_limit(const EvoAttnParams& p, int row0, int rows) {
#if EVO_CAUSAL
  int last = row0 + rows;  // keys [0, last) are visible to some row of the tile
  return last < p.seq_kv ? last : p.seq_kv;
#else
  (void)row0;
  (void)rows;
  return p.seq_kv;
#endif
}

// NVRTC has no <math.h>: infinities for masking, without INFINITY.
#define EVO_INF __int_as_float(0x7f800000)
#define EVO_NEG_INF __int_as_float(0xff800000)
