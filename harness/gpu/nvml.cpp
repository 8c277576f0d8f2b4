#include "gpu/nvml.h"

#include <dlfcn.h>

#include <mutex>

namespace evo {

namespace {
// The few NVML entry points evo needs, declared here to avoid depending on nvml.h.
using nvmlReturn = int;
using nvmlDevice = void*;
constexpr int kClockSm = 1;
nvmlReturn (*p_init)() = nullptr;
nvmlReturn (*p_by_index)(unsigned, nvmlDevice*) = nullptr;
nvmlReturn (*p_clock)(nvmlDevice, int, unsigned*) = nullptr;
nvmlReturn (*p_max_clock)(nvmlDevice, int, unsigned*) = nullptr;
std::once_flag g_nvml_once;
bool g_ok = false;

void load_nvml() {
  void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  p_init = reinterpret_cast<decltype(p_init)>(dlsym(h, "nvmlInit_v2"));
  p_by_index = reinterpret_cast<decltype(p_by_index)>(dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
  p_clock = reinterpret_cast<decltype(p_clock)>(dlsym(h, "nvmlDeviceGetClockInfo"));
  p_max_clock = reinterpret_cast<decltype(p_max_clock)>(dlsym(h, "nvmlDeviceGetMaxClockInfo"));
  g_ok = p_init && p_by_index && p_clock && p_max_clock && p_init() == 0;
}

std::optional<unsigned> query(int index, bool max) {
  std::call_once(g_nvml_once, load_nvml);
  if (!g_ok) return std::nullopt;
  nvmlDevice dev = nullptr;
  if (p_by_index(unsigned(index), &dev) != 0) return std::nullopt;
  unsigned mhz = 0;
  if ((max ? p_max_clock : p_clock)(dev, kClockSm, &mhz) != 0) return std::nullopt;
  return mhz;
}
}  // namespace

std::optional<unsigned> nvml_sm_clock_mhz(int device_index) { return query(device_index, false); }
std::optional<unsigned> nvml_max_sm_clock_mhz(int device_index) { return query(device_index, true); }
bool nvml_available() {
  std::call_once(g_nvml_once, load_nvml);
  return g_ok;
}

}  // namespace evo
