#include "compile/resources.h"

#include <fmt/format.h>

namespace evo {

std::optional<std::string> check_resources(const PtxasResources& r, const LaunchGeometry& g, const ResourceCaps& caps) {
  if (r.spill_stores + r.spill_loads > caps.max_spill_bytes)
    return fmt::format("register spills: {} bytes stored, {} loaded (cap {})", r.spill_stores, r.spill_loads,
                       caps.max_spill_bytes);
  if (r.wgmma_serialized) return "ptxas serialized wgmma (see the compile log)";
  if (r.registers > caps.max_registers)
    return fmt::format("{} registers per thread (cap {})", r.registers, caps.max_registers);
  if (r.stack_bytes > caps.max_stack_bytes)
    return fmt::format("{} bytes of stack frame (local memory; cap {})", r.stack_bytes, caps.max_stack_bytes);
  if (g.threads == 0 || g.threads % 32 != 0 || int(g.threads) > caps.max_threads)
    return fmt::format("{} threads per CTA (must be a multiple of 32, at most {})", g.threads, caps.max_threads);
  if (long(r.registers) * g.threads > 65536)
    return fmt::format("{} registers x {} threads exceeds the 65536-register file", r.registers, g.threads);
  long smem = r.static_smem + long(g.smem_bytes);
  if (smem > caps.max_smem_bytes)
    return fmt::format("{} bytes of shared memory ({} static + {} dynamic; cap {})", smem, r.static_smem, g.smem_bytes,
                       caps.max_smem_bytes);
  if (g.rows_per_cta == 0) return "rows_per_cta is 0 in EVO_EXPORT_LAUNCH";
  if (g.cluster_x == 0 || g.cluster_x > 16) return fmt::format("cluster_x {} (must be 1..16)", g.cluster_x);
  if (g.abi_version < 1 || g.abi_version > EVO_ABI_VERSION)
    return fmt::format("ABI version {} (this evo speaks 1 to {})", g.abi_version, EVO_ABI_VERSION);
  if (g.kv_splits_max > 1 && g.kv_block == 0) return "kv_splits_max without kv_block in EVO_EXPORT_LAUNCH_SPLIT";
  if ((g.kv_splits_max > 1 || g.pack_gqa) && (g.persistent || g.cluster_x > 1))
    return "split-KV and pack-GQA grids are neither persistent nor clustered";
  return std::nullopt;
}

}  // namespace evo
