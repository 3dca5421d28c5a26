// ProbabilisticWalk: a lossy trace's rank as a deadlock-free program (docs/lossy.md).
#include "scalatrace/read/probabilistic_walk.hpp"

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
    own_sends_ = std::make_unique<DrawnSends>(trace, options.seed, rank);
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

void ProbabilisticWalk::post_epoch(std::int64_t comm) {
  // Every epoch up to the current one whose receives are not posted yet.
  const std::uint64_t current = protocol_.epoch(comm);
  std::uint64_t& next = posted_epoch_[comm];
  for (; next <= current; ++next)
    for (const DrawnMessage& m : sends_->take(rank_, comm, next)) {
      pending_[m.comm].push_back(out_slots_);
      push(message_call(trace_, Op::Irecv, m, rank_, m.source));
      ++received_;
    }
}

void ProbabilisticWalk::close_epoch(const ProtocolStep& step, std::uint64_t compute_ns, std::uint32_t site) {
  Event wait;
  wait.op = Op::Waitall;
  wait.site = site;
  if (step.sync_all) {
    for (const DrawnMessage& m : sends_->take_all(rank_)) {
      pending_[m.comm].push_back(out_slots_);
      push(message_call(trace_, Op::Irecv, m, rank_, m.source));
      ++received_;
    }
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
      for (const DrawnMessage& m : sends_->take(rank_, step.sync_comm, next)) {
        pending_[m.comm].push_back(out_slots_);
        push(message_call(trace_, Op::Irecv, m, rank_, m.source));
        ++received_;
      }
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
  const bool init = e.op == Op::Init || e.op == Op::Init_thread;
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
