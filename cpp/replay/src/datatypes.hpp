#pragma once
// How a recorded byte count becomes an MPI (count, datatype) pair for replay.
//
// With --size-scale 1 a message of B bytes recorded with datatype size D (B divisible by D) is
// replayed as B/D elements of a contiguous type of D bytes, so a collector tracing the replay
// records the same byte count and datatype size as the original. With another size scale,
// messages are MPI_BYTE counts: sends round down, receives round up (a receive stays at least
// as large as its message), collectives round to nearest (every rank computes the same count
// from the same recorded value). Reductions use a predefined type of the recorded size that
// the recorded reduction op accepts, else a no-op user-defined op on bytes.
#include <mpi.h>

#include <cstdint>
#include <map>
#include <vector>

namespace scalatrace::replay {

enum class Rounding { Down, Up, Nearest };

struct Payload {
  MPI_Count count = 0;  ///< MPI-4 large count: replayed with the MPI_*_c calls
  MPI_Datatype type = MPI_BYTE;
  std::size_t buffer_bytes = 0;  ///< bytes of buffer count elements span
};

struct Reduction {
  Payload payload;
  MPI_Op op = MPI_OP_NULL;
};

/// Per-peer counts and displacements of a v/w collective, as the MPI-4 large-count (`_c`)
/// calls take them.
struct VectorPayload {
  std::vector<MPI_Count> counts;
  std::vector<MPI_Aint> displs;
  MPI_Datatype type = MPI_BYTE;
  std::size_t buffer_bytes = 0;
};

class Datatypes {
 public:
  explicit Datatypes(double size_scale) : scale_(size_scale) {}
  Datatypes(const Datatypes&) = delete;
  Datatypes& operator=(const Datatypes&) = delete;

  /// `bytes` recorded with a datatype of `dtsize` bytes (0 = unknown).
  Payload payload(std::int64_t bytes, std::int64_t dtsize, Rounding rounding);
  /// Per-peer byte counts of a v/w collective (empty: `peers` zeros).
  VectorPayload vector_payload(const std::vector<std::int64_t>& bytes, std::int64_t dtsize, int peers);
  /// Reduction of `bytes` with elements of `dtsize` bytes and recorded op code.
  Reduction reduction(std::int64_t bytes, std::int64_t dtsize, std::int64_t redop);
  /// Scaled byte count (what the replay sends for a recorded count).
  std::int64_t scaled(std::int64_t bytes, Rounding rounding) const;
  /// Frees the derived types and ops (before MPI_Finalize).
  void release();

 private:
  MPI_Datatype contiguous(std::int64_t dtsize);
  MPI_Op noop_op();

  double scale_;
  std::map<std::int64_t, MPI_Datatype> contiguous_;
  MPI_Op noop_ = MPI_OP_NULL;
};

/// Checked conversion of an element count to int (throws UsageError).
int to_count(std::int64_t value, const char* what);
/// Checked conversion of an element count to MPI_Count (MPI-4 large counts; throws UsageError
/// if negative).
MPI_Count to_large_count(std::int64_t value, const char* what);

}  // namespace scalatrace::replay
