#include "compile/ptxas_report.h"

#include <regex>
#include <sstream>

namespace evo {

std::optional<PtxasResources> parse_ptxas_report(const std::string& log, const std::string& entry) {
  static const std::regex props(R"(Function properties for (\S+))");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex compiling(R"(Compiling entry function '([^']+)')");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex serialized(R"(wgmma[^\n]*serializ|serializ[^\n]*wgmma)", std::regex::icase);

  PtxasResources r;
  bool found = false;
  std::string current_props, current_entry;
  std::istringstream in(log);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.size() > 4096) line.resize(4096);  // std::regex recursion depth grows with length
    if (std::regex_search(line, m, serialized)) r.wgmma_serialized = true;
    if (std::regex_search(line, m, compiling)) current_entry = m[1];
    if (std::regex_search(line, m, props)) current_props = m[1];
    if (current_props == entry && std::regex_search(line, m, frame)) {
      r.stack_bytes = std::stol(m[1]);
      r.spill_stores = std::stol(m[2]);
      r.spill_loads = std::stol(m[3]);
    }
    if (current_entry == entry && std::regex_search(line, m, used)) {
      found = true;
      r.registers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) r.static_smem = std::stol(m[1]);
      if (std::regex_search(line, m, barriers)) r.barriers = std::stoi(m[1]);
    }
  }
  if (!found) return std::nullopt;
  return r;
}

}  // namespace evo
