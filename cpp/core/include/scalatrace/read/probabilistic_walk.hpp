#pragma once
// ProbabilisticWalk: one rank's events of a lossy trace as a deadlock-free program of ordinary
// MPI calls (ScalaReplay 2's coordinated random selection, thesis §5.2.6; docs/lossy.md).
// Sends draw their peer, tag and size from the trace's histograms and become Isends; the
// rank's own receives are dropped, and instead the rank posts one Irecv for every message the
// other ranks draw to it (DrawnSends: the same seeded draws), learnt at the start of each epoch
// (between synchronisation points of a communicator) and posted at the last call before the
// sender's estimated send time (the secondary context's timer against the rank's own), at the
// latest before the epoch ends. Before each
// synchronisation point (collective, communicator creation or freeing, Finalize) a Waitall
// completes the epoch's sends and receives. So every drawn send has exactly one matching
// receive, no rank waits for a message between synchronisation points, and the same seed gives
// the same program. The simulator and scalatrace-replay both run what this yields.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "scalatrace/model/event.hpp"
#include "scalatrace/model/trace.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/read/drawn_sends.hpp"

namespace scalatrace {

struct ProbabilisticOptions {
  std::uint64_t seed = 0;                     ///< the draws of lossy fields (the same on every rank)
  TimingMode timing = TimingMode::Mean;       ///< compute times
  std::uint64_t timing_seed = 0;              ///< TimingMode::Sample
  std::optional<TimingMode> duration_timing;  ///< default: `timing`
  /// A walk of its own: the ranks that can send to this rank, whose secondary contexts it walks
  /// (scalatrace-replay negotiates them); default: potential_senders() from the trace.
  std::optional<std::vector<std::int64_t>> senders;
};

class ProbabilisticWalk {
 public:
  /// `sends`: shared by the walks of one process (the simulator) or nullptr (a walk of its own
  /// that keeps only messages to `rank`). The trace and `sends` must outlive the walk.
  ProbabilisticWalk(const Trace& trace, std::int64_t rank, const ProbabilisticOptions& options,
                    DrawnSends* sends = nullptr);
  ~ProbabilisticWalk();
  ProbabilisticWalk(ProbabilisticWalk&&) noexcept;
  /// The rank's next call, or false at the end. `out`'s arrays refer to the walk's storage
  /// (valid until the next call).
  bool next(EventView& out);
  bool next(Event& out);
  /// Messages this rank has drawn to send / been given to receive so far.
  std::uint64_t drawn_sends() const { return sent_; }
  std::uint64_t derived_receives() const { return received_; }
  /// Secondary traversal contexts walked so far (of a walk of its own; else the shared ones).
  std::size_t contexts() const { return sends_->contexts(); }

 private:
  void refill();
  void post_epoch(std::int64_t comm);
  void close_epoch(const ProtocolStep& step, std::uint64_t compute_ns, std::uint32_t site);
  void emit_send(const DrawnMessage& m, const Event& from, std::uint64_t compute_ns);
  void remap_completion(const Event& e);
  void push(Event&& e);
  void post_receive(const DrawnMessage& m);
  /// Posts the held receives whose estimated send time is at most `until_ns`.
  void release_receives(std::uint64_t until_ns);
  /// Posts every held receive on `comm` (every one when `all`): the epoch ends.
  void flush_receives(std::int64_t comm, bool all);
  std::uint64_t take_compute(std::uint64_t own);

  const Trace& trace_;
  std::int64_t rank_;
  Cursor cursor_;
  SendProtocol protocol_;
  std::unique_ptr<DrawnSends> own_sends_;
  DrawnSends* sends_;
  std::deque<Event> queue_;
  Event current_;
  Event event_;
  ProtocolStep step_;
  bool started_ = false, ended_ = false, finalized_ = false;
  std::uint64_t carried_compute_ = 0;  ///< compute time of dropped events, given to the next call
  /// The rank's own timer: end of its last trace event (recorded times) since MPI_Init's end.
  std::uint64_t clock_ns_ = 0;
  /// Receives of the current epochs not posted yet, in order of their estimated send times
  /// (stable: one sender's messages stay in send order).
  std::vector<DrawnMessage> held_;
  std::uint64_t out_slots_ = 0;  ///< requests the output has created
  /// Per communicator: requests of the current epoch still to complete (output slot indices).
  std::map<std::int64_t, std::vector<std::uint64_t>> pending_;
  std::map<std::int64_t, std::uint64_t> posted_epoch_;  ///< epoch whose receives are posted (+1)
  /// The trace's slot index of each nonblocking collective -> its output slot index.
  std::unordered_map<std::uint64_t, std::uint64_t> collective_slots_;
  std::uint64_t sent_ = 0, received_ = 0;
};

}  // namespace scalatrace
