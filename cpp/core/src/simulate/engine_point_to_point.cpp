// The simulator engine's point-to-point messages: posting sends (eager or rendezvous) and
// receives, delivering a message to its destination's queues, matching it to a posted receive,
// and resolving MPI_ANY_SOURCE receives when no rank can go on. See docs/simulator.md
// ("Event engine", "Network model").
#include <algorithm>
#include <optional>
#include <vector>

#include "simulate/engine.hpp"

namespace scalatrace::sim {

/// Posts a send at `clock` (the rank's, or a nonblocking collective's), advanced by o_s (and by
/// the copy of an eager message, (k-1)*O). A user message to the sender itself is a copy in
/// memory: it takes no latency, no bytes on the wire and no time of the NIC (docs/simulator.md,
/// "Messages to oneself").
void Engine::post_send_at(RankSim& R, double& clock, std::int64_t dst, std::int64_t comm, std::int64_t tag,
                          double bytes, Op op, bool collective, std::int32_t q) {
  const LogGP& p = net_.link(R.rank, dst);
  const bool sync = op == Op::Ssend || op == Op::Issend || op == Op::Ssend_init;
  const bool buffered = op == Op::Bsend || op == Op::Ibsend || op == Op::Bsend_init;
  const bool rendezvous = sync || (!buffered && bytes > opt_.eager_threshold);
  const bool to_self = dst == R.rank && !collective;
  clock += rendezvous ? p.o_s : p.eager_send_cpu(bytes);
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
  m.rendezvous = rendezvous;
  if (m.rendezvous) {
    Q.known = false;
    Q.rendezvous = true;
    m.arrival = to_self ? clock : clock + p.L;  // request-to-send
  } else if (to_self) {
    Q.known = true;
    Q.done = clock;
    m.arrival = clock;
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

/// Posts a receive at time `when` (the rank's clock, or a nonblocking collective's).
void Engine::post_recv_at(RankSim& R, double when, std::int64_t src, std::int64_t comm, std::int64_t tag,
                          bool collective, std::int32_t q) {
  Request& Q = request(R, q);
  Q.kind = Request::Kind::Recv;
  Q.known = false;
  Q.active = true;
  PostedRecv pr{.src = src, .comm = comm, .tag = tag, .post_time = when, .req = q, .collective = collective};
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
    const bool held = R.wildcards_posted > 0 && std::any_of(R.posted.begin(), R.posted.end(), [&](const PostedRecv& w) {
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
void Engine::deliver(std::int64_t d, Message&& m) {
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

void Engine::match(std::int64_t d, const PostedRecv& pr, const Message& m) {
  RankSim& D = rank(d);
  Request& Q = request(D, pr.req);
  const LogGP& p = net_.link(m.src, d);
  const bool to_self = m.src == d && m.user;
  // An eager message to oneself whose receive was posted first went straight into the receive
  // buffer with the sender's copy: the receiver's part is o_r. Otherwise it copies it out.
  Q.o_r = to_self && !m.rendezvous && pr.post_time < m.arrival ? p.o_r : p.recv_cpu(m.bytes);
  if (!m.rendezvous) {
    Q.done = m.arrival;
  } else if (to_self) {
    // Rendezvous with oneself: the data is copied once the receive is posted (recv_cpu).
    const double matched = std::max(m.arrival, pr.post_time);
    Request& SQ = request(D, m.send_req);
    SQ.known = true;
    SQ.done = matched;
    wake(m.src);
    Q.done = matched;
  } else {
    const double matched = std::max(m.arrival, pr.post_time);
    const auto t = net_.transfer(m.src, d, p, matched + p.L + p.R, m.bytes);  // clear-to-send, data
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
      SimPair& pair =
          pairs_[static_cast<std::uint64_t>(m.src) * static_cast<std::uint64_t>(n_) + static_cast<std::uint64_t>(d)];
      pair.src = m.src;
      pair.dst = d;
      ++pair.messages;
      pair.bytes += m.bytes;
    }
  }
  wake_on_match(d, D, Q);
}

/// When every rank is stuck: the earliest-arriving candidate of any pending wildcard receive
/// is matched (no message still to be sent can arrive before it). False if none.
bool Engine::resolve_wildcard() {
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
    if (candidate)
      keep.push_back(d);
    else
      in_wild_[static_cast<std::size_t>(d)] = 0;
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

/// Posts the send half of a user point-to-point call; kNoRequest for MPI_PROC_NULL.
std::int32_t Engine::user_send(RankSim& R, Op op, std::int64_t comm, std::int64_t peer_field, std::int64_t tag,
                               std::int64_t bytes) {
  if (peer_field == kAnySource) fail_event(R, "a send to MPI_ANY_SOURCE");
  if (peer_field == kProcNull) return kNoRequest;
  const std::size_t ci = comm_index(R, comm);
  const std::int64_t dst = member_world(R, ci, comm, peer_field);
  const std::int32_t q = new_request(R, Request::Kind::Send);
  post_send(R, dst, R.comms[ci].key, tag, scaled_bytes(bytes), op, false, q);
  return q;
}

std::int32_t Engine::user_recv(RankSim& R, std::int64_t comm, std::int64_t peer_field, std::int64_t tag) {
  if (peer_field == kProcNull) return kNoRequest;
  const std::size_t ci = comm_index(R, comm);
  const std::int64_t src = peer_field == kAnySource ? kAnyWorld : member_world(R, ci, comm, peer_field);
  const std::int32_t q = new_request(R, Request::Kind::Recv);
  post_recv(R, src, R.comms[ci].key, tag, false, q);
  return q;
}

}  // namespace scalatrace::sim
