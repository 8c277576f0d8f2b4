// Reads the variant's exported launch geometry (`evo_launch`, EvoLaunch in evo_attn.cuh)
// straight from the cubin's ELF symbol table, so the resource gate and `evo compile` know the
// threads and dynamic shared memory without a GPU or driver.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace evo {

struct LaunchGeometry {
  uint32_t threads = 0;
  uint32_t smem_bytes = 0;
  uint32_t rows_per_cta = 0;
  uint32_t cluster_x = 1;
  uint32_t persistent = 0;
  uint32_t abi_version = 0;
};

// nullopt with `error` set when the cubin is malformed or has no evo_launch symbol.
std::optional<LaunchGeometry> read_launch_geometry(const std::string& cubin, std::string* error);

}  // namespace evo
