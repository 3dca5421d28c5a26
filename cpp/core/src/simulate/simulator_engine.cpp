// The simulator's event engine: every rank walks its own Cursor and runs until it blocks;
// messages carry their simulated arrival times, so the order in which ranks are processed does
// not change the result, except where MPI itself would be nondeterministic (MPI_ANY_SOURCE):
// those receives are matched only when no rank can make progress any more, to the message that
// arrived first in simulated time. See docs/simulator.md ("Event engine").
#include <algorithm>
#include <array>
#include <bit>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "scalatrace/model/rank_math.hpp"
#include "simulate/simulator_internal.hpp"
#include "simulate/simulator_rank_array.hpp"
#include "support/prefetch.hpp"
#include "support/small_vector.hpp"

namespace scalatrace {
namespace {

using sim::CollStep;
using sim::Network;

constexpr std::int64_t kAnyWorld = -1;  ///< "any source" in world-rank terms
constexpr std::int32_t kNoRequest = -1;
/// The receive and the send of the current step of a rank's blocking collective: kept beside the
/// rank's scalars (RankSim::step_reqs), not in its request pool, and named by these in the
/// receive it posts and the message it sends.
constexpr std::int32_t kStepRecv = -2;
constexpr std::int32_t kStepSend = -3;

struct Request {
  enum class Kind : std::uint8_t { Send, Recv, Done };
  Kind kind = Kind::Done;
  bool known = true;        ///< completion time is known
  bool persistent = false;  ///< created by *_init: survives completion
  bool active = false;      ///< posted and not yet completed by a Wait/Test
  bool rendezvous = false;  ///< send: waits for the receiver (late-receiver time)
  bool orphaned = false;    ///< freed while active: never reused
  bool schedule = false;    ///< a nonblocking collective's: known (done) when its schedule ends
  bool waited = false;      ///< in the rank's current wait list (a completion call lists it once)
  double done = 0;          ///< completion time (send: buffer free; recv: data arrived)
  double o_r = 0;           ///< receive overhead charged when the receive completes
  std::int64_t slot = -1;   ///< handle-buffer slot index, -1 for internal requests
};
static_assert(sizeof(Request) <= 32, "two requests per cache line (a Waitall reads many)");

/// What Start posts for a persistent request (kept beside the pool: only *_init sets it).
struct PersistentArgs {
  Op op = Op::Other;
  std::int64_t peer = 0, comm = 0, tag = 0;
  double bytes = 0;
};

struct Message {
  std::int64_t src = 0, comm = 0, tag = 0;
  double bytes = 0;
  double arrival = 0;  ///< eager: last byte arrived; rendezvous: request-to-send arrived
  std::uint64_t seq = 0;
  std::int32_t send_req = kNoRequest;
  bool collective = false, rendezvous = false, user = false;
};

struct PostedRecv {
  std::int64_t src = kAnyWorld, comm = 0, tag = 0;
  std::int32_t req = kNoRequest;
  double post_time = 0;
  bool collective = false;
};

bool matches(const PostedRecv& r, const Message& m) {
  return r.collective == m.collective && r.comm == m.comm &&
         (r.src == kAnyWorld || r.src == m.src) && (r.tag == kAnyTag || r.tag == m.tag);
}

struct CommInfo {
  std::int64_t id = 0, me = 0, size = 0;
  /// The same on every member (ids are per rank: creation order may differ between ranks);
  /// what messages are matched by.
  std::int64_t key = 0;
  const CommEntry* entry = nullptr;
  bool identity = false;  ///< comm rank == world rank
  std::uint64_t collective_seq = 0;
};

/// Where a rank is: about to read its next event; waiting for the requests of a completion call
/// (R.waits) or for the current step of a blocking collective (R.step_reqs); about to post the
/// collective's next step; in a blocking probe.
enum class Stage : std::uint8_t { Next, Waiting, StepWaiting, Collective, Probing };

/// First-in first-out queue of ranks ready to run: a ring over a power-of-two array. A rank is
/// queued at most once at a time (only a blocked rank is woken), so `ranks` slots suffice.
class ReadyQueue {
 public:
  explicit ReadyQueue(std::int64_t ranks)
      : slots_(std::bit_ceil(static_cast<std::uint64_t>(std::max<std::int64_t>(ranks, 1)))),
        mask_(slots_.size() - 1) {}
  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }
  void push_back(std::int64_t r) {
    if (size() == slots_.size()) throw std::logic_error("simulator ready queue overflow");
    slots_[tail_++ & mask_] = r;
  }
  std::int64_t pop_front() { return slots_[head_++ & mask_]; }
  /// The i-th rank after the front (i < size()).
  std::int64_t operator[](std::size_t i) const { return slots_[(head_ + i) & mask_]; }

