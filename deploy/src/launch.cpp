#include "launch.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "driver.h"

namespace evo_attn {

namespace {

using Params = EvoAttnParams;  // evo_launch.h
static_assert(sizeof(CUtensorMap) == 16 * sizeof(unsigned long long), "a tma slot holds one CUtensorMap");

struct DeviceState {
  bool tried = false;
  bool wrong_gpu = false;  // the package cannot run here at all (EVO_ATTN_UNSUPPORTED)
  std::string error;
  CUcontext ctx = nullptr;
  int sms = 0, smem_per_sm = 0;
  std::vector<CUfunction> functions;
};

// The split-KV workspace of one (device, stream): zeroed when allocated; every launch leaves its
// tile counters at 0, so launches in stream order reuse it as it is. Two streams never share one
// (their launches could interleave). A buffer outgrown is kept, not freed: a CUDA graph captured
// earlier may still launch with it.
struct Workspace {
  CUdeviceptr data = 0;
  size_t bytes = 0;
  std::vector<CUdeviceptr> retired;
};

std::mutex g_mutex;
std::map<int, DeviceState> g_devices;
std::map<std::pair<int, CUstream>, Workspace> g_workspaces;  // under g_mutex

bool call(const Driver& d, CUresult r, const std::string& what, std::string& error) {
  if (r == CUDA_SUCCESS) return true;
  error = what + ": " + error_text(d, r);
  return false;
}

bool check_gpu(const Package& p, const Driver& d, CUdevice dev, int device, std::string& error) {
  int major = 0, minor = 0;
  d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  if (major * 10 + minor == p.arch) return true;
  char name[256] = {};
  d.cuDeviceGetName(name, sizeof(name), dev);
  error = "device: GPU " + std::to_string(device) + " (" + name + ") is compute capability " + std::to_string(major) +
          "." + std::to_string(minor) + "; this package's kernels are " + p.arch_name + " cubins, measured on " +
          p.gpu + ": export again from that GPU's records";
  return false;
}

bool load_modules(const Package& p, const Driver& d, DeviceState& st, std::string& error) {
  if (!call(d, d.cuCtxPushCurrent(st.ctx), "cuCtxPushCurrent", error)) return false;
  bool ok = true;
  for (int i = 0; ok && i < p.kernel_count; ++i) {
    const Kernel& k = p.kernels[i];
    CUmodule m = nullptr;
    CUfunction f = nullptr;
    const std::string who = std::string(" (kernel ") + k.name + ")";
    ok = call(d, d.cuModuleLoadData(&m, k.cubin), "cuModuleLoadData" + who, error) &&
         call(d, d.cuModuleGetFunction(&f, m, "evo_attn_fwd"), "cuModuleGetFunction(evo_attn_fwd)" + who, error);
    if (ok && k.launch.smem_bytes > 48 * 1024)
      ok = call(d, d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(k.launch.smem_bytes)),
                "raising the dynamic shared memory limit" + who, error);
    if (ok && k.launch.cluster_x > 1)
      ok = call(d, d.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                "cluster size attribute" + who, error);
    st.functions.push_back(f);
  }
  CUcontext popped = nullptr;
  d.cuCtxPopCurrent(&popped);
  return ok;
}

bool load_state(const Package& p, int device, DeviceState& st, std::string& error) {
  const Driver* d = driver(error);
  if (!d) return false;
  CUdevice dev = 0;
  if (!call(*d, d->cuInit(0), "cuInit", error)) return false;
  if (!call(*d, d->cuDeviceGet(&dev, device), "device = " + std::to_string(device) + ": cuDeviceGet", error))
    return false;
  if (!check_gpu(p, *d, dev, device, error)) {
    st.wrong_gpu = true;
    return false;
  }
  d->cuDeviceGetAttribute(&st.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  d->cuDeviceGetAttribute(&st.smem_per_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev);
  if (!call(*d, d->cuDevicePrimaryCtxRetain(&st.ctx, dev), "cuDevicePrimaryCtxRetain", error)) return false;
  return load_modules(p, *d, st, error);
}

DeviceState* loaded(const Package& p, int device, int& status, std::string& error) {
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceState& st = g_devices[device];
  if (!st.tried) {
    st.tried = true;
    if (!load_state(p, device, st, st.error)) st.functions.clear();
  }
  if (!st.error.empty()) {
    status = st.wrong_gpu ? EVO_ATTN_UNSUPPORTED : EVO_ATTN_CUDA_ERROR;
    error = st.error;
    return nullptr;
  }
  return &st;
}

// Strides of a size-1 dim are never stepped over; TMA still wants a 16-byte multiple there.
void layout(const evo_attn_tensor& t, long long out[3]) {
  for (int i = 0; i < 3; ++i) out[i] = t.size[i] == 1 ? t.size[3] : t.stride[i];
}

// TMA map of one tensor as harness/gpu/tma_maps.cpp encodes it: 4-D (d, s, h, b), byte strides.
bool encode(const Driver& d, const TmaSpec& s, const evo_attn_tensor& t, CUtensorMapDataType type, unsigned bytes,
            CUtensorMap* map, std::string& error) {
  long long st[3];
  layout(t, st);
  const cuuint64_t dims[4] = {cuuint64_t(t.size[3]), cuuint64_t(t.size[2]), cuuint64_t(t.size[1]),
                              cuuint64_t(t.size[0])};
  const cuuint64_t strides[3] = {cuuint64_t(st[2]) * bytes, cuuint64_t(st[1]) * bytes, cuuint64_t(st[0]) * bytes};
  const cuuint32_t box[4] = {s.box_cols, s.box_rows, 1, 1};
  const cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  return call(d,
              d.encode_tiled(map, type, 4, reinterpret_cast<void*>(t.data), dims, strides, box, elem_strides,
                             CU_TENSOR_MAP_INTERLEAVE_NONE, CUtensorMapSwizzle(s.swizzle),
                             CUtensorMapL2promotion(s.l2_promotion), CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
              "cuTensorMapEncodeTiled", error);
}

bool params(const Driver& d, const evo_attn_call& c, const Kernel& k, Params& a, std::string& error) {
  const evo_attn_tensor* t[4] = {&c.q, &c.k, &c.v, &c.o};
  const void** ptr[4] = {&a.q, &a.k, &a.v, const_cast<const void**>(&a.o)};
  long long* strides[4] = {a.q_stride, a.k_stride, a.v_stride, a.o_stride};
  for (int i = 0; i < 4; ++i) {
    *ptr[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(t[i]->data));
    layout(*t[i], strides[i]);
  }
  a.batch = int(c.q.size[0]);
  a.heads_q = int(c.q.size[1]);
  a.heads_kv = int(c.k.size[1]);
  a.seq_q = int(c.q.size[2]);
  a.seq_kv = int(c.k.size[2]);
  a.head_dim = int(c.q.size[3]);
  a.causal = c.is_causal ? 1 : 0;
  a.softmax_scale = c.scale;
  a.softmax_scale_log2 = c.scale * 1.4426950408889634f;
  a.q_descale = c.q_descale;
  a.k_descale = c.k_descale;
  a.v_descale = c.v_descale;
  for (int slot = 0; slot < 4; ++slot) {
    const TmaSpec& s = k.tma[slot];
    if (s.tensor == 0) continue;
    const bool fp8_in = c.dtype == EVO_ATTN_FP8_E4M3 && s.tensor != 4;
    const CUtensorMapDataType type = fp8_in                       ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                     : (c.dtype == EVO_ATTN_FP16) ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                                  : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    CUtensorMap map;
    if (!encode(d, s, *t[s.tensor - 1], type, fp8_in ? 1 : 2, &map, error)) return false;
    std::memcpy(a.tma[slot], &map, sizeof(map));
  }
  return true;
}

// At least `bytes` of zeroed workspace for (device, stream), in the current context; the zeroing
// is ordered on `stream` before the launch that needs it.
bool workspace_for(const Driver& d, int device, CUstream stream, size_t bytes, CUdeviceptr& out, std::string& error) {
  out = 0;
  if (bytes == 0) return true;
  std::lock_guard<std::mutex> lock(g_mutex);
  Workspace& w = g_workspaces[{device, stream}];
  if (w.bytes < bytes) {
    const size_t grown = std::max(bytes, w.bytes * 2);
    CUdeviceptr fresh = 0;
    if (!call(d, d.cuMemAlloc(&fresh, grown), "cuMemAlloc(split-KV workspace, " + std::to_string(grown) + " bytes)",
              error))
      return false;
    if (!call(d, d.cuMemsetD8Async(fresh, 0, grown, stream), "zeroing the split-KV workspace", error)) {
      d.cuMemFree(fresh);
      return false;
    }
    if (w.data) w.retired.push_back(w.data);
    w.data = fresh;
    w.bytes = grown;
  }
  out = w.data;
  return true;
}

}  // namespace

int load_device(const Package& p, int device, std::string& error) {
  int status = EVO_ATTN_OK;
  loaded(p, device, status, error);
  return status;
}

int launch(const Package& p, const evo_attn_call& c, const Plan& plan, CUstream stream, std::string& error) {
  int status = EVO_ATTN_OK;
  DeviceState* st = loaded(p, c.device, status, error);
  if (!st) return status;
  const Driver& d = *driver(error);
  const Kernel& k = p.kernels[plan.kernel];
  Params a{};
  if (!params(d, c, k, a, error)) return EVO_ATTN_CUDA_ERROR;
  const Launch& L = k.launch;
  // The grid and split rules of evo_launch.h, as evo's worker launched the kernel when it gated it.
  const EvoShape shape = shape_of(c);
  a.num_splits = evo_num_splits(L, shape, st->sms, st->smem_per_sm);
  const EvoGrid grid = evo_grid(L, shape, a.num_splits, st->sms);
  const unsigned gx = grid.x, gy = grid.y, gz = grid.z;
  CUcontext current = nullptr;
  d.cuCtxGetCurrent(&current);
  const bool push = current != st->ctx;
  if (push && !call(d, d.cuCtxPushCurrent(st->ctx), "cuCtxPushCurrent", error)) return EVO_ATTN_CUDA_ERROR;
  CUdeviceptr workspace = 0;
  if (!workspace_for(d, c.device, stream, size_t(evo_workspace_bytes(L, shape, a.num_splits)), workspace, error)) {
    if (push) {
      CUcontext popped = nullptr;
      d.cuCtxPopCurrent(&popped);
    }
    return EVO_ATTN_CUDA_ERROR;
  }
  a.workspace = reinterpret_cast<void*>(static_cast<uintptr_t>(workspace));
  void* args[] = {&a};
  CUresult r;
  if (L.cluster_x > 1) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = L.cluster_x;
    attr.value.clusterDim.y = 1;
    attr.value.clusterDim.z = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = gx;
    cfg.gridDimY = gy;
    cfg.gridDimZ = gz;
    cfg.blockDimX = L.threads;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = L.smem_bytes;
    cfg.hStream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    r = d.cuLaunchKernelEx(&cfg, st->functions[size_t(plan.kernel)], args, nullptr);
  } else {
    r = d.cuLaunchKernel(st->functions[size_t(plan.kernel)], gx, gy, gz, L.threads, 1, 1, L.smem_bytes, stream, args,
                         nullptr);
  }
  if (push) {
    CUcontext popped = nullptr;
    d.cuCtxPopCurrent(&popped);
  }
  return call(d, r, std::string("launching kernel ") + k.name, error) ? EVO_ATTN_OK : EVO_ATTN_CUDA_ERROR;
}

}  // namespace evo_attn
