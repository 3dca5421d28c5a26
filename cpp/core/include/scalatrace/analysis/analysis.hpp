#pragma once
// Analyses computed from the compressed structure of a Trace (no per-rank expansion of the
// event stream): communication matrices, per-op / per-call-site summaries, timestep loops.
// The attribution model is documented in docs/python.md ("Communication matrix model") and
// below; the brute-force variants apply the same model to concrete per-rank event streams
// (Cursor output or raw recordings) and serve as ground truth in tests.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "scalatrace/model/comm_table.hpp"
#include "scalatrace/model/event.hpp"
#include "scalatrace/model/rank_math.hpp"
#include "scalatrace/model/recording.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace {

enum class Metric { Bytes, Messages };
/// Which traffic a communication matrix counts.
enum class CommKind { PointToPoint, Collective, All };

/// Sparse communication matrix: aggregated (src, dst, value) triplets, sorted by (src, dst),
/// no duplicates, no zero values.
struct CommTriplets {
  std::int64_t nranks = 0;
  std::vector<std::int64_t> src;
  std::vector<std::int64_t> dst;
  std::vector<double> value;
  /// Dense row-major nranks x nranks copy (m[src * nranks + dst]).
  std::vector<double> to_dense() const;
};

// Attribution model (sender side; self-pairs are never counted):
//  * point-to-point: Send/Bsend/Ssend/Rsend, Isend/Ibsend/Issend/Irsend, the send half of
//    Sendrecv/Sendrecv_replace, and Start/Startall of persistent send requests (the *_init
//    call itself sends nothing): rank r sends Field::Bytes to the world rank of
//    (r's rank in Field::Comm) + Field::Peer. MPI_PROC_NULL peers are skipped.
//  * collectives (blocking and nonblocking alike), Bytes = send-side bytes, n = comm size:
//      Barrier                : nothing (synchronisation carries no payload)
//      Bcast                  : root -> every other member, Bytes
//      Reduce, Gather(v)      : every non-root member -> root, its Bytes
//      Scatter                : root -> every other member, Bytes (per-destination count)
//      Scatterv               : root -> member i, SendCounts[i]
//      Allreduce, Allgather(v), Alltoall : every member -> every other member, Bytes
//      Alltoallv/w            : member -> member i, SendCounts[i]
//      Reduce_scatter         : member -> member i, RecvCounts[i] (Bytes2 if no array)
//      Reduce_scatter_block   : member -> every other member, Bytes2 (Bytes / n if 0)
//      Scan, Exscan           : member i -> member i + 1, Bytes (chain)
//    One message per (sender, receiver) pair per call.

/// Default memory limit of the matrices: 8 GiB, or half the memory available now if less.
std::uint64_t matrix_memory_limit();
/// Upper bound of the distinct (src, dst) pairs the collectives of the trace (of `kind`) can
/// produce, from the communicators they use (every member pair of each, capped at P(P-1)),
/// computed without attributing anything.
std::uint64_t collective_pair_bound(const Trace& trace, CommKind kind);
/// Communication matrix from the compressed structure (one walk over the node tree). Throws
/// UsageError before collecting anything if the collectives could produce more pairs than fit
/// `max_bytes` (about 40 bytes each while collecting), and while collecting if the pairs
/// outgrow it.
CommTriplets comm_matrix_sparse(const Trace& trace, Metric metric, CommKind kind,
                                std::uint64_t max_bytes = matrix_memory_limit());
/// Dense P x P row-major form. Throws UsageError if P x P doubles would exceed `max_bytes`.
std::vector<double> comm_matrix(const Trace& trace, Metric metric, CommKind kind,
                                std::uint64_t max_bytes = matrix_memory_limit());

/// Brute force: the same model over one rank's concrete events in order (handle buffer
/// tracked for persistent requests). `comms` resolves communicator ids for this rank.
/// Adds into `out` (src, dst) -> value pairs via the callback.
using PairSink = std::function<void(std::int64_t src, std::int64_t dst, double value)>;
class EventAttributor {
 public:
  EventAttributor(std::int64_t rank, std::int64_t nranks, const CommTable* comms, Metric metric, CommKind kind);
  void add(const Event& e, const PairSink& sink);

 private:
  std::int64_t rank_, nranks_;
  const CommTable* comms_;
  Metric metric_;
  CommKind kind_;
  std::vector<const Event*> slots_;  ///< handle buffer: persistent-send inits, else nullptr
  std::vector<Event> inits_;         ///< owned copies of persistent-send inits
  std::vector<std::size_t> slot_init_;
};

/// Brute force over Cursor expansion of every rank (tests: must equal comm_matrix_sparse).
CommTriplets comm_matrix_by_expansion(const Trace& trace, Metric metric, CommKind kind);
/// Brute force over raw recordings (one per rank, any order).
CommTriplets comm_matrix_of_recordings(const std::vector<RankRecording>& recs, Metric metric, CommKind kind);

/// One row of a summary (per op, or per (op, call site)).
struct SummaryRow {
  Op op = Op::Other;
  /// Op::Other: the function's index in Trace::names (its Field::NameId), so MPI_Comm_rank and
  /// MPI_Comm_size are rows of their own; -1 for the other ops.
  std::int64_t name_id = -1;
  std::uint32_t site = 0;   ///< per-site rows only
  std::uint64_t calls = 0;  ///< total calls over all ranks
  std::uint64_t ranks = 0;  ///< ranks that make this call at least once
  double bytes = 0;         ///< sum of Field::Bytes over all calls (send side)
  double duration_ns = 0;   ///< total time inside the calls (histogram sums)
  double compute_ns = 0;    ///< total compute time before the calls
  std::uint64_t min_duration_ns = 0, max_duration_ns = 0;
};
struct Summary {
  std::vector<SummaryRow> by_op;    ///< sorted by op
  std::vector<SummaryRow> by_site;  ///< sorted by (site, op)
  std::uint64_t total_calls = 0;
  double total_bytes = 0;
};
Summary summary(const Trace& trace);

/// An outermost loop with repeated communication (ScalaTrace §5.3). Iterations are counted as
/// the program wrote the loop: a loop the compressor folded as Loop(3){Loop(2){step}} or as
/// Loop(3){Loop(2){step} Allreduce} (a call every 2nd step) has 6.
struct TimestepLoop {
  std::vector<std::size_t> path;    ///< indices from the top-level node list down to the loop
  RankList ranks;                   ///< participating ranks ("all" if empty)
  std::int64_t min_iterations = 0;  ///< iterations per rank (sum over the loop's visits)
  std::int64_t max_iterations = 0;
  std::uint64_t visits = 0;          ///< max number of times a rank enters the loop
  std::vector<std::uint32_t> sites;  ///< call sites of communication events in the body
  std::uint64_t body_events = 0;     ///< event nodes in the body (all depths)
};
std::vector<TimestepLoop> timestep_loops(const Trace& trace);

}  // namespace scalatrace