 private:
  std::vector<std::int64_t> slots_;
  std::size_t mask_;
  std::size_t head_ = 0, tail_ = 0;  ///< ever-growing positions, taken modulo the size
};

/// A nonblocking collective in progress: its steps run on their own clock from the call on
/// (asynchronous progress), each step posted when the previous one has completed; the
/// collective's request is known to complete when the last step has.
struct CollSchedule {
  std::int32_t req = kNoRequest;  ///< the collective's request (the program's handle)
  sim::CollSteps steps;
  std::size_t pos = 0;             ///< steps[0, pos) are posted
  std::size_t comm = 0;            ///< index into the rank's comms
  std::uint64_t tag = 0;           ///< the collective's sequence number on its communicator
  double clock = 0;                ///< when the schedule can go on
  std::int32_t step_reqs[2] = {kNoRequest, kNoRequest};  ///< the current step's requests
};

/// One rank's simulation state. Laid out for locality: the scalars read on every resume and
/// delivery first, then the queues and the request pool kept inline (one contiguous block per
/// rank: at 65,536 ranks almost every access to another rank's state is a cache miss, and
/// neighbouring lines come cheaper than a heap pointer chased per container).
struct RankSim {
  Stage stage = Stage::Next;
  bool blocked = false, finished = false;
  bool cursor_done = false;  ///< every event walked (finished once its schedules are done too)
  Op op = Op::Other;          ///< the current event's op and call site (what ending it needs;
  std::uint32_t site = 0;     ///< the whole event is read again for messages: describe_current)
  std::int64_t rank = 0;
  double clock = 0;
  std::size_t waits_known = 0;       ///< waits[0, waits_known) are known to complete (checked)
  std::size_t wildcards_posted = 0;  ///< entries of `posted` with src == kAnyWorld
  std::uint64_t event_index = 0;
  // Accounting of the current event.
  double event_start = 0, event_compute = 0, wait_mark = 0, late_s_mark = 0, late_r_mark = 0;
  /// The least CPU time the current call takes: a call that never waits takes its recorded
  /// duration (SimOptions::recorded_local_calls), 0 otherwise.
  double event_floor = 0;
  SimTimes times;
  /// The rank's walk over the trace (its state behind one pointer, prefetched separately).
  Cursor cursor;
  // Results.
  std::uint64_t sent = 0, received = 0;
  double sent_bytes = 0, recv_bytes = 0;
  // Collective in progress.
  std::size_t step_pos = 0;
  std::size_t coll_comm = 0;  ///< index into comms
  std::uint64_t coll_tag = 0;
  /// The current step's receive and send (kStepRecv, kStepSend), if it has them.
  bool step_recv = false, step_send = false;
  Request step_reqs[2];
  std::size_t last_comm = 0;  ///< index into comms that comm_index found last
  // Handle buffer: slots[slot_front + i] is handle slot slot_base + i (oldest trimmed when released).
  std::size_t slot_front = 0;
  std::uint64_t slot_base = 0, slot_count = 0;
  SmallVector<std::int32_t, 16> waits;  ///< requests the current step waits for
  SmallVector<std::int32_t, 16> free_reqs;
  SmallVector<std::int32_t, 16> slots;
  sim::CollSteps steps;
  // Laid out before `posted`: prefetched with the scalars (every resumption reads them).
  SmallVector<CommInfo, 2> comms;                ///< communicators this rank has used
  std::vector<CollSchedule> schedules;           ///< nonblocking collectives in progress
  std::vector<PersistentArgs> persistent_args;  ///< by request index, persistent requests only
  // Receiver side.
  SmallVector<PostedRecv, 8> posted;   ///< posted receives in post order
  SmallVector<Message, 8> unexpected;  ///< arrived (or announced), not yet matched; in arrival order per source
  // Requests: pool (handle buffer above).
  SmallVector<Request, 24> reqs;
  // Blocking probe in progress.
  PostedRecv probe;

  RankSim(const Trace& t, std::int64_t r, const SimOptions& o)
      : rank(r),
        cursor(t, r, o.timing, o.seed + static_cast<std::uint64_t>(r),
               // Durations give calls that never wait their floor: the median, robust to the
               // preempted or first (connection set-up) calls a mean would spread over all.
               o.timing == TimingMode::None ? TimingMode::None : TimingMode::Median) {}
};

class Engine {
 public:
  Engine(const Trace& trace, const SimOptions& options)
      : trace_(trace), opt_(options), net_(options, trace.nranks), n_(trace.nranks),
        ranks_(static_cast<std::size_t>(trace.nranks)) {
    for (std::int64_t r = 0; r < n_; ++r) ranks_.emplace_back(trace, r, options);
    for (std::size_t op = 0; op < kOpCount; ++op)
      takes_recorded_time_[op] = options.recorded_local_calls && op_never_waits(static_cast<Op>(op));
    in_wild_.assign(static_cast<std::size_t>(n_), 0);
    site_times_.resize(trace.sites.size());
    site_count_ = site_times_.size();
  }

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

  SimResult run() {
    for (std::int64_t r = 0; r < n_; ++r) ready_.push_back(r);
    for (;;) {
      while (!ready_.empty()) {
        const std::int64_t r = ready_.pop_front();
        if (prefetch_states_ && ready_.size() > kPrefetchDistance) {
          const std::int64_t later = ready_[kPrefetchDistance];
          prefetch(rank(later));
          net_.prefetch_sender(later);
        }
        if (prefetch_more_ && ready_.size() > kPrefetchDistance / 2) {
          const RankSim& soon = rank(ready_[kPrefetchDistance / 2]);
          prefetch_requests(soon);
          prefetch_next_step_receiver(soon);
          prefetch_cursor(soon);
        }
        advance(rank(r));
      }
      if (!resolve_wildcard()) break;
    }
    check_finished();
    check_unmatched();
    return collect();
  }

 private:
  const Trace& trace_;
  const SimOptions& opt_;
  /// By op: the call takes at least its recorded duration (SimOptions::recorded_local_calls).
  std::array<bool, kOpCount> takes_recorded_time_{};
  Network net_;
  std::int64_t n_;
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

  RankSim& rank(std::int64_t r) { return ranks_[static_cast<std::size_t>(r)]; }

