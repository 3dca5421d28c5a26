#pragma once
// The simulator's event engine (not a public header): every rank walks its own Cursor and runs
// until it blocks; messages carry their simulated arrival times, and MPI_ANY_SOURCE receives are
// matched only when no rank can make progress any more, to the message that arrived first in
// simulated time. Ready ranks resume first in, first out: that order is part of the result (the
// per-site sums' last bits, rendezvous transfers on their sender's NIC, shared links), so the
// speed measures below keep it. See docs/simulator.md ("Event engine").
//
// The class is defined here with the small helpers every section uses (inline); its sections
// are in their own files:
//   engine_state.hpp           per-rank state, requests, messages, the ready queue
//   engine_communicators.cpp   communicator lookups past the inline fast paths
//   engine_point_to_point.cpp  posting sends and receives, delivery, matching, wildcards
//   engine_waiting.hpp         completion of waits and probes
//   engine_collectives.hpp     a collective's steps; engine_collectives.cpp: nonblocking schedules
//   engine_gathering.hpp       gathered collectives' state; engine_gathering.cpp: their pass
//   simulator_engine.cpp       the run loop, event dispatch, end of run, simulate()
// Functions the run loop calls for every event or resumption are `inline` and defined where
// that loop is compiled (simulator_engine.cpp, which includes engine_waiting.hpp and
// engine_collectives.hpp): the split adds no call between files on the per-event path. Those
// with one caller are marked always_inline: in one file with internal linkage GCC inlined them
// as functions called once, which it does not do for inline functions of a class in a header.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "scalatrace/model/trace.hpp"
#include "scalatrace/simulate/simulator.hpp"
#include "simulate/engine_gathering.hpp"
#include "simulate/engine_state.hpp"
#include "simulate/order_free.hpp"
#include "simulate/simulator_network.hpp"
#include "simulate/simulator_rank_array.hpp"
#include "support/prefetch.hpp"

namespace scalatrace::sim {

/// Which of the engine's cache measures (prefetching ahead of resumptions, the outbox) run.
/// They change the speed only, never a result: Auto decides by the size of the ranks' states
/// (the measures pay only when the states exceed the caches); Off and All force them, so that
/// tests can compare both paths on traces small enough to simulate quickly.
enum class Prefetching { Auto, Off, All };

/// What an order-free run (order_free.hpp) lets the engine do for speed (Auto): gather blocking
/// collectives (engine_gathering.hpp) and resume a woken rank first, only once its completion
/// call can complete (Engine::wake). Off: every collective step by step and the ranks resumed
/// first in, first out, as in any other run (what tests compare Auto with).
enum class OrderFreeShortcuts { Auto, Off };

class Engine {
 public:
  /// `fair`: fair sharing's state across passes (Topology::Sharing::Fair), null otherwise.
  Engine(const Trace& trace, const SimOptions& options, Prefetching prefetching = Prefetching::Auto,
         FairPasses* fair = nullptr, OrderFreeShortcuts shortcuts = OrderFreeShortcuts::Auto);

  SimTimes& site_times(std::uint32_t site, Op op) {
    if (site >= site_count_) {  // a site beyond the trace's table: counted all the same
      site_times_.resize(site + 1);
      site_count_ = site_times_.size();
    }
    SiteTimes& s = site_times_[site];
    if (!s.used) {
      s.used = true;
      s.op = op;
    }
    if (s.op == op) return s.times;
    return other_ops_[(static_cast<std::uint64_t>(site) << 16) | static_cast<std::uint64_t>(op)];
  }

