// Potential senders of a probabilistic replay (docs/lossy.md, "Bounded traversal contexts").
#include "scalatrace/read/potential_senders.hpp"

#include <algorithm>
#include <limits>

#include "scalatrace/model/rank_math.hpp"

namespace scalatrace {
namespace {

/// Events whose peer is a destination (persistent sends: the Start calls send to it).
bool is_send(Op op) {
  const OpKind k = op_kind(op);
  return k == OpKind::BlockingSend || k == OpKind::NonblockingSend || k == OpKind::SendRecv ||
         k == OpKind::PersistentSend;
}

/// Calls f(v) for the values of `seq` that can differ modulo `size`: a progression's residues
/// repeat after `size` values, so each run is cut there.
template <class F>
void for_each_value(const ValueSeq& seq, std::int64_t size, F f) {
  for (const ValueBlock& block : seq.blocks())
    for (const ValueRun& run : block.runs) {
      const std::uint64_t n = run.stride == 0 ? std::min<std::uint64_t>(run.count, 1)
                                              : std::min(run.count, static_cast<std::uint64_t>(size));
      for (std::uint64_t i = 0; i < n; ++i)  // wrapping, as ValueRun's first + i * stride
        f(static_cast<std::int64_t>(static_cast<std::uint64_t>(run.first) +
                                    i * static_cast<std::uint64_t>(run.stride)));
    }
}

/// Calls f(v) for the values of one rank's elastic field: 0 when the field is not stored.
template <class F>
void for_each_field_value(const EventNode& e, Field field, std::int64_t rank, std::int64_t size, F f) {
  if (const ValueHistogram* values = e.lossy_values(field)) {
    for (const ValueBin& bin : values->bins()) {
      if (bin.lo <= kAnySource) continue;  // sentinels (MPI_PROC_NULL) keep bins of their own
      const std::int64_t last = bin.hi - bin.lo >= size ? bin.lo + size - 1 : bin.hi;
      for (std::int64_t v = bin.lo; v <= last; ++v) f(v);
    }
    return;
  }
  const ElasticValue& elastic = e.fields[static_cast<std::size_t>(field)];
  if (elastic.empty()) {
    f(0);
    return;
  }
  if (const ValueSeq* seq = elastic.for_rank(rank)) for_each_value(*seq, size, f);
}

void collect(const Trace& trace, const std::vector<Node>& nodes, std::int64_t rank, std::vector<char>& reached) {
  for (const Node& n : nodes) {
    if (!n.ranks.empty() && !n.ranks.contains(rank)) continue;
    if (n.loop) {
      collect(trace, n.loop->body, rank, reached);
      continue;
    }
    if (!n.event || !is_send(n.event->op)) continue;
    const EventNode& e = *n.event;
    // Communicator ids are not taken modulo anything: every distinct one counts.
    constexpr std::int64_t kEvery = std::numeric_limits<std::int64_t>::max();
    for_each_field_value(e, Field::Comm, rank, kEvery, [&](std::int64_t comm) {
      const auto [me, size] = comm_rank_and_size(trace.comms, comm, rank, trace.nranks);
      if (me < 0 || size <= 0) return;
      for_each_field_value(e, Field::Peer, rank, size, [&](std::int64_t peer) {
        if (peer <= kAnySource) return;  // MPI_PROC_NULL sends nothing
        const std::int64_t in_comm = ((me + peer % size) % size + size) % size;
        const std::int64_t dest = world_rank_of(trace.comms, comm, rank, in_comm, trace.nranks);
        if (dest >= 0 && dest < trace.nranks) reached[static_cast<std::size_t>(dest)] = 1;
      });
    });
  }
}

}  // namespace

std::vector<std::int64_t> potential_destinations(const Trace& trace, std::int64_t rank) {
  std::vector<char> reached(static_cast<std::size_t>(std::max<std::int64_t>(trace.nranks, 0)), 0);
  collect(trace, trace.nodes, rank, reached);
  std::vector<std::int64_t> out;
  for (std::size_t r = 0; r < reached.size(); ++r)
    if (reached[r]) out.push_back(static_cast<std::int64_t>(r));
  return out;
}

std::vector<std::int64_t> potential_senders(const Trace& trace, std::int64_t receiver) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 0; r < trace.nranks; ++r) {
    const std::vector<std::int64_t> to = potential_destinations(trace, r);
    if (std::binary_search(to.begin(), to.end(), receiver)) out.push_back(r);
  }
  return out;
}

}  // namespace scalatrace