  /// Ranks are resumed in ready-queue order; their state is fetched into the cache this many
  /// resumptions ahead (a prefetch only: the order of work is unchanged).
  static constexpr std::size_t kPrefetchDistance = 32;
  /// Ranks whose states (with their cursors) exceed this many bytes do not stay in the cache:
  /// then the cursors and the receivers of messages are prefetched too (below it, those
  /// prefetches only cost instructions: 6 % at 1,024 ranks).
  static constexpr std::size_t kCachedStateBytes = std::size_t{16} << 20;
  /// All ranks' states with their cursors, roughly: what decides which prefetches pay.
  const std::size_t state_bytes_ = static_cast<std::size_t>(n_) * (sizeof(RankSim) + 2048);
  const bool prefetch_more_ = state_bytes_ > kCachedStateBytes;
  /// Rank states beyond a core's second-level cache: the ranks about to resume are prefetched.
  static constexpr std::size_t kL2Bytes = std::size_t{512} << 10;
  const bool prefetch_states_ = state_bytes_ > kL2Bytes;

  /// Starts loading what resuming R reads first: its scalars, wait list, handle buffer,
  /// collective steps and communicators (everything laid out before its receive queues), and
  /// where its requests are (what prefetch_requests reads half the distance later).
  static void prefetch(const RankSim& R) {
    const char* begin = reinterpret_cast<const char*>(&R);
    const char* end = reinterpret_cast<const char*>(&R.posted);
    for (const char* p = begin; p < end; p += 64) prefetch_line(p);
    prefetch_queue_heads(R);
    prefetch_line(&R.reqs);
  }
  /// The heads of R's receive queues: what posting a receive or delivering a message reads.
  static void prefetch_queue_heads(const RankSim& R) {
    const char* posted = reinterpret_cast<const char*>(&R.posted);
    for (int line = 0; line < 2; ++line) prefetch_line(posted + 64 * line);
    const char* unexpected = reinterpret_cast<const char*>(&R.unexpected);
    for (int line = 0; line < 2; ++line) prefetch_line(unexpected + 64 * line);
  }
  /// The requests R waits for (half the distance later: R's wait list is cached by then).
  static void prefetch_requests(const RankSim& R) {
    if (R.stage != Stage::Waiting) return;
    for (std::size_t i = R.waits_known; i < R.waits.size(); ++i)
      prefetch_line(&R.reqs[static_cast<std::size_t>(R.waits[i])]);
  }

  /// R's walk over the trace, if R is likely to read its next event when resumed: it waits
  /// for the end of an event (a Waitall, or the last step of a collective).
  static void prefetch_cursor(const RankSim& R) {
    if (R.stage == Stage::Next || R.stage == Stage::Waiting ||
        (R.stage == Stage::StepWaiting && R.step_pos >= R.steps.size()))
      R.cursor.prefetch();
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
    prefetch_receiver(ranks_[static_cast<std::size_t>(to)]);
  }

  /// What delivering a message to D touches: its flags, the heads of its receive queues, and
  /// its usual requests (a matched receive's request is written).
  static void prefetch_receiver(const RankSim& D) {
    prefetch_line(&D.stage);
    prefetch_queue_heads(D);
    const char* reqs = reinterpret_cast<const char*>(&D.reqs);
    for (int line = 0; line < 4; ++line) prefetch_line(reqs + 64 * line);
  }

  /// The rank's current event (#event_index, or its last if its trace has ended), read again
  /// from the trace for a message: only the running rank's event is kept whole (ev_).
  std::string describe_current(const RankSim& R) const {
    Cursor again(trace_, R.rank, opt_.timing, opt_.seed + static_cast<std::uint64_t>(R.rank));
    EventView e;
    for (std::uint64_t i = 0; i <= R.event_index && again.next(e); ++i) {
    }
    return describe(e);
  }

  [[noreturn]] void fail_event(const RankSim& R, const std::string& what) const {
    throw SimulationError("simulation: rank " + std::to_string(R.rank) + ", event #" +
                          std::to_string(R.event_index) + " (" + describe_current(R) + "): " + what);
  }

  void wake(std::int64_t r) {
    RankSim& R = rank(r);
    if (R.blocked) {
      R.blocked = false;
      ready_.push_back(r);
    }
  }

  void mark_wild(std::int64_t r) {
    if (!in_wild_[static_cast<std::size_t>(r)]) {
      in_wild_[static_cast<std::size_t>(r)] = 1;
      wild_.push_back(r);
    }
  }

  // ---------------------------------------------------------------- communicators

  std::size_t comm_index(RankSim& R, std::int64_t id) {
    if (R.last_comm < R.comms.size() && R.comms[R.last_comm].id == id) [[likely]]
      return R.last_comm;
    return find_comm(R, id);
  }

  /// comm_index() past the communicator used last: found among the rank's, or added.
  [[gnu::noinline]] std::size_t find_comm(RankSim& R, std::int64_t id) {
    for (std::size_t i = 0; i < R.comms.size(); ++i)
      if (R.comms[i].id == id) {
        R.last_comm = i;
        return i;
      }
    CommInfo c;
    c.id = id;
    const auto [me, size] = comm_rank_and_size(trace_.comms, id, R.rank, n_);
    if (me < 0 || size <= 0)
      fail_event(R, "rank is not a member of communicator " + std::to_string(id) +
                        " (not in the trace's communicator table)");
    c.me = me;
    c.size = size;
    c.entry = trace_.comms.find(id, R.rank);
    if (c.entry == nullptr) {
      c.identity = id == 0;
      c.key = id == 0 ? 0 : -(R.rank + 1);  // WORLD, or SELF (private to the rank)
    } else {
      // Same members, same communicator (a Comm_dup of a communicator shares its key).
      const auto [it, added] = comm_keys_.try_emplace(c.entry->members.to_string(),
                                                      static_cast<std::int64_t>(comm_keys_.size()) + 1);
      c.key = id == 0 ? 0 : it->second;
      const auto& ds = c.entry->members.descriptors();
      c.identity = ds.size() == 1 && ds[0].start == 0 && ds[0].dims.size() == 1 &&
                   ds[0].dims[0].second == 1;
    }
    R.comms.push_back(c);
    return R.comms.size() - 1;
  }

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

