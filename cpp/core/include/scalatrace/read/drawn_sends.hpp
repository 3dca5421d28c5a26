#pragma once
// Coordinated random selection for lossy traces (ScalaReplay 2, thesis §5.2.6): what each rank
// sends when its lossy peers, tags and sizes are drawn, found by walking that rank's events
// with the same seeded draws (a "secondary traversal context"). A receiver learns every message
// addressed to it without any message of its own: sender and receiver draw the same values.
// Messages are grouped by epoch: a rank's epoch on a communicator is the number of
// synchronisation points (collectives, communicator creation and freeing) it has passed on it.
// See docs/lossy.md.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "scalatrace/model/event.hpp"
#include "scalatrace/model/trace.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/read/lossy_occurrences.hpp"

namespace scalatrace {

/// One point-to-point message of a probabilistic replay: drawn by its sender.
struct DrawnMessage {
  std::int64_t comm = 0;    ///< communicator id (Field::Comm)
  std::int64_t source = 0;  ///< world ranks
  std::int64_t dest = 0;
  std::int64_t tag = 0;
  std::int64_t bytes = 0;
  std::int64_t dt_size = 0;  ///< datatype size of the send
  std::uint64_t epoch = 0;   ///< the sender's epoch on `comm` when it sent
  std::uint32_t site = 0;    ///< call site of the sending event
  /// When the sender is estimated to send it: the secondary context's timer, the recorded
  /// compute and call times (histogram means) of the sender's events since the end of its
  /// MPI_Init up to this send's start. The receiver posts its receive near this time.
  std::uint64_t time_ns = 0;
};

/// What one event of a rank means for the probabilistic protocol (SendProtocol::step).
struct ProtocolStep {
  /// The event closes the rank's current epoch on `sync_comm` before it runs (every
  /// communicator for Finalize): pending messages complete first.
  bool sync = false;
  bool sync_all = false;
  std::int64_t sync_comm = 0;
  /// The event is a receive, a probe, a persistent initiation or a completion of
  /// point-to-point requests only: the protocol replaces it (receives come from the senders).
  bool replaced = false;
  std::vector<DrawnMessage> sends;  ///< messages this event sends (Start(all): maybe several)
};

/// One rank's side of the protocol: its handle buffer (persistent sends' arguments) and its
/// epochs. Every traversal context of a rank, primary or secondary, runs the same steps.
class SendProtocol {
 public:
  SendProtocol(const Trace& trace, std::int64_t rank) : trace_(&trace), rank_(rank) {}
  /// Classifies `e` (the rank's next event, lossy fields drawn) and advances the state.
  void step(const Event& e, ProtocolStep& out);
  /// The epoch the rank is in on `comm`.
  std::uint64_t epoch(std::int64_t comm) const;
  /// The rank's request slots created so far (the trace's handle buffer).
  std::uint64_t slots() const { return slots_; }

 private:
  bool resolve(std::int64_t comm, std::int64_t relative_peer, std::int64_t& dest) const;
  void add_send(const Event& e, ProtocolStep& out) const;
  const Trace* trace_;
  std::int64_t rank_;
  std::uint64_t slots_ = 0;
  std::unordered_map<std::uint64_t, Event> persistent_sends_;  ///< by slot index
  std::map<std::int64_t, std::uint64_t> epochs_;
};

/// Every rank's drawn sends, gathered per receiver: the secondary traversal contexts of the
/// ranks a receiver hears from, advanced no further than asked. One instance serves one
/// receiver (a replay process) or all of them (the simulator: each sender is then walked once).
class DrawnSends {
 public:
  /// `only_receiver`: keep only messages to that rank (a replay process), walking only the
  /// contexts of `senders` (the ranks that can send to it: negotiated by the caller, or by
  /// default potential_senders(), read/potential_senders.hpp); otherwise all messages of all
  /// ranks.
  DrawnSends(const Trace& trace, std::uint64_t seed, std::optional<std::int64_t> only_receiver = std::nullopt,
             const std::optional<std::vector<std::int64_t>>& senders = std::nullopt);
  ~DrawnSends();
  /// The messages to `receiver` on `comm` sent in epoch `epoch`, per sender in send order
  /// (senders ascending); each is handed out once.
  std::vector<DrawnMessage> take(std::int64_t receiver, std::int64_t comm, std::uint64_t epoch);
  /// Every message to `receiver` not yet handed out (its Finalize or the end of its trace).
  std::vector<DrawnMessage> take_all(std::int64_t receiver);
  /// Secondary contexts created so far (senders walked).
  std::size_t contexts() const;
  /// The trace's lossy occurrence counts that every cursor of the protocol draws with.
  const std::shared_ptr<const LossyOccurrences>& occurrences() const { return occurrences_; }

 private:
  struct Sender;
  Sender& sender(std::int64_t rank);
  /// Walks `rank` until its epoch on `comm` exceeds `epoch` (or its trace ends).
  void advance(std::int64_t rank, std::int64_t comm, std::uint64_t epoch);
  void advance_to_end(std::int64_t rank);
  bool step_sender(Sender& s);
  const Trace& trace_;
  std::uint64_t seed_;
  std::optional<std::int64_t> only_;
  std::shared_ptr<const LossyOccurrences> occurrences_;
  std::vector<std::unique_ptr<Sender>> senders_;
  /// only_receiver: 1 for the ranks whose contexts are walked (the others send nothing to it).
  std::vector<char> walked_;
  /// (receiver, comm, epoch) -> messages in arrival order
  std::map<std::tuple<std::int64_t, std::int64_t, std::uint64_t>, std::vector<DrawnMessage>> buffered_;
};

}  // namespace scalatrace
