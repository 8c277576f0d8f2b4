#include "compile/cubin.h"

#include <elf.h>

#include <algorithm>
#include <cstring>

#include "core/sha256.h"

namespace evo {

namespace {
template <typename T>
bool read_at(const std::string& data, uint64_t off, T* out) {
  if (off > data.size() || sizeof(T) > data.size() - off) return false;
  std::memcpy(out, data.data() + off, sizeof(T));
  return true;
}

enum class Lookup { found, absent, malformed };

// The initialized bytes of global symbol `name` (at least `min_size` of them) in `out`.
Lookup symbol_bytes(const std::string& cubin, const std::string& name, size_t min_size, std::string* out,
                    std::string* error) {
  auto fail = [&](const char* why) {
    if (error) *error = why;
    return Lookup::malformed;
  };
  Elf64_Ehdr eh;
  if (!read_at(cubin, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
    return fail("not a 64-bit ELF cubin");
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) return fail("unexpected ELF section header size");
  auto section = [&](uint32_t i, Elf64_Shdr* sh) {
    return i < eh.e_shnum && read_at(cubin, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), sh);
  };
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr symtab;
    if (!section(i, &symtab)) return fail("truncated ELF section table");
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_entsize != sizeof(Elf64_Sym)) continue;
    Elf64_Shdr strtab;
    if (!section(symtab.sh_link, &strtab)) return fail("bad ELF string table");
    for (uint64_t k = 0; k < symtab.sh_size / sizeof(Elf64_Sym); ++k) {
      Elf64_Sym sym;
      if (!read_at(cubin, symtab.sh_offset + k * sizeof(Elf64_Sym), &sym)) return fail("truncated ELF symbols");
      uint64_t name_off = strtab.sh_offset + sym.st_name;
      if (name_off >= cubin.size() || cubin.size() - name_off < name.size() + 1 ||
          cubin.compare(name_off, name.size(), name) != 0 || cubin[name_off + name.size()] != '\0')
        continue;
      Elf64_Shdr data;
      if (!section(sym.st_shndx, &data) || sym.st_size < min_size || data.sh_type == SHT_NOBITS) {
        if (error) *error = name + " has no initialized data";
        return Lookup::malformed;
      }
      const uint64_t off = data.sh_offset + sym.st_value;
      if (off > cubin.size() || sym.st_size > cubin.size() - off) {
        if (error) *error = name + " lies outside the cubin";
        return Lookup::malformed;
      }
      *out = cubin.substr(off, sym.st_size);
      return Lookup::found;
    }
  }
  return Lookup::absent;
}
}  // namespace

std::optional<LaunchGeometry> read_launch_geometry(const std::string& cubin, std::string* error) {
  std::string bytes;
  switch (symbol_bytes(cubin, "evo_launch", 24, &bytes, error)) {
    case Lookup::found: break;
    case Lookup::absent:
      if (error) *error = "no evo_launch symbol: the variant must use EVO_EXPORT_LAUNCH(...)";
      return std::nullopt;
    case Lookup::malformed: return std::nullopt;
  }
  uint32_t words[9] = {};
  std::memcpy(words, bytes.data(), std::min(bytes.size(), sizeof(words)));
  return LaunchGeometry{words[0], words[1], words[2], words[3], words[4], words[5], words[6], words[7], words[8]};
}

std::optional<std::vector<TmaSpec>> read_tma_specs(const std::string& cubin, std::string* error) {
  std::string bytes;
  switch (symbol_bytes(cubin, "evo_tma", kTmaSlots * 24, &bytes, error)) {
    case Lookup::found: break;
    case Lookup::absent: return std::vector<TmaSpec>{};
    case Lookup::malformed: return std::nullopt;
  }
  std::vector<TmaSpec> specs;
  for (int i = 0; i < kTmaSlots; ++i) {
    uint32_t w[6];
    std::memcpy(w, bytes.data() + i * sizeof(w), sizeof(w));
    specs.push_back(TmaSpec{w[0], w[1], w[2], w[3], w[4], w[5]});
  }
  return specs;
}