  /// member_world() in a communicator whose ranks are not the world's (or out of range).
  [[gnu::noinline]] std::int64_t member_world_mapped(const RankSim& R, const CommInfo& c, std::int64_t comm,
                                                     std::int64_t comm_rank) const {
    const std::int64_t w = world_of(R, c, comm_rank);
    if (w < 0)
      fail_event(R, "peer " + std::to_string(comm_rank) + " is outside communicator " +
                        std::to_string(comm) + " of size " + std::to_string(c.size));
    return w;
  }

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

  void post_send(RankSim& R, std::int64_t dst, std::int64_t comm, std::int64_t tag, double bytes,
                 Op op, bool collective, std::int32_t q) {
    post_send_at(R, R.clock, dst, comm, tag, bytes, op, collective, q);
  }

  /// Posts a send at `clock` (the rank's, or a nonblocking collective's), advanced by o_s.
  void post_send_at(RankSim& R, double& clock, std::int64_t dst, std::int64_t comm, std::int64_t tag,
                    double bytes, Op op, bool collective, std::int32_t q) {
    const LogGP& p = net_.link(R.rank, dst);
    clock += p.o_s;
    Request& Q = request(R, q);
    Q.kind = Request::Kind::Send;
    Q.active = true;
    Message m;
    m.src = R.rank;
    m.comm = comm;
    m.tag = tag;
    m.bytes = bytes;
    m.seq = seq_++;
    m.send_req = q;
    m.collective = collective;
    m.user = !collective;
    const bool sync = op == Op::Ssend || op == Op::Issend || op == Op::Ssend_init;
    const bool buffered = op == Op::Bsend || op == Op::Ibsend || op == Op::Bsend_init;
    m.rendezvous = sync || (!buffered && bytes > opt_.eager_threshold);
    if (m.rendezvous) {
      Q.known = false;
      Q.rendezvous = true;
      m.arrival = clock + p.L;  // request-to-send
    } else {
      const auto t = net_.transfer(R.rank, dst, p, clock, bytes);
      Q.known = true;
      Q.done = t.start;
      m.arrival = t.arrival;
    }
    ++res_.messages;
    // Counted when sent (every message is received, or the run fails: check_unmatched), so a
    // match never writes its sender's state.
    if (m.user && dst != R.rank) {
      ++R.sent;
      R.sent_bytes += bytes;
    }
    send_message(R, dst, std::move(m));
  }

