// Wildcard-receive resolution with deadlock detection (thesis §4.4.4, Algorithm 3).
//
// Every rank's event sequence is walked with its own cursor (the traversal context of the
// thesis). A rank runs until it blocks: on a receive that has no matching message yet, on a
// synchronous send that is not matched, on a completion call whose requests are not complete,
// or on a collective (MPI_Finalize included) that not every member has reached. The walk then
// switches to the next rank. Messages match receives in MPI order (per receiver: posted
// receives in posting order, unexpected messages in arrival order; non-overtaking per sender).
// A wildcard receive takes the sender of the message it matches. If a full pass over the ranks
// makes no progress while some rank is unfinished, the remaining ranks wait on each other: a
// deadlock, reported with every blocked event. See docs/codegen.md.
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "scalatrace/codegen/codegen.hpp"
#include "scalatrace/read/cursor.hpp"

namespace scalatrace {
namespace {

constexpr std::int64_t kAny = -1;

struct Message {
  std::int64_t src = 0, dst = 0, tag = 0;
  int comm = 0;
  std::shared_ptr<bool> matched = std::make_shared<bool>(false);
};

/// Where a receive's resolved source is written: the recorded peer value of one occurrence.
struct PeerRecord {
  std::int64_t* value = nullptr;      ///< relative peer in the rank's record list
  std::int64_t* tag_value = nullptr;  ///< the occurrence's tag when it is MPI_ANY_TAG
  std::int64_t my_comm_rank = 0;
  const RankList* members = nullptr;
};

struct Receive {
  std::int64_t src = kAny, tag = kAny;  // world rank / tag, or kAny
  int comm = 0;
  std::shared_ptr<bool> done = std::make_shared<bool>(false);
  PeerRecord record;  ///< only for wildcard receives
  std::size_t event_rank = 0;
  std::uint64_t position = 0;
  Op op = Op::Other;
};

struct RequestSlot {
  std::function<bool()> done = [] { return true; };
  bool persistent = false;
  Event init;
  PeerRecord record;
};

struct RankState {
  std::unique_ptr<Cursor> cursor;
  bool finished = false;
  std::function<bool()> waiting;  ///< set while blocked
  Event current;                  ///< the blocking event
  std::uint64_t position = 0;     ///< events taken so far
  std::vector<RequestSlot> requests;
  std::map<int, std::uint64_t> collectives;  ///< per communicator: collectives entered
  // Recorded peers and tags of this rank's receive occurrences, per node and field (Peer /
  // Peer2, Tag / Tag2).
  std::map<std::pair<const Node*, int>, std::deque<std::int64_t>> peers;
};

class Simulation {
 public:
  Simulation(const Trace& trace, std::vector<WildcardResolution>* resolved, bool any_tags)
      : trace_(trace),
        resolved_(resolved),
        any_tags_(any_tags),
        states_(static_cast<std::size_t>(trace.nranks)),
        posted_(states_.size()),
        unexpected_(states_.size()) {
    for (std::int64_t r = 0; r < trace.nranks; ++r)
      states_[static_cast<std::size_t>(r)].cursor = std::make_unique<Cursor>(trace, r, TimingMode::None);
  }

  void run() {
    bool progress = true;
    while (progress) {
      progress = false;
      for (std::size_t r = 0; r < states_.size(); ++r)
        if (!states_[r].finished && step(r)) progress = true;
    }
    std::ostringstream stuck;
    std::size_t n = 0;
    for (std::size_t r = 0; r < states_.size(); ++r) {
      if (states_[r].finished) continue;
      if (n++ < 16) stuck << "\n  " << describe_blocked(r);
    }
    if (n == 0) return;
    if (n > 16) stuck << "\n  ... and " << (n - 16) << " more blocked ranks";
    throw DeadlockError(
        "wildcard receives cannot be resolved without deadlock: after matching every message "
        "the trace allows, " +
        std::to_string(n) + " rank(s) wait forever:" + stuck.str() +
        "\n(the recorded run matched its wildcards in an order this trace does not determine; "
        "no benchmark was generated)");
  }

