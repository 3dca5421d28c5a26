// Coordinated random selection (docs/lossy.md): each rank's drawn sends, gathered per receiver
// by walking the senders' events with the same seeded draws.
#include "scalatrace/read/drawn_sends.hpp"

#include "scalatrace/model/rank_math.hpp"
#include "scalatrace/read/potential_senders.hpp"

namespace scalatrace {

// ---------------------------------------------------------------- one rank's protocol

std::uint64_t SendProtocol::epoch(std::int64_t comm) const {
  const auto it = epochs_.find(comm);
  return it == epochs_.end() ? 0 : it->second;
}

bool SendProtocol::resolve(std::int64_t comm, std::int64_t relative_peer, std::int64_t& dest) const {
  if (relative_peer <= kAnySource) return false;  // MPI_PROC_NULL (or a sentinel a send never has)
  const auto [me, size] = comm_rank_and_size(trace_->comms, comm, rank_, trace_->nranks);
  if (me < 0 || size <= 0) return false;
  // A drawn relative peer may lie outside the communicator (a histogram of several ranks'
  // peers): it wraps around, as a ring would.
  const std::int64_t in_comm = ((me + relative_peer) % size + size) % size;
  dest = world_rank_of(trace_->comms, comm, rank_, in_comm, trace_->nranks);
  return dest >= 0;
}

void SendProtocol::add_send(const Event& e, ProtocolStep& out) const {
  const std::int64_t comm = e[Field::Comm];
  std::int64_t dest = 0;
  if (!resolve(comm, e[Field::Peer], dest)) return;
  out.sends.push_back(
      DrawnMessage{comm, rank_, dest, e[Field::Tag], e[Field::Bytes], e[Field::DtSize], epoch(comm), e.site});
}

void SendProtocol::step(const Event& e, ProtocolStep& out) {
  out.sync = out.sync_all = out.replaced = false;
  out.sends.clear();
  const std::int64_t comm = e[Field::Comm];
  auto sync = [&] {
    out.sync = true;
    out.sync_comm = comm;
    ++epochs_[comm];
  };
  switch (op_kind(e.op)) {
    case OpKind::BlockingSend:
    case OpKind::SendRecv:
      add_send(e, out);
      break;
    case OpKind::NonblockingSend:
      add_send(e, out);
      ++slots_;
      break;
    case OpKind::BlockingRecv:
    case OpKind::Probe:
      out.replaced = true;
      break;
    case OpKind::NonblockingRecv:
    case OpKind::PersistentRecv:
      ++slots_;
      out.replaced = true;
      break;
    case OpKind::PersistentSend:
      persistent_sends_[slots_++] = e;
      out.replaced = true;
      break;
    case OpKind::Start:
      for (const std::int64_t offset : e[ArrayField::Requests]) {
        if (offset <= 0 || static_cast<std::uint64_t>(offset) > slots_) continue;
        const auto it = persistent_sends_.find(slots_ - static_cast<std::uint64_t>(offset));
        if (it != persistent_sends_.end()) add_send(it->second, out);
      }
      out.replaced = true;
      break;
    case OpKind::RequestFree:
      for (const std::int64_t offset : e[ArrayField::Requests])
        if (offset > 0 && static_cast<std::uint64_t>(offset) <= slots_)
          persistent_sends_.erase(slots_ - static_cast<std::uint64_t>(offset));
      break;
    case OpKind::Collective:
    case OpKind::CommCreate:
    case OpKind::CommFree:
      sync();
      break;
    case OpKind::NonblockingCollective:
      sync();
      ++slots_;
      break;
    case OpKind::Lifecycle:
      if (e.op == Op::Finalize) {
        out.sync = out.sync_all = true;
        out.sync_comm = comm;
      }
      break;
    default:
      break;
  }
}

// ---------------------------------------------------------------- every rank's sends

struct DrawnSends::Sender {
  Cursor cursor;
  SendProtocol protocol;
  bool done = false;
  Event event;
  ProtocolStep step;
  std::uint64_t clock_ns = 0;  ///< the context's timer: end of its last event since MPI_Init's end
  Sender(const Trace& t, std::int64_t rank, std::uint64_t seed, std::shared_ptr<const LossyOccurrences> occurrences)
      : cursor(t, rank, TimingMode::Mean), protocol(t, rank) {
    cursor.draw_lossy_values(seed, std::move(occurrences));
  }
};

DrawnSends::DrawnSends(const Trace& trace, std::uint64_t seed, std::optional<std::int64_t> only_receiver,
                       const std::optional<std::vector<std::int64_t>>& senders)
    : trace_(trace),
      seed_(seed),
      only_(only_receiver),
      occurrences_(std::make_shared<LossyOccurrences>(trace)),
      senders_(static_cast<std::size_t>(trace.nranks)) {
  if (!only_) return;
  walked_.assign(senders_.size(), 0);
  for (const std::int64_t r : senders ? *senders : potential_senders(trace, *only_))
    if (r >= 0 && r < trace.nranks) walked_[static_cast<std::size_t>(r)] = 1;
}
DrawnSends::~DrawnSends() = default;

std::size_t DrawnSends::contexts() const {
  std::size_t n = 0;
  for (const auto& s : senders_) n += s != nullptr;
  return n;
}

DrawnSends::Sender& DrawnSends::sender(std::int64_t rank) {
  auto& s = senders_[static_cast<std::size_t>(rank)];
  if (!s) s = std::make_unique<Sender>(trace_, rank, seed_, occurrences_);
  return *s;
}

bool DrawnSends::step_sender(Sender& s) {
  if (s.done) return false;
  if (!s.cursor.next(s.event)) {
    s.done = true;
    return false;
  }
  const std::uint64_t start = s.clock_ns + s.event.compute_ns;
  s.clock_ns = is_mpi_init(s.event.op) ? 0 : start + s.event.duration_ns;
  s.protocol.step(s.event, s.step);
  for (DrawnMessage& m : s.step.sends) {
    m.time_ns = start;
    if (!only_ || m.dest == *only_) buffered_[{m.dest, m.comm, m.epoch}].push_back(m);
  }
  return true;
}

void DrawnSends::advance(std::int64_t rank, std::int64_t comm, std::uint64_t epoch) {
  if (!walked_.empty() && !walked_[static_cast<std::size_t>(rank)]) return;  // sends nothing to the receiver
  Sender& s = sender(rank);
  while (!s.done && s.protocol.epoch(comm) <= epoch) step_sender(s);
}

void DrawnSends::advance_to_end(std::int64_t rank) {
  if (!walked_.empty() && !walked_[static_cast<std::size_t>(rank)]) return;
  Sender& s = sender(rank);
  while (step_sender(s)) {
  }
}

std::vector<DrawnMessage> DrawnSends::take(std::int64_t receiver, std::int64_t comm, std::uint64_t epoch) {
  // The ranks that can send to `receiver` on `comm`: its members (as the receiver holds it).
  if (comm == 1) {
    advance(receiver, comm, epoch);
  } else if (const CommEntry* entry = trace_.comms.find(comm, receiver)) {
    for_each_rank(entry->members, [&](std::int64_t r) {
      if (r >= 0 && r < trace_.nranks) advance(r, comm, epoch);
    });
  } else if (comm == 0) {
    for (std::int64_t r = 0; r < trace_.nranks; ++r) advance(r, comm, epoch);
  }
  std::vector<DrawnMessage> out;
  const auto it = buffered_.find({receiver, comm, epoch});
  if (it != buffered_.end()) {
    out = std::move(it->second);
    buffered_.erase(it);
  }
  return out;
}

std::vector<DrawnMessage> DrawnSends::take_all(std::int64_t receiver) {
  for (std::int64_t r = 0; r < trace_.nranks; ++r) advance_to_end(r);
  std::vector<DrawnMessage> out;
  auto it = buffered_.lower_bound({receiver, INT64_MIN, 0});
  while (it != buffered_.end() && std::get<0>(it->first) == receiver) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    it = buffered_.erase(it);
  }
  return out;
}

}  // namespace scalatrace
