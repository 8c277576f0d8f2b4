// The CUDA driver API, loaded at run time (dlopen libcuda.so.1): the library loads on machines
// without a GPU, where the checks (evo_attn_plan_call) still work and a launch says why not.
#pragma once
#include <cuda.h>

#include <string>

namespace evo_attn {

#define EVO_ATTN_DRIVER_FUNCTIONS(X)                                                                          \
  X(cuInit)                                                                                                   \
  X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain) X(cuCtxGetCurrent)    \
      X(cuCtxPushCurrent) X(cuCtxPopCurrent) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuFuncSetAttribute) \
          X(cuLaunchKernel) X(cuLaunchKernelEx) X(cuGetErrorName) X(cuGetErrorString) X(cuGetProcAddress) X(cuMemAlloc) X(cuMemFree) X(cuMemsetD8Async) \
              X(cuStreamGetCaptureInfo) X(cuThreadExchangeStreamCaptureMode)

struct Driver {
#define EVO_ATTN_MEMBER(fn) decltype(&::fn) fn = nullptr;
  EVO_ATTN_DRIVER_FUNCTIONS(EVO_ATTN_MEMBER)
#undef EVO_ATTN_MEMBER
  decltype(&::cuTensorMapEncodeTiled) encode_tiled = nullptr;  // found through cuGetProcAddress
};

// The loaded driver, or nullptr with `error` saying why (no libcuda.so.1, too old a driver).
const Driver* driver(std::string& error);
// "CUDA_ERROR_...: text" for a result.
std::string error_text(const Driver& d, CUresult r);

}  // namespace evo_attn