  /// Rebuilds the trace with the recorded (now resolved) peers of every receive node.
  Trace rebuilt() const {
    Trace out = trace_.clone();
    std::unordered_map<const Node*, Node*> map;
    pair_nodes(trace_.nodes, out.nodes, map);
    std::map<std::pair<const Node*, int>, bool> keys;
    for (const auto& s : states_)
      for (const auto& [key, values] : s.peers) keys[key] = true;
    for (const auto& [key, unused] : keys) {
      (void)unused;
      const auto [node, field_index] = key;
      const ElasticValue& old = node->event->fields[static_cast<std::size_t>(field_index)];
      std::vector<std::pair<ValueSeq, std::vector<std::int64_t>>> groups;
      bool changed = false;
      for (std::int64_t r = 0; r < trace_.nranks; ++r) {
        const auto& peers = states_[static_cast<std::size_t>(r)].peers;
        auto it = peers.find(key);
        ValueSeq seq;
        const ValueSeq* original = old.for_rank(r);
        if (it != peers.end()) {
          for (auto v : it->second) seq.append(v);
          if (original && original->size() > it->second.size())  // occurrences not walked
            for (std::uint64_t k = it->second.size(); k < original->size(); ++k) seq.append(original->at(k));
          if (!original || !(seq == *original)) changed = true;
        } else if (original) {
          seq = *original;
        } else {
          continue;
        }
        bool placed = false;
        for (auto& [g, ranks] : groups)
          if (g == seq) {
            ranks.push_back(r);
            placed = true;
            break;
          }
        if (!placed) groups.push_back({std::move(seq), {r}});
      }
      if (!changed) continue;
      ElasticValue value;
      for (auto& [seq, ranks] : groups) value.alternatives.push_back({std::move(seq), RankList::from_sequence(ranks)});
      map.at(node)->event->fields[static_cast<std::size_t>(field_index)] = std::move(value);
    }
    return out;
  }

 private:
  static void pair_nodes(const std::vector<Node>& a, std::vector<Node>& b,
                         std::unordered_map<const Node*, Node*>& map) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      map[&a[i]] = &b[i];
      if (a[i].loop) pair_nodes(a[i].loop->body, b[i].loop->body, map);
    }
  }

  const RankList& members(std::int64_t comm, std::int64_t rank) {
    if (const CommEntry* e = trace_.comms.find(comm, rank)) return e->members;
    if (comm == 0) {
      if (world_.empty()) world_ = RankList::range(0, trace_.nranks);
      return world_;
    }
    if (comm == 1) return selves_.try_emplace(rank, RankList::single(rank)).first->second;
    throw DeadlockError("rank " + std::to_string(rank) + " uses communicator " + std::to_string(comm) +
                        ", which the trace's communicator table does not know");
  }
  int comm_key(std::int64_t comm, std::int64_t rank) {
    const RankList& m = members(comm, rank);
    auto key = m.to_string() + "#" + std::to_string(comm);
    auto [it, inserted] = comm_keys_.try_emplace(key, static_cast<int>(comm_keys_.size()));
    if (inserted) comm_sizes_.push_back(m.size());
    return it->second;
  }
  std::int64_t world_peer(const Event& e, std::int64_t rank, Field peer_field) {
    const std::int64_t rel = e[peer_field];
    if (rel == kAnySource) return kAny;
    if (rel == kProcNull) return kProcNull;
    const RankList& m = members(e[Field::Comm], rank);
    const std::int64_t me = m.index_of(rank), at = me + rel;
    if (me < 0 || at < 0 || at >= m.size())
      throw DeadlockError("rank " + std::to_string(rank) + ": " + describe(e) +
                          " names a peer outside its communicator");
    return m.at(at);
  }