  SimResult run();
  /// Blocking collectives run as gathered collectives so far (engine_gathering.hpp).
  std::uint64_t gathered_collectives() const { return gathered_; }
  /// Of those, the ones whose steps went in lockstep (Engine::run_lockstep).
  std::uint64_t lockstep_collectives() const { return lockstep_; }
  /// Of those, the ones that ran on the layout their slot kept from the last one (Gathering::
  /// layout_size: every member entered with the same steps).
  std::uint64_t reused_layouts() const { return reused_layouts_; }
  /// Members that entered a gathered collective with the inputs its slot's kept layout was
  /// made from, their steps taken from it, not computed (Gathering::layout_inputs).
  std::uint64_t steps_not_computed() const {
    std::uint64_t n = 0;
    for (const Gathering& g : gatherings_) n += g.steps_not_computed;
    return n;
  }
  /// A lower bound of every future transfer's start (topology congestion's horizon).
  double earliest_clock();
  /// The options of rank r's ProbabilisticWalk (lossy traces).
  ProbabilisticOptions walk_options(std::int64_t r) const;

 private:
  const Trace& trace_;
  const SimOptions& opt_;
  /// By op: the call takes at least its recorded duration (SimOptions::recorded_local_calls).
  std::array<bool, kOpCount> takes_recorded_time_{};
  Network net_;
  bool noisy_ = false;  ///< OS noise on (SimOptions::noise)
  std::int64_t n_;
  /// Lossy traces (docs/lossy.md): every rank's drawn sends, shared by the ranks' walks
  /// (declared before them: it outlives them).
  std::unique_ptr<DrawnSends> drawn_;
  /// The constant field values of all ranks' cursors, each distinct set once (declared before
  /// the ranks: it outlives their cursors).
  SharedConstants constants_;
  /// The ranks' cursors' states, one huge-page block for all (declared before the ranks too).
  CursorBlock cursor_block_{static_cast<std::size_t>(n_)};
  sim::RankArray<RankSim> ranks_;
  ReadyQueue ready_{n_};
  /// Eager messages posted by the running rank, not yet delivered (send_message).
  struct Outgoing {
    std::int64_t dst;
    Message message;
  };
  std::vector<Outgoing> outbox_;
  std::vector<std::int64_t> wild_;
  std::vector<char> in_wild_;
  std::uint64_t seq_ = 0;
  SimResult res_;
  /// Per call site: the times of its (usual) one op; other ops of the same site in `other_ops_`.
  struct SiteTimes {
    bool used = false;
    Op op = Op::Other;
    SimTimes times;
  };
  /// The event the running rank is starting (the cursor writes it, dispatch reads it): one for
  /// all ranks, so starting an event writes no line of the rank's own state.
  EventView ev_;
  std::vector<SiteTimes> site_times_;
  std::size_t site_count_ = 0;  ///< site_times_.size(), kept beside it (read per event)
  std::unordered_map<std::uint64_t, SimTimes> other_ops_;
  std::unordered_map<std::uint64_t, SimPair> pairs_;
  std::unordered_map<std::string, std::int64_t> comm_keys_;  ///< members -> communicator key
  /// Gathered collectives (engine_gathering.hpp): whether the run allows them, the slots (open
  /// and free) and the open ones by communicator key and sequence number.
  const OrderFreedom order_;
  /// Whether the run is order-free (OrderFreedom) and the engine takes its shortcuts
  /// (OrderFreeShortcuts): gathered collectives, woken ranks first (wake).
  const bool order_free_;
  std::vector<Gathering> gatherings_;
  std::map<std::pair<std::int64_t, std::uint64_t>, std::int32_t> open_gatherings_;  ///< (key, tag) -> slot
  CollSteps gather_steps_;  ///< the entering rank's steps, before they are copied
  std::uint64_t gathered_ = 0;
  std::uint64_t lockstep_ = 0;
  std::uint64_t reused_layouts_ = 0;

  RankSim& rank(std::int64_t r) { return ranks_[static_cast<std::size_t>(r)]; }

