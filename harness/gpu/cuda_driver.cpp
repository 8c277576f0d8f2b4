#include "gpu/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include "core/errors.h"

namespace evo {

#define EVO_STR2(x) #x
#define EVO_STR(x) EVO_STR2(x)

namespace {
std::once_flag g_once;
CudaDriver g_driver;
std::string g_error;
void* g_handle = nullptr;

void load() {
  g_handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g_handle) {
    const char* e = dlerror();
    g_error = e ? e : "libcuda.so.1 not found";
    return;
  }
  // EVO_STR expands API-version macros first (cuMemAlloc -> "cuMemAlloc_v2").
#define EVO_LOAD(fn)                                                                        \
  g_driver.fn = reinterpret_cast<decltype(g_driver.fn)>(dlsym(g_handle, EVO_STR(fn)));      \
  if (!g_driver.fn) {                                                                       \
    g_error = std::string("libcuda.so.1 lacks ") + EVO_STR(fn) + ": the driver is too old"; \
    return;                                                                                 \
  }
  EVO_CUDA_DRIVER_FUNCTIONS(EVO_LOAD)
#undef EVO_LOAD
}
}  // namespace

bool cuda_driver_available(std::string* why) {
  std::call_once(g_once, load);
  if (!g_error.empty() && why) *why = g_error;
  return g_error.empty();
}

const CudaDriver& cuda_driver() {
  std::string why;
  if (!cuda_driver_available(&why))
    throw environment_error("no NVIDIA GPU driver (" + why + "): GPU work needs an NVIDIA GPU with its driver");
  return g_driver;
}

std::string cuda_error_text(CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (g_driver.cuGetErrorName) g_driver.cuGetErrorName(r, &name);
  if (g_driver.cuGetErrorString) g_driver.cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(int(r));
  if (text) s += std::string(": ") + text;
  return s;
}

}  // namespace evo
