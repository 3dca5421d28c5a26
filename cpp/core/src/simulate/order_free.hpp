#pragma once
// Whether a simulation's results depend on the order in which the engine processes ranks (not a
// public header): decided once per run from the compressed trace and the options, it allows the
// engine to run a blocking collective's steps for all its members in one pass (gathered
// collectives, engine_gathering.hpp). See docs/simulator.md ("Gathered collectives").
#include <array>
#include <cstdint>

#include "scalatrace/model/op.hpp"
#include "scalatrace/model/trace.hpp"
#include "scalatrace/simulate/simulator.hpp"

namespace scalatrace::sim {

/// What the trace's events allow. A run is order-free when nothing in it reads the engine's
/// processing order: no wildcard receive or probe (matched among the messages delivered so
/// far), no rendezvous user message (its data takes the sender's NIC when its receive is
/// matched, among the sender's other messages in processing order), no nonblocking collective
/// (its steps progress whenever the rank resumes), no shared link (contention, topologies), no
/// lossy trace. Then every rank's times are the same in any order; only the per-site sums,
/// added as the ranks end their events, can differ in their last bits.
class OrderFreedom {
 public:
  OrderFreedom(const Trace& trace, const SimOptions& options);

  bool order_free() const { return order_free_; }
  /// Whether every message of blocking collective `op` on `members` ranks is sent eagerly,
  /// from an upper bound of its steps' sizes over every node of the op in the trace.
  bool eager_collective(Op op, std::int64_t members) const;

 private:
  bool order_free_ = true;
  double eager_threshold_;
  double size_scale_;
  /// Per op: the largest byte count any of its nodes names (fields and count arrays), -1 if
  /// the op does not occur.
  std::array<double, kOpCount> largest_bytes_{};
};

}  // namespace scalatrace::sim
