#include "driver.h"

#include <dlfcn.h>

#include <mutex>

#include "evo_host_launch.h"

namespace evo_attn {

#define EVO_ATTN_STR2(x) #x
#define EVO_ATTN_STR(x) EVO_ATTN_STR2(x)

namespace {
std::once_flag g_once;
Driver g_driver;
std::string g_error;

void load() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    g_error = std::string("no NVIDIA driver (") + (e ? e : "libcuda.so.1 not found") + ")";
    return;
  }
  // EVO_ATTN_STR expands the API-version macros first (cuCtxPushCurrent -> cuCtxPushCurrent_v2).
#define EVO_ATTN_LOAD(fn)                                                                                \
  g_driver.fn = reinterpret_cast<decltype(g_driver.fn)>(dlsym(h, EVO_ATTN_STR(fn)));                     \
  if (!g_driver.fn) {                                                                                    \
    g_error = std::string("the NVIDIA driver lacks ") + EVO_ATTN_STR(fn) + ": it is older than CUDA 12.3"; \
    return;                                                                                              \
  }
  EVO_ATTN_DRIVER_FUNCTIONS(EVO_ATTN_LOAD)
#undef EVO_ATTN_LOAD
  // As evo's worker finds it (evo_host_launch.h): the CUDA 12.0 ABI of the function.
  CUresult r = CUDA_SUCCESS;
  g_driver.encode_tiled = evo_find_encode_tiled(g_driver, &r);
  if (!g_driver.encode_tiled) g_error = "the NVIDIA driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12 or newer)";
}
}  // namespace

const Driver* driver(std::string& error) {
  std::call_once(g_once, load);
  if (!g_error.empty()) {
    error = g_error;
    return nullptr;
  }
  return &g_driver;
}

std::string error_text(const Driver& d, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  d.cuGetErrorName(r, &name);
  d.cuGetErrorString(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(int(r));
  if (text) s += std::string(": ") + text;
  return s;
}

}  // namespace evo_attn