  /// Ranks are resumed in ready-queue order; what resuming one reads is fetched into the cache
  /// ahead, in three rounds (a prefetch only: the order of work is unchanged), each reading only
  /// lines the round before fetched: kPrefetchDistance resumptions ahead the rank's first line
  /// (prefetch_first_line); 2/3 of that distance later the lines its stage needs
  /// (prefetch_for_stage); 1/3 of it before the resumption what those lines point to
  /// (prefetch_targets: the requests of a wait list, the next step's receiver, the cursor's
  /// own state); and a fourth round, kCursorNodesDistance ahead, the node states the cursor
  /// reads next (prefetch_cursor_nodes: only what the walk goes on with, not all its nodes).
  static constexpr std::size_t kPrefetchDistance = 48;
  static constexpr std::size_t kStageDistance = 32;
  static constexpr std::size_t kTargetDistance = 16;
  static constexpr std::size_t kCursorNodesDistance = 8;
  /// Ranks whose states (with their cursors) exceed this many bytes do not stay in the cache:
  /// then the cursors and the receivers of messages are prefetched too (below it, those
  /// prefetches only cost instructions: 6 % at 1,024 ranks).
  static constexpr std::size_t kCachedStateBytes = std::size_t{16} << 20;
  /// Rank states beyond a core's second-level cache: the ranks about to resume are prefetched.
  static constexpr std::size_t kL2Bytes = std::size_t{512} << 10;
  /// All ranks' states with their cursors, roughly: what decides which prefetches pay (Auto).
  std::size_t state_bytes() const { return static_cast<std::size_t>(n_) * (sizeof(RankSim) + 2048); }
  const Prefetching prefetching_;
  const bool prefetch_more_ =
      prefetching_ == Prefetching::All || (prefetching_ == Prefetching::Auto && state_bytes() > kCachedStateBytes);
  const bool prefetch_states_ =
      prefetching_ == Prefetching::All || (prefetching_ == Prefetching::Auto && state_bytes() > kL2Bytes);

  /// The cache lines from `from` up to (not including) `to`, both within one rank's state.
  static void prefetch_range(const void* from, const void* to) {
    for (const char* p = static_cast<const char*>(from); p < static_cast<const char*>(to); p += 64) prefetch_line(p);
  }
  /// An object that may straddle two lines: both.
  template <class T>
  static void prefetch_object(const T* p) {
    prefetch_line(p);
    prefetch_line(reinterpret_cast<const char*>(p + 1) - 1);
  }
  /// Where the groups of RankSim's fields end (engine_state.hpp lays the state out in them):
  /// the scalars every resumption reads, then those a completion call and the next events read.
  static const void* hot_end(const RankSim& R) { return &R.recv_bytes + 1; }
  static const void* handles_end(const RankSim& R) { return &R.steps; }

  /// Round one: the line with R's stage and clock.
  static void prefetch_first_line(const RankSim& R) { prefetch_line(&R); }

  /// Round two (R's first line is cached): the rest of R's scalars and what R's stage reads
  /// on resuming: a collective step, its communicator and the receive queues' heads; a wait
  /// list with the handle buffer; or all of these before R's next event.
  static void prefetch_for_stage(const RankSim& R) {
    prefetch_range(reinterpret_cast<const char*>(&R) + 64, hot_end(R));
    switch (R.stage) {
      case Stage::StepWaiting:
      case Stage::Collective:
        prefetch_line(&R.steps);  // its size: is the step the last one?
        if (const void* step = R.steps.inline_address(R.step_pos)) prefetch_object(static_cast<const CollStep*>(step));
        if (const void* comm = R.comms.inline_address(R.coll_comm)) prefetch_line(comm);
        // The step's receive is posted (the head of `posted`: one line) or its message is
        // waiting (the head of `unexpected` and its first message).
        prefetch_line(&R.posted);
        prefetch_object(static_cast<const Message*>(R.unexpected.inline_address(0)));
        return;
      case Stage::Probing:
        prefetch_queue_heads(R);
        return;
      case Stage::Gathered:  // resumed only by a message: it blocks again at once
        return;
      case Stage::Waiting:
      case Stage::Next:
        prefetch_range(hot_end(R), handles_end(R));
        // The communicator of the next events: the head with its first entry (both lines: the
        // entry straddles them; a collective reads its sequence number in the second).
        prefetch_object(static_cast<const CommInfo*>(R.comms.inline_address(0)));
        prefetch_queue_heads(R);
        return;
    }
  }
  /// The heads of R's receive queues: what posting a receive or delivering a message reads.
  /// Of the posted receives three lines, the header and three receives: a delivery reads them
  /// up to its match and moves those after it (a 2D stencil's rank holds four at most).
  static void prefetch_queue_heads(const RankSim& R) {
    const char* posted = reinterpret_cast<const char*>(&R.posted);
    for (int line = 0; line < 3; ++line) prefetch_line(posted + 64 * line);
    const char* unexpected = reinterpret_cast<const char*>(&R.unexpected);
    for (int line = 0; line < 2; ++line) prefetch_line(unexpected + 64 * line);
  }