  void post_message(std::size_t r, const Event& e, Field peer, Field tag, std::shared_ptr<bool>* matched) {
    Message msg;
    msg.src = static_cast<std::int64_t>(r);
    msg.dst = world_peer(e, msg.src, peer);
    if (matched) *matched = msg.matched;
    if (msg.dst == kProcNull || msg.dst == kAny) {
      *msg.matched = true;
      return;
    }
    msg.tag = e[tag];
    msg.comm = comm_key(e[Field::Comm], msg.src);
    auto& posted = posted_[static_cast<std::size_t>(msg.dst)];
    for (auto it = posted.begin(); it != posted.end(); ++it)
      if (fits(*it, msg)) {
        match(*it, msg);
        posted.erase(it);
        return;
      }
    unexpected_[static_cast<std::size_t>(msg.dst)].push_back(std::move(msg));
  }

  static bool fits(const Receive& recv, const Message& msg) {
    return recv.comm == msg.comm && (recv.src == kAny || recv.src == msg.src) &&
           (recv.tag == kAny || recv.tag == msg.tag);
  }

  void match(Receive& recv, Message& msg) {
    *recv.done = true;
    *msg.matched = true;
    if (recv.record.value && *recv.record.value == kAnySource) resolve(recv.record, msg.src, recv);
    if (recv.record.tag_value && *recv.record.tag_value == kAnyTag) *recv.record.tag_value = msg.tag;
  }

  void resolve(const PeerRecord& record, std::int64_t src, const Receive& recv) {
    *record.value = record.members->index_of(src) - record.my_comm_rank;
    if (resolved_)
      resolved_->push_back(WildcardResolution{static_cast<std::int64_t>(recv.event_rank), recv.position, recv.op, src});
  }

  PeerRecord record_peer(std::size_t r, const Event& e, Field peer_field) {
    RankState& s = states_[r];
    const Node* node = s.cursor->last_node();
    auto& values = s.peers[{node, static_cast<int>(peer_field)}];
    values.push_back(e[peer_field]);
    const Field tag_field = peer_field == Field::Peer2 ? Field::Tag2 : Field::Tag;
    auto& tags = s.peers[{node, static_cast<int>(tag_field)}];
    tags.push_back(e[tag_field]);
    PeerRecord rec;
    if (any_tags_ && e[tag_field] == kAnyTag) rec.tag_value = &tags.back();
    if (e[peer_field] != kAnySource) return rec;
    rec.value = &values.back();
    const RankList& m = members(e[Field::Comm], static_cast<std::int64_t>(r));
    rec.members = &m;
    rec.my_comm_rank = m.index_of(static_cast<std::int64_t>(r));
    return rec;
  }

  std::shared_ptr<bool> post_receive(std::size_t r, const Event& e, Field peer, Field tag, PeerRecord record) {
    Receive recv;
    const auto rank = static_cast<std::int64_t>(r);
    recv.src = world_peer(e, rank, peer);
    recv.tag = e[tag] == kAnyTag ? kAny : e[tag];
    recv.record = record;
    recv.event_rank = r;
    recv.position = states_[r].position - 1;
    recv.op = e.op;
    if (recv.src == kProcNull) {
      *recv.done = true;
      return recv.done;
    }
    recv.comm = comm_key(e[Field::Comm], rank);
    auto& queue = unexpected_[r];
    for (auto it = queue.begin(); it != queue.end(); ++it)
      if (fits(recv, *it)) {
        match(recv, *it);
        queue.erase(it);
        return recv.done;
      }
    posted_[r].push_back(recv);
    return recv.done;
  }

  std::function<bool()> enter_collective(std::size_t r, std::int64_t comm) {
    const int key = comm_key(comm, static_cast<std::int64_t>(r));
    const std::uint64_t seq = states_[r].collectives[key]++;
    auto& count = arrivals_[{key, seq}];
    ++count;
    const std::int64_t size = comm_sizes_[static_cast<std::size_t>(key)];
    const int* counter = &count;
    return [counter, size] { return *counter >= size; };
  }

  RequestSlot* slot(std::size_t r, std::int64_t offset) {
    auto& reqs = states_[r].requests;
    if (offset == kNullRequest) return nullptr;
    if (offset < 1 || offset > static_cast<std::int64_t>(reqs.size()))
      throw DeadlockError("rank " + std::to_string(r) + ": request offset " + std::to_string(offset) +
                          " outside the handle buffer");
    return &reqs[reqs.size() - static_cast<std::size_t>(offset)];
  }

