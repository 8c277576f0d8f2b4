// Parses the ptxas -v lines that NVRTC puts in its program log.
#pragma once
#include <optional>
#include <string>

namespace evo {

struct PtxasResources {
  int registers = 0;
  long stack_bytes = 0;
  long spill_stores = 0;
  long spill_loads = 0;
  long static_smem = 0;
  int barriers = 0;
  bool wgmma_serialized = false;  // ptxas warned that wgmma was serialized
};

// The resources of entry function `entry`; nullopt if the log has no report for it.
std::optional<PtxasResources> parse_ptxas_report(const std::string& log, const std::string& entry = "evo_attn_fwd");

}  // namespace evo
