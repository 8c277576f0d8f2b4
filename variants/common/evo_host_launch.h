// The host half of evo's launch ABI, on the CUDA driver API: how a call becomes a launch, written
// once for both hosts that launch evo's kernels, evo's worker (harness/gpu/worker.cpp,
// tma_maps.cpp) and the exported runtime (deploy/src/launch.cpp, built against the copy
// `evo export` puts in the package's kernels/). The package therefore launches a kernel as the
// worker did when it gated and timed it: the same parameters, TMA map arguments, function
// attributes and launch call. Each host keeps only its own plumbing: how it loads the driver,
// allocates the split workspace and reports a failure. Host code (cuda.h); no kernel includes it.
#pragma once
#if defined(__CUDACC_RTC__)
#error "evo_host_launch.h is host code: kernels include evo_attn.cuh"
#endif
#include <cuda.h>

#include "evo_launch.h"

static_assert(sizeof(CUtensorMap) == sizeof(EvoAttnParams{}.tma[0]), "EvoAttnParams.tma slots hold one CUtensorMap");

// One tensor of a call, logically [batch, heads, seq, head_dim]: its device address, sizes, and
// element strides of batch, head and seq (the head dim is contiguous).
struct EvoTensor {
  CUdeviceptr data;
  long long size[4];
  long long stride[3];
};

// The stride a launch gives dim `dim` (0 batch, 1 head, 2 seq) of t: its own, but the head dim
// for a dim of size 1. Such a dim is never stepped over (the kernels multiply its stride by 0
// and a TMA box never leaves coordinate 0 there), so a caller may give it any stride (PyTorch
// does), while TMA checks every stride: a 16-byte multiple below 2^40.
inline long long evo_launch_stride(const EvoTensor& t, int dim) { return t.size[dim] == 1 ? t.size[3] : t.stride[dim]; }

// A call as the hosts hand it to a kernel.
struct EvoCall {
  EvoTensor tensor[4];  // q [B, Hq, Sq, D], k and v [B, Hkv, Skv, D], o [B, Hq, Sq, D]
  int causal;           // EVO_CAUSAL of the task
  float scale;          // softmax scale
  float descale[3];     // q, k, v: fp8 inputs' per-tensor descales; 1 otherwise
};

inline EvoShape evo_call_shape(const EvoCall& c) {
  const EvoTensor &q = c.tensor[0], &k = c.tensor[1];
  return EvoShape{q.size[0], q.size[1], k.size[1], q.size[2], k.size[2], int(q.size[3]), c.causal};
}

// EvoAttnParams of a call without a KV split (num_splits 1, no workspace) and without TMA maps.
inline EvoAttnParams evo_call_params(const EvoCall& c) {
  EvoAttnParams a{};
  const void** data[4] = {&a.q, &a.k, &a.v, const_cast<const void**>(&a.o)};
  long long* strides[4] = {a.q_stride, a.k_stride, a.v_stride, a.o_stride};
  for (int i = 0; i < 4; ++i) {
    *data[i] = reinterpret_cast<const void*>(static_cast<unsigned long long>(c.tensor[i].data));
    for (int d = 0; d < 3; ++d) strides[i][d] = evo_launch_stride(c.tensor[i], d);
  }
  const EvoShape s = evo_call_shape(c);
  a.batch = int(s.batch);
  a.heads_q = int(s.heads_q);
  a.heads_kv = int(s.heads_kv);
  a.seq_q = int(s.seq_q);
  a.seq_kv = int(s.seq_kv);
  a.head_dim = s.head_dim;
  a.causal = c.causal;
  a.softmax_scale = c.scale;
  a.softmax_scale_log2 = c.scale * 1.4426950408889634f;  // log2(e): the kernels' exp2f softmax
  a.q_descale = c.descale[0];
  a.k_descale = c.descale[1];
  a.v_descale = c.descale[2];
  a.num_splits = 1;
  return a;
}

// --- TMA maps (EvoTmaSpec, evo_launch.h) ---

// The task's element type as the kernels number it (EVO_DTYPE_* of evo_attn.cuh, a device header
// host code cannot include); evo's DType and the package's evo_attn_dtype number alike.
enum EvoDtype { EVO_HOST_FP16 = 0, EVO_HOST_BF16 = 1, EVO_HOST_FP8 = 2 };

