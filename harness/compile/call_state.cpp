#include "compile/call_state.h"

#include <fmt/format.h>

#include <cctype>
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

// The special registers a kernel may read (S2R, S2UR, CS2R): where the thread, its lane, its CTA
// and its cluster sit in the launch, and the shared-memory window (SR_SWINHI: a generic address of
// shared memory, cvta.shared). Each is fixed by the launch's geometry, so two launches of one
// problem read the same values. Fit to what the committed variants and the suite's controls read
// (sm_90a, every stage and task: SR_TID.X, SR_CTAID.*, SR_LANEID, SR_LTMASK, SR_CgaCtaId,
// SR_SWINHI), with their siblings (the other axes, lane masks, SR_SWINLO). Anything else is
// refused: SR_VIRTUALSMID (%smid) and SR_VIRTID (%warpid) are where the scheduler put the warp,
// SR_PM* are performance counters, SR_SMEMSZ is the SM's shared memory, not the launch's.
bool allowed_special_register(const std::string& reg) {
  static const std::set<std::string> allowed = {"SR_TID.X",   "SR_TID.Y",  "SR_TID.Z",    "SR_CTAID.X", "SR_CTAID.Y",
                                                "SR_CTAID.Z", "SR_LANEID", "SR_EQMASK",   "SR_LTMASK",  "SR_LEMASK",
                                                "SR_GTMASK",  "SR_GEMASK", "SR_CgaCtaId", "SR_SWINHI",  "SR_SWINLO"};
  return allowed.count(reg) > 0;
}

// Bank 0 below the parameter block holds the driver's words for the launch (sm_90, ptxas 13.0,
// read back from PTX of each special register): [0x0, 0x18) block and grid dims (%ntid, %nctaid),
// [0x20, 0x28) the local window (cvta.local), 0x28 the stack pointer, 0x2c %dynamic_smem_size,
// [0x140, 0x168) the cluster's geometry (%is_explicit_cluster, %cluster_nctaid, their
// reciprocals, %nclusterid), 0x188 %cluster_nctarank, 0x198 the address of the parameter block
// (TMA descriptors passed as parameters), 0x208 the global memory descriptor. Committed variants
// read 0xc-0x14, 0x28, 0x140, 0x198 and 0x208. Refused, among others: 0x30 %gridid (the context's
// launch count), [0x40, 0xc0) %envreg*, 0x10c %nsmid, 0x190 %current_graph_exec.
bool allowed_launch_constant(uint32_t offset, uint32_t width) {
  static const std::pair<uint32_t, uint32_t> ranges[] = {{0x0, 0x18},    {0x20, 0x30},   {0x140, 0x168},
                                                         {0x188, 0x18c}, {0x198, 0x1a0}, {0x208, 0x210}};
  for (const auto& [lo, hi] : ranges)
    if (offset >= lo && offset + width <= hi) return true;
  return false;
}

// Bytes an instruction reads from a constant operand: 16 for .128, 8 for .64 and doubles, else 4.
uint32_t operand_width(const std::string& ins) {
  std::istringstream in(ins);
  std::string op;
  in >> op;
  if (!op.empty() && op[0] == '@') in >> op;
  if (op.find(".128") != std::string::npos) return 16;
  return op.find(".64") != std::string::npos || (!op.empty() && op[0] == 'D') ? 8 : 4;
}

// The first bank-0 operand of `ins` outside the parameter block [begin, end) and the launch
// constants, or "". An offset from a register (c[0x0][R2+0x210]) is refused too: the register
// could reach 0x30. A word past the block's end is the driver's too (hacker round 12).
std::string bank0_outside(const std::string& ins, uint32_t parameter_block, uint32_t parameter_end) {
  const std::string bank0 = "c[0x0][";
  for (size_t at = ins.find(bank0); at != std::string::npos; at = ins.find(bank0, at + 1)) {
    const size_t end = ins.find(']', at + bank0.size());
    const std::string operand = ins.substr(at, end == std::string::npos ? std::string::npos : end + 1 - at);
    const std::string index = operand.substr(bank0.size(), operand.size() - bank0.size() - 1);
    uint32_t offset = 0;
    bool constant = index == "RZ" || index == "URZ";
    if (index.rfind("0x", 0) == 0 && index.size() > 2 &&
        index.find_first_not_of("0123456789abcdef", 2) == std::string::npos) {
      offset = uint32_t(std::stoul(index, nullptr, 16));
      constant = true;
    }
    if (!constant) return operand;
    if (offset + operand_width(ins) > parameter_end) return operand;
    if (offset >= parameter_block) continue;
    if (!allowed_launch_constant(offset, operand_width(ins))) return operand;
  }
  return "";
}

// The first special register `ins` reads that allowed_special_register refuses, or "".
std::string special_register_outside(const std::string& ins) {
  for (size_t at = ins.find("SR_"); at != std::string::npos; at = ins.find("SR_", at + 1)) {
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(ins[at - 1])) || ins[at - 1] == '_')) continue;
    size_t end = at;
    while (end < ins.size() &&
           (std::isalnum(static_cast<unsigned char>(ins[end])) || ins[end] == '_' || ins[end] == '.'))
      ++end;
    const std::string reg = ins.substr(at, end - at);
    if (!allowed_special_register(reg)) return reg;
  }
  return "";
}

}  // namespace

std::optional<std::string> carried_state(const std::string& sass, const std::vector<std::string>& sections,
                                         uint32_t parameter_block, uint32_t parameter_end) {
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
    if (const std::string reg = special_register_outside(instruction(line)); !reg.empty())
      return fmt::format("reads special register {} (SASS `{}`): only the launch's geometry may be read", reg,
                         instruction(line));
    const std::string word = bank0_outside(instruction(line), parameter_block, parameter_end);
    if (!word.empty() && word.find('R') != std::string::npos)
      return fmt::format(
          "reads launch constants at a computed offset {} (SASS `{}`): a register could reach the driver's words "
          "below the parameters (c[0x0][0x30] is %gridid)",
          word, instruction(line));
    if (!word.empty())
      return fmt::format(
          "reads launch constant {} (SASS `{}`): below its parameters only the launch's geometry and memory windows "
          "may be read, and nothing past their end (0x{:x})",
          word, instruction(line), parameter_end);
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
  const std::optional<ParameterBlock> parameters = parameter_block(bytes);
  if (!r.state && !parameters)
    r.state = "has no parameter block in its .nv.info (EIATTR_PARAM_CBANK): its constant bank 0 cannot be read";
  if (!r.state) r.state = carried_state(*sass, section_names(bytes), parameters->begin, parameters->end);
  return r;
}

}  // namespace evo
