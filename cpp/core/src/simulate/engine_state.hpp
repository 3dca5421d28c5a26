#pragma once
// The simulator engine's state (not a public header): one rank's simulation state (RankSim),
// its requests, messages, posted receives and communicators, and the queue of ranks ready to
// run. The engine that moves it is in engine.hpp. See docs/simulator.md ("Event engine").
#include <algorithm>
#include <bit>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "scalatrace/model/comm_table.hpp"
#include "scalatrace/model/op.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/read/probabilistic_walk.hpp"
#include "scalatrace/simulate/simulator.hpp"
#include "simulate/simulator_collectives.hpp"
#include "support/small_vector.hpp"

namespace scalatrace::sim {

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

/// 40 bytes (the 4-byte fields last): a delivery reads the receive queue's entries from its
/// head to the match, and moves those after it.
struct PostedRecv {
  std::int64_t src = kAnyWorld, comm = 0, tag = 0;
  double post_time = 0;
  std::int32_t req = kNoRequest;
  bool collective = false;
};
static_assert(sizeof(PostedRecv) == 40);

inline bool matches(const PostedRecv& r, const Message& m) {
  return r.collective == m.collective && r.comm == m.comm && (r.src == kAnyWorld || r.src == m.src) &&
         (r.tag == kAnyTag || r.tag == m.tag);
}

struct CommInfo {
  std::int64_t id = 0, me = 0, size = 0;
  /// The same on every member (ids are per rank: creation order may differ between ranks);
  /// what messages are matched by.
  std::int64_t key = 0;
  const CommEntry* entry = nullptr;
  bool identity = false;  ///< comm rank == world rank
  /// The engine's gathering this rank last entered on this communicator (a hint: checked).
  std::int32_t gathering = -1;
  std::uint64_t collective_seq = 0;
};

/// Where a rank is: about to read its next event; waiting for the requests of a completion call
/// (R.waits) or for the current step of a blocking collective (R.step_reqs); about to post the
/// collective's next step; in a blocking probe; entered a gathered collective (engine_gathering.hpp),
/// waiting for its other members.
enum class Stage : std::uint8_t { Next, Waiting, StepWaiting, Collective, Probing, Gathered };

/// First-in first-out queue of ranks ready to run: a ring over a power-of-two array. A rank is
/// queued at most once at a time (only a blocked rank is woken), so `ranks` slots suffice.
class ReadyQueue {
 public:
  explicit ReadyQueue(std::int64_t ranks)
      : slots_(std::bit_ceil(static_cast<std::uint64_t>(std::max<std::int64_t>(ranks, 1)))), mask_(slots_.size() - 1) {}
  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }
  void push_back(std::int64_t r) {
    if (size() == slots_.size()) throw std::logic_error("simulator ready queue overflow");
    slots_[tail_++ & mask_] = r;
  }
  /// Queued first (order-free runs: a woken rank, Engine::wake).
  void push_front(std::int64_t r) {
    if (size() == slots_.size()) throw std::logic_error("simulator ready queue overflow");
    slots_[--head_ & mask_] = r;
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
  std::size_t pos = 0;                                   ///< steps[0, pos) are posted
  std::size_t comm = 0;                                  ///< index into the rank's comms
  std::uint64_t tag = 0;                                 ///< the collective's sequence number on its communicator
  double clock = 0;                                      ///< when the schedule can go on
  std::int32_t step_reqs[2] = {kNoRequest, kNoRequest};  ///< the current step's requests
};

/// One rank's simulation state. Laid out for locality: at 65,536 ranks almost every access to
/// another rank's state is a cache miss, and the number of distinct lines a resumption or a
/// delivery touches is what the run's time follows (the prefetches are limited by the misses
/// the core keeps in flight, not by the bandwidth). So the fields a resumption and a delivery
/// read come first, in the order the run loop's prefetches fetch them (Engine::prefetch_hot,
/// Engine::prefetch_for_stage):
///   line 0 (kHotLine0Bytes): what decides the rest: stage, flags, clock, the collective's step;
///   line 1: the current collective step's requests (what a delivery inside a collective writes);
///   lines 2-4: schedules, accounting of the current event, the rank's times and counts;
/// then the containers, each with its first elements inline (one contiguous block per rank:
/// neighbouring lines come cheaper than a heap pointer chased per container), prefetched by
/// stage: the wait list and handle buffer for a completion call, the current step and its
/// communicator for a collective, the receive queues' heads for both.
struct alignas(64) RankSim {
  // Line 0.
  Stage stage = Stage::Next;
  bool blocked = false, finished = false;
  bool cursor_done = false;  ///< every event walked (finished once its schedules are done too)
  /// The current step's receive and send (kStepRecv, kStepSend), if it has them.
  bool step_recv = false, step_send = false;
  /// The floor bounds the call's whole time (collectives, blocking sends: the recorded time
  /// includes the transfer the model also predicts), not only its busy part.
  bool event_floor_elapsed = false;
  Op op = Op::Other;       ///< the current event's op and call site (what ending it needs;
  std::uint32_t site = 0;  ///< the whole event is read again for messages: describe_current)
  std::int64_t rank = 0;
  double clock = 0;
  // Collective in progress.
  std::size_t step_pos = 0;
  std::size_t coll_comm = 0;  ///< index into comms
  std::uint64_t coll_tag = 0;
  std::uint32_t waits_known = 0;  ///< waits[0, waits_known) are known to complete (checked)
  /// Order-free runs: while blocked in a completion call, how many of its requests are still
  /// unknown (the match of the last one wakes the rank).
  std::uint32_t unknown_waits = 0;
  // Line 1.
  alignas(64) Request step_reqs[2];
  // Lines 2-4.
  std::vector<CollSchedule> schedules;  ///< nonblocking collectives in progress
  std::size_t wildcards_posted = 0;     ///< entries of `posted` with src == kAnyWorld
  std::size_t last_comm = 0;            ///< index into comms that comm_index found last
  std::uint64_t event_index = 0;
  // Accounting of the current event.
  double event_start = 0, event_compute = 0, wait_mark = 0, late_s_mark = 0, late_r_mark = 0;
  /// The least CPU time the current call takes: a call that never waits takes its recorded
  /// duration (SimOptions::recorded_local_calls), 0 otherwise.
  double event_floor = 0;
  SimTimes times;
  /// The rank's walk over the trace (its state behind one pointer, prefetched separately).
  Cursor cursor;
  /// Lossy traces: the rank's calls with drawn messages (read instead of `cursor`).
  std::unique_ptr<ProbabilisticWalk> walk;
  // Results.
  std::uint64_t sent = 0, received = 0;
  double sent_bytes = 0, recv_bytes = 0;
  // Lines 5-8 (with the wait list, the free requests and the handle buffer).
  // Handle buffer: slots[slot_front + i] is handle slot slot_base + i (oldest trimmed when released).
  std::size_t slot_front = 0;
  std::uint64_t slot_base = 0, slot_count = 0;
  SmallVector<std::int32_t, 16> waits;  ///< requests the current step waits for
  SmallVector<std::int32_t, 16> free_reqs;
  SmallVector<std::int32_t, 16> slots;
  std::vector<PersistentArgs> persistent_args;  ///< by request index, persistent requests only
  /// Each starting a line: the steps' size with the first two steps, a communicator's lookup
  /// fields (up to `identity`) with the head of `comms`.
  alignas(64) sim::CollSteps steps;
  // Blocking probe in progress (in the gap the alignment of `comms` leaves after `steps`).
  PostedRecv probe;
  alignas(64) SmallVector<CommInfo, 2> comms;  ///< communicators this rank has used
  // Receiver side, each queue's head and first entries starting a line.
  alignas(64) SmallVector<PostedRecv, 8> posted;  ///< posted receives in post order
  /// Arrived (or announced), not yet matched; in arrival order per source.
  alignas(64) SmallVector<Message, 8> unexpected;
  // Requests: pool (handle buffer above).
  SmallVector<Request, 24> reqs;
  bool next_event(EventView& ev) { return walk ? walk->next(ev) : cursor.next(ev); }

  /// `constants`: where the cursor keeps its constant field values, with the other ranks';
  /// `cursors`: where it keeps its state, beside theirs.
  RankSim(const Trace& t, std::int64_t r, const SimOptions& o, SharedConstants& constants, CursorBlock& cursors)
      : rank(r),
        cursor(t, r, o.timing, o.seed + static_cast<std::uint64_t>(r),
               // Durations give calls their floor (recorded_local_calls): a collective's the
               // mean of its fastest bin (the calls that waited least), any other call's the
               // mean of its median bin; both robust to the preempted or first (connection
               // set-up) calls a mean would spread over all.
               o.timing == TimingMode::None ? TimingMode::None : TimingMode::LibraryTime, &cursors) {
    cursor.share_constants(constants);
  }
};

}  // namespace scalatrace::sim
