#pragma once
// Collectives as point-to-point steps (not a public header): the decomposition the simulator
// runs and collective_schedule() exports, defined in simulator_collectives.cpp (MPICH's default
// algorithms and size thresholds). See docs/simulator.md ("Collectives").
#include <cstdint>
#include <optional>

#include "scalatrace/model/event.hpp"
#include "support/small_vector.hpp"

namespace scalatrace::sim {

/// One step of a rank's part of a collective: optionally receive from one communicator rank
/// and send to another (posted together, completed together). -1: no such half.
struct CollStep {
  std::int64_t recv_from = -1;
  std::int64_t send_to = -1;
  double send_bytes = 0;
};
/// A rank's steps of one collective (kept inline: log2(ranks) of them for the usual algorithms).
using CollSteps = SmallVector<CollStep, 16>;

/// The steps of communicator rank `me` (of `n`) in collective event `e`, chosen like MPICH
/// chooses its algorithm from the message size. Bytes are multiplied by `size_scale`.
/// Appends to `out` (cleared first).
void collective_steps(const EventView& e, std::int64_t me, std::int64_t n, double size_scale, CollSteps& out);

/// Everything of a collective event that collective_steps reads, when that is a few fields:
/// two events with equal inputs give every member the same steps (for the same `me`, `n` and
/// `size_scale`). The gathered collectives compare them to skip computing the steps again
/// (Engine::enter_gathering).
struct CollectiveInputs {
  Op op = Op::Other;
  std::int64_t bytes = 0, bytes2 = 0, root = 0;
  bool operator==(const CollectiveInputs&) const = default;
};
/// The event's inputs; none for the collectives whose steps read an array (the v and w
/// variants, Reduce_scatter): those are computed for each event.
std::optional<CollectiveInputs> collective_inputs(const EventView& e);

}  // namespace scalatrace::sim
