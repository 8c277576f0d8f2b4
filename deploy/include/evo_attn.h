/* evo_attn: attention kernels evolved and gated by evo, exported with `evo export`.
 *
 * One call computes softmax(scale * Q K^T [+ top-left causal mask]) V for Q [B, Hq, Sq, D] and
 * K, V [B, Hkv, Skv, D] (Hkv divides Hq: GQA/MQA), in any strides with a contiguous head dim
 * (BHSD, BSHD, packed QKV), on a stream the caller gives. The package holds one kernel per task
 * (dtype x head dim x causal) and shape regime (decode, short, batched-short, long), chosen from
 * evo's measured times; evo_attn_forward() picks the call's kernel and launches it exactly as
 * evo's worker did when it was gated and timed (docs/deploy.md).
 *
 * Every function returns an evo_attn_status. On anything but EVO_ATTN_OK, `message` (when not
 * NULL) holds one line naming the argument or the driver call that failed. Nothing is launched
 * for an unsupported call: never a silent wrong result.
 */
#ifndef EVO_ATTN_H
#define EVO_ATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EVO_ATTN_API_VERSION 1

typedef enum {
  EVO_ATTN_FP16 = 0,     /* __half */
  EVO_ATTN_BF16 = 1,     /* __nv_bfloat16 */
  EVO_ATTN_FP8_E4M3 = 2  /* __nv_fp8_e4m3 inputs with per-tensor descales; the output is bf16 */
} evo_attn_dtype;

typedef enum {
  EVO_ATTN_OK = 0,
  EVO_ATTN_UNSUPPORTED = 1, /* an argument this package cannot run; the message names it */
  EVO_ATTN_CUDA_ERROR = 2   /* no driver, another GPU than the package's, or a driver call failed */
} evo_attn_status;

/* One tensor, logically [batch, heads, seq, head_dim] (BHSD); strides in elements, per dim. A
 * BSHD tensor is the same with stride[1] = head_dim and stride[2] = heads * head_dim. */
typedef struct {
  uint64_t data; /* device address */
  int64_t size[4];
  int64_t stride[4];
} evo_attn_tensor;

typedef struct {
  evo_attn_tensor q, k, v; /* q [B, Hq, Sq, D]; k and v [B, Hkv, Skv, D] */
  evo_attn_tensor o;       /* [B, Hq, Sq, D], written; must not overlap q, k, v */
  int dtype;               /* evo_attn_dtype of q, k and v */
  int out_dtype;           /* of o: dtype for fp16 and bf16, EVO_ATTN_BF16 for fp8 */
  int is_causal;           /* 1: key j is masked for query i when j > i (top-left, as PyTorch) */
  float scale;             /* softmax scale, finite and > 0 (PyTorch's default is 1/sqrt(D)) */
  float q_descale, k_descale, v_descale; /* fp8: the value is float(e4m3) * descale; else 1 */
  int device;                            /* CUDA device ordinal every tensor lives on */
} evo_attn_call;

/* What evo_attn_forward() would run for a call. */
typedef struct {
  int kernel;       /* index for evo_attn_kernel_name() */
  int regime;       /* 0 decode, 1 short, 2 batched-short, 3 long: evo_attn_regime_name() */
  const char* task; /* "fp16-d64-causal" */
  unsigned threads, smem_bytes, rows_per_cta, cluster_x, persistent;
  int64_t tiles; /* query tiles: ceil(Sq / rows_per_cta) * Hq * B */
} evo_attn_plan;

/* Checks a call and picks its kernel without touching the GPU (no driver needed). */
int evo_attn_plan_call(const evo_attn_call* call, evo_attn_plan* plan, char* message, size_t message_size);

/* Runs a call on `stream` (a CUstream or cudaStream_t; 0 is the legacy default stream) in the
 * device's primary context (the one the CUDA runtime and PyTorch use). Loads the package's
 * kernels on a device's first call. Safe inside CUDA graph capture, on any stream (a split
 * kernel's workspace is allocated there if need be), once the device is loaded. */
int evo_attn_forward(const evo_attn_call* call, void* stream, char* message, size_t message_size);

/* Loads every kernel of the package on `device` (call it before capturing a CUDA graph). */
int evo_attn_load(int device, char* message, size_t message_size);

int evo_attn_api_version(void);
const char* evo_attn_package_gpu(void); /* the GPU the kernels were measured on: "nvidia-h200" */
int evo_attn_package_arch(void);        /* compute capability of the cubins: 90 (sm_90a) */
const char* evo_attn_tasks(void);       /* "fp16-d64,fp16-d64-causal,..." */
int evo_attn_kernel_count(void);
const char* evo_attn_kernel_name(int kernel);  /* "k0", ..., as in manifest.json; NULL if out of range */
const char* evo_attn_kernel_label(int kernel); /* "fp16-d64 stage 8 8-cluster/cluster CLUSTER=2 ..." */
const char* evo_attn_regime_name(int regime);  /* "decode", "short", "batched-short", "long" */

#ifdef __cplusplus
}
#endif

#endif /* EVO_ATTN_H */