// The element TMA moves for `tensor` (EVO_TMA_Q..O) of a task of `dtype` (EvoDtype): fp8 tasks'
// Q, K, V are e4m3 bytes (UINT8 to the copy engine, which only moves them), their O bf16.
struct EvoTmaElement {
  CUtensorMapDataType type;
  unsigned bytes;
};
inline EvoTmaElement evo_tma_element(int dtype, unsigned tensor) {
  if (dtype == EVO_HOST_FP8)
    return tensor == EVO_TMA_O ? EvoTmaElement{CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2}
                               : EvoTmaElement{CU_TENSOR_MAP_DATA_TYPE_UINT8, 1};
  return {dtype == EVO_HOST_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2};
}

// Null when the spec can be encoded; else why not (a tensor other than Q, K, V, O; a box or mode
// outside what TMA accepts).
inline const char* evo_tma_spec_problem(const EvoTmaSpec& s) {
  if (s.tensor < EVO_TMA_Q || s.tensor > EVO_TMA_O) return "the tensor is not EVO_TMA_Q/K/V/O";
  if (s.box_rows < 1 || s.box_rows > 256) return "box_rows is outside 1..256";
  if (s.box_cols < 8 || s.box_cols > 256) return "box_cols is outside 8..256";
  if (s.swizzle > EVO_TMA_SWIZZLE_128B) return "swizzle is not an EVO_TMA_SWIZZLE_* mode";
  if (s.l2_promotion > EVO_TMA_L2_256B) return "l2_promotion is not an EVO_TMA_L2_* mode";
  return nullptr;
}

// The arguments of cuTensorMapEncodeTiled for one map, after the tensor's address: 4-D over
// (d, s, h, b) = (head_dim, seq, heads, batch), byte strides of dims s, h, b (evo_launch_stride),
// a box of box_cols x box_rows of one head of one batch, no interleave, zeros past the edges.
struct EvoTmaArgs {
  CUtensorMapDataType type;
  cuuint64_t dims[4];
  cuuint64_t strides[3];
  cuuint32_t box[4];
  cuuint32_t elem_strides[4];
  CUtensorMapSwizzle swizzle;
  CUtensorMapL2promotion l2_promotion;
};
inline EvoTmaArgs evo_tma_args(const EvoTmaSpec& s, const EvoTensor& t, int dtype) {
  const EvoTmaElement e = evo_tma_element(dtype, s.tensor);
  EvoTmaArgs a{};
  a.type = e.type;
  for (int i = 0; i < 4; ++i) a.dims[i] = cuuint64_t(t.size[3 - i]);
  for (int i = 0; i < 3; ++i) a.strides[i] = cuuint64_t(evo_launch_stride(t, 2 - i)) * e.bytes;
  const cuuint32_t box[4] = {s.box_cols, s.box_rows, 1, 1};
  for (int i = 0; i < 4; ++i) {
    a.box[i] = box[i];
    a.elem_strides[i] = 1;
  }
  a.swizzle = CUtensorMapSwizzle(s.swizzle);
  a.l2_promotion = CUtensorMapL2promotion(s.l2_promotion);
  return a;
}

using EvoEncodeTiled = decltype(&::cuTensorMapEncodeTiled);