  /// Round three (R's stage lines are cached): the requests R waits for, the receiver of its
  /// collective's next step, its walk over the trace.
  void prefetch_targets(const RankSim& R) const {
    prefetch_requests(R);
    prefetch_next_step_receiver(R);
    prefetch_cursor(R);
  }
  /// The requests' addresses are computed from the pool's position (inline_address), not read
  /// from its header: that line is not among those round two fetched, and reading it would
  /// wait for memory here (a pool grown beyond its inline entries is simply not prefetched).
  /// The header's line is fetched too: complete_waits reads it first, whichever requests are
  /// still unknown.
  static void prefetch_requests(const RankSim& R) {
    if (R.stage != Stage::Waiting) return;
    prefetch_line(&R.reqs);
    for (std::size_t i = R.waits_known; i < R.waits.size(); ++i)
      if (const void* q = R.reqs.inline_address(static_cast<std::size_t>(R.waits[i]))) prefetch_line(q);
  }

  /// Whether R is likely to read its next event when resumed: it waits for the end of an event
  /// (a Waitall, or the last step of a collective).
  static bool reads_next_event(const RankSim& R) {
    return R.stage == Stage::Next || R.stage == Stage::Waiting ||
           (R.stage == Stage::StepWaiting && R.step_pos >= R.steps.size());
  }
  /// R's walk over the trace (its own state), if R is likely to read its next event.
  static void prefetch_cursor(const RankSim& R) {
    if (reads_next_event(R)) R.cursor.prefetch();
  }
  /// Round four (R's walk state is cached): the node states its next events come from.
  static void prefetch_cursor_nodes(const RankSim& R) {
    if (reads_next_event(R)) R.cursor.prefetch_upcoming();
  }

  /// The rank the next step of R's collective sends to: its receive queues are what delivering
  /// that message reads first (at 65,536 ranks a partner 2^k ranks away was last touched a
  /// whole round of the collective ago).
  void prefetch_next_step_receiver(const RankSim& R) const {
    if (R.stage != Stage::StepWaiting) return;
    prefetch_step_receiver(R, R.step_pos);
  }
  /// The same for step `pos` of R's collective (if any).
  void prefetch_step_receiver(const RankSim& R, std::size_t pos) const {
    if (pos >= R.steps.size()) return;
    const std::int64_t to = R.steps[pos].send_to;
    if (to < 0) return;
    const CommInfo& c = R.comms[R.coll_comm];
    if (!c.identity) return;  // other communicators: a member lookup, not worth a prefetch
    const RankSim& D = ranks_[static_cast<std::size_t>(to)];
    // A step's message is matched to D's step receive (line 1) or queued.
    prefetch_line(&D);
    prefetch_line(&D.step_reqs);
    prefetch_line(&D.posted);
    prefetch_object(reinterpret_cast<const Message*>(D.unexpected.inline_address(0)));
  }

  /// What delivering a user message to D touches: its flags and counts, the heads of its
  /// receive queues, and its usual requests (a matched receive's request is written).
  static void prefetch_receiver(const RankSim& D) {
    prefetch_line(&D);
    prefetch_line(&D.received);
    prefetch_queue_heads(D);
    const char* reqs = reinterpret_cast<const char*>(&D.reqs);
    for (int line = 0; line < 4; ++line) prefetch_line(reqs + 64 * line);
  }

