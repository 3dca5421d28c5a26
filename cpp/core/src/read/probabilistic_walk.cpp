// ProbabilisticWalk: a lossy trace's rank as a deadlock-free program (docs/lossy.md).
#include "scalatrace/read/probabilistic_walk.hpp"

#include <algorithm>
#include <utility>

#include "scalatrace/model/rank_math.hpp"

namespace scalatrace {

ProbabilisticWalk::ProbabilisticWalk(const Trace& trace, std::int64_t rank, const ProbabilisticOptions& options,
                                     DrawnSends* sends)
    : trace_(trace),
      rank_(rank),
      cursor_(trace, rank, options.timing, options.timing_seed, options.duration_timing),
      protocol_(trace, rank) {
  if (sends == nullptr) {
    own_sends_ = std::make_unique<DrawnSends>(trace, options.seed, rank, options.senders);
    sends = own_sends_.get();
  }
  sends_ = sends;
  cursor_.draw_lossy_values(options.seed, sends_->occurrences());
}
ProbabilisticWalk::~ProbabilisticWalk() = default;
ProbabilisticWalk::ProbabilisticWalk(ProbabilisticWalk&&) noexcept = default;

bool ProbabilisticWalk::next(Event& out) {
  while (queue_.empty() && !ended_) refill();
  if (queue_.empty()) return false;
  out = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

bool ProbabilisticWalk::next(EventView& out) {
  if (!next(current_)) return false;
  out = EventView::of(current_);
  return true;
}

std::uint64_t ProbabilisticWalk::take_compute(std::uint64_t own) {
  const std::uint64_t t = carried_compute_ + own;
  carried_compute_ = 0;
  return t;
}

void ProbabilisticWalk::push(Event&& e) {
  if (op_creates_request(e.op)) ++out_slots_;
  queue_.push_back(std::move(e));
}

namespace {

/// A point-to-point call of the output: Isend or Irecv of message `m` as `rank` sees it.
Event message_call(const Trace& trace, Op op, const DrawnMessage& m, std::int64_t rank, std::int64_t other) {
  Event e;
  e.op = op;
  e.site = m.site;
  const std::int64_t me = comm_rank_and_size(trace.comms, m.comm, rank, trace.nranks).first;
  const std::int64_t peer = comm_rank_and_size(trace.comms, m.comm, other, trace.nranks).first;
  e[Field::Comm] = m.comm;
  e[Field::Peer] = peer - me;
  e[Field::Tag] = m.tag;
  e[Field::Bytes] = m.bytes;
  e[Field::DtSize] = m.dt_size;
  return e;
}

}  // namespace

void ProbabilisticWalk::emit_send(const DrawnMessage& m, const Event& from, std::uint64_t compute_ns) {
  Event e = message_call(trace_, Op::Isend, m, rank_, m.dest);
  e.site = from.site;
  e.compute_ns = compute_ns;
  // A blocking send's recorded time includes waiting for its receiver, which the Isend does not.
  e.duration_ns = op_kind(from.op) == OpKind::NonblockingSend ? from.duration_ns : 0;
  pending_[m.comm].push_back(out_slots_);
  push(std::move(e));
  ++sent_;
}

void ProbabilisticWalk::post_receive(const DrawnMessage& m) {
  pending_[m.comm].push_back(out_slots_);
  push(message_call(trace_, Op::Irecv, m, rank_, m.source));
  ++received_;
}

void ProbabilisticWalk::post_epoch(std::int64_t comm) {
  // Every epoch up to the current one whose receives are not known yet: held until the senders'
  // estimated send times.
  const std::uint64_t current = protocol_.epoch(comm);
  std::uint64_t& next = posted_epoch_[comm];
  const std::size_t before = held_.size();
  for (; next <= current; ++next)
    for (const DrawnMessage& m : sends_->take(rank_, comm, next)) held_.push_back(m);
  if (held_.size() != before)
    std::stable_sort(held_.begin(), held_.end(),
                     [](const DrawnMessage& a, const DrawnMessage& b) { return a.time_ns < b.time_ns; });
}

void ProbabilisticWalk::release_receives(std::uint64_t until_ns) {
  std::size_t n = 0;
  while (n < held_.size() && held_[n].time_ns <= until_ns) post_receive(held_[n++]);
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(n));
}

void ProbabilisticWalk::flush_receives(std::int64_t comm, bool all) {
  for (const DrawnMessage& m : held_)
    if (all || m.comm == comm) post_receive(m);
  std::erase_if(held_, [&](const DrawnMessage& m) { return all || m.comm == comm; });
}

void ProbabilisticWalk::close_epoch(const ProtocolStep& step, std::uint64_t compute_ns, std::uint32_t site) {
  Event wait;
  wait.op = Op::Waitall;
  wait.site = site;
  flush_receives(step.sync_comm, step.sync_all);
  if (step.sync_all) {
    for (const DrawnMessage& m : sends_->take_all(rank_)) post_receive(m);
    for (auto& [comm, slots] : pending_) {
      for (const std::uint64_t s : slots)
        wait[ArrayField::Requests].push_back(static_cast<std::int64_t>(out_slots_ - s));
      slots.clear();
    }
  } else {
    // The epoch being closed (the protocol has already counted the synchronisation point).
    const std::uint64_t closing = protocol_.epoch(step.sync_comm) - 1;
    std::uint64_t& next = posted_epoch_[step.sync_comm];
    for (; next <= closing; ++next)
      for (const DrawnMessage& m : sends_->take(rank_, step.sync_comm, next)) post_receive(m);
    auto& slots = pending_[step.sync_comm];
    for (const std::uint64_t s : slots) wait[ArrayField::Requests].push_back(static_cast<std::int64_t>(out_slots_ - s));
    slots.clear();
  }
  if (wait[ArrayField::Requests].empty()) {
    carried_compute_ += compute_ns;  // nothing to wait for: the time goes to the call itself
    return;
  }
  wait.compute_ns = compute_ns;
  push(std::move(wait));
}

void ProbabilisticWalk::remap_completion(const Event& e) {
  const auto& offsets = e[ArrayField::Requests];
  auto completed = [&](std::size_t i) {
    switch (e.op) {
      case Op::Waitany:
      case Op::Testany:
        return e[Field::Index] == static_cast<std::int64_t>(i);
      case Op::Waitsome:
      case Op::Testsome:
        for (const std::int64_t k : e[ArrayField::Indices])
          if (k == static_cast<std::int64_t>(i)) return true;
        return false;
      case Op::Test:
      case Op::Testall:
        return e[Field::Flag] != 0;
      default:
        return true;
    }
  };
  Event wait;
  wait.op = Op::Waitall;
  wait.site = e.site;
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    const std::int64_t offset = offsets[i];
    if (offset <= 0 || static_cast<std::uint64_t>(offset) > protocol_.slots() || !completed(i)) continue;
    const auto it = collective_slots_.find(protocol_.slots() - static_cast<std::uint64_t>(offset));
    if (it == collective_slots_.end()) continue;  // a point-to-point request: the epoch's Waitall completes it
    wait[ArrayField::Requests].push_back(static_cast<std::int64_t>(out_slots_ - it->second));
    collective_slots_.erase(it);
  }
  if (wait[ArrayField::Requests].empty()) {
    carried_compute_ += e.compute_ns;
    return;
  }
  wait.compute_ns = take_compute(e.compute_ns);
  wait.duration_ns = e.duration_ns;
  push(std::move(wait));
}

