#pragma once
// Cross-rank merge inside the collector: at MPI_Finalize (or exit) every rank's compressed
// trace travels up a binary radix tree over MPI_COMM_WORLD (PMPI point-to-point only) and
// rank 0 writes the merged .sct file. See docs/algorithms.md ("Cross-rank merge").
#include <cstddef>
#include <string>

#include "scalatrace/trace.hpp"

namespace scalatrace::pmpi {

struct TreeMergeResult {
  double seconds = 0;         ///< wall time of the merge on this rank (rank 0: the whole tree)
  std::size_t peak_bytes = 0; ///< peak resident memory of this process (getrusage)
  bool wrote = false;         ///< rank 0: the file was written
  std::string error;          ///< empty on success; never thrown
};

/// Collective over MPI_COMM_WORLD; must be called by every rank while MPI is initialized.
/// `local` holds this rank's trace (make_rank_trace). Rank 0 writes `out_path` with metadata
/// merge_seconds and peak_memory_bytes. Never throws: failures are reported in `error` (a rank
/// whose trace could not be encoded sends a failure marker, so no rank waits forever).
TreeMergeResult merge_over_tree_and_write(Trace&& local, const std::string& out_path);

}  // namespace scalatrace::pmpi
