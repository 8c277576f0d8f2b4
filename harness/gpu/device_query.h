// The GPU's identity, read through the driver without creating a context (the parent never
// holds a CUDA context: candidates and the reference run in workers).
#pragma once
#include <string>

namespace evo {

struct GpuInfo {
  std::string name, key;  // "NVIDIA H200", "nvidia-h200"
  std::string uuid;       // "GPU-8c3b…", as nvidia-smi prints it: which physical GPU measured
  int index = 0;          // CUDA device index on this host
  int cc = 0, sms = 0, driver = 0;
  // The NVRTC target for this GPU: sm_90a from compute capability 9.0 on (the Hopper-only
  // wgmma/TMA instructions need the "a" target), sm_<cc> below. The one place this rule lives.
  std::string arch() const;
};

// Throws an environment error (exit 2) that says plainly what is missing.
GpuInfo query_gpu(int device);
// How many CUDA devices this host has; throws the same environment error when there is no driver.
int gpu_count();

}  // namespace evo
