#pragma once
// Even all-to-all counts: a lossy transform for programs whose MPI_Alltoallv counts follow
// their data (NPB IS: each rank sends every other rank the keys that fall in its buckets, a
// random share of the same total). No law of the rank count can give such counts at another
// size, so extrapolation refuses them; this transform replaces every Alltoallv / Ialltoallv
// count array by the even split of the call's mean total over the ranks (each occurrence of
// each node on its own), in whole datatype elements, on both the send and the receive side.
// The structure, the calls, the per-rank totals' mean and everything else stay exact. See
// docs/extrapolation.md, "Data-dependent counts".
#include <cstdint>

#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// What even_alltoall_counts changed.
struct EvenCountsReport {
  std::uint64_t nodes = 0;           ///< Alltoallv / Ialltoallv event nodes rewritten
  std::uint64_t calls = 0;           ///< calls rewritten (occurrences over all ranks)
  std::uint64_t changed_arrays = 0;  ///< count arrays (send and receive side each) not already even
  /// Largest |count - even count| / even count over every element of every call (0 when the
  /// counts were even already).
  double max_element_deviation = 0;
  /// Largest |total - even total| / even total over every call's send and receive totals.
  double max_total_deviation = 0;
};

/// A copy of `trace` whose Alltoallv / Ialltoallv count arrays are even splits of each call's
/// mean total over the ranks (Bytes / Bytes2 follow). Lossy: `report` says how far the
/// original counts were from even. Throws UsageError on a clustered trace (its members' counts
/// are not recorded).
Trace even_alltoall_counts(const Trace& trace, EvenCountsReport* report = nullptr);

}  // namespace scalatrace
