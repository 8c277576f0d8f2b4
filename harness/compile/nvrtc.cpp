#include "compile/nvrtc.h"

#include <nvrtc.h>

namespace evo {

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, const std::vector<std::string>& options) {
  NvrtcOutput out;
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    out.log = "nvrtcCreateProgram failed";
    return out;
  }
  std::vector<const char*> opts;
  for (const auto& o : options) opts.push_back(o.c_str());
  nvrtcResult rc = nvrtcCompileProgram(prog, int(opts.size()), opts.data());
  size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(prog, out.log.data());
    out.log.resize(log_size - 1);
  }
  // A virtual architecture (--gpu-architecture=compute_XX) gives PTX, a real one a cubin.
  bool virtual_arch = false;
  for (const auto& o : options) virtual_arch = virtual_arch || o.rfind("--gpu-architecture=compute_", 0) == 0;
  if (rc == NVRTC_SUCCESS && virtual_arch) {
    size_t size = 0;
    if (nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS && size > 1) {
      out.cubin.resize(size);
      out.ok = nvrtcGetPTX(prog, out.cubin.data()) == NVRTC_SUCCESS;
      out.cubin.resize(size - 1);  // without the terminating NUL
    }
    if (!out.ok) out.log += "\nNVRTC produced no PTX";
  } else if (rc == NVRTC_SUCCESS) {
    size_t size = 0;
    if (nvrtcGetCUBINSize(prog, &size) == NVRTC_SUCCESS && size > 0) {
      out.cubin.resize(size);
      out.ok = nvrtcGetCUBIN(prog, out.cubin.data()) == NVRTC_SUCCESS;
    }
    if (!out.ok) out.log += "\nNVRTC produced no cubin";
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

}  // namespace evo
