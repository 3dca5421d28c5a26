#include "replayer.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <string>

#include "scalatrace/compress/lossy.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/read/potential_senders.hpp"
#include "scalatrace/read/probabilistic_walk.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace::replay {
namespace {

bool skipped(Op op) {
  // The replay's own MPI_Init / MPI_Finalize stand for the recorded ones; Abort ends nothing
  // (the trace ends there); Op::Other calls are not modelled (counted only).
  auto kind = op_kind(op);
  return kind == OpKind::Lifecycle || kind == OpKind::Other;
}

// Emulated computation: spins until `deadline_ns`. With `poll_ns` > 0 it lets MPI progress its
// outstanding requests every `poll_ns` (an MPI_Iprobe, which only polls): a probabilistic replay
// has no blocking receive between synchronisation points, so without it messages queued behind
// a computing receiver wait for its next call, where the original's blocking receives
// progressed them while it waited (docs/lossy.md, "Progress"). 0: no poll.
void spin_until(std::int64_t deadline_ns, std::int64_t poll_ns) {
  std::int64_t now = steady_now_ns();
  while (now < deadline_ns) {
    const std::int64_t next = poll_ns > 0 ? std::min(deadline_ns, now + poll_ns) : deadline_ns;
    while ((now = steady_now_ns()) < next) {
    }
    if (now < deadline_ns) {
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
  }
}

// Posts that may be issued while earlier Waits/Waitalls wait (--defer-waits).
bool is_nonblocking_post(Op op) {
  auto kind = op_kind(op);
  return kind == OpKind::NonblockingSend || kind == OpKind::NonblockingRecv;
}

bool is_deferrable_completion(Op op) { return op == Op::Wait || op == Op::Waitall; }

bool all_complete(const std::vector<RequestSlot*>& slots) {
  for (const RequestSlot* s : slots) {
    if (!s || s->handle == MPI_REQUEST_NULL) continue;
    int flag = 0;
    PMPI_Request_get_status(s->handle, &flag, MPI_STATUS_IGNORE);
    if (!flag) return false;
  }
  return true;
}

// More pending completions than this: the rank first waits for the oldest ones.
constexpr std::size_t kMaxPendingCompletions = 4096;

/// The ranks that can send to `rank` in a probabilistic replay, negotiated: each rank finds the
/// ranks its own sends can reach (its send nodes' peer support) and tells them in one
/// all-to-all of flags. Each rank then walks secondary contexts of its senders only.
std::vector<std::int64_t> negotiate_senders(const Trace& trace, int rank) {
  const auto n = static_cast<std::size_t>(trace.nranks);
  std::vector<char> to(n, 0), from(n, 0);
  for (const std::int64_t d : potential_destinations(trace, rank)) to[static_cast<std::size_t>(d)] = 1;
  PMPI_Alltoall(to.data(), 1, MPI_CHAR, from.data(), 1, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::int64_t> senders;
  for (std::size_t r = 0; r < n; ++r)
    if (from[r]) senders.push_back(static_cast<std::int64_t>(r));
  return senders;
}

bool threads_recorded(const Trace& trace) {
  auto it = trace.metadata.find("mpi_threads");
  return it != trace.metadata.end() && it->second != "1" && it->second != "0";
}

std::string event_text(const Event& e, std::int64_t index, int rank) {
  return "rank " + std::to_string(rank) + ", event #" + std::to_string(index) + " (MPI_" + std::string(op_name(e.op)) +
         ", call site " + std::to_string(e.site) + ")";
}

/// "rank 1, event #3 (MPI_Send, call site 2), a message of 1073741824 bytes (1048576 recorded x
/// --size-scale 1024)": what the replay was doing when memory ran out.
std::string out_of_memory_text(const Event& e, std::int64_t index, int rank, std::int64_t scaled_bytes,
                               double size_scale) {
  std::string text = event_text(e, index, rank);
  const std::int64_t recorded = std::max(e[Field::Bytes], e[Field::Bytes2]);
  if (recorded > 0) {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%g", size_scale);
    text += ", a message of " + std::to_string(scaled_bytes) + " bytes (" + std::to_string(recorded) +
            " recorded x --size-scale " + scale + ")";
  }
  return text;
}

}  // namespace

Replayer::Replayer(const Trace& trace, const Options& options, int world_rank, Progress& progress)
    : trace_(trace),
      options_(options),
      world_rank_(world_rank),
      progress_(progress),
      comms_(trace.comms, world_rank),
      types_(options.size_scale) {
  defer_waits_ = options.defer_waits == Options::DeferWaits::On ||
                 (options.defer_waits == Options::DeferWaits::Auto && threads_recorded(trace));
}

RankStats Replayer::run() {
  // Each rank draws its own sample stream (--timing sample) from the seed.
  const std::uint64_t seed = options_.seed + 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(world_rank_);
  // A lossy trace (docs/lossy.md) replays its drawn program: sends drawn with --seed (the same
  // on every rank), receives posted for what the others draw to this rank.
  std::optional<Cursor> cursor;
  std::optional<ProbabilisticWalk> walk;
  if (is_lossy(trace_)) {
    ProbabilisticOptions o;
    o.seed = options_.seed;
    o.timing = options_.timing;
    o.timing_seed = seed;
    o.senders = negotiate_senders(trace_, world_rank_);
    walk.emplace(trace_, world_rank_, o);
  } else {
    cursor.emplace(trace_, world_rank_, options_.timing, seed);
  }
  // The drawn program is walked ahead, before the clock starts, up to kPrewalkEvents events:
  // walking a rank's secondary contexts costs about 2 us per event (NPB CG, class S), which a
  // walk between calls adds to the replay wherever the computation between two calls is
  // shorter (docs/lossy.md, "Progress"). Past the bound the rest is walked as it goes.
  constexpr std::size_t kPrewalkEvents = std::size_t{1} << 18;
  std::vector<Event> prewalked;
  std::size_t prewalk_next = 0;
  Event walked;
  if (walk) {
    try {
      while (prewalked.size() < kPrewalkEvents && walk->next(walked)) prewalked.push_back(std::move(walked));
    } catch (const Error& err) {
      throw FormatError("rank " + std::to_string(world_rank_) + ", walking the lossy trace ahead, after event #" +
                        std::to_string(prewalked.size()) + ": " + err.what());
    }
    PMPI_Barrier(MPI_COMM_WORLD);  // every rank starts its clock after its own walk ahead (unseen by a collector)
  }
  const double compute_scale = options_.compute_scale;
  // Progress polls during emulated computation: lossy traces only (a lossless replay keeps the
  // original's calls, and with them its progress).
  const std::int64_t poll_ns = walk ? static_cast<std::int64_t>(options_.progress_poll_us * 1000.0) : 0;
  std::int64_t start = steady_now_ns();
  std::int64_t last_end = start;
  double compute_ns_total = 0;
  while (true) {
    std::optional<Event> next;
    try {
      if (walk) {
        if (prewalk_next < prewalked.size())
          next = std::move(prewalked[prewalk_next++]);
        else if (walk->next(walked))
          next = std::move(walked);
      } else {
        next = cursor->next();
      }
    } catch (const Error& err) {
      throw FormatError("rank " + std::to_string(world_rank_) + ", after event #" + std::to_string(index_ - 1) + ": " +
                        err.what());
    }
    if (!next) break;
    const Event& e = *next;
    auto& op_stats = stats_.ops[static_cast<std::size_t>(e.op)];
    ++op_stats.count;
    op_stats.bytes += static_cast<std::uint64_t>(types_.scaled(e[Field::Bytes], Rounding::Nearest));
    op_stats.recv_bytes += static_cast<std::uint64_t>(types_.scaled(e[Field::Bytes2], Rounding::Nearest));
    ++stats_.events;

    // Computation since the previous call ends at last_end + compute: a deadline, so the
    // replay's own overhead (cursor, bookkeeping) is absorbed into the emulated time.
    double compute = static_cast<double>(e.compute_ns) * compute_scale;
    bool skip = skipped(e.op);
    // Time inside an unmodelled call (Op::Other) counts as computation too.
    if (skip && op_kind(e.op) == OpKind::Other) compute += static_cast<double>(e.duration_ns) * compute_scale;
    if (e.op == Op::Init || e.op == Op::Init_thread) compute = 0;
    if (compute > 0) {
      spin_until(last_end + static_cast<std::int64_t>(compute), poll_ns);
      compute_ns_total += compute;
    }
    if (!skip) {
      publish(e);
      try {
        if (defer_waits_)
          issue_deferring_waits(e);
        else
          issue(e);
      } catch (const Error& err) {
        throw Error(event_text(e, index_, world_rank_) + ": " + err.what());
      } catch (const std::bad_alloc&) {
        const std::int64_t bytes = std::max(e[Field::Bytes], e[Field::Bytes2]);
        throw OutOfMemory(
            out_of_memory_text(e, index_, world_rank_, types_.scaled(bytes, Rounding::Up), options_.size_scale));
      }
      progress_.call_start_ns.store(0);
      ++stats_.issued;
      last_end = steady_now_ns();
    } else if (compute > 0) {
      last_end = steady_now_ns();
    }
    ++index_;
  }
  try {
    drain_pending_completions();
  } catch (const Error& err) {
    throw Error("rank " + std::to_string(world_rank_) + ", at the end: " + err.what());
  }
  if (walk) stats_.contexts = walk->contexts();
  stats_.time_s = static_cast<double>(steady_now_ns() - start) * 1e-9;
  stats_.compute_s = compute_ns_total * 1e-9;
  return stats_;
}

void Replayer::publish(const Event& e) {
  progress_.event_index.store(index_);
  progress_.op.store(static_cast<std::uint16_t>(e.op));
  progress_.site.store(e.site);
  progress_.comm.store(e[Field::Comm]);
  progress_.peer.store(e[Field::Peer]);
  std::int64_t abs = 0;
  if (op_is_point_to_point(e.op) || op_kind(e.op) == OpKind::Probe) {
    auto it = e[Field::Peer];
    if (it != kAnySource && it != kProcNull) {
      try {
        abs = comms_.get(e[Field::Comm]).rank + it;
      } catch (const Error&) {
      }
    }
  }
  progress_.abs_peer.store(abs);
  progress_.tag.store(e[Field::Tag]);
  progress_.origin_index.store(-1);
  progress_.call_start_ns.store(steady_now_ns());
}

int Replayer::peer_of(const CommInfo& comm, std::int64_t relative) const {
  if (relative == kAnySource) return MPI_ANY_SOURCE;
  if (relative == kProcNull) return MPI_PROC_NULL;
  std::int64_t abs = comm.rank + relative;
  if (abs < 0 || abs >= comm.size)
    throw FormatError("peer " + std::to_string(relative) + " relative to rank " + std::to_string(comm.rank) +
                      " is outside the communicator of size " + std::to_string(comm.size));
  return static_cast<int>(abs);
}

int Replayer::tag_of(std::int64_t tag) const {
  if (tag == kAnyTag) return MPI_ANY_TAG;
  return static_cast<int>(tag);
}

void Replayer::ensure_bsend(std::size_t bytes) {
  std::size_t need = bytes + MPI_BSEND_OVERHEAD;
  if (bsend_buffer_.size() >= std::max(need, options_.bsend_buffer)) return;
  if (!bsend_buffer_.empty()) {
    void* old = nullptr;
    int old_size = 0;
    PMPI_Buffer_detach(&old, &old_size);  // waits until the buffered messages left
  }
  std::size_t size = std::max({2 * need, options_.bsend_buffer, bsend_buffer_.size()});
  bsend_buffer_.assign(size, 0);
  PMPI_Buffer_attach(bsend_buffer_.data(), to_count(static_cast<std::int64_t>(size), "Bsend buffer size"));
}

RequestSlot& Replayer::new_request(const Event& e) {
  RequestSlot& slot = requests_.append(index_, e.op);
  slot.peer = e[Field::Peer];
  slot.abs_peer = progress_.abs_peer.load();
  slot.tag = e[Field::Tag];
  return slot;
}

std::vector<RequestSlot*> Replayer::slots_of(const Event& e) {
  std::vector<RequestSlot*> out;
  for (auto offset : e[ArrayField::Requests]) out.push_back(requests_.at_offset(offset));
  return out;
}

void Replayer::await(const RequestSlot* slot) {
  if (!slot || slot->handle == MPI_REQUEST_NULL) return;
  int flag = 0;
  PMPI_Request_get_status(slot->handle, &flag, MPI_STATUS_IGNORE);
  if (flag) return;
  progress_.origin_op.store(static_cast<std::uint16_t>(slot->op));
  progress_.origin_peer.store(slot->peer);
  progress_.origin_abs_peer.store(slot->abs_peer);
  progress_.origin_tag.store(slot->tag);
  progress_.origin_index.store(slot->event);
  while (!flag) PMPI_Request_get_status(slot->handle, &flag, MPI_STATUS_IGNORE);
  progress_.origin_index.store(-1);
}

void Replayer::issue(const Event& e) {
  switch (op_kind(e.op)) {
    case OpKind::BlockingSend:
    case OpKind::BlockingRecv:
    case OpKind::SendRecv:
    case OpKind::NonblockingSend:
    case OpKind::NonblockingRecv:
    case OpKind::PersistentSend:
    case OpKind::PersistentRecv:
    case OpKind::Probe:
      point_to_point(e);
      return;
    case OpKind::Start:
    case OpKind::RequestFree:
      persistent_start(e);
      return;
    case OpKind::Completion:
      completion(e, slots_of(e));
      return;
    case OpKind::Collective:
      collective(e, nullptr);
      return;
    case OpKind::NonblockingCollective: {
      RequestSlot& slot = new_request(e);
      collective(e, &slot.handle);
      return;
    }
    case OpKind::CommCreate:
      comms_.create(e);
      return;
    case OpKind::CommFree:
      comms_.free(e);
      return;
    case OpKind::Other:
    case OpKind::Lifecycle:
      return;
  }
}

void Replayer::point_to_point(const Event& e) {
  const CommInfo& comm = comms_.get(e[Field::Comm]);
  const int peer = peer_of(comm, e[Field::Peer]);
  const int tag = tag_of(e[Field::Tag]);
  const MPI_Comm c = comm.handle;
  auto kind = op_kind(e.op);
  const bool sends = kind == OpKind::BlockingSend || kind == OpKind::NonblockingSend || kind == OpKind::PersistentSend;
  Payload p = types_.payload(e[Field::Bytes], e[Field::DtSize], sends ? Rounding::Down : Rounding::Up);
  // MPI transfers nothing to or from MPI_PROC_NULL: no buffer of the recorded size is needed
  // (a 3 GiB message to MPI_PROC_NULL replays without allocating 3 GiB).
  const auto span = [](const Payload& q, int to) { return to == MPI_PROC_NULL ? 0 : q.buffer_bytes; };
  void* sbuf = send_pool_.get(span(p, peer));
  void* rbuf = recv_pool_.get(span(p, peer));
  if (e.op == Op::Bsend || e.op == Op::Ibsend || e.op == Op::Bsend_init) ensure_bsend(span(p, peer));

  switch (e.op) {
    case Op::Send:
      MPI_Send_c(sbuf, p.count, p.type, peer, tag, c);
      return;
    case Op::Bsend:
      MPI_Bsend_c(sbuf, p.count, p.type, peer, tag, c);
      return;
    case Op::Ssend:
      MPI_Ssend_c(sbuf, p.count, p.type, peer, tag, c);
      return;
    case Op::Rsend:
      MPI_Rsend_c(sbuf, p.count, p.type, peer, tag, c);
      return;
    case Op::Recv:
      MPI_Recv_c(rbuf, p.count, p.type, peer, tag, c, MPI_STATUS_IGNORE);
      return;
    case Op::Sendrecv: {
      Payload r = types_.payload(e[Field::Bytes2], e[Field::DtSize2], Rounding::Up);
      const int source = peer_of(comm, e[Field::Peer2]);
      rbuf = recv_pool_.get(span(r, source));
      MPI_Sendrecv_c(sbuf, p.count, p.type, peer, tag, rbuf, r.count, r.type, source, tag_of(e[Field::Tag2]), c,
                     MPI_STATUS_IGNORE);
      return;
    }
    case Op::Sendrecv_replace: {
      // One buffer both ways: size it for the larger of the two recorded counts.
      std::int64_t bytes = std::max(e[Field::Bytes], e[Field::Bytes2]);
      Payload r = types_.payload(bytes, e[Field::DtSize], Rounding::Nearest);
      const int source = peer_of(comm, e[Field::Peer2]);
      rbuf = recv_pool_.get(peer == MPI_PROC_NULL && source == MPI_PROC_NULL ? 0 : r.buffer_bytes);
      MPI_Sendrecv_replace_c(rbuf, r.count, r.type, peer, tag, source, tag_of(e[Field::Tag2]), c, MPI_STATUS_IGNORE);
      return;
    }
    case Op::Isend:
      MPI_Isend_c(sbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Ibsend:
      MPI_Ibsend_c(sbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Issend:
      MPI_Issend_c(sbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Irsend:
      MPI_Irsend_c(sbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Irecv:
      MPI_Irecv_c(rbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Send_init:
      MPI_Send_init_c(sbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Bsend_init:
      MPI_Bsend_init_c(sbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Ssend_init:
      MPI_Ssend_init_c(sbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Rsend_init:
      MPI_Rsend_init_c(sbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Recv_init:
      MPI_Recv_init_c(rbuf, p.count, p.type, peer, tag, c, &new_request(e).handle);
      return;
    case Op::Probe:
      MPI_Probe(peer, tag, c, MPI_STATUS_IGNORE);
      return;
    case Op::Iprobe: {
      int flag = 0;
      if (e[Field::Flag] == 1) {
        // The message was there in the original: wait (unseen) until it is here too.
        while (!flag) PMPI_Iprobe(peer, tag, c, &flag, MPI_STATUS_IGNORE);
      }
      MPI_Iprobe(peer, tag, c, &flag, MPI_STATUS_IGNORE);
      if (flag != e[Field::Flag]) ++stats_.outcome_mismatches;
      return;
    }
    default:
      throw FormatError("not a point-to-point op");
  }
}

void Replayer::persistent_start(const Event& e) {
  std::vector<RequestSlot*> slots = slots_of(e);
  if (e.op == Op::Request_free) {
    for (RequestSlot* s : slots)
      if (s && s->handle != MPI_REQUEST_NULL) MPI_Request_free(&s->handle);
    return;
  }
  if (e.op == Op::Start) {
    if (slots.size() != 1 || !slots[0]) throw FormatError("MPI_Start needs exactly one request");
    MPI_Start(&slots[0]->handle);
    return;
  }
  std::vector<MPI_Request> handles;
  for (RequestSlot* s : slots) {
    if (!s) throw FormatError("MPI_Startall of a null request");
    handles.push_back(s->handle);
  }
  MPI_Startall(static_cast<int>(handles.size()), handles.data());
  for (std::size_t i = 0; i < slots.size(); ++i) slots[i]->handle = handles[i];
}

// Completion calls. The recorded outcome says which requests completed in the original; the
// replay first waits (polling with PMPI, invisible to a collector) until exactly those are
// complete here too, then issues the recorded call, which therefore completes them. A recorded
// "not completed" outcome (flag 0, no index) issues the call once and moves on, whatever it
// returns. So timing differences never make the replay hang or pair requests differently;
// only requests that completed earlier in the replay than in the original can change an
// outcome (counted in outcome_mismatches).
void Replayer::completion(const Event& e, const std::vector<RequestSlot*>& slots) {
  std::vector<MPI_Request> handles;
  for (RequestSlot* s : slots) handles.push_back(s ? s->handle : MPI_REQUEST_NULL);
  const int n = static_cast<int>(handles.size());
  auto write_back = [&] {
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (slots[i]) {
        slots[i]->handle = handles[i];
        if (handles[i] == MPI_REQUEST_NULL) slots[i]->keep.reset();
      }
  };
  auto recorded_index = [&](std::int64_t i) -> RequestSlot* {
    if (i == kUndefined || i < 0) return nullptr;
    if (i >= n)
      throw FormatError("completed index " + std::to_string(i) + " outside its " + std::to_string(n) + " requests");
    return slots[static_cast<std::size_t>(i)];
  };
  int flag = 0, index = MPI_UNDEFINED, outcount = 0;
  std::vector<int> indices(static_cast<std::size_t>(std::max(n, 1)));
  switch (e.op) {
    case Op::Wait:
      if (n != 1) throw FormatError("MPI_Wait needs exactly one request");
      await(slots[0]);
      MPI_Wait(handles.data(), MPI_STATUS_IGNORE);
      break;
    case Op::Waitall:
      for (RequestSlot* s : slots) await(s);
      MPI_Waitall(n, handles.data(), MPI_STATUSES_IGNORE);
      break;
    case Op::Waitany: {
      std::int64_t want = e[Field::Index];
      RequestSlot* target = recorded_index(want);
      await(target);
      MPI_Waitany(n, handles.data(), &index, MPI_STATUS_IGNORE);
      if (index != (want == kUndefined ? MPI_UNDEFINED : want)) {
        ++stats_.outcome_mismatches;
        // Keep the pairing: the recorded request completes here, as in the original.
        if (target) PMPI_Wait(&handles[static_cast<std::size_t>(want)], MPI_STATUS_IGNORE);
      }
      break;
    }
    case Op::Waitsome:
    case Op::Testsome: {
      const auto& want = e[ArrayField::Indices];
      for (auto i : want) await(recorded_index(i));
      if (e.op == Op::Waitsome)
        MPI_Waitsome(n, handles.data(), &outcount, indices.data(), MPI_STATUSES_IGNORE);
      else
        MPI_Testsome(n, handles.data(), &outcount, indices.data(), MPI_STATUSES_IGNORE);
      std::vector<std::int64_t> got;
      for (int k = 0; k < std::max(outcount, 0); ++k) got.push_back(indices[static_cast<std::size_t>(k)]);
      std::sort(got.begin(), got.end());
      std::vector<std::int64_t> sorted_want(want.begin(), want.end());
      std::sort(sorted_want.begin(), sorted_want.end());
      if (got != sorted_want) ++stats_.outcome_mismatches;
      break;
    }
    case Op::Test:
      if (n != 1) throw FormatError("MPI_Test needs exactly one request");
      if (e[Field::Flag] == 1) await(slots[0]);
      MPI_Test(handles.data(), &flag, MPI_STATUS_IGNORE);
      if (flag != e[Field::Flag]) ++stats_.outcome_mismatches;
      break;
    case Op::Testall:
      if (e[Field::Flag] == 1)
        for (RequestSlot* s : slots) await(s);
      MPI_Testall(n, handles.data(), &flag, MPI_STATUSES_IGNORE);
      if (flag != e[Field::Flag]) ++stats_.outcome_mismatches;
      break;
    case Op::Testany: {
      std::int64_t want = e[Field::Flag] == 1 ? e[Field::Index] : kUndefined;
      RequestSlot* target = recorded_index(want);
      await(target);
      MPI_Testany(n, handles.data(), &index, &flag, MPI_STATUS_IGNORE);
      std::int64_t got = index == MPI_UNDEFINED ? kUndefined : index;
      bool same = flag == e[Field::Flag] && (flag == 0 || got == e[Field::Index]);
      if (!same) {
        ++stats_.outcome_mismatches;
        if (target) PMPI_Wait(&handles[static_cast<std::size_t>(want)], MPI_STATUS_IGNORE);
      }
      break;
    }
    default:
      throw FormatError("not a completion op");
  }
  write_back();
}

// A rank of a multi-threaded program records one interleaving of its threads' calls. Replayed
// serially, a Waitall of thread A blocks the calls of thread B recorded after it, which the
// partner rank may need first (its own recorded order differs): a deadlock the original could
// not have. With --defer-waits a Wait/Waitall whose requests are not complete yet waits in
// pending_ while the rank goes on issuing nonblocking sends and receives (in recorded order, so
// message matching is unchanged); pending completions are issued as soon as their requests are
// complete. Any other call first waits for all pending completions, as do the end of the trace
// and a full queue.
void Replayer::issue_deferring_waits(const Event& e) {
  if (!pending_.empty()) retire_ready_completions();
  if (is_deferrable_completion(e.op)) {
    std::vector<RequestSlot*> slots = slots_of(e);  // offsets count from here: resolve now
    if (all_complete(slots)) {
      completion(e, slots);
      return;
    }
    if (pending_.size() >= kMaxPendingCompletions) drain_pending_completions();
    pending_.push_back({e, std::move(slots), index_});
    return;
  }
  if (!is_nonblocking_post(e.op)) drain_pending_completions();
  issue(e);
}

bool Replayer::retire_ready_completions() {
  bool any = false;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!all_complete(it->slots)) {
      ++it;
      continue;
    }
    try {
      completion(it->event, it->slots);
    } catch (const Error& err) {
      throw Error(event_text(it->event, it->index, world_rank_) + ": " + err.what());
    }
    it = pending_.erase(it);
    any = true;
  }
  return any;
}

void Replayer::drain_pending_completions() {
  if (pending_.empty()) return;
  if (progress_.call_start_ns.load() == 0) progress_.call_start_ns.store(steady_now_ns());
  while (!pending_.empty()) {
    // For the watchdog: name what the oldest pending completion waits for.
    const PendingCompletion& oldest = pending_.front();
    for (const RequestSlot* s : oldest.slots) {
      if (!s || s->handle == MPI_REQUEST_NULL) continue;
      progress_.origin_op.store(static_cast<std::uint16_t>(s->op));
      progress_.origin_peer.store(s->peer);
      progress_.origin_abs_peer.store(s->abs_peer);
      progress_.origin_tag.store(s->tag);
      progress_.origin_index.store(s->event);
      break;
    }
    retire_ready_completions();
  }
  progress_.origin_index.store(-1);
}

void Replayer::release() {
  types_.release();
  if (!bsend_buffer_.empty()) {
    void* old = nullptr;
    int size = 0;
    PMPI_Buffer_detach(&old, &size);
    bsend_buffer_.clear();
  }
}

}  // namespace scalatrace::replay
