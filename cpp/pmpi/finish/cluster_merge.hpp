#pragma once
// SCALATRACE_CLUSTERS=K inside the collector (ACURDION, docs/clustering.md): before the
// radix-tree merge, every rank computes its signature; Adaptive Signature Building (Alg. 1) and
// K-farthest clustering (Alg. 2) run over the same radix tree (PMPI point-to-point on a private
// communicator); rank 0 broadcasts the K clusters; then only the representatives' events enter
// the merge (assigned to their clusters' members) while every other rank contributes only its
// call sites, communicators and names.
#include <cstdint>
#include <string>

#include "scalatrace/model/trace.hpp"

namespace scalatrace::pmpi {

/// SCALATRACE_CLUSTERS larger than the number of ranks: one line on stderr (rank 0) and
/// clustering off. Returns the effective K (0 = off).
std::uint64_t effective_cluster_count(std::uint64_t k, int nranks, int rank);

/// Collective over MPI_COMM_WORLD (every rank, k >= 1). Rewrites `local` (this rank's
/// make_rank_trace) for the clustered merge. Never throws; on any failure every rank leaves its
/// trace unchanged (full, lossless merge) and the returned message says why ("" = clustered).
std::string cluster_before_merge(Trace& local, std::uint64_t k);

}  // namespace scalatrace::pmpi
