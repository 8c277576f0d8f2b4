// Whether a compiled kernel can carry anything into its output besides its parameters and the
// memory they point to: module-scope __device__ memory, which outlives a launch (a counter, a
// cache, a first-launch time), or a clock (%globaltimer, %clock, %clock64). The domain says the
// kernels keep no state between calls; no finite gate can verify a launch it never makes (the
// 2^20th, or the one after a date), so a kernel that could tell them apart is refused before it
// ships (hacker rounds 2 and 6: wrong_after_10min.cu, wrong_after_2p20_launches.cu,
// wrong_after_2027.cu). Read from the SASS (nvdisasm) and the cubin's section names, no GPU.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace evo {

// The first way the kernel could carry state or time, as a one-line reason quoting the SASS
// instruction, or nullopt. Module globals are reached through the addresses a relocated constant
// bank holds (sm_90: bank 4, ".nv.constant4" with ".rela.nv.constant4"), so any read of such a
// bank counts; reading a special register SR_GLOBALTIMER* or SR_CLOCK* counts as a clock. Beyond
// those, an allowlist (hacker round 11, grid_id_after_2p26.cu: %gridid, the context's launch
// count, is bank 0's word 0x30): a special register other than the launch's geometry
// ("reads special register SR_PM0"), or a word of bank 0 below `parameter_block` (where the
// kernel's parameters start, parameter_block of cubin.h) other than the launch's geometry and
// memory windows, at or past `parameter_end` (hacker round 12: what the driver leaves after the
// parameters was never measured), or at an offset computed from a register ("reads launch
// constant c[0x0][0x30]"), is refused too.
std::optional<std::string> carried_state(const std::string& sass, const std::vector<std::string>& sections,
                                         uint32_t parameter_block = 0x210, uint32_t parameter_end = 0x10000);

// A call into the device heap (hacker round 7, heap_leak_bomb.cu): `malloc` or `free` among the
// cubin's symbol names (its string table: the loader binds them). Memory it keeps outlives the
// call, and a heap never freed runs out after enough calls. Its address is a relocated bank's word
// too, so carried_state refuses it as well, under the module-global reason; this names it.
std::optional<std::string> device_heap_call(const std::string& cubin);

// The same for a cubin file (disassembled with nvdisasm). nullopt with `error` set when it could
// not be read or disassembled; `state` says what was found (nullopt: nothing).
struct CallStateCheck {
  bool checked = false;
  std::optional<std::string> state;
  std::string error;
};
CallStateCheck check_call_state(const std::filesystem::path& cubin);

}  // namespace evo