  // ---------------------------------------------------------------- errors (simulator_engine.cpp)

  std::string describe_current(const RankSim& R) const;
  [[noreturn]] void fail_event(const RankSim& R, const std::string& what) const;

  /// A blocked rank may go on: queued last; in an order-free run first, while its state is still
  /// in the cache (wake_on_match wakes it only when its completion call can complete).
  void wake(std::int64_t r) { queue_unblocked(r, order_free_); }
  /// If r is blocked, it is ready: at the front of the queue (it runs next, out of the prefetch
  /// rounds' reach: what its stage reads is fetched now) or at the back (a gathered collective's
  /// members, in member order).
  void queue_unblocked(std::int64_t r, bool first) {
    RankSim& R = rank(r);
    if (!R.blocked) return;
    R.blocked = false;
    if (first) {
      if (prefetch_states_) prefetch_for_stage(R);
      ready_.push_front(r);
    } else {
      ready_.push_back(r);
    }
  }
  /// The match of D's request Q made it known. In an order-free run a rank blocked in a
  /// completion call is woken only by the last of its requests to become known (the resumption
  /// then completes the call); otherwise any match wakes it.
  void wake_on_match(std::int64_t d, RankSim& D, const Request& Q) {
    if (order_free_ && D.blocked && D.stage == Stage::Waiting) {
      if (!Q.waited || --D.unknown_waits > 0) return;
    }
    wake(d);
  }

  void mark_wild(std::int64_t r) {
    if (!in_wild_[static_cast<std::size_t>(r)]) {
      in_wild_[static_cast<std::size_t>(r)] = 1;
      wild_.push_back(r);
    }
  }

  // ---------------------------------------------------------------- communicators
  // (the lookups past these fast paths: engine_communicators.cpp)

  std::size_t comm_index(RankSim& R, std::int64_t id) {
    if (R.last_comm < R.comms.size() && R.comms[R.last_comm].id == id) [[likely]]
      return R.last_comm;
    return find_comm(R, id);
  }

  [[gnu::noinline]] std::size_t find_comm(RankSim& R, std::int64_t id);

  std::int64_t world_of(const RankSim& R, const CommInfo& c, std::int64_t comm_rank) const {
    if (comm_rank < 0 || comm_rank >= c.size) return -1;
    if (c.identity) return comm_rank;
    if (c.entry != nullptr) return c.entry->members.at(comm_rank);
    return c.id == 1 ? R.rank : -1;
  }

  std::int64_t comm_key(RankSim& R, std::int64_t comm) { return R.comms[comm_index(R, comm)].key; }

  /// World rank of a relative peer field; kAnyWorld for MPI_ANY_SOURCE, -2 for MPI_PROC_NULL.
  std::int64_t peer_world(RankSim& R, std::int64_t comm, std::int64_t relative) {
    if (relative == kAnySource) return kAnyWorld;
    if (relative == kProcNull) return -2;
    return member_world(R, comm_index(R, comm), comm, relative);
  }

  /// World rank of a relative peer (neither MPI_ANY_SOURCE nor MPI_PROC_NULL) in communicator
  /// `comm`, whose index in the rank's comms is `ci`.
  std::int64_t member_world(const RankSim& R, std::size_t ci, std::int64_t comm, std::int64_t relative) const {
    const CommInfo& c = R.comms[ci];
    const std::int64_t r = c.me + relative;
    if (c.identity && r >= 0 && r < c.size) [[likely]]
      return r;
    return member_world_mapped(R, c, comm, r);
  }

  [[gnu::noinline]] std::int64_t member_world_mapped(const RankSim& R, const CommInfo& c, std::int64_t comm,
                                                     std::int64_t comm_rank) const;

  // ---------------------------------------------------------------- requests