// The driver's cuTensorMapEncodeTiled in CUDA 12.0's ABI, looked up through `api.cuGetProcAddress`
// (`api`: the host's table of driver entry points); null when the driver has none.
template <class Api>
EvoEncodeTiled evo_find_encode_tiled(const Api& api, CUresult* result) {
  void* p = nullptr;
  CUdriverProcAddressQueryResult status{};
  *result = api.cuGetProcAddress("cuTensorMapEncodeTiled", &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  return *result == CUDA_SUCCESS && status == CU_GET_PROC_ADDRESS_SUCCESS ? reinterpret_cast<EvoEncodeTiled>(p)
                                                                          : nullptr;
}

inline CUresult evo_encode_tma(EvoEncodeTiled encode, const EvoTmaArgs& a, CUdeviceptr data, CUtensorMap* map) {
  return encode(map, a.type, 4, reinterpret_cast<void*>(static_cast<unsigned long long>(data)), a.dims, a.strides,
                a.box, a.elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, a.swizzle, a.l2_promotion,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

// --- The split workspace reused across launches ---

// A host that keeps one split workspace for many launches (the package: one per device and
// stream) must clear part of it now and then. Every launch leaves its tile counters at 0, but
// it also writes its splits' (max, sum, O) partials from its own ml_offset on, and a later
// launch with more query tiles has counters there: it would read an earlier launch's partials
// as split counts, combine too early or never, and write garbage (NaN in a model whose decode
// batch grows). `zero_prefix` is how many leading bytes are zero once every launch enqueued so
// far has run; a fresh, zeroed buffer starts with all of its bytes.
struct EvoWorkspaceUse {
  long long zero_prefix;
  long long replay_floor;  // the lowest partials offset of a launch captured into a graph
  // Within the capture being recorded (capture_id, 0 for none): how many leading bytes are zero
  // once the launches captured so far have run, counted from the capture's first clear.
  unsigned long long capture_id;
  long long capture_prefix;
};
inline EvoWorkspaceUse evo_workspace_fresh(long long bytes) { return EvoWorkspaceUse{bytes, bytes, 0, 0}; }

// The zero prefix after a launch whose partials start at `ml_offset`, from `zero` before it
// (`cleared`: the launch's clear ran first, so its counters and everything below ml_offset are 0).
inline long long evo_workspace_zero_after(long long zero, long long ml_offset, bool cleared) {
  const long long after = cleared ? ml_offset : zero;
  return after < ml_offset ? after : ml_offset;
}

// How many leading bytes to clear, in stream order, before a launch of `num_splits` splits over
// `tiles` query tiles (0: none), and `use` after that launch. `capture_id` is the id of the CUDA
// graph capture the launch is recorded into (cuStreamGetCaptureInfo), 0 for an eager launch.
// A replay may come after any launches, so a capture's first split launch clears (the clear is
// part of the graph: every replay clears for itself); its later launches run in the graph's own
// order and clear only where that order dirtied their counters, as eager launches do (a decode
// graph of many layers of one shape clears once, not once a layer). Since a replay may come
// between any later eager launches, none counts on bytes past a captured launch's partials offset.
inline long long evo_workspace_clear_bytes(EvoWorkspaceUse& use, long long tiles, int num_splits, int rows,
                                           int head_dim, unsigned long long capture_id) {
  if (num_splits <= 1) return 0;
  const EvoWorkspace w = evo_workspace_layout(tiles, num_splits, rows, head_dim);
  if (capture_id != 0) {
    if (use.capture_id != capture_id) {
      use.capture_id = capture_id;
      use.capture_prefix = 0;
    }
    const long long clear = tiles * 4 > use.capture_prefix ? w.ml_offset : 0;
    use.capture_prefix = evo_workspace_zero_after(use.capture_prefix, w.ml_offset, clear > 0);
    if (w.ml_offset < use.replay_floor) use.replay_floor = w.ml_offset;
    if (use.zero_prefix > use.replay_floor) use.zero_prefix = use.replay_floor;
    return clear;
  }
  const long long clear = tiles * 4 > use.zero_prefix ? w.ml_offset : 0;
  const long long zero = evo_workspace_zero_after(use.zero_prefix, w.ml_offset, clear > 0);
  use.zero_prefix = zero < use.replay_floor ? zero : use.replay_floor;
  return clear;
}

// --- Loading and launching (`api`: the host's table of driver entry points, members named as
// the driver's functions) ---

// The attributes a kernel's geometry needs on its function before its first launch: dynamic
// shared memory past the default 48 KiB, and cluster sizes past the portable 8 for a cluster
// launch. On failure, `*step` names the attribute.
template <class Api>
CUresult evo_set_function_attributes(const Api& api, CUfunction f, const EvoLaunch& L, const char** step) {
  CUresult r = CUDA_SUCCESS;
  if (L.smem_bytes > 48 * 1024) {
    *step = "raising the dynamic shared memory limit";
    r = api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(L.smem_bytes));
    if (r != CUDA_SUCCESS) return r;
  }
  if (L.cluster_x > 1) {
    *step = "cluster size attribute";
    r = api.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  }
  return r;
}

// Launches `f` with parameters `a` (its num_splits already set: evo_num_splits) on `stream`:
// the grid of evo_grid, L.threads threads and L.smem_bytes of dynamic shared memory a CTA, and a
// cluster launch (cuLaunchKernelEx) of L.cluster_x CTAs along x when L.cluster_x > 1.
template <class Api>
CUresult evo_launch_kernel(const Api& api, CUfunction f, const EvoLaunch& L, const EvoShape& shape, int sms,
                           CUstream stream, EvoAttnParams* a) {
  const EvoGrid g = evo_grid(L, shape, a->num_splits, sms);
  void* args[] = {a};
  if (L.cluster_x <= 1)
    return api.cuLaunchKernel(f, g.x, g.y, g.z, L.threads, 1, 1, L.smem_bytes, stream, args, nullptr);
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.clusterDim.x = L.cluster_x;
  attr.value.clusterDim.y = 1;
  attr.value.clusterDim.z = 1;
  CUlaunchConfig cfg{};
  cfg.gridDimX = g.x;
  cfg.gridDimY = g.y;
  cfg.gridDimZ = g.z;
  cfg.blockDimX = L.threads;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = L.smem_bytes;
  cfg.hStream = stream;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return api.cuLaunchKernelEx(&cfg, f, args, nullptr);
}
