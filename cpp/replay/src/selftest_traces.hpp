#pragma once
// Small crafted traces the replay's own tests need (written without MPI, with the real
// IntraCompressor, merge and write_trace_file).
#include <string>

namespace scalatrace::replay {

/// Writes a 2-rank trace in which rank 0 receives (tag 77, from rank 1) a message that rank 1
/// never sends: a replay of it cannot proceed, which is what the watchdog must report.
void write_broken_trace(const std::string& path);

/// Writes a 2-rank trace of a program with two threads per rank calling MPI (metadata
/// "mpi_threads" = 2). Thread t of each rank posts Irecv+Isend with tag t to the other rank and
/// waits for both with MPI_Waitall. Rank 0's recorded order is thread 0 then thread 1, rank 1's
/// thread 1 then thread 0, three times over: a replay that lets each Waitall block the whole
/// rank deadlocks at once, although the threaded original could not.
void write_interleaved_trace(const std::string& path);

}  // namespace scalatrace::replay
