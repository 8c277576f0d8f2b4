// Technique verification: the instructions in a cubin's SASS that prove a stage's technique
// (GMMA for any wgmma: HGMMA with fp16/bf16 operands, QGMMA with fp8; UTMALDG/UTMASTG for TMA, SYNCS for mbarrier
// operations, USETMAXREG for setmaxnreg, multicast TMA). A stage declares the counts it requires in stage.json
// ("requires_sass"); a candidate whose SASS lacks one is rejected as `technique` before it
// spends GPU time. The SASS comes from NVIDIA's nvdisasm, found without a GPU or driver.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace evo {

// Counts per technique key (the keys of kTechniqueKeys), all keys present.
using TechniqueCounts = std::map<std::string, long>;

// The keys a stage may require, in the order records list them.
extern const char* const kTechniqueKeys[8];

// Bumped when count_techniques counts differently: counts kept in the compile cache under an
// older version are counted again.
constexpr int kTechniqueCountsVersion = 1;

// Counts the instructions in nvdisasm's text output (one instruction per line).
TechniqueCounts count_techniques(const std::string& sass);

// nvdisasm: $EVO_NVDISASM, then PATH, then $CUDA_HOME/bin and /usr/local/cuda/bin, then the
// `nvidia-cuda-nvdisasm` wheel of python3 (nvidia/cu13/bin). nullopt when none exists.
std::optional<std::filesystem::path> find_nvdisasm();

// SASS of a cubin file; nullopt with `error` set when nvdisasm is missing or fails.
std::optional<std::string> disassemble(const std::filesystem::path& cubin, std::string* error);

// The first requirement `counts` misses, as a one-line reason ("needs UTMALDG >= 1, found 0");
// nullopt when every requirement holds. Unknown keys are reported as unmet.
std::optional<std::string> unmet_requirement(const TechniqueCounts& counts,
                                             const std::map<std::string, long>& requires_sass);

}  // namespace evo