void ProbabilisticWalk::refill() {
  if (!cursor_.next(event_)) {
    if (!finalized_) {  // a trace without Finalize: what is left completes at its end
      ProtocolStep all;
      all.sync = all.sync_all = true;
      finalized_ = true;
      close_epoch(all, take_compute(0), 0);
    }
    ended_ = true;
    return;
  }
  const Event& e = event_;
  const OpKind kind = op_kind(e.op);
  const bool first = !started_;
  started_ = true;
  const bool init = is_mpi_init(e.op);
  // The receives of messages estimated to be sent before this call starts go before it (and
  // before its computation): the last call before the send.
  const std::uint64_t start_ns = clock_ns_ + e.compute_ns;
  clock_ns_ = init ? 0 : start_ns + e.duration_ns;
  release_receives(start_ns);
  if (first && !init) post_epoch(0);
  const std::uint64_t slot_before = protocol_.slots();
  protocol_.step(e, step_);
  if (finalized_) {  // calls after Finalize (rare): as recorded
    Event pass = e;
    push(std::move(pass));
    return;
  }
  if (step_.sync) {
    close_epoch(step_, take_compute(e.compute_ns), e.site);
    Event pass = e;
    pass.compute_ns = take_compute(0);
    if (kind == OpKind::NonblockingCollective) collective_slots_[slot_before] = out_slots_;
    push(std::move(pass));
    if (step_.sync_all) {
      finalized_ = true;
      return;
    }
    if (kind != OpKind::CommFree) post_epoch(step_.sync_comm);  // a freed communicator carries nothing more
    if (kind == OpKind::CommCreate && e[Field::NewComm] != kNoComm) post_epoch(e[Field::NewComm]);
    return;
  }
  if (!step_.sends.empty()) {
    std::uint64_t compute = take_compute(e.compute_ns);
    for (const DrawnMessage& m : step_.sends) {
      emit_send(m, e, compute);
      compute = 0;
    }
    return;
  }
  switch (kind) {
    case OpKind::BlockingSend:
    case OpKind::NonblockingSend:
    case OpKind::SendRecv:  // to MPI_PROC_NULL: nothing to do
    case OpKind::RequestFree:
      carried_compute_ += e.compute_ns;
      return;
    case OpKind::Completion:
      remap_completion(e);
      return;
    default:
      break;
  }
  if (step_.replaced) {
    carried_compute_ += e.compute_ns;
    return;
  }
  Event pass = e;
  pass.compute_ns = take_compute(e.compute_ns);
  push(std::move(pass));
  if (init) post_epoch(0);
}

}  // namespace scalatrace