  [[gnu::always_inline]] std::int32_t new_request(RankSim& R, Request::Kind kind) {
    std::int32_t q;
    if (!R.free_reqs.empty()) {
      q = R.free_reqs.back();
      R.free_reqs.pop_back();
      R.reqs[static_cast<std::size_t>(q)] = Request{};
    } else {
      q = static_cast<std::int32_t>(R.reqs.size());
      R.reqs.emplace_back();
    }
    R.reqs[static_cast<std::size_t>(q)].kind = kind;
    return q;
  }

  /// Request q of R: from its pool, or the current collective step's (kStepRecv, kStepSend).
  [[gnu::always_inline]] static Request& request(RankSim& R, std::int32_t q) {
    if (q >= 0) [[likely]]
      return R.reqs[static_cast<std::size_t>(q)];
    return R.step_reqs[q == kStepRecv ? 0 : 1];
  }

  void add_slot(RankSim& R, std::int32_t q) {
    R.reqs[static_cast<std::size_t>(q)].slot = static_cast<std::int64_t>(R.slot_count);
    R.slots.push_back(q);
    ++R.slot_count;
  }

  std::int32_t slot_request(const RankSim& R, std::int64_t offset) const {
    if (offset <= 0 || static_cast<std::uint64_t>(offset) > R.slot_count) return kNoRequest;
    const std::uint64_t index = R.slot_count - static_cast<std::uint64_t>(offset);
    if (index < R.slot_base) return kNoRequest;
    return R.slots[R.slot_front + (index - R.slot_base)];
  }

  /// Drops a request: its slot no longer refers to it; the pool reuses it unless orphaned.
  [[gnu::always_inline]] void release(RankSim& R, std::int32_t q) {
    Request& Q = R.reqs[static_cast<std::size_t>(q)];
    if (Q.slot >= 0) {
      R.slots[R.slot_front + (static_cast<std::uint64_t>(Q.slot) - R.slot_base)] = kNoRequest;
      while (R.slot_front < R.slots.size() && R.slots[R.slot_front] == kNoRequest) {
        ++R.slot_front;
        ++R.slot_base;
      }
      if (R.slot_front == R.slots.size()) {
        R.slots.clear();
        R.slot_front = 0;
      } else if (R.slot_front >= 64 && 2 * R.slot_front >= R.slots.size()) {
        R.slots.erase(R.slots.begin(), R.slots.begin() + static_cast<std::ptrdiff_t>(R.slot_front));
        R.slot_front = 0;
      }
      Q.slot = -1;
    }
    if (!Q.orphaned) R.free_reqs.push_back(q);
  }

  // ---------------------------------------------------------------- point-to-point
  // (engine_point_to_point.cpp)

  void post_send(RankSim& R, std::int64_t dst, std::int64_t comm, std::int64_t tag, double bytes, Op op,
                 bool collective, std::int32_t q) {
    post_send_at(R, R.clock, dst, comm, tag, bytes, op, collective, q);
  }

  void post_send_at(RankSim& R, double& clock, std::int64_t dst, std::int64_t comm, std::int64_t tag, double bytes,
                    Op op, bool collective, std::int32_t q);

  /// Hands a message to its destination. An eager message to another rank waits in `outbox_`
  /// while the sender goes on posting sends (its destination's queues being prefetched
  /// meanwhile); flush_outbox() delivers them in posting order before the sender does anything
  /// else that another rank's queues or the ready queue could see. A delivery then happens in
  /// the same order relative to every other effect as without the outbox: only its cache
  /// misses overlap.
  /// Ranks whose states fit in the cache (prefetch_more_ false) deliver at once: the outbox
  /// would only cost its copies. So do the messages of collectives: the sender's next action
  /// (waiting for the step) would deliver them at once, and their receivers' lines were
  /// prefetched with the step (prefetch_step_receiver); fetching a user message's lines for
  /// them (its counts and request pool) cost misses that nothing read.
  void send_message(const RankSim& R, std::int64_t dst, Message&& m) {
    // A rendezvous match moves data on the network; a self-send is seen at once.
    if (prefetch_more_ && m.user && !m.rendezvous && dst != R.rank) {
      prefetch_receiver(rank(dst));
      outbox_.push_back(Outgoing{dst, m});
      return;
    }
    flush_outbox();
    deliver(dst, std::move(m));
  }

