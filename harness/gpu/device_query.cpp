#include "gpu/device_query.h"

#include <fmt/format.h>

#include "core/errors.h"
#include "core/paths.h"
#include "gpu/cuda_driver.h"

namespace evo {

std::string GpuInfo::arch() const { return cc >= 90 ? "sm_90a" : fmt::format("sm_{}", cc); }

namespace {
const CudaDriver& initialized_driver() {
  std::string why;
  if (!cuda_driver_available(&why))
    throw environment_error("timing needs an NVIDIA GPU and its driver; this machine has none (" + why +
                            "). Compile results above are valid; run `evo doctor` for details");
  const auto& cu = cuda_driver();
  if (CUresult r = cu.cuInit(0); r != CUDA_SUCCESS)
    throw environment_error("the NVIDIA driver is present but cuInit failed: " + cuda_error_text(r));
  return cu;
}

std::string uuid_text(const CUuuid& u) {
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", static_cast<unsigned char>(u.bytes[i]));
  }
  return s;
}
}  // namespace

int gpu_count() {
  int count = 0;
  initialized_driver().cuDeviceGetCount(&count);
  return count;
}

GpuInfo query_gpu(int device) {
  const auto& cu = initialized_driver();
  int count = 0;
  cu.cuDeviceGetCount(&count);
  if (device < 0 || device >= count)
    throw environment_error(fmt::format("no CUDA device {} (this machine has {})", device, count));
  CUdevice dev;
  cu.cuDeviceGet(&dev, device);
  GpuInfo g;
  char name[256] = {};
  cu.cuDeviceGetName(name, sizeof(name), dev);
  g.name = name;
  g.key = gpu_key(g.name);
  g.index = device;
  CUuuid uuid{};
  if (cu.cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) g.uuid = uuid_text(uuid);
  int major = 0, minor = 0;
  cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  cu.cuDeviceGetAttribute(&g.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  cu.cuDriverGetVersion(&g.driver);
  g.cc = major * 10 + minor;
  return g;
}

}  // namespace evo
