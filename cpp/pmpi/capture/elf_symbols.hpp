#pragma once
// Function names from a module's ELF symbol table (.symtab, else .dynsym), for call sites in
// executables that export no dynamic symbols (dladdr finds nothing there). Used at finalize only.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace scalatrace::pmpi {

/// Readable form of a symbol name: C++ names demangled, gfortran module procedures
/// (`__halo_MOD_exchange`) as `halo::exchange`; other names unchanged.
std::string demangle(const char* name);

class ElfSymbols {
 public:
  /// Name (demangled) of the function containing `vaddr` in the module file, "" if unknown.
  std::string lookup(const std::string& path, std::uint64_t vaddr);

 private:
  struct Symbol {
    std::uint64_t start, size;
    std::string name;
  };
  const std::vector<Symbol>& load(const std::string& path);
  std::map<std::string, std::vector<Symbol>> files_;
};

}  // namespace scalatrace::pmpi