  void start(std::size_t r, RequestSlot& s) {
    const Event& e = s.init;
    if (op_kind(e.op) == OpKind::PersistentSend) {
      std::shared_ptr<bool> matched;
      post_message(r, e, Field::Peer, Field::Tag, &matched);
      if (e.op == Op::Ssend_init)
        s.done = [matched] { return *matched; };
      else
        s.done = [] { return true; };
    } else {
      auto done = post_receive(r, e, Field::Peer, Field::Tag, s.record);
      s.done = [done] { return *done; };
    }
  }

  /// Handles one event of rank r; may leave the rank waiting.
  void handle(std::size_t r, const Event& e) {
    RankState& s = states_[r];
    auto& reqs = s.requests;
    switch (op_kind(e.op)) {
      case OpKind::BlockingSend: {
        std::shared_ptr<bool> matched;
        post_message(r, e, Field::Peer, Field::Tag, &matched);
        if (e.op == Op::Ssend) s.waiting = [matched] { return *matched; };
        return;
      }
      case OpKind::NonblockingSend: {
        std::shared_ptr<bool> matched;
        post_message(r, e, Field::Peer, Field::Tag, &matched);
        RequestSlot slot;
        if (e.op == Op::Issend) slot.done = [matched] { return *matched; };
        reqs.push_back(std::move(slot));
        return;
      }
      case OpKind::BlockingRecv: {
        auto done = post_receive(r, e, Field::Peer, Field::Tag, record_peer(r, e, Field::Peer));
        s.waiting = [done] { return *done; };
        return;
      }
      case OpKind::NonblockingRecv: {
        auto done = post_receive(r, e, Field::Peer, Field::Tag, record_peer(r, e, Field::Peer));
        RequestSlot slot;
        slot.done = [done] { return *done; };
        reqs.push_back(std::move(slot));
        return;
      }
      case OpKind::SendRecv: {
        post_message(r, e, Field::Peer, Field::Tag, nullptr);
        auto done = post_receive(r, e, Field::Peer2, Field::Tag2, record_peer(r, e, Field::Peer2));
        s.waiting = [done] { return *done; };
        return;
      }
      case OpKind::PersistentSend:
      case OpKind::PersistentRecv: {
        RequestSlot slot;
        slot.persistent = true;
        slot.init = e;
        if (op_kind(e.op) == OpKind::PersistentRecv) slot.record = record_peer(r, e, Field::Peer);
        reqs.push_back(std::move(slot));
        return;
      }
      case OpKind::Start:
        for (auto off : e[ArrayField::Requests])
          if (RequestSlot* sl = slot(r, off); sl && sl->persistent) start(r, *sl);
        return;
      case OpKind::Probe: {
        PeerRecord record = record_peer(r, e, Field::Peer);
        const std::int64_t src = world_peer(e, static_cast<std::int64_t>(r), Field::Peer);
        if (src == kProcNull) return;
        Receive probe;
        probe.src = src;
        probe.tag = e[Field::Tag] == kAnyTag ? kAny : e[Field::Tag];
        probe.comm = comm_key(e[Field::Comm], static_cast<std::int64_t>(r));
        probe.record = record;
        probe.event_rank = r;
        probe.position = s.position - 1;
        probe.op = e.op;
        auto check = [this, r, probe]() {
          for (const Message& m : unexpected_[r])
            if (fits(probe, m)) {
              if (probe.record.value && *probe.record.value == kAnySource) resolve(probe.record, m.src, probe);
              if (probe.record.tag_value && *probe.record.tag_value == kAnyTag) *probe.record.tag_value = m.tag;
              return true;
            }
          return false;
        };
        if (e.op == Op::Probe)
          s.waiting = check;
        else if (e[Field::Flag] != 0)
          check();
        return;
      }
      case OpKind::Completion: {
        std::vector<RequestSlot*> slots;
        for (auto off : e[ArrayField::Requests]) slots.push_back(slot(r, off));
        std::vector<RequestSlot*> needed;
        if (e.op == Op::Wait || e.op == Op::Waitall) {
          needed = slots;
        } else if (e.op == Op::Waitany) {
          const std::int64_t i = e[Field::Index];
          if (i >= 0 && i < static_cast<std::int64_t>(slots.size()))
            needed.push_back(slots[static_cast<std::size_t>(i)]);
        } else if (e.op == Op::Waitsome) {
          for (auto i : e[ArrayField::Indices])
            if (i >= 0 && i < static_cast<std::int64_t>(slots.size()))
              needed.push_back(slots[static_cast<std::size_t>(i)]);
        }
        if (!needed.empty())
          s.waiting = [needed] {
            for (RequestSlot* sl : needed)
              if (sl && !sl->done()) return false;
            return true;
          };
        return;
      }
      case OpKind::Collective:
      case OpKind::CommCreate:
        s.waiting = enter_collective(r, e[Field::Comm]);
        return;
      case OpKind::NonblockingCollective: {
        RequestSlot slot;
        slot.done = enter_collective(r, e[Field::Comm]);
        reqs.push_back(std::move(slot));
        return;
      }
      case OpKind::Lifecycle:
        if (e.op == Op::Finalize) s.waiting = enter_collective(r, 0);
        return;
      default:
        return;  // Other, Request_free, Comm_free: local
    }
  }

