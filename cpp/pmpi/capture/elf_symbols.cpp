#include "capture/elf_symbols.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

namespace scalatrace::pmpi {
namespace {

template <class T>
bool read_at(const std::string& data, std::uint64_t off, T& out) {
  if (off > data.size() || data.size() - off < sizeof(T)) return false;
  std::memcpy(&out, data.data() + off, sizeof(T));
  return true;
}

}  // namespace

std::string demangle(const char* name) {
  // gfortran module procedures: __<module>_MOD_<procedure>
  const std::string_view view(name);
  if (view.starts_with("__")) {
    const auto mod = view.find("_MOD_", 2);
    if (mod != std::string_view::npos && mod > 2 && mod + 5 < view.size())
      return std::string(view.substr(2, mod - 2)) + "::" + std::string(view.substr(mod + 5));
  }
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out = d;
  std::free(d);
  return out;
}

const std::vector<ElfSymbols::Symbol>& ElfSymbols::load(const std::string& path) {
  auto [it, added] = files_.try_emplace(path);
  if (!added) return it->second;
  std::vector<Symbol>& syms = it->second;
  std::ifstream in(path, std::ios::binary);
  if (!in) return syms;
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  if (!read_at(data, 0, eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_shentsize != sizeof(Elf64_Shdr))
    return syms;
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  for (std::size_t i = 0; i < sections.size(); ++i)
    if (!read_at(data, eh.e_shoff + i * sizeof(Elf64_Shdr), sections[i])) return syms;
  for (std::uint32_t wanted : {std::uint32_t{SHT_SYMTAB}, std::uint32_t{SHT_DYNSYM}}) {
    for (const Elf64_Shdr& sh : sections) {
      if (sh.sh_type != wanted || sh.sh_link >= sections.size()) continue;
      const Elf64_Shdr& strtab = sections[sh.sh_link];
      for (std::uint64_t off = 0; off + sizeof(Elf64_Sym) <= sh.sh_size; off += sizeof(Elf64_Sym)) {
        Elf64_Sym s;
        if (!read_at(data, sh.sh_offset + off, s)) break;
        if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || s.st_value == 0) continue;
        if (s.st_name >= strtab.sh_size || strtab.sh_offset + s.st_name >= data.size()) continue;
        const char* name = data.data() + strtab.sh_offset + s.st_name;
        const std::size_t maxlen = data.size() - (strtab.sh_offset + s.st_name);
        syms.push_back(Symbol{s.st_value, s.st_size, demangle(std::string(name, strnlen(name, maxlen)).c_str())});
      }
    }
    if (!syms.empty()) break;
  }
  std::sort(syms.begin(), syms.end(), [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
  return syms;
}

std::string ElfSymbols::lookup(const std::string& path, std::uint64_t vaddr) {
  const auto& syms = load(path);
  auto it =
      std::upper_bound(syms.begin(), syms.end(), vaddr, [](std::uint64_t v, const Symbol& s) { return v < s.start; });
  // Several symbols may share a start (aliases): any of them covering vaddr will do.
  while (it != syms.begin()) {
    --it;
    if (vaddr < it->start + it->size) return it->name;
    if (it->start + 4096 < vaddr) break;
  }
  return {};
}

}  // namespace scalatrace::pmpi
