#include "wrappers/fortran_bridge.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "capture/library_frames.hpp"

namespace scalatrace::pmpi {
namespace {

const std::vector<CodeRange>& fortran_ranges() {
  static const std::vector<CodeRange> ranges = code_ranges_of(is_mpi_fortran_library);
  return ranges;
}

}  // namespace

bool called_from_fortran(const void* return_address) {
  const auto pc = reinterpret_cast<std::uintptr_t>(return_address);
  return std::any_of(fortran_ranges().begin(), fortran_ranges().end(),
                     [pc](const CodeRange& r) { return r.contains(pc); });
}

void* next_symbol(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (!fn) {
    std::fprintf(stderr,
                 "scalatrace: %s not found in the MPI library (libscalatrace must be "
                 "loaded before libmpi)\n",
                 name);
    std::abort();
  }
  return fn;
}

}  // namespace scalatrace::pmpi
