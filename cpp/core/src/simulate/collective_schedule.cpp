// collective_schedule(): one rank's point-to-point schedule of a collective, for exporters (the
// public header collective_schedule.hpp). The steps are the simulator's own
// (simulator_collectives.hpp); the receive sizes are worked out from the receiver's event. See
// docs/simulator.md ("Collectives").
#include "scalatrace/simulate/collective_schedule.hpp"

#include <cmath>
#include <string>

#include "scalatrace/support/errors.hpp"
#include "simulate/simulator_collectives.hpp"

namespace scalatrace {
namespace {

std::int64_t whole_bytes(double bytes) { return static_cast<std::int64_t>(std::llround(bytes)); }

std::int64_t count_at(const Event& e, ArrayField f, std::int64_t i, std::int64_t fallback) {
  const auto& a = e[f];
  return i >= 0 && static_cast<std::size_t>(i) < a.size() ? a[static_cast<std::size_t>(i)] : fallback;
}

/// The event as the sender `from` would have recorded it, as far as its schedule depends on it:
/// equal-count collectives have equal counts on every rank (MPI's type signature rule); the
/// root's own counts of gather and scatter are the receiver's per-rank block.
Event as_recorded_by(const Event& e, std::int64_t me) {
  Event sender = e;
  const std::int64_t root = e[Field::Root];
  switch (e.op) {
    case Op::Gather:
    case Op::Igather: {
      const std::int64_t block = me == root ? e[Field::Bytes2] : e[Field::Bytes];
      sender[Field::Bytes] = sender[Field::Bytes2] = block;
      break;
    }
    case Op::Scatter:
    case Op::Iscatter:
      sender[Field::Bytes] = sender[Field::Bytes2] = e[Field::Bytes2];
      break;
    default:
      break;
  }
  return sender;
}

/// Bytes `me` receives in its `nth` receive from `from` (counted from 0).
std::int64_t received_bytes(const Event& e, std::int64_t me, std::int64_t from, std::int64_t nth, std::int64_t size) {
  switch (e.op) {  // counts the receiver holds itself
    case Op::Alltoallv:
    case Op::Ialltoallv:
    case Op::Alltoallw:
    case Op::Ialltoallw:
      return count_at(e, ArrayField::RecvCounts, from, e[Field::Bytes2]);
    case Op::Gatherv:
    case Op::Igatherv:
      return count_at(e, ArrayField::RecvCounts, from, e[Field::Bytes2]);
    case Op::Scatterv:
    case Op::Iscatterv:
      return e[Field::Bytes2];
    default:
      break;
  }
  sim::CollSteps steps;
  const Event sender = as_recorded_by(e, me);
  sim::collective_steps(EventView::of(sender), from, size, 1.0, steps);
  for (const sim::CollStep& s : steps)
    if (s.send_to == me && nth-- == 0) return whole_bytes(s.send_bytes);
  throw FormatError("collective_schedule: rank " + std::to_string(from) + " of " + std::to_string(size) +
                    " never sends to rank " + std::to_string(me) + " in " + std::string(op_name(e.op)));
}

}  // namespace

std::vector<CollectiveStep> collective_schedule(const Event& e, std::int64_t me, std::int64_t size) {
  if (size < 1 || me < 0 || me >= size)
    throw UsageError("collective_schedule: rank " + std::to_string(me) + " is not in a communicator of " +
                     std::to_string(size) + " ranks");
  sim::CollSteps steps;
  sim::collective_steps(EventView::of(e), me, size, 1.0, steps);
  std::vector<CollectiveStep> out;
  out.reserve(steps.size());
  for (const sim::CollStep& s : steps) {
    CollectiveStep step{s.recv_from, s.send_to, whole_bytes(s.send_bytes), 0};
    if (s.recv_from >= 0) {
      std::int64_t earlier = 0;  // receives from the same rank before this one
      for (const CollectiveStep& before : out) earlier += before.recv_from == s.recv_from ? 1 : 0;
      step.recv_bytes = received_bytes(e, me, s.recv_from, earlier, size);
    }
    out.push_back(step);
  }
  return out;
}

}  // namespace scalatrace
