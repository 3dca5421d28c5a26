#pragma once
// Which return addresses belong to code that is not the user's: the collector itself and the
// MPI library with its language bindings (MPICH's libmpi/libmpich, its Fortran bindings
// libmpichfort/libmpifort through which `use mpi`, `mpif.h` and `mpi_f08` calls pass, its C++
// bindings libmpichcxx/libmpicxx; Open MPI's libmpi_mpifh, libmpi_usempif08, libmpi_cxx).
// A call site starts at the first frame outside these, so a Fortran `call MPI_Bcast` is named
// after the user's routine, not after the binding's `pmpi_bcast_`, and a short
// SCALATRACE_STACK_DEPTH still tells the user's call sites apart.
#include <cstdint>
#include <string_view>
#include <vector>

namespace scalatrace::pmpi {

/// One executable segment of a loaded object: [lo, hi).
struct CodeRange {
  std::uintptr_t lo = 0, hi = 0;
  bool contains(std::uintptr_t pc) const { return pc >= lo && pc < hi; }
};

/// True for the file names of MPI libraries and their language bindings (by base name:
/// libmpi*, libmpich*, libpmpi*).
bool is_mpi_library(std::string_view path);
/// True for MPI's Fortran binding libraries (libmpichfort*, libmpifort*, libmpi_mpifh*,
/// libmpi_usempi*).
bool is_mpi_fortran_library(std::string_view path);

/// Executable segments of the loaded objects whose path satisfies `wanted` (scanned now).
std::vector<CodeRange> code_ranges_of(bool (*wanted)(std::string_view path));

/// The frames a call site skips, innermost first: the collector's own and the MPI library's.
/// Ranges are taken once, at the first use (after MPI_Init: every MPI library is loaded).
class LibraryFrames {
 public:
  /// The process-wide instance.
  static const LibraryFrames& get();
  /// True if pc lies in the collector or in an MPI library (or one of its bindings).
  bool skipped(std::uintptr_t pc) const {
    if (own_.contains(pc)) return true;
    for (const CodeRange& r : mpi_)
      if (r.contains(pc)) return true;
    return false;
  }

 private:
  LibraryFrames();
  CodeRange own_;               // libscalatrace (all of its loaded segments)
  std::vector<CodeRange> mpi_;  // executable segments of the MPI libraries
};

}  // namespace scalatrace::pmpi
