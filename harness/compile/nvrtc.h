// In-process NVRTC: one source, one set of options, a cubin and the program log. Called only
// inside the `evo __compile` child process, so a runaway compile can be killed.
#pragma once
#include <string>
#include <vector>

namespace evo {

struct NvrtcOutput {
  bool ok = false;
  std::string log;
  std::string cubin;  // the image: a cubin, or PTX text for a virtual architecture (compute_XX)
};

NvrtcOutput nvrtc_compile(const std::string& source, const std::string& name, const std::vector<std::string>& options);
std::string nvrtc_version();  // "13.0"

}  // namespace evo