  /// Hands a message to its destination. An eager message to another rank waits in `outbox_`
  /// while the sender goes on posting sends (its destination's queues being prefetched
  /// meanwhile); flush_outbox() delivers them in posting order before the sender does anything
  /// else that another rank's queues or the ready queue could see. A delivery then happens in
  /// the same order relative to every other effect as without the outbox: only its cache
  /// misses overlap.
  /// Ranks whose states fit in the cache (prefetch_more_ false) deliver at once: the outbox
  /// would only cost its copies.
  void send_message(const RankSim& R, std::int64_t dst, Message&& m) {
    // A rendezvous match moves data on the network; a self-send is seen at once.
    if (prefetch_more_ && !m.rendezvous && dst != R.rank) {
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

  void post_recv(RankSim& R, std::int64_t src, std::int64_t comm, std::int64_t tag,
                 bool collective, std::int32_t q) {
    post_recv_at(R, R.clock, src, comm, tag, collective, q);
  }

  /// Posts a receive at time `when` (the rank's clock, or a nonblocking collective's).
  void post_recv_at(RankSim& R, double when, std::int64_t src, std::int64_t comm, std::int64_t tag,
                    bool collective, std::int32_t q) {
    Request& Q = request(R, q);
    Q.kind = Request::Kind::Recv;
    Q.known = false;
    Q.active = true;
    PostedRecv pr{src, comm, tag, q, when, collective};
    if (src == kAnyWorld) {
      R.posted.push_back(pr);
      ++R.wildcards_posted;
      for (const Message& m : R.unexpected)
        if (matches(pr, m)) {
          mark_wild(R.rank);
          break;
        }
      return;
    }
    for (std::size_t i = 0; i < R.unexpected.size(); ++i) {
      if (!matches(pr, R.unexpected[i])) continue;
      const bool held = R.wildcards_posted > 0 &&
                        std::any_of(R.posted.begin(), R.posted.end(), [&](const PostedRecv& w) {
                          return w.src == kAnyWorld && matches(w, R.unexpected[i]);
                        });
      if (held) break;
      Message m = std::move(R.unexpected[i]);
      R.unexpected.erase(R.unexpected.begin() + static_cast<std::ptrdiff_t>(i));
      match(R.rank, pr, m);
      return;
    }
    R.posted.push_back(pr);
  }

  /// A message reaches its destination's queues: the first posted receive that matches takes
  /// it, unless that receive is a wildcard (decided later, by arrival time).
  void deliver(std::int64_t d, Message&& m) {
    RankSim& D = rank(d);
    for (std::size_t i = 0; i < D.posted.size(); ++i) {
      if (!matches(D.posted[i], m)) continue;
      if (D.posted[i].src == kAnyWorld) {
        mark_wild(d);
        break;
      }
      const PostedRecv pr = D.posted[i];
      D.posted.erase(D.posted.begin() + static_cast<std::ptrdiff_t>(i));
      match(d, pr, m);
      return;
    }
    D.unexpected.push_back(m);
    if (D.stage == Stage::Probing) wake(d);
  }

  void match(std::int64_t d, const PostedRecv& pr, const Message& m) {
    RankSim& D = rank(d);
    Request& Q = request(D, pr.req);
    const LogGP& p = net_.link(m.src, d);
    Q.o_r = p.o_r;
    if (!m.rendezvous) {
      Q.done = m.arrival;
    } else {
      const double matched = std::max(m.arrival, pr.post_time);
      const auto t = net_.transfer(m.src, d, p, matched + p.L, m.bytes);  // clear-to-send, data
      RankSim& S = rank(m.src);
      Request& SQ = request(S, m.send_req);
      SQ.known = true;
      SQ.done = t.end;
      wake(m.src);
      Q.done = t.arrival;
    }
    Q.known = true;
    if (m.user && m.src != d) {
      ++D.received;
      D.recv_bytes += m.bytes;
      if (opt_.pair_counts) {
        SimPair& pair = pairs_[static_cast<std::uint64_t>(m.src) * static_cast<std::uint64_t>(n_) +
                               static_cast<std::uint64_t>(d)];
        pair.src = m.src;
        pair.dst = d;
        ++pair.messages;
        pair.bytes += m.bytes;
      }
    }
    wake(d);
  }

  /// When every rank is stuck: the earliest-arriving candidate of any pending wildcard receive
  /// is matched (no message still to be sent can arrive before it). False if none.
  bool resolve_wildcard() {
    struct Best {
      double arrival;
      std::uint64_t seq;
      std::int64_t rank;
      std::size_t posted, message;
    };
    std::optional<Best> best;
    std::vector<std::int64_t> keep;
    for (const std::int64_t d : wild_) {
      RankSim& D = rank(d);
      bool candidate = false;
      for (std::size_t i = 0; i < D.posted.size() && !candidate; ++i) {
        const PostedRecv& pr = D.posted[i];
        if (pr.src != kAnyWorld) continue;
        std::vector<std::int64_t> seen;  // first matching message of each source only (FIFO)
        for (std::size_t j = 0; j < D.unexpected.size(); ++j) {
          const Message& m = D.unexpected[j];
          if (!matches(pr, m) || std::find(seen.begin(), seen.end(), m.src) != seen.end()) continue;
          seen.push_back(m.src);
          candidate = true;
          if (!best || m.arrival < best->arrival || (m.arrival == best->arrival && m.seq < best->seq))
            best = Best{m.arrival, m.seq, d, i, j};
        }
      }
      if (candidate) keep.push_back(d);
      else in_wild_[static_cast<std::size_t>(d)] = 0;
    }
    wild_ = std::move(keep);
    if (!best) return false;
    RankSim& D = rank(best->rank);
    const PostedRecv pr = D.posted[best->posted];
    Message m = std::move(D.unexpected[best->message]);
    D.posted.erase(D.posted.begin() + static_cast<std::ptrdiff_t>(best->posted));
    --D.wildcards_posted;
    D.unexpected.erase(D.unexpected.begin() + static_cast<std::ptrdiff_t>(best->message));
    match(best->rank, pr, m);
    // Receives held behind the wildcard may match now.
    std::vector<Message> pending(D.unexpected.begin(), D.unexpected.end());
    D.unexpected.clear();
    for (Message& p : pending) deliver(best->rank, std::move(p));
    return true;
  }

  // ---------------------------------------------------------------- waiting

  static void clear_waits(RankSim& R) {
    for (const std::int32_t q : R.waits) R.reqs[static_cast<std::size_t>(q)].waited = false;
    R.waits.clear();
    R.waits_known = 0;
  }

  /// A waiting rank at time `t` reaches request Q's completion: the time it idles (counted as
  /// late sender for a receive, late receiver for a rendezvous send) and, for a receive, the
  /// receive overhead.
  [[gnu::always_inline]] static void wait_until_done(RankSim& R, const Request& Q, double& t) {
    if (Q.done > t) {
      const double idle = Q.done - t;
      R.times.wait += idle;
      if (Q.kind == Request::Kind::Recv) R.times.late_sender += idle;
      else if (Q.rendezvous) R.times.late_receiver += idle;
      t = Q.done;
    }
    if (Q.kind == Request::Kind::Recv) t += Q.o_r;
  }

  /// Completes every request in R.waits if all completion times are known: the rank idles
  /// until each one is done (in order of completion) and pays o_r per receive.
  bool complete_waits(RankSim& R) {
    // A request's completion time, once known, stays known: resume where the last check stopped.
    for (; R.waits_known < R.waits.size(); ++R.waits_known)
      if (!R.reqs[static_cast<std::size_t>(R.waits[R.waits_known])].known) return false;
    double t = R.clock;
    // Sends already complete when the rank starts waiting (eager sends, mostly) change neither
    // the clock nor the idle times wherever they come in the order: done first, and only the
    // rest is sorted.
    std::size_t kept = 0;
    for (const std::int32_t q : R.waits) {
      Request& Q = R.reqs[static_cast<std::size_t>(q)];
      if (Q.kind != Request::Kind::Recv && Q.done <= t) {
        Q.active = false;
        Q.waited = false;
        if (!Q.persistent) release(R, q);
      } else {
        R.waits[kept++] = q;
      }
    }
    R.waits.truncate(kept);
    sort_by_completion(R);
    for (const std::int32_t q : R.waits) {
      Request& Q = R.reqs[static_cast<std::size_t>(q)];
      wait_until_done(R, Q, t);
      Q.active = false;
      Q.waited = false;
      if (!Q.persistent) release(R, q);
    }
    R.clock = t;
    R.waits.clear();
    R.waits_known = 0;
    return true;
  }

  /// Orders R.waits by completion time, stably: requests completing at the same time keep the
  /// call's order, which decides whether an idle wait counts as late sender or late receiver.
  /// Up to 16 requests (a Waitall of a stencil, a collective step) by an insertion sort on the
  /// times copied beside the requests; longer lists by std::stable_sort.
  static void sort_by_completion(RankSim& R) {
    const std::size_t n = R.waits.size();
    if (n > 16) {
      std::stable_sort(R.waits.begin(), R.waits.end(), [&](std::int32_t a, std::int32_t b) {
        return R.reqs[static_cast<std::size_t>(a)].done < R.reqs[static_cast<std::size_t>(b)].done;
      });
      return;
    }
    double done[16];
    std::int32_t* q = R.waits.begin();
    for (std::size_t i = 0; i < n; ++i) {
      const double d = R.reqs[static_cast<std::size_t>(q[i])].done;
      const std::int32_t qi = q[i];
      std::size_t j = i;
      for (; j > 0 && d < done[j - 1]; --j) {
        done[j] = done[j - 1];
        q[j] = q[j - 1];
      }
      done[j] = d;
      q[j] = qi;
    }
  }

  bool try_probe(RankSim& R) {
    const Message* found = nullptr;
    for (const Message& m : R.unexpected) {
      if (!matches(R.probe, m)) continue;
      if (R.probe.src != kAnyWorld) {
        found = &m;
        break;
      }
      if (found == nullptr || m.arrival < found->arrival) found = &m;
    }
    if (found == nullptr) return false;
    if (found->arrival > R.clock) {
      R.times.wait += found->arrival - R.clock;
      R.times.late_sender += found->arrival - R.clock;
      R.clock = found->arrival;
    }
    R.clock += net_.link(found->src, R.rank).o_r;
    return true;
  }

  // ---------------------------------------------------------------- events

  void begin_event(RankSim& R) {
    R.op = ev_.op;
    R.site = ev_.site;
    // The run starts at MPI_Init: what came before it (process start-up) is not simulated.
    const bool start = ev_.op == Op::Init || ev_.op == Op::Init_thread;
    double compute = start ? 0.0 : static_cast<double>(ev_.compute_ns) * opt_.compute_scale;
    if (!opt_.site_compute_scale.empty()) {
      const auto it = opt_.site_compute_scale.find(ev_.site);
      if (it != opt_.site_compute_scale.end()) compute *= it->second;
    }
    R.clock += compute;
    R.times.compute += compute;
    R.event_compute = compute;
    R.event_floor =
        takes_recorded_time_[static_cast<std::size_t>(ev_.op)] ? static_cast<double>(ev_.duration_ns) : 0.0;
    R.event_start = R.clock;
    R.wait_mark = R.times.wait;
    R.late_s_mark = R.times.late_sender;
    R.late_r_mark = R.times.late_receiver;
  }

  [[gnu::noinline]] void add_timeline_row(const RankSim& R) {
    if (res_.timeline.size() >= opt_.timeline_limit)
      throw UsageError("the simulated timeline would exceed " + std::to_string(opt_.timeline_limit) +
                       " rows; simulate without a timeline or raise the limit");
    res_.timeline.push_back(
        SimTimelineRow{R.rank, R.event_index, R.op, R.site, R.event_start, R.clock});
  }

  [[gnu::always_inline]] void end_event(RankSim& R) {
    if (R.event_floor > 0) {
      // A call that never waits: the MPI library's own time, as recorded, where it exceeds
      // the modelled overheads.
      const double busy = (R.clock - R.event_start) - (R.times.wait - R.wait_mark);
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

  void advance(RankSim& R) {
    for (;;) {
      if (R.stage != Stage::Next) flush_outbox();
      switch (R.stage) {
        case Stage::Waiting:
          if (!R.schedules.empty()) progress_schedules(R);
          if (!complete_waits(R)) {
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
          if (R.cursor_done || !R.cursor.next(ev_)) {
            flush_outbox();
            R.cursor_done = true;
            // Nonblocking collectives never waited for still take part until they end.
            if (!R.schedules.empty()) progress_schedules(R);
            if (R.schedules.empty()) R.finished = true;
            else R.blocked = true;
            return;
          }
          begin_event(R);
          // Consecutive sends leave their eager messages in the outbox; anything else first
          // delivers them (send_message).
          if (const OpKind kind = op_kind(ev_.op);
              kind != OpKind::NonblockingSend && kind != OpKind::BlockingSend)
            flush_outbox();
          dispatch(R);
          continue;
        }
      }
    }
  }

  void start_collective(RankSim& R, std::int64_t comm) {
    const std::size_t ci = comm_index(R, comm);
    CommInfo& c = R.comms[ci];
    sim::collective_steps(ev_, c.me, c.size, opt_.size_scale, R.steps);
    R.coll_comm = ci;
    R.coll_tag = c.collective_seq++;
    R.step_pos = 0;
    if (prefetch_more_) {
      prefetch_step_receiver(R, 0);
      prefetch_step_receiver(R, 1);
    }
    if (R.steps.empty()) {
      end_event(R);
      return;
    }
    R.stage = Stage::Collective;
  }

  void post_step(RankSim& R) {
    // A rank that arrives late finds its partners' messages waiting and runs several steps in
    // one go: start loading the receiver of the step after next now.
    if (prefetch_more_) prefetch_step_receiver(R, R.step_pos + 2);
    const CollStep& s = R.steps[R.step_pos++];
    const CommInfo& c = R.comms[R.coll_comm];
    const auto tag = static_cast<std::int64_t>(R.coll_tag);
    R.step_recv = s.recv_from >= 0;
    R.step_send = s.send_to >= 0;
    if (R.step_recv) {
      R.step_reqs[0] = Request{};
      post_recv(R, world_of(R, c, s.recv_from), c.key, tag, true, kStepRecv);
    }
    if (R.step_send) {
      R.step_reqs[1] = Request{};
      post_send(R, world_of(R, c, s.send_to), c.key, tag, s.send_bytes, Op::Send, true, kStepSend);
    }
  }

  /// complete_waits() for the current step of R's collective, whose requests are its receive
  /// and then its send: the same times, in the same order of operations, without the request
  /// pool and the wait list.
  bool complete_step(RankSim& R) {
    Request& recv = R.step_reqs[0];
    Request& send = R.step_reqs[1];
    if ((R.step_recv && !recv.known) || (R.step_send && !send.known)) return false;
    double t = R.clock;
    // A send done when the wait starts changes nothing; the rest in order of completion, the
    // receive first on a tie (the wait list's order).
    Request* order[2];
    std::size_t n = 0;
    if (R.step_recv) order[n++] = &recv;
    if (R.step_send && send.done > t) {
      if (n == 1 && send.done < recv.done) {
        order[1] = order[0];
        order[0] = &send;
      } else {
        order[n] = &send;
      }
      ++n;
    }
    for (std::size_t i = 0; i < n; ++i) wait_until_done(R, *order[i], t);
    R.clock = t;
    R.step_recv = R.step_send = false;
    return true;
  }

  // ------------------------------------------------------- nonblocking collectives

  /// The call posts the collective's first step (its overheads are the call's cost) and
  /// returns; later steps run on the schedule's own clock (progress_schedules).
  void start_nonblocking_collective(RankSim& R, std::int64_t comm) {
    const std::int32_t q = new_request(R, Request::Kind::Done);
    Request& Q = R.reqs[static_cast<std::size_t>(q)];
    add_slot(R, q);
    const std::size_t ci = comm_index(R, comm);
    CommInfo& c = R.comms[ci];
    CollSchedule S;
    S.req = q;
    sim::collective_steps(ev_, c.me, c.size, opt_.size_scale, S.steps);
    S.comm = ci;
    S.tag = c.collective_seq++;
    S.clock = R.clock;
    if (S.steps.empty()) {
      Q.known = true;
      Q.done = R.clock;
      Q.active = true;
      return;
    }
    Q.known = false;
    Q.active = true;
    Q.schedule = true;
    post_schedule_step(R, S);
    R.clock = S.clock;  // the first step's send overheads
    R.schedules.push_back(std::move(S));
    progress_schedules(R);
  }

  void post_schedule_step(RankSim& R, CollSchedule& S) {
    const CollStep& st = S.steps[S.pos++];
    const CommInfo& c = R.comms[S.comm];
    const auto tag = static_cast<std::int64_t>(S.tag);
    S.step_reqs[0] = S.step_reqs[1] = kNoRequest;
    if (st.recv_from >= 0) {
      S.step_reqs[0] = new_request(R, Request::Kind::Recv);
      post_recv_at(R, S.clock, world_of(R, c, st.recv_from), c.key, tag, true, S.step_reqs[0]);
    }
    if (st.send_to >= 0) {
      S.step_reqs[1] = new_request(R, Request::Kind::Send);
      post_send_at(R, S.clock, world_of(R, c, st.send_to), c.key, tag, st.send_bytes, Op::Send, true,
                   S.step_reqs[1]);
    }
  }

  /// Advances every schedule whose current step has completed (its completion times known):
  /// the next step is posted when the last request of this one completes (plus the receive
  /// overhead); after the last step the collective's request completes.
  void progress_schedules(RankSim& R) {
    for (std::size_t i = 0; i < R.schedules.size();) {
      CollSchedule& S = R.schedules[i];
      bool ended = false;
      for (;;) {
        bool known = true;
        for (const std::int32_t q : S.step_reqs)
          if (q != kNoRequest && !R.reqs[static_cast<std::size_t>(q)].known) known = false;
        if (!known) break;
        for (std::int32_t& q : S.step_reqs) {
          if (q == kNoRequest) continue;
          Request& Q = R.reqs[static_cast<std::size_t>(q)];
          S.clock = std::max(S.clock, Q.done + (Q.kind == Request::Kind::Recv ? Q.o_r : 0.0));
          Q.active = false;
          release(R, q);
          q = kNoRequest;
        }
        if (S.pos < S.steps.size()) {
          post_schedule_step(R, S);
          continue;
        }
        Request& done = R.reqs[static_cast<std::size_t>(S.req)];
        done.known = true;
        done.done = S.clock;
        ended = true;
        break;
      }
      if (ended) {
        R.schedules.erase(R.schedules.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }

  double scaled_bytes(std::int64_t bytes) const {
    return static_cast<double>(std::max<std::int64_t>(bytes, 0)) * opt_.size_scale;
  }

  /// Posts the send half of a user point-to-point call; kNoRequest for MPI_PROC_NULL.
  std::int32_t user_send(RankSim& R, Op op, std::int64_t comm, std::int64_t peer_field,
                         std::int64_t tag, std::int64_t bytes) {
    if (peer_field == kAnySource) fail_event(R, "a send to MPI_ANY_SOURCE");
    if (peer_field == kProcNull) return kNoRequest;
    const std::size_t ci = comm_index(R, comm);
    const std::int64_t dst = member_world(R, ci, comm, peer_field);
    const std::int32_t q = new_request(R, Request::Kind::Send);
    post_send(R, dst, R.comms[ci].key, tag, scaled_bytes(bytes), op, false, q);
    return q;
  }

  std::int32_t user_recv(RankSim& R, std::int64_t comm, std::int64_t peer_field, std::int64_t tag) {
    if (peer_field == kProcNull) return kNoRequest;
    const std::size_t ci = comm_index(R, comm);
    const std::int64_t src =
        peer_field == kAnySource ? kAnyWorld : member_world(R, ci, comm, peer_field);
    const std::int32_t q = new_request(R, Request::Kind::Recv);
    post_recv(R, src, R.comms[ci].key, tag, false, q);
    return q;
  }

  void wait_for(RankSim& R, std::initializer_list<std::int32_t> qs) {
    clear_waits(R);
    for (const std::int32_t q : qs)
      if (q != kNoRequest) R.waits.push_back(q);
    R.stage = Stage::Waiting;
  }

  void slot_or_done(RankSim& R, std::int32_t q) {
    if (q == kNoRequest) q = new_request(R, Request::Kind::Done);
    add_slot(R, q);
  }

  void start_persistent(RankSim& R, std::int32_t q) {
    if (!R.reqs[static_cast<std::size_t>(q)].persistent) return;
    const PersistentArgs a = R.persistent_args[static_cast<std::size_t>(q)];
    if (a.peer < kAnyWorld) return;  // MPI_PROC_NULL
    if (op_kind(a.op) == OpKind::PersistentSend)
      post_send(R, a.peer, a.comm, a.tag, a.bytes, a.op, false, q);
    else
      post_recv(R, a.peer, a.comm, a.tag, false, q);
  }

  [[gnu::always_inline]] void add_completions(RankSim& R, std::span<const std::int64_t> offsets, std::int64_t index) {
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

  void dispatch(RankSim& R) {
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
        R.probe = PostedRecv{src, comm_key(R, comm), e[Field::Tag], kNoRequest, R.clock, false};
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
          case Op::Waitany: add_completions(R, offs, e[Field::Index]); break;
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
      case OpKind::CommCreate:
        start_collective(R, comm);
        return;
      default:  // Init, Finalize, Comm_free, functions not modelled: no time
        end_event(R);
        return;
    }
  }

  // ---------------------------------------------------------------- end of run

  void check_finished() const {
    std::string blocked;
    std::size_t count = 0;
    for (const RankSim& R : ranks_) {
      if (R.finished) continue;
      if (++count <= 4)
        blocked += "\n  rank " + std::to_string(R.rank) + " at event #" +
                   std::to_string(R.event_index) + ": " + describe_current(R);
    }
    if (count == 0) return;
    throw SimulationError("simulated deadlock: " + std::to_string(count) +
                          " rank(s) wait for messages that no rank will send" + blocked +
                          (count > 4 ? "\n  ..." : ""));
  }

  void check_unmatched() const {
    for (const RankSim& D : ranks_) {
      if (D.unexpected.empty()) continue;
      const Message& m = D.unexpected.front();
      throw SimulationError(
          "simulation: " + std::to_string(D.unexpected.size()) + " message(s) to rank " +
          std::to_string(D.rank) + " were never received; the first: from rank " +
          std::to_string(m.src) + ", tag " + std::to_string(m.tag) + ", " +
          std::to_string(static_cast<std::int64_t>(m.bytes)) + " bytes" +
          (m.collective ? " (inside a collective)" : ""));
    }
  }

  SimResult collect() {
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
        res_.sites.push_back(SimSiteRow{static_cast<std::uint32_t>(site), site_times_[site].op,
                                        site_times_[site].times});
    for (const auto& [key, times] : other_ops_)
      res_.sites.push_back(SimSiteRow{static_cast<std::uint32_t>(key >> 16),
                                      static_cast<Op>(key & 0xffff), times});
    std::sort(res_.sites.begin(), res_.sites.end(), [](const SimSiteRow& a, const SimSiteRow& b) {
      return a.site != b.site ? a.site < b.site : a.op < b.op;
    });
    for (const auto& [key, pair] : pairs_) res_.pairs.push_back(pair);
    std::sort(res_.pairs.begin(), res_.pairs.end(), [](const SimPair& a, const SimPair& b) {
      return a.src != b.src ? a.src < b.src : a.dst < b.dst;
    });
    std::stable_sort(res_.timeline.begin(), res_.timeline.end(),
                     [](const SimTimelineRow& a, const SimTimelineRow& b) { return a.rank < b.rank; });
    return std::move(res_);
  }
};

}  // namespace

SimResult simulate(const Trace& trace, const SimOptions& options) {
  options.validate();
  if (trace.nranks <= 0) throw UsageError("cannot simulate a trace with no ranks");
  Engine engine(trace, options);
  return engine.run();
}

}  // namespace scalatrace
