#include "compile/cubin.h"

#include <elf.h>

#include <cstring>

namespace evo {

namespace {
template <typename T>
bool read_at(const std::string& data, uint64_t off, T* out) {
  if (off > data.size() || sizeof(T) > data.size() - off) return false;
  std::memcpy(out, data.data() + off, sizeof(T));
  return true;
}
}  // namespace

std::optional<LaunchGeometry> read_launch_geometry(const std::string& cubin, std::string* error) {
  auto fail = [&](const char* why) -> std::optional<LaunchGeometry> {
    if (error) *error = why;
    return std::nullopt;
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
      if (name_off >= cubin.size() || cubin.size() - name_off < 11 || cubin.compare(name_off, 10, "evo_launch") != 0 ||
          cubin[name_off + 10] != '\0')
        continue;
      Elf64_Shdr data;
      if (!section(sym.st_shndx, &data) || sym.st_size < 24 || data.sh_type == SHT_NOBITS)
        return fail("evo_launch has no initialized data");
      uint32_t words[6];
      if (!read_at(cubin, data.sh_offset + sym.st_value, &words)) return fail("evo_launch lies outside the cubin");
      return LaunchGeometry{words[0], words[1], words[2], words[3], words[4], words[5]};
    }
  }
  return fail("no evo_launch symbol: the variant must use EVO_EXPORT_LAUNCH(...)");
}

}  // namespace evo