namespace {
bool debug_section(const std::string& name) {
  for (const char* prefix : {".debug", ".nv_debug", ".rel.debug", ".rela.debug", ".rel.nv_debug", ".rela.nv_debug"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}
}  // namespace

std::vector<std::string> section_names(const std::string& cubin) {
  Elf64_Ehdr eh;
  if (!read_at(cubin, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr))
    return {};
  auto section = [&](uint32_t i, Elf64_Shdr* sh) {
    return i < eh.e_shnum && read_at(cubin, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), sh);
  };
  Elf64_Shdr names;
  if (!section(eh.e_shstrndx, &names) || names.sh_offset > cubin.size()) return {};
  std::vector<std::string> out;
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!section(i, &sh)) return {};
    const uint64_t name_at = names.sh_offset + sh.sh_name;
    out.push_back(name_at < cubin.size() ? std::string(cubin.c_str() + name_at) : "");
  }
  return out;
}

std::optional<ParameterBlock> parameter_block(const std::string& cubin) {
  const std::vector<std::string> names = section_names(cubin);
  Elf64_Ehdr eh;
  if (names.empty() || !read_at(cubin, 0, &eh)) return std::nullopt;
  std::optional<ParameterBlock> block;
  for (uint32_t i = 0; i < names.size(); ++i) {
    Elf64_Shdr sh;
    if (names[i].rfind(".nv.info.", 0) != 0 || !read_at(cubin, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), &sh) ||
        sh.sh_offset > cubin.size() || sh.sh_size > cubin.size() - sh.sh_offset)
      continue;
    // Attributes: format byte, attribute byte, then 2 bytes (a value, or the size of the
    // EIFMT_SVAL (4) payload that follows). PARAM_CBANK (0x0a): bank symbol u32, offset u16, size u16.
    const std::string info = cubin.substr(sh.sh_offset, sh.sh_size);
    for (size_t at = 0; at + 4 <= info.size();) {
      const uint8_t format = info[at], attribute = info[at + 1];
      uint16_t size = 0;
      read_at(info, at + 2, &size);
      uint16_t offset = 0, bytes = 0;
      if (format == 0x04 && attribute == 0x0a && size >= 8 && read_at(info, at + 8, &offset) &&
          read_at(info, at + 10, &bytes)) {
        const ParameterBlock b{offset, uint32_t(offset) + bytes};
        block = block ? ParameterBlock{std::min(block->begin, b.begin), std::max(block->end, b.end)} : b;
      }
      at += 4 + (format == 0x04 ? size : 0);
    }
  }
  return block;
}

std::string code_identity(const std::string& cubin) {
  Elf64_Ehdr eh;
  if (!read_at(cubin, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr))
    return "";
  auto section = [&](uint32_t i, Elf64_Shdr* sh) {
    return i < eh.e_shnum && read_at(cubin, eh.e_shoff + uint64_t(i) * sizeof(Elf64_Shdr), sh);
  };
  Elf64_Shdr names;
  if (!section(eh.e_shstrndx, &names) || names.sh_offset > cubin.size()) return "";
  Sha256 h;
  h.update(cubin.substr(0, EI_NIDENT)).update(std::to_string(eh.e_machine) + "/" + std::to_string(eh.e_flags));
  for (uint32_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!section(i, &sh)) return "";
    const uint64_t name_at = names.sh_offset + sh.sh_name;
    const std::string name = name_at < cubin.size() ? std::string(cubin.c_str() + name_at) : "";
    if (debug_section(name)) continue;
    const bool has_bytes = sh.sh_type != SHT_NOBITS;
    if (has_bytes && (sh.sh_offset > cubin.size() || sh.sh_size > cubin.size() - sh.sh_offset)) return "";
    h.update(name).update("\0", 1).update(std::to_string(sh.sh_type) + "/" + std::to_string(sh.sh_flags) + "/" +
                                          std::to_string(sh.sh_size) + "/" + std::to_string(sh.sh_info) + "\0");
    if (has_bytes) h.update(cubin.substr(sh.sh_offset, sh.sh_size));
  }
  return h.hex();
}

}  // namespace evo
