// Radix-tree merge over MPI (PMPI_* only, never the traced MPI_* entry points).
//
// Step k = 1, 2, 4, ...: a rank r with r % 2k == k sends its partial trace to r - k and is done;
// a rank with r % 2k == 0 receives from r + k (if it exists) and merges it (merge_into: r's
// subtree is the master). Message: one uint64 length (UINT64_MAX = "the sender failed"), then
// the encode_trace_for_transfer bytes (exact bin counts) in chunks of at most 1 GiB. A private
// duplicate of MPI_COMM_WORLD keeps these messages apart from the application's.
// Then every rank takes part in a second phase: rank 0 gathers what each rank spilled under
// SCALATRACE_MEMORY (segments, bytes, compressor peak), writes the merged trace and copies the
// ranks' segments after it in rank order, one segment per message (docs/format.md).
#include "finish/tree_merge.hpp"

#include <mpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "scalatrace/compress/lossy.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/support/safe_file.hpp"

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

/// Phase 1: the radix-tree merge; rank 0 ends with the merged trace in `local`. False if a
/// part of the tree was lost (the error says which).
bool merge_up_the_tree(Trace& local, int rank, int size, MPI_Comm comm, const MergeConfig& config, std::string& error) {
  bool ok = true;
  for (int step = 1; step < size; step *= 2) {
    if (rank % (2 * step) == step) {
      std::string bytes;
      bool encoded = false;
      try {
        bytes = encode_trace_for_transfer(local);  // exact counts: rounded once, in the file
        encoded = true;
      } catch (const std::exception& e) {
        error = std::string("encoding the trace for the merge: ") + e.what();
      }
      send_bytes(encoded ? &bytes : nullptr, rank - step, comm);
      break;
    }
    if (rank % (2 * step) == 0 && rank + step < size) {
      std::string bytes;
      const int child = rank + step;
      if (!recv_bytes(bytes, child, comm)) {
        ok = false;
        error = "rank " + std::to_string(child) + " could not send its trace";
        continue;
      }
      try {
        merge_into(local, decode_trace(bytes), config);
      } catch (const std::exception& e) {
        ok = false;
        error = "merging the trace of ranks from " + std::to_string(child) + ": " + e.what();
      }
    }
  }
  return ok;
}

/// Per rank: spilled segments, spilled bytes, compressor peak (gathered at rank 0).
struct SpillSummary {
  std::uint64_t segments = 0, bytes = 0, peak = 0;
};

/// Phase 2 on a rank other than 0: sends its spilled segments to rank 0, one message each
/// (a failure marker instead of a segment that cannot be read back, then nothing more).
void send_segments(const SpillFile* spill, MPI_Comm comm) {
  if (!spill) return;
  for (std::size_t i = 0; i < spill->segments(); ++i) {
    std::string bytes;
    try {
      bytes = spill->read(i);
    } catch (const std::exception&) {
      send_bytes(nullptr, 0, comm);
      return;
    }
    send_bytes(&bytes, 0, comm);
  }
}

/// Phase 2 on rank 0: writes the merged trace, then every rank's segments in rank order as
/// they arrive (one held in memory at a time). A segment that cannot be had (or written) makes
/// the whole file fail: a trace silently missing a rank's events must not appear. The
/// remaining messages are still received, so no rank waits forever.
void write_with_segments(const Trace& merged, const std::vector<SpillSummary>& spills, const SpillFile* own,
                         MPI_Comm comm, const std::string& out_path) {
  std::uint64_t total = 0;
  for (const auto& s : spills) total += s.segments;
  SafeFileWriter out(out_path);
  out.write(encode_trace(merged, total > 0));
  std::string failure;
  for (std::size_t r = 0; r < spills.size(); ++r) {
    for (std::uint64_t i = 0; i < spills[r].segments; ++i) {
      std::string bytes;
      bool have = false;
      if (r == 0) {
        try {
          bytes = own->read(i);
          have = true;
        } catch (const std::exception& e) {
          if (failure.empty()) failure = std::string("rank 0: ") + e.what();
        }
      } else {
        have = recv_bytes(bytes, static_cast<int>(r), comm);
        if (!have) {
          if (failure.empty()) failure = "rank " + std::to_string(r) + " could not read back its spilled events";
          break;  // that rank sends nothing more
        }
      }
      if (have && failure.empty()) {
        try {
          out.write(bytes);
        } catch (const std::exception& e) {
          failure = e.what();
        }
      }
    }
  }
  if (!failure.empty()) throw std::runtime_error(failure);
  out.commit();
}

}  // namespace

TreeMergeResult merge_over_tree_and_write(Trace&& local, const std::string& out_path, const MergeConfig& config,
                                          double own_recorded_ns, RankSpill spill, std::uint64_t lossy_threshold) {
  TreeMergeResult res;
  MPI_Comm comm = MPI_COMM_NULL;
  const double t0 = PMPI_Wtime();
  int rank = 0, size = 1;
  try {
    check(PMPI_Comm_dup(MPI_COMM_WORLD, &comm), "PMPI_Comm_dup");
    check(PMPI_Comm_rank(comm, &rank), "PMPI_Comm_rank");
    check(PMPI_Comm_size(comm, &size), "PMPI_Comm_size");
    MergeConfig merge_config = config;
    double recorded_sum = 0;
    check(PMPI_Allreduce(&own_recorded_ns, &recorded_sum, 1, MPI_DOUBLE, MPI_SUM, comm), "PMPI_Allreduce");
    merge_config.rank_time_ns = recorded_sum / size;
    const bool ok = merge_up_the_tree(local, rank, size, comm, merge_config, res.error);
    // Phase 2 (every rank, whatever phase 1 gave): who spilled what, then the segments.
    const std::size_t own_segments = spill.file ? spill.file->segments() : 0;
    SpillSummary mine{own_segments, spill.file ? spill.file->bytes() : 0, spill.compressor_peak_bytes};
    std::vector<SpillSummary> all(rank == 0 ? static_cast<std::size_t>(size) : 0);
    check(PMPI_Gather(&mine, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, 0, comm), "PMPI_Gather");
    if (rank != 0) {
      send_segments(spill.file, comm);
    } else {
      res.seconds = PMPI_Wtime() - t0;
      res.peak_bytes = peak_rss();
      local.metadata["merge_seconds"] = std::to_string(res.seconds);
      local.metadata["peak_memory_bytes"] = std::to_string(res.peak_bytes);
      std::uint64_t peak = 0, segments = 0, bytes = 0, spilling = 0;
      for (const auto& s : all) {
        peak = std::max(peak, s.peak);
        segments += s.segments;
        bytes += s.bytes;
        spilling += s.segments > 0;
      }
      local.metadata["compressor_peak_bytes"] = std::to_string(peak);
      if (segments > 0)
        local.metadata["rank_segments"] = std::to_string(segments) + " segments, " + std::to_string(bytes) +
                                          " bytes, from " + std::to_string(spilling) + " ranks";
      if (!ok) local.metadata["incomplete"] = res.error;
      // SCALATRACE_LOSSY: long point-to-point parameters become histograms (docs/lossy.md).
      if (lossy_threshold > 0) make_lossy(local, lossy_threshold);
      write_with_segments(local, all, spill.file, comm, out_path);
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
