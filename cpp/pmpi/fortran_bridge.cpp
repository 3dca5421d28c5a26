#include "fortran_bridge.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace scalatrace::pmpi {
namespace {

struct Range {
  std::uintptr_t lo, hi;
};

int collect_fortran(dl_phdr_info* info, std::size_t, void* data) {
  const char* name = info->dlpi_name;
  if (!name || !(std::strstr(name, "libmpichfort") || std::strstr(name, "libmpifort")))
    return 0;
  auto* ranges = static_cast<std::vector<Range>*>(data);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
      ranges->push_back(Range{info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
  }
  return 0;
}

const std::vector<Range>& fortran_ranges() {
  static const std::vector<Range> ranges = [] {
    std::vector<Range> r;
    dl_iterate_phdr(collect_fortran, &r);
    return r;
  }();
  return ranges;
}

}  // namespace

bool called_from_fortran(const void* return_address) {
  const auto pc = reinterpret_cast<std::uintptr_t>(return_address);
  for (const Range& r : fortran_ranges())
    if (pc >= r.lo && pc < r.hi) return true;
  return false;
}

void* next_symbol(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (!fn) {
    std::fprintf(stderr, "scalatrace: %s not found in the MPI library (libscalatrace must be "
                 "loaded before libmpi)\n", name);
    std::abort();
  }
  return fn;
}

}  // namespace scalatrace::pmpi
