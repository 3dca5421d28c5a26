// SCALATRACE_CLUSTERS: ACURDION's signature building and K-farthest clustering over the radix
// tree (see cluster_merge.hpp). Messages: one uint64 length (UINT64_MAX = "failed below me"),
// then encode_clusters bytes, on a private duplicate of MPI_COMM_WORLD.
#include "finish/cluster_merge.hpp"

#include <mpi.h>

#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <vector>

#include "scalatrace/cluster/clustering.hpp"
#include "scalatrace/cluster/signature.hpp"

namespace scalatrace::pmpi {
namespace {

constexpr int kTag = 0x5c7b;
constexpr std::uint64_t kFailed = UINT64_MAX;

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(what) + " failed (MPI error " + std::to_string(rc) + ")");
}

void send_message(const std::optional<std::string>& bytes, int dest, MPI_Comm comm) {
  const std::uint64_t len = bytes ? bytes->size() : kFailed;
  check(PMPI_Send(&len, 1, MPI_UINT64_T, dest, kTag, comm), "PMPI_Send");
  if (bytes && len > 0) check(PMPI_Send(bytes->data(), static_cast<int>(len), MPI_BYTE, dest, kTag, comm), "PMPI_Send");
}

std::optional<std::string> recv_message(int src, MPI_Comm comm) {
  std::uint64_t len = 0;
  check(PMPI_Recv(&len, 1, MPI_UINT64_T, src, kTag, comm, MPI_STATUS_IGNORE), "PMPI_Recv");
  if (len == kFailed) return std::nullopt;
  std::string out(len, '\0');
  if (len > 0)
    check(PMPI_Recv(out.data(), static_cast<int>(len), MPI_BYTE, src, kTag, comm, MPI_STATUS_IGNORE), "PMPI_Recv");
  return out;
}

std::optional<std::string> broadcast(std::optional<std::string> bytes, MPI_Comm comm) {
  std::uint64_t len = bytes ? bytes->size() : kFailed;
  check(PMPI_Bcast(&len, 1, MPI_UINT64_T, 0, comm), "PMPI_Bcast");
  if (len == kFailed) return std::nullopt;
  std::string out = bytes ? std::move(*bytes) : std::string(len, '\0');
  if (len > 0) check(PMPI_Bcast(out.data(), static_cast<int>(len), MPI_BYTE, 0, comm), "PMPI_Bcast");
  return out;
}

/// One pass up the radix tree: `combine(mine, child)` at each parent; the root's value is
/// broadcast. nullopt anywhere (a failure) reaches every rank as nullopt.
template <class Combine>
std::optional<std::string> up_the_tree_and_back(std::optional<std::string> mine, int rank, int size, MPI_Comm comm,
                                                Combine combine) {
  for (int step = 1; step < size; step *= 2) {
    if (rank % (2 * step) == step) {
      send_message(mine, rank - step, comm);
      break;
    }
    if (rank % (2 * step) == 0 && rank + step < size) {
      std::optional<std::string> child = recv_message(rank + step, comm);
      if (!mine || !child) {
        mine.reset();
        continue;
      }
      try {
        mine = combine(*mine, *child);
      } catch (const std::exception&) {
        mine.reset();
      }
    }
  }
  return broadcast(rank == 0 ? std::move(mine) : std::nullopt, comm);
}

}  // namespace

std::uint64_t effective_cluster_count(std::uint64_t k, int nranks, int rank) {
  if (k == 0 || k <= static_cast<std::uint64_t>(nranks)) return k;
  if (rank == 0)
    std::fprintf(stderr,
                 "scalatrace: SCALATRACE_CLUSTERS='%llu' is more than the %d ranks; clustering off "
                 "(full trace)\n",
                 static_cast<unsigned long long>(k), nranks);
  return 0;
}

std::string cluster_before_merge(Trace& local, std::uint64_t k) {
  MPI_Comm comm = MPI_COMM_NULL;
  std::string error;
  const double t0 = PMPI_Wtime();
  try {
    check(PMPI_Comm_dup(MPI_COMM_WORLD, &comm), "PMPI_Comm_dup");
    int rank = 0, size = 1;
    check(PMPI_Comm_rank(comm, &rank), "PMPI_Comm_rank");
    check(PMPI_Comm_size(comm, &size), "PMPI_Comm_size");
    const std::int64_t nranks = size;
    std::optional<std::string> own;
    RankSignature signature;
    try {
      signature = compute_signature(local, rank);
      own = encode_clusters(0, {{signature, RankList::single(rank)}});
    } catch (const std::exception& e) {
      error = std::string("signature: ") + e.what();
    }
    // Alg. 1, Adaptive Signature Building: a parent compares its signature with its child's and
    // ORs the child's format into its own. The message carries (format, the sender's signature).
    std::optional<std::string> format_msg =
        up_the_tree_and_back(own, rank, size, comm, [&](const std::string& mine, const std::string& child) {
          FeatureMask mf = 0, cf = 0;
          const auto me = decode_clusters(mine, nranks, mf);
          const auto ch = decode_clusters(child, nranks, cf);
          return encode_clusters(mf | cf | signature_difference(me.at(0).head, ch.at(0).head), me);
        });
    if (!format_msg) throw std::runtime_error(error.empty() ? "signature building failed" : error);
    FeatureMask format = 0;
    decode_clusters(*format_msg, nranks, format);
    // Alg. 2, K-farthest clustering: children's cluster lists join the parent's, K are kept.
    std::optional<std::string> final_msg =
        up_the_tree_and_back(encode_clusters(format, {{signature, RankList::single(rank)}}), rank, size, comm,
                             [&](const std::string& mine, const std::string& child) {
                               FeatureMask f = 0;
                               auto list = decode_clusters(mine, nranks, f);
                               for (auto& c : decode_clusters(child, nranks, f)) list.push_back(std::move(c));
                               return encode_clusters(format, kfarthest_step(std::move(list), k, format));
                             });
    if (!final_msg) throw std::runtime_error("K-farthest clustering failed on some rank");
    const auto clusters = to_rank_clusters(decode_clusters(*final_msg, nranks, format));
    validate_rank_clusters(clusters, nranks);
    prepare_clustered_rank_trace(local, rank, clusters, format);
    if (rank == 0) {
      local.metadata["clusters.k"] = std::to_string(k);
      local.metadata["clusters.seconds"] = std::to_string(PMPI_Wtime() - t0);
    }
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "unknown error";
  }
  if (comm != MPI_COMM_NULL) PMPI_Comm_free(&comm);
  return error;
}

}  // namespace scalatrace::pmpi
