// Whether a simulation's results depend on the engine's processing order, read from the
// compressed trace's nodes (never expanded): their ops, the largest byte counts their elastic
// values name, and whether a receive's source can be MPI_ANY_SOURCE. See order_free.hpp.
#include "simulate/order_free.hpp"

#include <algorithm>

#include "scalatrace/compress/lossy.hpp"

namespace scalatrace::sim {
namespace {

/// The last value of a run (the same wrapping arithmetic as the run's own values).
std::int64_t run_last(const ValueRun& run) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(run.first) +
                                   (run.count - 1) * static_cast<std::uint64_t>(run.stride));
}

/// The largest value of an elastic value over all its alternatives; -1 when it has none.
double largest_value(const ElasticValue& value) {
  double largest = -1;
  for (const auto& [seq, ranks] : value.alternatives)
    for (const ValueBlock& block : seq.blocks())
      for (const ValueRun& run : block.runs)
        if (run.count > 0)
          largest = std::max({largest, static_cast<double>(run.first), static_cast<double>(run_last(run))});
  return largest;
}

double largest_value(const ElasticArray& array) {
  double largest = -1;
  for (const auto& [seq, ranks] : array.alternatives)
    for (const ArraySeq::Run& run : seq.runs())
      for (const std::int64_t v : run.values) largest = std::max(largest, static_cast<double>(v));
  return largest;
}

/// Whether some occurrence of the value is `v`.
bool can_be(const ElasticValue& value, std::int64_t v) {
  for (const auto& [seq, ranks] : value.alternatives)
    for (const ValueBlock& block : seq.blocks())
      for (const ValueRun& run : block.runs) {
        if (run.count == 0) continue;
        if (run.stride == 0) {
          if (run.first == v) return true;
          continue;
        }
        const __int128 distance = static_cast<__int128>(v) - run.first;
        if (distance % run.stride != 0) continue;
        const __int128 index = distance / run.stride;
        if (index >= 0 && index < static_cast<__int128>(run.count)) return true;
      }
  return false;
}

/// Sends that are never rendezvous, whatever their size.
bool always_eager(Op op) { return op == Op::Bsend || op == Op::Ibsend || op == Op::Bsend_init; }
/// Sends that always are.
bool synchronous(Op op) { return op == Op::Ssend || op == Op::Issend || op == Op::Ssend_init; }

}  // namespace

OrderFreedom::OrderFreedom(const Trace& trace, const SimOptions& options)
    : eager_threshold_(options.eager_threshold), size_scale_(options.size_scale) {
  largest_bytes_.fill(-1);
  order_free_ = !options.contention && options.topology.kind == Topology::Kind::Flat && !is_lossy(trace);
  // Depth-first over the node tree, loops' bodies included.
  std::vector<const Node*> pending;
  for (const Node& n : trace.nodes) pending.push_back(&n);
  while (!pending.empty()) {
    const Node* node = pending.back();
    pending.pop_back();
    if (node->is_loop()) {
      for (const Node& n : node->loop->body) pending.push_back(&n);
      continue;
    }
    if (!node->event) continue;
    const EventNode& e = *node->event;
    const auto at = static_cast<std::size_t>(e.op);
    const double bytes = std::max({largest_value(e.fields[static_cast<std::size_t>(Field::Bytes)]),
                                   largest_value(e.fields[static_cast<std::size_t>(Field::Bytes2)]),
                                   largest_value(e.arrays[static_cast<std::size_t>(ArrayField::SendCounts)]),
                                   largest_value(e.arrays[static_cast<std::size_t>(ArrayField::RecvCounts)]), 0.0});
    largest_bytes_[at] = std::max(largest_bytes_[at], bytes);
    const auto peer_can_be_any = [&](Field f) { return can_be(e.fields[static_cast<std::size_t>(f)], kAnySource); };
    switch (op_kind(e.op)) {
      case OpKind::Probe:
      case OpKind::NonblockingCollective:
        order_free_ = false;
        break;
      case OpKind::BlockingSend:
      case OpKind::NonblockingSend:
      case OpKind::PersistentSend: {
        const double sent = largest_value(e.fields[static_cast<std::size_t>(Field::Bytes)]) * size_scale_;
        if (synchronous(e.op) || (!always_eager(e.op) && sent > eager_threshold_)) order_free_ = false;
        break;
      }
      case OpKind::SendRecv: {
        const double sent = largest_value(e.fields[static_cast<std::size_t>(Field::Bytes)]) * size_scale_;
        if (sent > eager_threshold_ || peer_can_be_any(Field::Peer2)) order_free_ = false;
        break;
      }
      case OpKind::BlockingRecv:
      case OpKind::NonblockingRecv:
      case OpKind::PersistentRecv:
        if (peer_can_be_any(Field::Peer)) order_free_ = false;
        break;
      default:
        break;
    }
  }
}

bool OrderFreedom::eager_collective(Op op, std::int64_t members) const {
  const double bytes = largest_bytes_[static_cast<std::size_t>(op)];
  if (bytes < 0) return false;  // not in the trace: nothing known about it
  const auto n = static_cast<double>(members);
  // The largest message of any step (simulator_collectives.cpp), bounded from above.
  double largest;
  switch (op) {
    case Op::Barrier:
      largest = 0;
      break;
    case Op::Reduce:
    case Op::Allreduce:
    case Op::Scan:
    case Op::Exscan:
    case Op::Alltoall:
      largest = bytes;
      break;
    case Op::Bcast:  // binomial: the whole buffer; scatter + ring: blocks of ceil(bytes / n)
      largest = bytes + n;
      break;
    default:  // gathers, scatters, allgathers, v-variants: at most every member's block at once
      largest = bytes * n;
      break;
  }
  return largest * size_scale_ <= eager_threshold_;
}

}  // namespace scalatrace::sim