  /// Runs rank r until it blocks or ends; true if anything happened.
  bool step(std::size_t r) {
    RankState& s = states_[r];
    bool progress = false;
    for (;;) {
      if (s.waiting) {
        if (!s.waiting()) return progress;
        s.waiting = nullptr;
        progress = true;
      }
      auto e = s.cursor->next();
      if (!e) {
        s.finished = true;
        return true;
      }
      ++s.position;
      progress = true;
      s.current = *e;
      handle(r, s.current);
    }
  }

  std::string describe_blocked(std::size_t r) const {
    const RankState& s = states_[r];
    const Event& e = s.current;
    std::ostringstream out;
    out << "rank " << r << " blocked in event #" << (s.position - 1) << ": MPI_" << op_name(e.op);
    auto peer_text = [&](Field f) {
      const std::int64_t v = e[f];
      if (v == kAnySource) return std::string("MPI_ANY_SOURCE");
      if (v == kProcNull) return std::string("MPI_PROC_NULL");
      return "relative " + std::to_string(v);
    };
    switch (op_kind(e.op)) {
      case OpKind::BlockingRecv:
      case OpKind::Probe:
        out << " from " << peer_text(Field::Peer) << " (tag " << e[Field::Tag] << ", comm " << e[Field::Comm] << ")";
        break;
      case OpKind::BlockingSend:
        out << " to " << peer_text(Field::Peer) << " (tag " << e[Field::Tag] << ", comm " << e[Field::Comm] << ")";
        break;
      case OpKind::SendRecv:
        out << " receiving from " << peer_text(Field::Peer2) << " (tag " << e[Field::Tag2] << ")";
        break;
      case OpKind::Completion:
        out << " on " << e[ArrayField::Requests].size() << " request(s)";
        break;
      default:
        out << " (comm " << e[Field::Comm] << ")";
    }
    out << ", call site " << e.site;
    return out.str();
  }

  const Trace& trace_;
  std::vector<WildcardResolution>* resolved_;
  bool any_tags_ = false;  ///< also resolve MPI_ANY_TAG to the matched message's tag
  std::vector<RankState> states_;
  std::vector<std::deque<Receive>> posted_;
  std::vector<std::deque<Message>> unexpected_;
  std::map<std::string, int> comm_keys_;
  std::vector<std::int64_t> comm_sizes_;
  std::map<std::pair<int, std::uint64_t>, int> arrivals_;
  RankList world_;
  std::map<std::int64_t, RankList> selves_;
};

}  // namespace

Trace resolve_wildcards(const Trace& trace, std::vector<WildcardResolution>* resolved, bool any_tags) {
  if (trace.nranks < 1) throw UsageError("cannot resolve wildcards of a trace without ranks");
  Simulation sim(trace, resolved, any_tags);
  sim.run();
  return sim.rebuilt();
}

}  // namespace scalatrace