  void flush_outbox() {
    if (outbox_.empty()) return;
    for (Outgoing& out : outbox_) deliver(out.dst, std::move(out.message));
    outbox_.clear();
  }

  void post_recv(RankSim& R, std::int64_t src, std::int64_t comm, std::int64_t tag, bool collective, std::int32_t q) {
    post_recv_at(R, R.clock, src, comm, tag, collective, q);
  }

  void post_recv_at(RankSim& R, double when, std::int64_t src, std::int64_t comm, std::int64_t tag, bool collective,
                    std::int32_t q);
  void deliver(std::int64_t d, Message&& m);
  void match(std::int64_t d, const PostedRecv& pr, const Message& m);
  bool resolve_wildcard();

  double scaled_bytes(std::int64_t bytes) const {
    return static_cast<double>(std::max<std::int64_t>(bytes, 0)) * opt_.size_scale;
  }

  std::int32_t user_send(RankSim& R, Op op, std::int64_t comm, std::int64_t peer_field, std::int64_t tag,
                         std::int64_t bytes);
  std::int32_t user_recv(RankSim& R, std::int64_t comm, std::int64_t peer_field, std::int64_t tag);

  // ---------------------------------------------------------------- waiting
  // (engine_waiting.hpp)

  static void clear_waits(RankSim& R) {
    for (const std::int32_t q : R.waits) R.reqs[static_cast<std::size_t>(q)].waited = false;
    R.waits.clear();
    R.waits_known = 0;
  }

  /// A waiting rank at time `t` reaches request Q's completion: the time it idles (counted as
  /// late sender for a receive, late receiver for a rendezvous send, in `times`: a SimTimes or
  /// a gathered member's IdleTimes) and, for a receive, the receive overhead.
  template <class Times>
  [[gnu::always_inline]] static void wait_until_done(Times& times, const Request& Q, double& t) {
    if (Q.done > t) {
      const double idle = Q.done - t;
      times.wait += idle;
      if (Q.kind == Request::Kind::Recv)
        times.late_sender += idle;
      else if (Q.rendezvous)
        times.late_receiver += idle;
      t = Q.done;
    }
    if (Q.kind == Request::Kind::Recv) t += Q.o_r;
  }
  /// A collective step's completion from time `t`, its receive and send known (either may be
  /// null): a send done when the wait starts changes nothing; the rest in order of
  /// completion, the receive first on a tie (a wait list's order).
  template <class Times>
  [[gnu::always_inline]] static void finish_step(Times& times, const Request* recv, const Request* send, double& t) {
    const Request* order[2];
    std::size_t n = 0;
    if (recv != nullptr) order[n++] = recv;
    if (send != nullptr && send->done > t) {
      if (n == 1 && send->done < recv->done) {
        order[1] = order[0];
        order[0] = send;
      } else {
        order[n] = send;
      }
      ++n;
    }
    for (std::size_t i = 0; i < n; ++i) wait_until_done(times, *order[i], t);
  }

  inline bool complete_waits(RankSim& R);
  /// R blocks in a completion call: how many of its requests are still unknown (unknown_waits).
  static void count_unknown_waits(RankSim& R) {
    std::uint32_t unknown = 0;
    for (std::size_t i = R.waits_known; i < R.waits.size(); ++i)
      unknown += R.reqs[static_cast<std::size_t>(R.waits[i])].known ? 0U : 1U;
    R.unknown_waits = unknown;
  }
  [[gnu::always_inline]] inline static void sort_by_completion(RankSim& R);
  inline bool try_probe(RankSim& R);

