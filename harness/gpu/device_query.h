// The GPU's identity, read through the driver without creating a context (the parent never
// holds a CUDA context: candidates and the reference run in workers).
#pragma once
#include <string>

namespace evo {

struct GpuInfo {
  std::string name, key;  // "NVIDIA H200", "nvidia-h200"
  int cc = 0, sms = 0, driver = 0;
};

// Throws an environment error (exit 2) that says plainly what is missing.
GpuInfo query_gpu(int device);

}  // namespace evo
