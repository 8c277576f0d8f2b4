#include "compile/call_state.h"

#include <fmt/format.h>

#include <set>
#include <sstream>

#include "compile/cubin.h"
#include "compile/sass_technique.h"
#include "core/paths.h"

namespace evo {

namespace {

// The instruction of an nvdisasm line, without its address comment and trailing " ;".
std::string instruction(const std::string& line) {
  const size_t end_comment = line.find("*/");
  std::string s = end_comment == std::string::npos ? line : line.substr(end_comment + 2);
  const size_t first = s.find_first_not_of(" \t");
  s = first == std::string::npos ? "" : s.substr(first);
  const size_t semi = s.rfind(" ;");
  return semi == std::string::npos ? s : s.substr(0, semi);
}

}  // namespace

std::optional<std::string> carried_state(const std::string& sass, const std::vector<std::string>& sections) {
  // Constant banks whose words the loader relocates: they hold module symbols' addresses.
  std::set<std::string> banks;
  const std::string rela = ".rela.nv.constant";
  for (const std::string& s : sections) {
    const std::string n = s.rfind(rela, 0) == 0 ? s.substr(rela.size()) : "";  // ".rela.nv.constant4": "4"
    if (!n.empty() && n.size() < 3 && n.find_first_not_of("0123456789") == std::string::npos)
      banks.insert(fmt::format("c[0x{:x}][", std::stoul(n)));
  }
  std::istringstream in(sass);
  for (std::string line; std::getline(in, line);) {
    if (line.find("/*") == std::string::npos) continue;  // labels, headers, directives
    if (line.find("SR_GLOBALTIMER") != std::string::npos || line.find("SR_CLOCK") != std::string::npos)
      return fmt::format("reads a clock (SASS `{}`): its output could depend on when it runs", instruction(line));
    for (const std::string& bank : banks)
      if (line.find(bank) != std::string::npos)
        return fmt::format(
            "uses module-scope __device__ memory (SASS `{}` reads a global's address): its output could depend on "
            "earlier calls (a read-only table belongs in __constant__ memory)",
            instruction(line));
  }
  return std::nullopt;
}

std::optional<std::string> device_heap_call(const std::string& cubin) {
  for (const std::string fn : {"malloc", "free"})
    if (cubin.find(std::string(1, '\0') + fn + std::string(1, '\0')) != std::string::npos)
      return fmt::format(
          "calls the device heap ({}): what it allocates outlives the call, and its output could depend on earlier "
          "calls",
          fn);
  return std::nullopt;
}

CallStateCheck check_call_state(const std::filesystem::path& cubin) {
  CallStateCheck r;
  std::string bytes;
  try {
    bytes = read_file(cubin);
  } catch (const std::exception& e) {
    r.error = e.what();
    return r;
  }
  const auto sass = disassemble(cubin, &r.error);
  if (!sass) return r;
  r.checked = true;
  r.state = device_heap_call(bytes);  // named first: its address is also a relocated bank's word
  if (!r.state) r.state = carried_state(*sass, section_names(bytes));
  return r;
}

}  // namespace evo
