// Reads the variant's exported launch geometry (`evo_launch`, EvoLaunch in evo_attn.cuh)
// straight from the cubin's ELF symbol table, so the resource gate and `evo compile` know the
// threads and dynamic shared memory without a GPU or driver.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/evo_launch.h"

namespace evo {

// EvoLaunch of evo_launch.h, the one definition the kernels and the exported runtime share.
using LaunchGeometry = EvoLaunch;

// nullopt with `error` set when the cubin is malformed or has no evo_launch symbol. A version-1
// symbol (six words, cubins compiled before split-KV) reads with kv_splits_max, kv_block and
// pack_gqa 0.
std::optional<LaunchGeometry> read_launch_geometry(const std::string& cubin, std::string* error);

// What runs, as a hash: SHA-256 over the cubin's sections (name, type, flags, contents) except
// its debug info (.debug_*, .nv_debug_*: line tables name the source file and its lines). Two
// cubins with the same value have the same code, constants and exported launch geometry, so two
// sources that differ only in comments, layout or an unused #define run the same kernel. Empty
// when the cubin is not a 64-bit ELF.
std::string code_identity(const std::string& cubin);

// The names of the cubin's ELF sections, in order; empty when it is not a 64-bit ELF.
std::vector<std::string> section_names(const std::string& cubin);

// Where the kernels' parameters lie in constant bank 0: [begin, end) from the offset and size
// EIATTR_PARAM_CBANK of each .nv.info.<kernel> section gives (begin 0x210 on sm_90; the words
// below it and past the end are the driver's): the lowest start and the highest end over the
// cubin's kernels. nullopt when no kernel has the attribute or the ELF is not one.
struct ParameterBlock {
  uint32_t begin = 0;
  uint32_t end = 0;
};
std::optional<ParameterBlock> parameter_block(const std::string& cubin);

// One TMA tensor map a variant wants: EvoTmaSpec of evo_launch.h (EVO_EXPORT_TMA in
// evo_attn.cuh), the type the exported runtime reads too.
constexpr int kTmaSlots = EVO_TMA_SLOTS;
using TmaSpec = EvoTmaSpec;

// The kTmaSlots specs of `evo_tma` (slot i -> EvoAttnParams.tma[i]); empty when the variant
// exports none; nullopt with `error` set when the symbol is malformed.
std::optional<std::vector<TmaSpec>> read_tma_specs(const std::string& cubin, std::string* error);

}  // namespace evo
