// Radix-tree merge over MPI (PMPI_* only, never the traced MPI_* entry points).
//
// Step k = 1, 2, 4, ...: a rank r with r % 2k == k sends its partial trace to r - k and is done;
// a rank with r % 2k == 0 receives from r + k (if it exists) and merges it (merge_into: r's
// subtree is the master). Message: one uint64 length (UINT64_MAX = "the sender failed"), then
// the encode_trace bytes in chunks of at most 1 GiB. A private duplicate of MPI_COMM_WORLD keeps
// these messages apart from the application's.
#include "tree_merge.hpp"

#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

#include "scalatrace/format.hpp"
#include "scalatrace/merge.hpp"

namespace scalatrace::pmpi {
namespace {

constexpr int kTag = 0x5c7a;
constexpr std::uint64_t kFailed = UINT64_MAX;
constexpr std::uint64_t kChunk = std::uint64_t{1} << 30;

std::size_t peak_rss() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::size_t>(ru.ru_maxrss) * 1024;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string(what) + " failed (MPI error " + std::to_string(rc) + ")");
}

void send_bytes(const std::string* bytes, int dest, MPI_Comm comm) {
  std::uint64_t len = bytes ? bytes->size() : kFailed;
  check(PMPI_Send(&len, 1, MPI_UINT64_T, dest, kTag, comm), "PMPI_Send");
  if (!bytes) return;
  for (std::uint64_t off = 0; off < len; off += kChunk) {
    const auto n = static_cast<int>(std::min(kChunk, len - off));
    check(PMPI_Send(bytes->data() + off, n, MPI_BYTE, dest, kTag, comm), "PMPI_Send");
  }
}

/// False if the sender reported a failure.
bool recv_bytes(std::string& out, int src, MPI_Comm comm) {
  std::uint64_t len = 0;
  check(PMPI_Recv(&len, 1, MPI_UINT64_T, src, kTag, comm, MPI_STATUS_IGNORE), "PMPI_Recv");
  if (len == kFailed) return false;
  out.resize(len);
  for (std::uint64_t off = 0; off < len; off += kChunk) {
    const auto n = static_cast<int>(std::min(kChunk, len - off));
    check(PMPI_Recv(out.data() + off, n, MPI_BYTE, src, kTag, comm, MPI_STATUS_IGNORE), "PMPI_Recv");
  }
  return true;
}

}  // namespace

TreeMergeResult merge_over_tree_and_write(Trace&& local, const std::string& out_path) {
  TreeMergeResult res;
  MPI_Comm comm = MPI_COMM_NULL;
  const double t0 = PMPI_Wtime();
  int rank = 0, size = 1;
  try {
    check(PMPI_Comm_dup(MPI_COMM_WORLD, &comm), "PMPI_Comm_dup");
    check(PMPI_Comm_rank(comm, &rank), "PMPI_Comm_rank");
    check(PMPI_Comm_size(comm, &size), "PMPI_Comm_size");
    bool ok = true;  // false once this subtree lost a part (the trace is then incomplete)
    for (int step = 1; step < size; step *= 2) {
      if (rank % (2 * step) == step) {
        std::string bytes;
        bool encoded = false;
        try {
          bytes = encode_trace(local);
          encoded = true;
        } catch (const std::exception& e) {
          res.error = std::string("encoding the trace for the merge: ") + e.what();
        }
        send_bytes(encoded ? &bytes : nullptr, rank - step, comm);
        break;
      }
      if (rank % (2 * step) == 0 && rank + step < size) {
        std::string bytes;
        const int child = rank + step;
        if (!recv_bytes(bytes, child, comm)) {
          ok = false;
          res.error = "rank " + std::to_string(child) + " could not send its trace";
          continue;
        }
        try {
          merge_into(local, decode_trace(bytes));
        } catch (const std::exception& e) {
          ok = false;
          res.error = "merging the trace of ranks from " + std::to_string(child) + ": " + e.what();
        }
      }
    }
    if (rank == 0) {
      res.seconds = PMPI_Wtime() - t0;
      res.peak_bytes = peak_rss();
      local.metadata["merge_seconds"] = std::to_string(res.seconds);
      local.metadata["peak_memory_bytes"] = std::to_string(res.peak_bytes);
      if (!ok) local.metadata["incomplete"] = res.error;
      write_trace_file(local, out_path);
      res.wrote = true;
    }
  } catch (const std::exception& e) {
    res.error = e.what();
  } catch (...) {
    res.error = "unknown error in the cross-rank merge";
  }
  if (comm != MPI_COMM_NULL) PMPI_Comm_free(&comm);
  res.seconds = PMPI_Wtime() - t0;
  if (res.peak_bytes == 0) res.peak_bytes = peak_rss();
  return res;
}

}  // namespace scalatrace::pmpi
