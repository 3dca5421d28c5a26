#pragma once
// In-process generator of per-rank MPI event streams, for tests and for large-scale runs of
// the compressor and the cross-rank merge without MPI (millions of ranks, millions of
// timesteps: events are handed to a callback one by one, nothing is kept).
//
// Every pattern is an SPMD program as a real code would record it:
//   Init; <setup>; for step in [0, timesteps): <step body>; Finalize
// Call sites are interned from fixed fake frames (module "synthetic"), so the same program
// point gets the same site id on every rank that interns into an empty table in the same
// order (each pattern interns all of its sites up front, in a fixed order).
//
// Patterns (step bodies):
//   Stencil1D  neighbours at relative offsets -2, -1, +1, +2 on a ring (wrap) or a line;
//   Stencil2D  9-point stencil on a px x py grid (8 neighbours);
//   Stencil3D  27-point stencil on a px x py x pz grid (26 neighbours);
//     for each stencil, per step: one Irecv per neighbour (one call site, as in a loop over
//     neighbours), one Isend per neighbour (another site), one Waitall on all 2k requests
//     (handle-buffer offsets 2k..1), then one Allreduce of 8 bytes. Peers are relative
//     (peer - rank); send tag = neighbour index, receive tag = index of the opposite
//     direction. Without wrap-around, neighbours outside the grid are skipped, so boundary
//     ranks have fewer calls per step (and different loop trip counts) than interior ones.
//   Collectives  Bcast (root 0), Allreduce, Barrier, Reduce (root 0), Alltoall per step.
//   RowColumn  setup: two Comm_split on a px x py grid (rows: comm id 2, columns: comm id 3);
//              per step: Allreduce on the row comm, Bcast (root 0) on the column comm,
//              Allreduce on MPI_COMM_WORLD.
//   Irregular  seeded random per (seed, rank): per step one of several branches (blocking
//              Send/Recv pairs to random peers with random sizes, a data-dependent inner loop
//              of 1..5 Isend/Wait, a collective, an Iprobe) — the compressor's worst case.
// Timings (compute_ns, duration_ns) are deterministic pseudo-random functions of
// (rank, step, event) so that histograms have something to hold.
//
// Cost: the regular patterns allocate nothing per event (one Event is reused; the callback
// sees a const reference valid only during the call).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/model/callsite.hpp"
#include "scalatrace/model/comm_table.hpp"
#include "scalatrace/model/event.hpp"

namespace scalatrace {

enum class SyntheticPattern { Stencil1D, Stencil2D, Stencil3D, Collectives, RowColumn, Irregular };

std::string_view synthetic_pattern_name(SyntheticPattern p);
/// Inverse of synthetic_pattern_name ("stencil1d", "stencil2d", "stencil3d", "collectives",
/// "rowcolumn", "irregular"); throws UsageError for anything else.
SyntheticPattern synthetic_pattern_from_name(std::string_view name);

struct SyntheticSpec {
  SyntheticPattern pattern = SyntheticPattern::Stencil2D;
  std::int64_t nranks = 16;
  std::int64_t timesteps = 10;
  bool wrap = true;           ///< periodic boundaries (stencils)
  std::int64_t bytes = 4096;  ///< message size of the stencil exchanges
  std::uint64_t seed = 1;     ///< Irregular: random seed (combined with the rank)
  /// Timings vary pseudo-randomly per event (true) or are constant (compute 2000 ns,
  /// duration 500 ns), e.g. to compare compressed sizes without histogram-bin noise.
  bool timing_jitter = true;
  /// Process grid for stencils / RowColumn (product must equal nranks); empty: as square /
  /// cubic as possible (like MPI_Dims_create).
  std::vector<std::int64_t> dims;
};

/// Balanced factorization of n into `ndims` factors, largest first (MPI_Dims_create style).
std::vector<std::int64_t> synthetic_grid(std::int64_t n, std::size_t ndims);

/// Streams rank `rank`'s events into `sink`. Sites are interned into `sites`; the
/// communicators the rank holds (world, and the split communicators) are added to `comms`
/// (holders empty, as in a RankRecording). Throws UsageError for an invalid spec.
void generate(const SyntheticSpec& spec, std::int64_t rank, const std::function<void(const Event&)>& sink,
              CallSiteTable& sites, CommTable& comms);

/// Convenience: the whole stream of one rank as a RankRecording (small specs only).
RankRecording record_synthetic(const SyntheticSpec& spec, std::int64_t rank);

/// Rank `rank`'s stream compressed online by the collector's IntraCompressor, as the per-rank
/// trace the collector hands to the merge (make_rank_trace). `events`, if given, counts the
/// events generated.
Trace synthetic_rank_trace(const SyntheticSpec& spec, std::int64_t rank, const CompressorConfig& config = {},
                           std::uint64_t* events = nullptr);

/// Every rank's synthetic_rank_trace merged over the radix tree (TreeMerger, streaming, one
/// rank in memory at a time). `after_push`, if given, sees the merger after each rank.
Trace synthetic_merged_trace(const SyntheticSpec& spec, const std::function<void(const TreeMerger&)>& after_push = {});

}  // namespace scalatrace