  // ---------------------------------------------------------------- collectives
  // (engine_collectives.hpp; nonblocking schedules: engine_collectives.cpp)

  [[gnu::always_inline]] inline void start_collective(RankSim& R, std::int64_t comm);
  [[gnu::always_inline]] inline void post_step(RankSim& R);
  inline bool complete_step(RankSim& R);
  [[gnu::always_inline]] inline void start_nonblocking_collective(RankSim& R, std::int64_t comm);
  // Gathered collectives (engine_gathering.cpp).
  bool enter_gathering(RankSim& R, std::int64_t comm);
  Gathering& open_gathering(CommInfo& c, std::uint64_t tag);
  void complete_gathering(Gathering& g);
  void run_in_rounds(Gathering& g);
  void run_lockstep(Gathering& g, const std::vector<std::uint32_t>& masks);
  void transpose_steps(Gathering& g);
  bool steps_in_layout(const Gathering& g, std::int64_t me) const;
  void keep_layout(Gathering& g);
  bool gathering_round(Gathering& g, std::vector<std::int32_t>& members);
  void send_in_gathering(Gathering& g, std::int32_t from, const GatheredStep& step);
  GatheredArrival send_from_gathering(Gathering& g, std::int32_t from, const GatheredStep& step);
  static void complete_gathered_step(GatheredMember& m, const GatheredStep& s, const GatheredArrival* in);
  void post_schedule_step(RankSim& R, CollSchedule& S);
  void progress_schedules(RankSim& R);

  // ---------------------------------------------------------------- events and dispatch
  // (simulator_engine.cpp)

  [[gnu::always_inline]] void end_event(RankSim& R) {
    if (R.event_floor > 0) {
      // The MPI library's own time, as recorded (the fastest calls of the node), where it
      // exceeds the model's: a call that never waits stays busy that long, waiting the model
      // predicts on top; a collective or blocking send lasts at least that long in all (its
      // recorded time includes the transfer the model predicts too).
      const double elapsed = R.clock - R.event_start;
      const double busy = R.event_floor_elapsed ? elapsed : elapsed - (R.times.wait - R.wait_mark);
      if (busy < R.event_floor) R.clock += R.event_floor - busy;
    }
    const double wait = R.times.wait - R.wait_mark;
    const double comm = (R.clock - R.event_start) - wait;
    R.times.comm += comm;
    ++R.times.calls;
    SimTimes& s = site_times(R.site, R.op);
    s.compute += R.event_compute;
    s.comm += comm;
    s.wait += wait;
    s.late_sender += R.times.late_sender - R.late_s_mark;
    s.late_receiver += R.times.late_receiver - R.late_r_mark;
    ++s.calls;
    if (opt_.timeline) add_timeline_row(R);
    ++R.event_index;
    ++res_.events;
    R.stage = Stage::Next;
  }

  inline void begin_event(RankSim& R);
  [[gnu::noinline]] void add_timeline_row(const RankSim& R);
  [[gnu::always_inline]] inline void advance(RankSim& R);
  inline void dispatch(RankSim& R);
  inline void wait_for(RankSim& R, std::initializer_list<std::int32_t> qs);
  inline void slot_or_done(RankSim& R, std::int32_t q);
  inline void start_persistent(RankSim& R, std::int32_t q);
  [[gnu::always_inline]] inline void add_completions(RankSim& R, std::span<const std::int64_t> offsets,
                                                     std::int64_t index);

  // ---------------------------------------------------------------- end of run (simulator_engine.cpp)

  void check_finished() const;
  void check_unmatched() const;
  SimResult collect();
};

/// simulate() with the engine's cache measures chosen (tests: results equal with each) and
/// the order-free shortcuts on (Auto) or off (tests: the same times per rank).
SimResult simulate_prefetching(const Trace& trace, const SimOptions& options, Prefetching prefetching,
                               OrderFreeShortcuts shortcuts = OrderFreeShortcuts::Auto);

}  // namespace scalatrace::sim
