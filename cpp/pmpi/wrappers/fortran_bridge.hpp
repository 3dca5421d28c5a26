#pragma once
// mpi_f08 support. MPICH's Fortran library (libmpichfort) implements many mpi_f08 procedures
// by calling PMPI_* directly (Init, Finalize, Wait*, Test*, Barrier, Comm_*, ...), bypassing
// the MPI_* wrappers. For those functions the collector also defines PMPI_* (generated): a call
// whose return address lies in the Fortran library is routed to the MPI_* wrapper (recorded),
// every other call goes straight to the MPI library's PMPI_* (found with dlsym(RTLD_NEXT)).
#include <cstdint>

namespace scalatrace::pmpi {

/// True if `return_address` lies in MPICH's Fortran binding library.
bool called_from_fortran(const void* return_address);
/// The next definition of `name` after this library (the MPI library's); aborts with a message
/// if there is none (calling our own definition would recurse forever).
void* next_symbol(const char* name);

}  // namespace scalatrace::pmpi
