#pragma once
// The point-to-point schedule of one rank's part of a collective: the steps the simulator runs
// (MPICH's algorithms, chosen by size as MPICH chooses them; docs/simulator.md, "Collectives").
// Exporters use it to write a collective as messages where the target format has no
// collective of its own (SimGrid's replay format on sub-communicators, scans).
#include <cstdint>
#include <vector>

#include "scalatrace/model/event.hpp"

namespace scalatrace {

/// One step: receive `recv_bytes` bytes from communicator rank `recv_from` and send
/// `send_bytes` bytes to communicator rank `send_to`, posted together and completed together.
/// -1: no such half.
struct CollectiveStep {
  std::int64_t recv_from = -1;
  std::int64_t send_to = -1;
  std::int64_t send_bytes = 0;
  std::int64_t recv_bytes = 0;
};

/// The steps of communicator rank `me` (0 <= me < size) in collective event `e` on a
/// communicator of `size` ranks. Empty for a communicator of one rank. Throws UsageError for
/// `me` outside [0, size).
///
/// A receive's size is what the sender's schedule sends, worked out from the receiver's own
/// event as MPI's matching type signatures allow: the sender's schedule is built from this
/// event, with the counts only the sender knows (a root's block size, per-destination counts of
/// the v-variants) replaced by the receiver's own receive counts.
std::vector<CollectiveStep> collective_schedule(const Event& e, std::int64_t me, std::int64_t size);

}  // namespace scalatrace
