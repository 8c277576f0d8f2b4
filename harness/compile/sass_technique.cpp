#include "compile/sass_technique.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "core/subprocess.h"

namespace evo {

namespace fs = std::filesystem;

// GMMA counts every warpgroup MMA (wgmma.mma_async): HGMMA (fp16/bf16 operands), QGMMA (e4m3/e5m2),
// IGMMA (int8), BGMMA (binary); a stage that requires "wgmma" requires GMMA, whatever the dtype.
const char* const kTechniqueKeys[8] = {"GMMA",    "HGMMA", "QGMMA",      "UTMALDG",
                                       "UTMASTG", "SYNCS", "USETMAXREG", "MULTICAST"};

namespace {

// The mnemonic of one nvdisasm line ("/*0290*/  @!P0 UTMALDG.2D [UR8], [UR4] ;" -> "UTMALDG.2D"),
// or "" for labels, headers and directives.
std::string mnemonic(const std::string& line) {
  size_t pos = line.find("*/");
  if (line.find("/*") == std::string::npos || pos == std::string::npos) return "";
  std::istringstream in(line.substr(pos + 2));
  std::string tok;
  if (!(in >> tok)) return "";
  if (tok[0] == '@' && !(in >> tok)) return "";
  if (tok.empty() || tok[0] < 'A' || tok[0] > 'Z') return "";
  return tok;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool executable(const fs::path& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p); }

// Site directories of python3's `nvidia` namespace package (the wheel puts nvdisasm under it).
std::optional<fs::path> wheel_nvdisasm() {
  auto r = run_with_timeout({"/usr/bin/env", "python3", "-c", "import nvidia; print('\\n'.join(nvidia.__path__))"},
                            std::chrono::milliseconds(20000));
  if (!r.status.exited || r.status.code != 0) return std::nullopt;
  std::istringstream in(r.out);
  for (std::string dir; std::getline(in, dir);)
    for (const char* sub : {"cu13/bin/nvdisasm", "cuda_nvdisasm/bin/nvdisasm"})
      if (executable(fs::path(dir) / sub)) return fs::path(dir) / sub;
  return std::nullopt;
}

}  // namespace

TechniqueCounts count_techniques(const std::string& sass) {
  TechniqueCounts c;
  for (const char* k : kTechniqueKeys) c[k] = 0;
  std::istringstream in(sass);
  for (std::string line; std::getline(in, line);) {
    const std::string op = mnemonic(line);
    if (op.empty()) continue;
    for (const char* mma : {"HGMMA", "QGMMA", "IGMMA", "BGMMA"})
      if (starts_with(op, mma)) ++c["GMMA"];
    if (starts_with(op, "HGMMA")) ++c["HGMMA"];
    if (starts_with(op, "QGMMA")) ++c["QGMMA"];
    if (starts_with(op, "UTMALDG")) ++c["UTMALDG"];
    if (starts_with(op, "UTMASTG")) ++c["UTMASTG"];
    if (starts_with(op, "SYNCS")) ++c["SYNCS"];
    if (starts_with(op, "USETMAXREG")) ++c["USETMAXREG"];
    if (starts_with(op, "UTMALDG") && op.find(".MULTICAST") != std::string::npos) ++c["MULTICAST"];
  }
  return c;
}

std::optional<fs::path> find_nvdisasm() {
  if (const char* e = std::getenv("EVO_NVDISASM"); e && *e) {
    if (executable(e)) return fs::path(e);
    return std::nullopt;  // an explicit choice that does not exist is not silently replaced
  }
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    for (std::string dir; std::getline(in, dir, ':');)
      if (!dir.empty() && executable(fs::path(dir) / "nvdisasm")) return fs::path(dir) / "nvdisasm";
  }
  for (const char* home : {static_cast<const char*>(std::getenv("CUDA_HOME")), "/usr/local/cuda"})
    if (home && *home && executable(fs::path(home) / "bin" / "nvdisasm")) return fs::path(home) / "bin" / "nvdisasm";
  return wheel_nvdisasm();
}

std::optional<std::string> disassemble(const fs::path& cubin, std::string* error) {
  static const std::optional<fs::path> tool = find_nvdisasm();
  if (!tool) {
    if (error)
      *error =
          "nvdisasm not found (set EVO_NVDISASM, put it on PATH, or `pip install nvidia-cuda-nvdisasm`): "
          "the stage requires SASS technique counts";
    return std::nullopt;
  }
  auto r =
      run_with_timeout({tool->string(), "-c", cubin.string()}, std::chrono::milliseconds(60000), {}, size_t(256) << 20);
  if (!r.status.exited || r.status.code != 0) {
    if (error) *error = fmt::format("{} -c {} failed ({})", tool->string(), cubin.string(), r.status.describe());
    return std::nullopt;
  }
  return r.out;
}

std::optional<std::string> unmet_requirement(const TechniqueCounts& counts,
                                             const std::map<std::string, long>& requires_sass) {
  for (const auto& [key, need] : requires_sass) {
    auto it = counts.find(key);
    const long found = it == counts.end() ? 0 : it->second;
    if (it == counts.end() || found < need)
      return fmt::format("the stage requires {} >= {} in the SASS, found {}", key, need, found);
  }
  return std::nullopt;
}

}  // namespace evo
