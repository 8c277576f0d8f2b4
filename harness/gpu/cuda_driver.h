// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that evo starts,
// lists, compiles and reports on machines without a GPU driver. Types come from the
// toolkit's cuda.h; no symbol of libcuda is linked.
#pragma once
#include <cuda.h>

#include <string>

namespace evo {

// One X(...) per driver function evo calls; clang-format would re-flow the list.
// clang-format off
#define EVO_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit) \
  X(cuDriverGetVersion) \
  X(cuDeviceGetCount) \
  X(cuDeviceGet) \
  X(cuDeviceGetName) \
  X(cuDeviceGetAttribute) \
  X(cuDeviceGetUuid) \
  X(cuDeviceTotalMem) \
  X(cuDevicePrimaryCtxRetain) \
  X(cuDevicePrimaryCtxRelease) \
  X(cuCtxSetCurrent) \
  X(cuCtxSynchronize) \
  X(cuGetErrorName) \
  X(cuGetErrorString) \
  X(cuModuleLoadData) \
  X(cuModuleUnload) \
  X(cuModuleGetFunction) \
  X(cuModuleGetGlobal) \
  X(cuFuncSetAttribute) \
  X(cuFuncGetAttribute) \
  X(cuLaunchKernel) \
  X(cuLaunchKernelEx) \
  X(cuMemAlloc) \
  X(cuMemFree) \
  X(cuMemcpyHtoD) \
  X(cuMemcpyDtoH) \
  X(cuMemcpyDtoD) \
  X(cuMemsetD8) \
  X(cuMemsetD16) \
  X(cuMemsetD32) \
  X(cuMemsetD8Async) \
  X(cuMemsetD16Async) \
  X(cuMemsetD32Async) \
  X(cuMemcpyHtoDAsync) \
  X(cuMemcpyDtoDAsync) \
  X(cuStreamCreate) \
  X(cuStreamDestroy) \
  X(cuStreamSynchronize) \
  X(cuEventCreate) \
  X(cuEventDestroy) \
  X(cuEventRecord) \
  X(cuStreamWaitEvent) \
  X(cuEventSynchronize) \
  X(cuEventElapsedTime) \
  X(cuStreamBeginCapture) \
  X(cuStreamEndCapture) \
  X(cuGraphInstantiate) \
  X(cuGraphLaunch) \
  X(cuGraphExecDestroy) \
  X(cuGraphDestroy) \
  X(cuGetProcAddress) \
  X(cuMemGetInfo)
// clang-format on

struct CudaDriver {
#define EVO_DECLARE(fn) decltype(&::fn) fn = nullptr;
  EVO_CUDA_DRIVER_FUNCTIONS(EVO_DECLARE)
#undef EVO_DECLARE
};

// The loaded driver, or throws an environment error (exit 2) that says what is missing.
const CudaDriver& cuda_driver();
// True when libcuda.so.1 can be loaded (doctor); `why` gets the dlerror text otherwise.
bool cuda_driver_available(std::string* why);

// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"
std::string cuda_error_text(CUresult r);

}  // namespace evo
