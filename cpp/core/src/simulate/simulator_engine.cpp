// The simulator engine's run loop and dispatch: ranks resume from the ready queue and walk
// their events until they block; each event is dispatched to the point-to-point, waiting and
// collective sections (engine.hpp lists them); at the end, deadlocks and unreceived messages
// are errors and the result is collected. simulate() is the public entry point (simulator.hpp).
// See docs/simulator.md ("Event engine").
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include "scalatrace/compress/lossy.hpp"
#include "simulate/engine.hpp"
#include "simulate/engine_collectives.hpp"
#include "simulate/engine_waiting.hpp"
#include "simulate/simulator_noise.hpp"

namespace scalatrace {
namespace sim {

Engine::Engine(const Trace& trace, const SimOptions& options, Prefetching prefetching, FairPasses* fair,
               OrderFreeShortcuts shortcuts)
    : trace_(trace),
      opt_(options),
      net_(options, trace.nranks, fair),
      n_(trace.nranks),
      ranks_(static_cast<std::size_t>(trace.nranks)),
      order_(trace, options),
      order_free_(shortcuts == OrderFreeShortcuts::Auto && fair == nullptr && order_.order_free()),
      prefetching_(prefetching) {
  for (std::int64_t r = 0; r < n_; ++r) ranks_.emplace_back(trace, r, options, constants_, cursor_block_);
  if (is_lossy(trace)) {
    // Coordinated random selection (docs/lossy.md): each rank's walk draws its sends and posts
    // the receives the others draw to it; each sender is walked once for all receivers.
    drawn_ = std::make_unique<DrawnSends>(trace, options.seed);
    for (std::int64_t r = 0; r < n_; ++r)
      rank(r).walk = std::make_unique<ProbabilisticWalk>(trace, r, walk_options(r), drawn_.get());
  }
  for (std::size_t op = 0; op < kOpCount; ++op) {
    const Op o = static_cast<Op>(op);
    const OpKind kind = op_kind(o);
    // Calls that never wait, blocking collectives (their fastest calls: the last rank to arrive
    // waits for nobody) and eager blocking sends (begin_event) keep their library time.
    takes_recorded_time_[op] = options.recorded_local_calls &&
                               (op_never_waits(o) || kind == OpKind::Collective || kind == OpKind::CommCreate ||
                                (kind == OpKind::BlockingSend && o != Op::Ssend));
  }
  in_wild_.assign(static_cast<std::size_t>(n_), 0);
  site_times_.resize(trace.sites.size());
  site_count_ = site_times_.size();
  noisy_ = options.noise.period > 0;
}

SimResult Engine::run() {
  for (std::int64_t r = 0; r < n_; ++r) ready_.push_back(r);
  for (;;) {
    while (!ready_.empty()) {
      const std::int64_t r = ready_.pop_front();
      if (prefetch_states_) {
        const std::size_t queued = ready_.size();
        if (queued > kPrefetchDistance) prefetch_first_line(rank(ready_[kPrefetchDistance]));
        if (queued > kStageDistance) {
          const std::int64_t later = ready_[kStageDistance];
          prefetch_for_stage(rank(later));
          net_.prefetch_sender(later);
        }
        if (prefetch_more_ && queued > kTargetDistance) prefetch_targets(rank(ready_[kTargetDistance]));
        if (prefetch_more_ && queued > kCursorNodesDistance) prefetch_cursor_nodes(rank(ready_[kCursorNodesDistance]));
      }
      advance(rank(r));
      if (net_.wants_horizon()) [[unlikely]]
        net_.forget_before(earliest_clock());
    }
    if (!resolve_wildcard()) break;
  }
  check_finished();
  check_unmatched();
  return collect();
}

/// A lower bound of every future transfer's start: the least clock of the unfinished ranks and
/// of their nonblocking collectives' schedules (clocks only move forward; a message starts no
/// earlier than the clock that sends it, a rendezvous' data no earlier than its receive's post).
double Engine::earliest_clock() {
  double t = std::numeric_limits<double>::infinity();
  for (std::int64_t r = 0; r < n_; ++r) {
    const RankSim& R = rank(r);
    if (R.finished) continue;
    t = std::min(t, R.clock);
    for (const CollSchedule& S : R.schedules) t = std::min(t, S.clock);
  }
  return std::isfinite(t) ? t : 0.0;
}

// ---------------------------------------------------------------- errors

/// The rank's current event (#event_index, or its last if its trace has ended), read again
/// from the trace for a message: only the running rank's event is kept whole (ev_).
std::string Engine::describe_current(const RankSim& R) const {
  EventView e;
  if (R.walk) {
    ProbabilisticWalk again(trace_, R.rank, walk_options(R.rank));
    for (std::uint64_t i = 0; i <= R.event_index && again.next(e); ++i) {
    }
    return describe(e);
  }
  Cursor again(trace_, R.rank, opt_.timing, opt_.seed + static_cast<std::uint64_t>(R.rank));
  for (std::uint64_t i = 0; i <= R.event_index && again.next(e); ++i) {
  }
  return describe(e);
}

ProbabilisticOptions Engine::walk_options(std::int64_t r) const {
  ProbabilisticOptions o;
  o.seed = opt_.seed;
  o.timing = opt_.timing;
  o.timing_seed = opt_.seed + static_cast<std::uint64_t>(r);
  o.duration_timing = opt_.timing == TimingMode::None ? TimingMode::None : TimingMode::Median;
  return o;
}

void Engine::fail_event(const RankSim& R, const std::string& what) const {
  throw SimulationError("simulation: rank " + std::to_string(R.rank) + ", event #" + std::to_string(R.event_index) +
                        " (" + describe_current(R) + "): " + what);
}

// ---------------------------------------------------------------- events

inline void Engine::begin_event(RankSim& R) {
  R.op = ev_.op;
  R.site = ev_.site;
  // The run starts at MPI_Init: what came before it (process start-up) is not simulated.
  const bool start = ev_.op == Op::Init || ev_.op == Op::Init_thread;
  double compute = start ? 0.0 : static_cast<double>(ev_.compute_ns) * opt_.compute_scale;
  if (!opt_.site_compute_scale.empty()) {
    const auto it = opt_.site_compute_scale.find(ev_.site);
    if (it != opt_.site_compute_scale.end()) compute *= it->second;
  }
  if (noisy_ && compute > 0)
    compute = noisy_end(opt_.noise, noise_phase(opt_.noise, R.rank), R.clock, compute) - R.clock;
  R.clock += compute;
  R.times.compute += compute;
  R.event_compute = compute;
  R.event_floor = takes_recorded_time_[static_cast<std::size_t>(ev_.op)] ? static_cast<double>(ev_.duration_ns) : 0.0;
  R.event_floor_elapsed = R.event_floor > 0 && !op_never_waits(ev_.op);
  // A blocking send waits for its receiver when it goes rendezvous: only eager ones keep a floor.
  if (R.event_floor > 0 && op_kind(ev_.op) == OpKind::BlockingSend && ev_.op != Op::Bsend &&
      static_cast<double>(ev_[Field::Bytes]) * opt_.size_scale > opt_.eager_threshold)
    R.event_floor = 0.0;
  R.event_start = R.clock;
  R.wait_mark = R.times.wait;
  R.late_s_mark = R.times.late_sender;
  R.late_r_mark = R.times.late_receiver;
}

void Engine::add_timeline_row(const RankSim& R) {
  if (res_.timeline.size() >= opt_.timeline_limit)
    throw UsageError("the simulated timeline would exceed " + std::to_string(opt_.timeline_limit) +
                     " rows; simulate without a timeline or raise the limit");
  res_.timeline.push_back(SimTimelineRow{R.rank, R.event_index, R.op, R.site, R.event_start, R.clock});
}

inline void Engine::advance(RankSim& R) {
  for (;;) {
    if (R.stage != Stage::Next) flush_outbox();
    switch (R.stage) {
      case Stage::Waiting:
        if (!R.schedules.empty()) progress_schedules(R);
        if (!complete_waits(R)) {
          if (order_free_) count_unknown_waits(R);
          R.blocked = true;
          return;
        }
        end_event(R);
        continue;
      case Stage::Probing:
        if (!R.schedules.empty()) progress_schedules(R);
        if (!try_probe(R)) {
          R.blocked = true;
          return;
        }
        end_event(R);
        continue;
      case Stage::Gathered:  // woken by a message: its collective's other members are still to come
        R.blocked = true;
        return;
      case Stage::StepWaiting:
        if (!R.schedules.empty()) progress_schedules(R);
        if (!complete_step(R)) {
          R.blocked = true;
          return;
        }
        R.stage = Stage::Collective;
        continue;
      case Stage::Collective:
        if (R.step_pos < R.steps.size()) {
          post_step(R);
          R.stage = Stage::StepWaiting;
        } else {
          R.steps.clear();
          R.step_pos = 0;
          end_event(R);
        }
        continue;
      case Stage::Next: {
        if (R.cursor_done || !R.next_event(ev_)) {
          flush_outbox();
          R.cursor_done = true;
          // Nonblocking collectives never waited for still take part until they end.
          if (!R.schedules.empty()) progress_schedules(R);
          if (R.schedules.empty())
            R.finished = true;
          else
            R.blocked = true;
          return;
        }
        begin_event(R);
        // Consecutive sends leave their eager messages in the outbox; anything else first
        // delivers them (send_message).
        if (const OpKind kind = op_kind(ev_.op); kind != OpKind::NonblockingSend && kind != OpKind::BlockingSend)
          flush_outbox();
        dispatch(R);
        continue;
      }
    }
  }
}

// ---------------------------------------------------------------- dispatch

inline void Engine::wait_for(RankSim& R, std::initializer_list<std::int32_t> qs) {
  clear_waits(R);
  for (const std::int32_t q : qs)
    if (q != kNoRequest) {
      R.reqs[static_cast<std::size_t>(q)].waited = true;
      R.waits.push_back(q);
    }
  R.stage = Stage::Waiting;
}

inline void Engine::slot_or_done(RankSim& R, std::int32_t q) {
  if (q == kNoRequest) q = new_request(R, Request::Kind::Done);
  add_slot(R, q);
}

inline void Engine::start_persistent(RankSim& R, std::int32_t q) {
  if (!R.reqs[static_cast<std::size_t>(q)].persistent) return;
  const PersistentArgs a = R.persistent_args[static_cast<std::size_t>(q)];
  if (a.peer < kAnyWorld) return;  // MPI_PROC_NULL
  if (op_kind(a.op) == OpKind::PersistentSend)
    post_send(R, a.peer, a.comm, a.tag, a.bytes, a.op, false, q);
  else
    post_recv(R, a.peer, a.comm, a.tag, false, q);
}

inline void Engine::add_completions(RankSim& R, std::span<const std::int64_t> offsets, std::int64_t index) {
  if (index < 0 || static_cast<std::size_t>(index) >= offsets.size()) return;
  const std::int32_t q = slot_request(R, offsets[static_cast<std::size_t>(index)]);
  if (q == kNoRequest) return;
  Request& Q = R.reqs[static_cast<std::size_t>(q)];
  if (Q.kind == Request::Kind::Done && !Q.persistent && !Q.schedule) {
    release(R, q);
    return;
  }
  if (Q.active && !Q.waited) {
    Q.waited = true;
    R.waits.push_back(q);
  }
}

inline void Engine::dispatch(RankSim& R) {
  const EventView& e = ev_;
  const std::int64_t comm = e[Field::Comm];
  switch (op_kind(e.op)) {
    case OpKind::BlockingSend:
      wait_for(R, {user_send(R, e.op, comm, e[Field::Peer], e[Field::Tag], e[Field::Bytes])});
      return;
    case OpKind::BlockingRecv:
      wait_for(R, {user_recv(R, comm, e[Field::Peer], e[Field::Tag])});
      return;
    case OpKind::SendRecv: {
      const std::int32_t rq = user_recv(R, comm, e[Field::Peer2], e[Field::Tag2]);
      const std::int32_t sq = user_send(R, Op::Send, comm, e[Field::Peer], e[Field::Tag], e[Field::Bytes]);
      wait_for(R, {rq, sq});
      return;
    }
    case OpKind::NonblockingSend:
      slot_or_done(R, user_send(R, e.op, comm, e[Field::Peer], e[Field::Tag], e[Field::Bytes]));
      end_event(R);
      return;
    case OpKind::NonblockingRecv:
      slot_or_done(R, user_recv(R, comm, e[Field::Peer], e[Field::Tag]));
      end_event(R);
      return;
    case OpKind::Probe: {
      const std::int64_t src = peer_world(R, comm, e[Field::Peer]);
      if (e.op == Op::Iprobe || src < kAnyWorld) {
        end_event(R);
        return;
      }
      R.probe = PostedRecv{.src = src, .comm = comm_key(R, comm), .tag = e[Field::Tag], .post_time = R.clock};
      R.stage = Stage::Probing;
      return;
    }
    case OpKind::PersistentSend:
    case OpKind::PersistentRecv: {
      const std::int32_t q = new_request(R, Request::Kind::Done);
      R.reqs[static_cast<std::size_t>(q)].persistent = true;
      if (R.persistent_args.size() <= static_cast<std::size_t>(q))
        R.persistent_args.resize(static_cast<std::size_t>(q) + 1);
      PersistentArgs& a = R.persistent_args[static_cast<std::size_t>(q)];
      a.op = e.op;
      a.comm = comm_key(R, comm);
      a.peer = peer_world(R, comm, e[Field::Peer]);
      a.tag = e[Field::Tag];
      a.bytes = scaled_bytes(e[Field::Bytes]);
      if (op_kind(e.op) == OpKind::PersistentSend && a.peer == kAnyWorld)
        fail_event(R, "a persistent send to MPI_ANY_SOURCE");
      add_slot(R, q);
      end_event(R);
      return;
    }
    case OpKind::Start:
      for (const std::int64_t off : e[ArrayField::Requests]) {
        const std::int32_t q = slot_request(R, off);
        if (q != kNoRequest) start_persistent(R, q);
      }
      end_event(R);
      return;
    case OpKind::RequestFree:
      for (const std::int64_t off : e[ArrayField::Requests]) {
        const std::int32_t q = slot_request(R, off);
        if (q == kNoRequest) continue;
        Request& Q = R.reqs[static_cast<std::size_t>(q)];
        if (Q.active) Q.orphaned = true;  // still in flight: never reuse its pool entry
        Q.persistent = false;
        release(R, q);
      }
      end_event(R);
      return;
    case OpKind::Completion: {
      const std::span<const std::int64_t> offs = e[ArrayField::Requests];
      clear_waits(R);
      const bool flag = e[Field::Flag] != 0;
      switch (e.op) {
        case Op::Wait:
        case Op::Waitall:
          for (std::size_t i = 0; i < offs.size(); ++i) add_completions(R, offs, static_cast<std::int64_t>(i));
          break;
        case Op::Test:
        case Op::Testall:
          if (flag)
            for (std::size_t i = 0; i < offs.size(); ++i) add_completions(R, offs, static_cast<std::int64_t>(i));
          break;
        case Op::Waitany:
          add_completions(R, offs, e[Field::Index]);
          break;
        case Op::Testany:
          if (flag) add_completions(R, offs, e[Field::Index]);
          break;
        default:  // Waitsome, Testsome
          for (const std::int64_t i : e[ArrayField::Indices]) add_completions(R, offs, i);
          break;
      }
      R.stage = Stage::Waiting;
      return;
    }
    case OpKind::NonblockingCollective:
      start_nonblocking_collective(R, comm);
      end_event(R);
      return;
    case OpKind::Collective:
      if (order_free_ && enter_gathering(R, comm)) return;
      start_collective(R, comm);
      return;
    case OpKind::CommCreate:
      start_collective(R, comm);
      return;
    default:  // Init, Finalize, Comm_free, functions not modelled: no time
      end_event(R);
      return;
  }
}

// ---------------------------------------------------------------- end of run

void Engine::check_finished() const {
  std::string blocked;
  std::size_t count = 0;
  for (const RankSim& R : ranks_) {
    if (R.finished) continue;
    if (++count <= 4)
      blocked += "\n  rank " + std::to_string(R.rank) + " at event #" + std::to_string(R.event_index) + ": " +
                 describe_current(R);
  }
  if (count == 0) return;
  throw SimulationError("simulated deadlock: " + std::to_string(count) +
                        " rank(s) wait for messages that no rank will send" + blocked + (count > 4 ? "\n  ..." : ""));
}

void Engine::check_unmatched() const {
  for (const RankSim& D : ranks_) {
    if (D.unexpected.empty()) continue;
    const Message& m = D.unexpected.front();
    throw SimulationError("simulation: " + std::to_string(D.unexpected.size()) + " message(s) to rank " +
                          std::to_string(D.rank) + " were never received; the first: from rank " +
                          std::to_string(m.src) + ", tag " + std::to_string(m.tag) + ", " +
                          std::to_string(static_cast<std::int64_t>(m.bytes)) + " bytes" +
                          (m.collective ? " (inside a collective)" : ""));
  }
}

SimResult Engine::collect() {
  const auto n = static_cast<std::size_t>(n_);
  res_.end_ns.resize(n);
  res_.ranks.resize(n);
  res_.sent_messages.resize(n);
  res_.recv_messages.resize(n);
  res_.sent_bytes.resize(n);
  res_.recv_bytes.resize(n);
  for (std::size_t r = 0; r < n; ++r) {
    const RankSim& R = ranks_[r];
    res_.end_ns[r] = R.clock;
    res_.total_ns = std::max(res_.total_ns, R.clock);
    res_.ranks[r] = R.times;
    res_.sent_messages[r] = R.sent;
    res_.recv_messages[r] = R.received;
    res_.sent_bytes[r] = R.sent_bytes;
    res_.recv_bytes[r] = R.recv_bytes;
  }
  for (std::size_t site = 0; site < site_times_.size(); ++site)
    if (site_times_[site].used)
      res_.sites.push_back(SimSiteRow{static_cast<std::uint32_t>(site), site_times_[site].op, site_times_[site].times});
  for (const auto& [key, times] : other_ops_)
    res_.sites.push_back(SimSiteRow{static_cast<std::uint32_t>(key >> 16), static_cast<Op>(key & 0xffff), times});
  std::sort(res_.sites.begin(), res_.sites.end(),
            [](const SimSiteRow& a, const SimSiteRow& b) { return a.site != b.site ? a.site < b.site : a.op < b.op; });
  for (const auto& [key, pair] : pairs_) res_.pairs.push_back(pair);
  std::sort(res_.pairs.begin(), res_.pairs.end(),
            [](const SimPair& a, const SimPair& b) { return a.src != b.src ? a.src < b.src : a.dst < b.dst; });
  std::stable_sort(res_.timeline.begin(), res_.timeline.end(),
                   [](const SimTimelineRow& a, const SimTimelineRow& b) { return a.rank < b.rank; });
  return std::move(res_);
}

SimResult simulate_prefetching(const Trace& trace, const SimOptions& options, Prefetching prefetching,
                               OrderFreeShortcuts shortcuts) {
  options.validate();
  if (trace.nranks <= 0) throw UsageError("cannot simulate a trace with no ranks");
  const Topology& topo = options.topology;
  if (topo.kind == Topology::Kind::Flat || !topo.congestion || topo.sharing == Topology::Sharing::FirstCome) {
    Engine engine(trace, options, prefetching, nullptr, shortcuts);
    return engine.run();
  }
  // Fair sharing: the first pass times the messages first come, first served; each later one by
  // the fair shares of the flows of the pass before, until the flows start at the same times
  // in two passes (docs/simulator.md, "Fair sharing").
  FairPasses fair(trace.nranks);
  SimResult result;
  bool settled = false;
  while (!settled && fair.pass < FairPasses::kMaxPasses) {
    Engine engine(trace, options, prefetching, &fair);
    result = engine.run();
    settled = fair.finish_pass();
  }
  result.fair_passes = fair.pass;
  result.fair_settled = settled;
  return result;
}

}  // namespace sim

SimResult simulate(const Trace& trace, const SimOptions& options) {
  return sim::simulate_prefetching(trace, options, sim::Prefetching::Auto);
}

}  // namespace scalatrace
