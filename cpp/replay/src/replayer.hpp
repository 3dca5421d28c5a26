#pragma once
// The replay engine: one rank walks its events with a Cursor over the compressed trace and
// re-issues each MPI call (see docs/replay.md for what is issued how).
#include <mpi.h>

#include <array>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <vector>

#include "buffer_pool.hpp"
#include "communicators.hpp"
#include "datatypes.hpp"
#include "options.hpp"
#include "request_buffer.hpp"
#include "scalatrace/model/event.hpp"
#include "scalatrace/model/trace.hpp"
#include "watchdog.hpp"

namespace scalatrace::replay {

struct OpStats {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;       ///< Field::Bytes of the events, as issued (size-scaled)
  std::uint64_t recv_bytes = 0;  ///< Field::Bytes2, as issued
};

struct RankStats {
  std::array<OpStats, kOpCount> ops{};
  std::uint64_t events = 0;
  std::uint64_t issued = 0;              ///< MPI calls re-issued (events minus skipped ones)
  std::uint64_t outcome_mismatches = 0;  ///< completions/probes whose outcome differed from the record
  /// Lossy traces: secondary traversal contexts walked (the negotiated senders to this rank).
  std::uint64_t contexts = 0;
  double compute_s = 0;  ///< emulated computation
  double time_s = 0;     ///< wall time of this rank's replay
};

/// Memory ran out while an event was replayed (std::bad_alloc, e.g. a message buffer at its
/// --size-scale size): what() names the rank, the event and the size of its message.
struct OutOfMemory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Replayer {
 public:
  Replayer(const Trace& trace, const Options& options, int world_rank, Progress& progress);
  /// Replays all of this rank's events. Throws scalatrace::Error naming the event on bad input,
  /// OutOfMemory naming it when memory runs out.
  RankStats run();
  /// Frees derived datatypes, ops and the Bsend buffer (call before MPI_Finalize).
  void release();

 private:
  void issue(const Event& e);
  void point_to_point(const Event& e);
  void completion(const Event& e, const std::vector<RequestSlot*>& slots);
  /// --defer-waits: issue e, letting a Wait/Waitall that cannot complete yet wait in pending_.
  void issue_deferring_waits(const Event& e);
  /// Issues the pending completions whose requests are all complete now; true if any was.
  bool retire_ready_completions();
  /// Polls until every pending completion was issued.
  void drain_pending_completions();
  void collective(const Event& e, MPI_Request* request);
  void persistent_start(const Event& e);
  int peer_of(const CommInfo& comm, std::int64_t relative) const;
  int tag_of(std::int64_t tag) const;
  void ensure_bsend(std::size_t bytes);
  /// Polls (PMPI, unseen by a collector) until the request is complete, publishing its origin.
  void await(const RequestSlot* slot);
  std::vector<RequestSlot*> slots_of(const Event& e);
  RequestSlot& new_request(const Event& e);
  void publish(const Event& e);

  const Trace& trace_;
  const Options& options_;
  int world_rank_;
  Progress& progress_;
  Communicators comms_;
  Datatypes types_;
  RequestBuffer requests_;
  BufferPool send_pool_{0x5a};
  BufferPool recv_pool_{0};
  std::vector<unsigned char> bsend_buffer_;
  std::int64_t index_ = 0;  ///< index of the current event in this rank's sequence
  /// A Wait/Waitall deferred by --defer-waits, with its requests resolved at its own position.
  struct PendingCompletion {
    Event event;
    std::vector<RequestSlot*> slots;
    std::int64_t index = 0;
  };
  bool defer_waits_ = false;
  std::deque<PendingCompletion> pending_;
  RankStats stats_;
};

}  // namespace scalatrace::replay
