#include "gpu/device_query.h"

#include <fmt/format.h>

#include "core/paths.h"
#include "core/errors.h"
#include "gpu/cuda_driver.h"

namespace evo {

GpuInfo query_gpu(int device) {
  std::string why;
  if (!cuda_driver_available(&why))
    throw environment_error("timing needs an NVIDIA GPU and its driver; this machine has none (" + why +
                            "). Compile results above are valid; run `evo doctor` for details");
  const auto& cu = cuda_driver();
  if (CUresult r = cu.cuInit(0); r != CUDA_SUCCESS)
    throw environment_error("the NVIDIA driver is present but cuInit failed: " + cuda_error_text(r));
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
  int major = 0, minor = 0;
  cu.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cu.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  cu.cuDeviceGetAttribute(&g.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  cu.cuDriverGetVersion(&g.driver);
  g.cc = major * 10 + minor;
  return g;
}

}  // namespace evo
