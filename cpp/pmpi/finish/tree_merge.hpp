#pragma once
// Cross-rank merge inside the collector: at MPI_Finalize (or exit) every rank's compressed
// trace travels up a binary radix tree over MPI_COMM_WORLD (PMPI point-to-point only) and
// rank 0 writes the merged .sct file. See docs/algorithms.md ("Cross-rank merge").
#include <cstddef>
#include <string>

#include "finish/spill_file.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace::pmpi {

struct TreeMergeResult {
  double seconds = 0;          ///< wall time of the merge on this rank (rank 0: the whole tree)
  std::size_t peak_bytes = 0;  ///< peak resident memory of this process (getrusage)
  bool wrote = false;          ///< rank 0: the file was written
  std::string error;           ///< empty on success; never thrown
};

/// What a rank's compressor moved out of memory (SCALATRACE_MEMORY), and its measured peak.
struct RankSpill {
  const SpillFile* file = nullptr;  ///< null or empty: nothing spilled
  std::uint64_t compressor_peak_bytes = 0;
};

/// Collective over MPI_COMM_WORLD; must be called by every rank while MPI is initialized.
/// `local` holds this rank's trace (make_rank_trace) without the stretches it spilled. Rank 0
/// writes `out_path`: the merged trace with metadata merge_seconds, peak_memory_bytes,
/// compressor_peak_bytes (the largest over the ranks) and, if any rank spilled, rank_segments,
/// followed by every rank's spilled segments, streamed one at a time (docs/format.md, "Rank
/// segments"). Never throws: failures are reported in `error` (a rank whose trace or segment
/// could not be sent sends a failure marker, so no rank waits forever).
/// `config`: the merge's matching rule (the collector's SCALATRACE_SITE_MATCH); its
/// rank_time_ns is set here to the mean over the ranks of `own_recorded_ns`, this rank's
/// recorded time (recorded_time_ns summed over its events).
/// `lossy_threshold` > 0 (SCALATRACE_LOSSY): rank 0 makes the merged trace lossy (make_lossy)
/// before writing it.
TreeMergeResult merge_over_tree_and_write(Trace&& local, const std::string& out_path, const MergeConfig& config,
                                          double own_recorded_ns, RankSpill spill = {},
                                          std::uint64_t lossy_threshold = 0);

}  // namespace scalatrace::pmpi
