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

struct DeviceState {
  bool tried = false;
  bool wrong_gpu = false;  // the package cannot run here at all (EVO_ATTN_UNSUPPORTED)
  std::string error;
  CUcontext ctx = nullptr;
  int sms = 0, smem_per_sm = 0;
  std::vector<CUfunction> functions;
};

// The split-KV workspace of one (device, stream): zeroed when allocated; launches in stream order
// reuse it, clearing the counters a launch needs where an earlier launch left partials
// (evo_workspace_clear_bytes, the ABI floor's rule). Two streams never share one (their launches
// could interleave). A buffer outgrown is kept, not freed: a CUDA graph captured earlier may
// still launch with it.
struct Workspace {
  CUdeviceptr data = 0;
  size_t bytes = 0;
  EvoWorkspaceUse use{0, 0, 0, 0};
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
  int major = 0, minor = 0, sms = 0;
  d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  char name[256] = {};
  d.cuDeviceGetName(name, sizeof(name), dev);
  error = gpu_problem(p, device, name, major * 10 + minor, sms);
  return error.empty();
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
    const char* step = "";
    ok = ok && call(d, evo_set_function_attributes(d, f, k.launch, &step), step + who, error);
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

// The call's parameters as evo_host_launch.h builds them for evo's worker too, TMA maps included.
bool params(const Driver& d, const EvoCall& abi, int dtype, const Kernel& k, Params& a, std::string& error) {
  a = evo_call_params(abi);
  for (int slot = 0; slot < EVO_TMA_SLOTS; ++slot) {
    const TmaSpec& s = k.tma[slot];
    if (s.tensor == EVO_TMA_NONE) continue;
    const std::string what = std::string("kernel ") + k.name + ": TMA map " + std::to_string(slot);
    if (const char* problem = evo_tma_spec_problem(s)) {  // evo gated the kernel with it: a damaged package
      error = what + ": " + problem;
      return false;
    }
    const EvoTensor& t = abi.tensor[s.tensor - 1];
    CUtensorMap map;
    if (!call(d, evo_encode_tma(d.encode_tiled, evo_tma_args(s, t, dtype), t.data, &map), what, error)) return false;
    std::memcpy(a.tma[slot], &map, sizeof(map));
  }
  return true;
}

// The workspace of a launch of `a.num_splits` splits (none for one) for (device, stream), in the
// current context, with the tile counters it needs at 0: the zeroing is ordered on `stream`
// before the launch.
bool workspace_for(const Driver& d, int device, CUstream stream, const EvoLaunch& L, const EvoShape& shape,
                   const Params& a, CUdeviceptr& out, std::string& error) {
  out = 0;
  const size_t bytes = size_t(evo_workspace_bytes(L, shape, a.num_splits));
  if (bytes == 0) return true;
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t capture_id = 0;
  if (!call(d, d.cuStreamGetCaptureInfo(stream, &capture, &capture_id, nullptr, nullptr, nullptr, nullptr),
            "cuStreamGetCaptureInfo", error))
    return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  Workspace& w = g_workspaces[{device, stream}];
  const bool capturing = capture != CU_STREAM_CAPTURE_STATUS_NONE;
  if (w.bytes < bytes) {
    const size_t grown = std::max(bytes, w.bytes * 2);
    CUdeviceptr fresh = 0;
    // A graph is captured on a stream of its own (torch.cuda.graph's), so its first split launch
    // finds no workspace even after a warm-up elsewhere. cuMemAlloc is barred to a capturing
    // thread in the default (global) mode; relaxed for this one call, as PyTorch's caching
    // allocator does for its own cudaMalloc.
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    if (capturing && !call(d, d.cuThreadExchangeStreamCaptureMode(&mode), "relaxing the capture mode", error))
      return false;
    const CUresult allocated = d.cuMemAlloc(&fresh, grown);
    if (capturing) d.cuThreadExchangeStreamCaptureMode(&mode);  // the caller's mode back
    if (!call(d, allocated, "cuMemAlloc(split-KV workspace, " + std::to_string(grown) + " bytes)", error))
      return false;
    // Outside a capture the buffer is zeroed now. A zeroing captured would run only at replay,
    // so a buffer born in a capture counts as holding nothing zero: every launch clears what it
    // needs (the captured one at every replay, an eager one before it runs).
    if (!capturing && !call(d, d.cuMemsetD8Async(fresh, 0, grown, stream), "zeroing the split-KV workspace", error)) {
      d.cuMemFree(fresh);
      return false;
    }
    if (w.data) w.retired.push_back(w.data);
    w.data = fresh;
    w.bytes = grown;
    w.use = capturing ? EvoWorkspaceUse{0, static_cast<long long>(grown), 0, 0}
                      : evo_workspace_fresh(static_cast<long long>(grown));
  }
  const long long clear = evo_workspace_clear_bytes(w.use, evo_tiles(L, shape), a.num_splits, int(L.rows_per_cta),
                                                    shape.head_dim, capturing ? capture_id : 0);
  if (clear > 0 && !call(d, d.cuMemsetD8Async(w.data, 0, size_t(clear), stream), "clearing the split-KV tile counters",
                         error))
    return false;
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
  const EvoCall abi = call_of(c);
  Params a{};
  if (!params(d, abi, c.dtype, k, a, error)) return EVO_ATTN_CUDA_ERROR;
  const Launch& L = k.launch;
  // The split rule and the launch of the ABI floor, as evo's worker launched the kernel when it
  // gated it.
  const EvoShape shape = evo_call_shape(abi);
  a.num_splits = evo_num_splits(L, shape, st->sms, st->smem_per_sm);
  CUcontext current = nullptr;
  d.cuCtxGetCurrent(&current);
  const bool push = current != st->ctx;
  if (push && !call(d, d.cuCtxPushCurrent(st->ctx), "cuCtxPushCurrent", error)) return EVO_ATTN_CUDA_ERROR;
  CUdeviceptr workspace = 0;
  if (!workspace_for(d, c.device, stream, L, shape, a, workspace, error)) {
    if (push) {
      CUcontext popped = nullptr;
      d.cuCtxPopCurrent(&popped);
    }
    return EVO_ATTN_CUDA_ERROR;
  }
  a.workspace = reinterpret_cast<void*>(static_cast<uintptr_t>(workspace));
  const CUresult r = evo_launch_kernel(d, st->functions[size_t(plan.kernel)], L, shape, st->sms, stream, &a);
  if (push) {
    CUcontext popped = nullptr;
    d.cuCtxPopCurrent(&popped);
  }
  return call(d, r, std::string("launching kernel ") + k.name, error) ? EVO_ATTN_OK : EVO_ATTN_CUDA_ERROR;
}

}  // namespace evo_attn
