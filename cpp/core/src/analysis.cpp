// Communication matrices, summaries and timestep loops from the compressed structure.
// See analysis.hpp for the attribution model.
#include "scalatrace/analysis.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>

#include "scalatrace/cursor.hpp"
#include "scalatrace/errors.hpp"

namespace scalatrace {

// ---------------------------------------------------------------------------------------------
// Small helpers

namespace {

void for_each_in_descriptor(const RankDescriptor& d, std::size_t dim, std::int64_t base,
                            const std::function<void(std::int64_t)>& f) {
  if (dim == 0) {
    f(base);
    return;
  }
  const auto& [count, stride] = d.dims[dim - 1];
  for (std::int64_t i = 0; i < count; ++i) for_each_in_descriptor(d, dim - 1, base + i * stride, f);
}

double run_sum(const ValueRun& r) {
  const double n = static_cast<double>(r.count);
  return n * static_cast<double>(r.first) +
         static_cast<double>(r.stride) * n * (n - 1.0) / 2.0;
}

}  // namespace

void for_each_rank(const RankList& ranks, const std::function<void(std::int64_t)>& f) {
  for (const auto& d : ranks.descriptors()) for_each_in_descriptor(d, d.dims.size(), d.start, f);
}

double sum_values(const ValueSeq& seq) {
  double total = 0;
  for (const auto& b : seq.blocks()) {
    double block = 0;
    for (const auto& r : b.runs) block += run_sum(r);
    total += block * static_cast<double>(b.repeat);
  }
  return total;
}

std::pair<std::int64_t, std::int64_t> comm_rank_and_size(const CommTable& comms,
                                                         std::int64_t comm_id, std::int64_t rank,
                                                         std::int64_t nranks) {
  if (const CommEntry* e = comms.find(comm_id, rank))
    return {e->members.index_of(rank), e->members.size()};
  if (comm_id == 0) return {rank, nranks};
  if (comm_id == 1) return {0, 1};
  return {-1, 0};
}

std::int64_t world_rank_of(const CommTable& comms, std::int64_t comm_id, std::int64_t rank,
                           std::int64_t comm_rank, std::int64_t nranks) {
  if (const CommEntry* e = comms.find(comm_id, rank)) {
    if (comm_rank < 0 || comm_rank >= e->members.size()) return -1;
    return e->members.at(comm_rank);
  }
  if (comm_id == 0) return (comm_rank >= 0 && comm_rank < nranks) ? comm_rank : -1;
  if (comm_id == 1) return comm_rank == 0 ? rank : -1;
  return -1;
}

std::vector<double> CommTriplets::to_dense() const {
  std::vector<double> m(static_cast<std::size_t>(nranks * nranks), 0.0);
  for (std::size_t i = 0; i < value.size(); ++i)
    m[static_cast<std::size_t>(src[i] * nranks + dst[i])] += value[i];
  return m;
}

// ---------------------------------------------------------------------------------------------
// Attribution of (aggregated) calls to sender/receiver pairs

namespace {

/// Calls of one op by one rank with equal communicator / peer / root, aggregated.
struct CallGroup {
  std::int64_t comm = 0, peer = 0, root = 0;
  double calls = 0;   ///< number of calls (messages per pair)
  double bytes = 0, bytes2 = 0;
  std::vector<double> send_counts, recv_counts;  ///< summed per comm rank
};

bool is_send_op(Op op) {
  switch (op_kind(op)) {
    case OpKind::BlockingSend:
    case OpKind::NonblockingSend:
    case OpKind::SendRecv:
      return true;
    default:
      return false;
  }
}

bool wants(CommKind kind, bool collective) {
  if (kind == CommKind::All) return true;
  return collective == (kind == CommKind::Collective);
}

/// A communicator as one rank sees it.
struct CommView {
  const CommEntry* entry = nullptr;  ///< null: WORLD / SELF without a table entry
  std::int64_t id = 0, rank = 0, nranks = 0;
  std::int64_t me = -1, size = 0;
  std::int64_t world(std::int64_t j) const {
    if (j < 0 || j >= size) return -1;
    if (entry) return entry->members.at(j);
    return id == 0 ? j : rank;
  }
};

class PairEmitter {
 public:
  PairEmitter(const CommTable& comms, std::int64_t nranks, Metric metric)
      : comms_(comms), nranks_(nranks), metric_(metric) {
    for (const auto& e : comms.entries) by_id_[e.id].push_back(&e);
  }

  CommView view(std::int64_t id, std::int64_t rank) const {
    CommView v;
    v.id = id;
    v.rank = rank;
    v.nranks = nranks_;
    auto it = by_id_.find(id);
    if (it != by_id_.end()) {
      const auto& list = it->second;
      // One entry with this id: it is the rank's (a trace lists each held communicator).
      if (list.size() == 1) {
        v.entry = list[0];
      } else {
        v.entry = comms_.find(id, rank);
      }
    }
    if (v.entry) {
      v.me = v.entry->members.index_of(rank);
      v.size = v.entry->members.size();
    } else if (id == 0) {
      v.me = rank;
      v.size = nranks_;
    } else if (id == 1) {
      v.me = 0;
      v.size = 1;
    }
    return v;
  }

  void p2p(std::int64_t rank, const CallGroup& g, const PairSink& sink) const {
    if (g.peer == kProcNull || g.peer == kAnySource) return;
    const CommView c = view(g.comm, rank);
    if (c.me < 0) return;
    const std::int64_t dst = c.world(c.me + g.peer);
    if (dst < 0 || dst == rank) return;
    sink(rank, dst, metric_ == Metric::Bytes ? g.bytes : g.calls);
  }

  void collective(Op op, std::int64_t rank, const CallGroup& g, const PairSink& sink) const {
    const CommView c = view(g.comm, rank);
    const std::int64_t me = c.me, size = c.size;
    if (me < 0 || size <= 1) return;
    const bool bytes = metric_ == Metric::Bytes;
    auto world = [&](std::int64_t j) { return c.world(j); };
    auto emit = [&](std::int64_t j, double b) {
      if (j == me || j < 0 || j >= size) return;
      const std::int64_t w = world(j);
      if (w >= 0 && w != rank) sink(rank, w, bytes ? b : g.calls);
    };
    auto to_all = [&](double b) {
      for (std::int64_t j = 0; j < size; ++j) emit(j, b);
    };
    auto to_all_counts = [&](const std::vector<double>& counts, double fallback) {
      for (std::int64_t j = 0; j < size; ++j)
        emit(j, static_cast<std::size_t>(j) < counts.size() ? counts[static_cast<std::size_t>(j)]
                                                            : fallback);
    };
    switch (op) {
      case Op::Barrier:
      case Op::Ibarrier:
        return;
      case Op::Bcast:
      case Op::Ibcast:
      case Op::Scatter:
      case Op::Iscatter:
        if (me == g.root) to_all(g.bytes);
        return;
      case Op::Scatterv:
      case Op::Iscatterv:
        if (me == g.root) to_all_counts(g.send_counts, 0.0);
        return;
      case Op::Reduce:
      case Op::Ireduce:
      case Op::Gather:
      case Op::Igather:
      case Op::Gatherv:
      case Op::Igatherv:
        if (me != g.root) emit(g.root, g.bytes);
        return;
      case Op::Allreduce:
      case Op::Iallreduce:
      case Op::Allgather:
      case Op::Iallgather:
      case Op::Allgatherv:
      case Op::Iallgatherv:
      case Op::Alltoall:
      case Op::Ialltoall:
        to_all(g.bytes);
        return;
      case Op::Alltoallv:
      case Op::Ialltoallv:
      case Op::Alltoallw:
      case Op::Ialltoallw:
        to_all_counts(g.send_counts, 0.0);
        return;
      case Op::Reduce_scatter:
      case Op::Ireduce_scatter:
        to_all_counts(g.recv_counts, g.bytes2);
        return;
      case Op::Reduce_scatter_block:
      case Op::Ireduce_scatter_block:
        to_all(g.bytes2 != 0 ? g.bytes2 : g.bytes / static_cast<double>(size));
        return;
      case Op::Scan:
      case Op::Iscan:
      case Op::Exscan:
      case Op::Iexscan:
        emit(me + 1, g.bytes);
        return;
      default:
        return;
    }
  }

 private:
  const CommTable& comms_;
  std::int64_t nranks_;
  Metric metric_;
  std::map<std::int64_t, std::vector<const CommEntry*>> by_id_;
};

CallGroup group_of(const Event& e) {
  CallGroup g;
  g.comm = e[Field::Comm];
  g.peer = e[Field::Peer];
  g.root = e[Field::Root];
  g.calls = 1;
  g.bytes = static_cast<double>(e[Field::Bytes]);
  g.bytes2 = static_cast<double>(e[Field::Bytes2]);
  for (auto v : e[ArrayField::SendCounts]) g.send_counts.push_back(static_cast<double>(v));
  for (auto v : e[ArrayField::RecvCounts]) g.recv_counts.push_back(static_cast<double>(v));
  return g;
}

/// Sorts and sums (key, value) pairs into triplets.
CommTriplets finish_pairs(std::vector<std::pair<std::uint64_t, double>>& pairs,
                          std::int64_t nranks) {
  std::sort(pairs.begin(), pairs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  CommTriplets t;
  t.nranks = nranks;
  const auto n = static_cast<std::uint64_t>(nranks);
  for (std::size_t i = 0; i < pairs.size();) {
    std::size_t j = i;
    double v = 0;
    for (; j < pairs.size() && pairs[j].first == pairs[i].first; ++j) v += pairs[j].second;
    if (v != 0) {
      t.src.push_back(static_cast<std::int64_t>(pairs[i].first / n));
      t.dst.push_back(static_cast<std::int64_t>(pairs[i].first % n));
      t.value.push_back(v);
    }
    i = j;
  }
  return t;
}

class PairCollector {
 public:
  explicit PairCollector(std::int64_t nranks) : nranks_(static_cast<std::uint64_t>(nranks)) {}
  PairSink sink() {
    return [this](std::int64_t s, std::int64_t d, double v) {
      if (v == 0) return;
      if (pairs_.size() >= kLimit)
        throw UsageError(
            "communication matrix has too many entries to collect (over 2^30 pairs); "
            "restrict the kind (e.g. p2p) or analyse a smaller trace");
      pairs_.emplace_back(static_cast<std::uint64_t>(s) * nranks_ + static_cast<std::uint64_t>(d),
                          v);
      // Fold duplicates now and then so long loops of pairs stay bounded.
      if (pairs_.size() >= next_fold_) fold();
    };
  }
  CommTriplets finish() { return finish_pairs(pairs_, static_cast<std::int64_t>(nranks_)); }

 private:
  void fold() {
    auto t = finish_pairs(pairs_, static_cast<std::int64_t>(nranks_));
    pairs_.clear();
    for (std::size_t i = 0; i < t.value.size(); ++i)
      pairs_.emplace_back(static_cast<std::uint64_t>(t.src[i]) * nranks_ +
                              static_cast<std::uint64_t>(t.dst[i]),
                          t.value[i]);
    next_fold_ = std::max<std::size_t>(2 * pairs_.size(), std::size_t{1} << 22);
  }
  static constexpr std::size_t kLimit = std::size_t{1} << 30;
  std::uint64_t nranks_;
  std::vector<std::pair<std::uint64_t, double>> pairs_;
  std::size_t next_fold_ = std::size_t{1} << 22;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Brute force over concrete events

EventAttributor::EventAttributor(std::int64_t rank, std::int64_t nranks, const CommTable* comms,
                                 Metric metric, CommKind kind)
    : rank_(rank), nranks_(nranks), comms_(comms), metric_(metric), kind_(kind) {}

void EventAttributor::add(const Event& e, const PairSink& sink) {
  static const CommTable kEmpty;
  PairEmitter emitter(comms_ ? *comms_ : kEmpty, nranks_, metric_);
  const OpKind k = op_kind(e.op);
  if (k == OpKind::Start) {
    if (wants(kind_, false)) {
      for (std::int64_t offset : e[ArrayField::Requests]) {
        const auto n = static_cast<std::int64_t>(slot_init_.size());
        const std::int64_t idx = n - offset;
        if (offset <= 0 || idx < 0 || idx >= n) continue;
        const std::size_t init = slot_init_[static_cast<std::size_t>(idx)];
        if (init == 0) continue;
        emitter.p2p(rank_, group_of(inits_[init - 1]), sink);
      }
    }
  } else if (is_send_op(e.op)) {
    if (wants(kind_, false)) emitter.p2p(rank_, group_of(e), sink);
  } else if (op_is_collective(e.op)) {
    if (wants(kind_, true)) emitter.collective(e.op, rank_, group_of(e), sink);
  }
  if (op_creates_request(e.op)) {
    if (k == OpKind::PersistentSend) {
      inits_.push_back(e);
      slot_init_.push_back(inits_.size());
    } else {
      slot_init_.push_back(0);
    }
  }
}

CommTriplets comm_matrix_by_expansion(const Trace& trace, Metric metric, CommKind kind) {
  PairCollector out(trace.nranks);
  auto sink = out.sink();
  for (std::int64_t r = 0; r < trace.nranks; ++r) {
    Cursor cursor(trace, r, TimingMode::None);
    EventAttributor attr(r, trace.nranks, &trace.comms, metric, kind);
    while (auto e = cursor.next()) attr.add(*e, sink);
  }
  return out.finish();
}

CommTriplets comm_matrix_of_recordings(const std::vector<RankRecording>& recs, Metric metric,
                                       CommKind kind) {
  std::int64_t nranks = 0;
  for (const auto& r : recs) nranks = std::max({nranks, r.nranks, r.rank + 1});
  PairCollector out(nranks);
  auto sink = out.sink();
  for (const auto& rec : recs) {
    EventAttributor attr(rec.rank, nranks, &rec.comms, metric, kind);
    for (const auto& e : rec.events) attr.add(e, sink);
  }
  return out.finish();
}

// ---------------------------------------------------------------------------------------------
// The structure walk

namespace {

/// Per-node labelling of ranks by the elastic alternative that applies to them.
class AltLabels {
 public:
  explicit AltLabels(std::int64_t nranks) : nranks_(nranks) {}

  /// Prepares lookups for `value`; returns a slot handle.
  template <class Seq>
  void prepare(const Elastic<Seq>& value) {
    single_ = value.alternatives.size() <= 1;
    empty_ = value.alternatives.empty();
    if (single_) {
      // One alternative applies to every rank unless its ranklist says otherwise.
      restrict_ = !empty_ && !value.alternatives[0].second.empty() ? &value.alternatives[0].second
                                                                   : nullptr;
      // A set of nranks distinct ranks in [0, nranks) is all of them.
      if (restrict_ && restrict_->size() == nranks_) {
        bool in_range = true;
        for (const auto& d : restrict_->descriptors())
          if (d.start < 0 || d.start >= nranks_) in_range = false;
        if (in_range && restrict_->contains(0) && restrict_->contains(nranks_ - 1))
          restrict_ = nullptr;
      }
      return;
    }
    restrict_ = nullptr;
    labels_.assign(static_cast<std::size_t>(nranks_), -1);
    for (std::size_t a = 0; a < value.alternatives.size(); ++a)
      for_each_rank(value.alternatives[a].second, [&](std::int64_t r) {
        if (r >= 0 && r < nranks_ && labels_[static_cast<std::size_t>(r)] < 0)
          labels_[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(a);
      });
  }
  /// Alternative index for `rank`, or -1 if none applies.
  std::int32_t at(std::int64_t rank) const {
    if (empty_) return -1;
    if (single_) return (!restrict_ || restrict_->contains(rank)) ? 0 : -1;
    return labels_[static_cast<std::size_t>(rank)];
  }

 private:
  std::int64_t nranks_;
  bool single_ = true, empty_ = true;
  const RankList* restrict_ = nullptr;
  std::vector<std::int32_t> labels_;
};

// Slots of an event node's elastic parts that matter for analyses.
enum Slot : std::size_t { kPresence, kTrips, kComm, kPeer, kRoot, kBytes, kBytes2, kSendCounts, kRecvCounts,
                          kSlots };
using AltKey = std::array<std::int32_t, kSlots>;

/// How often a rank executes a node: the number of 1s in the node's presence vector if it has
/// one for the rank (one entry per visit), else the enclosing loop's total trips (the trip
/// vector has one entry per visit of the loop, so nesting needs no multiplication), else 1.
struct ExecSource {
  const ElasticValue* presence = nullptr;  ///< null: the node runs at every visit
  const ElasticValue* trips = nullptr;     ///< of the enclosing loop; null: top level
};

const ValueSeq* alt_seq(const ElasticValue& v, std::int32_t idx) {
  if (idx < 0 || static_cast<std::size_t>(idx) >= v.alternatives.size()) return nullptr;
  return &v.alternatives[static_cast<std::size_t>(idx)].first;
}
const ArraySeq* alt_array(const ElasticArray& v, std::int32_t idx) {
  if (idx < 0 || static_cast<std::size_t>(idx) >= v.alternatives.size()) return nullptr;
  return &v.alternatives[static_cast<std::size_t>(idx)].first;
}

/// Values of one scalar parameter over a rank's occurrences.
struct ScalarView {
  const ValueSeq* seq = nullptr;
  bool constant() const { return !seq || seq->empty() || seq->is_constant(); }
  std::int64_t first() const { return (!seq || seq->empty()) ? 0 : seq->at(0); }
  /// Total over `count` occurrences (closed form per run).
  double total(std::uint64_t count) const {
    if (!seq || seq->empty()) return 0;
    if (seq->is_constant()) return static_cast<double>(seq->at(0)) * static_cast<double>(count);
    return sum_values(*seq);
  }
  std::int64_t at(std::uint64_t i) const {
    if (!seq || seq->empty()) return 0;
    return seq->at(std::min<std::uint64_t>(i, seq->size() - 1));
  }
};

void add_array_total(const ArraySeq* seq, std::uint64_t count, std::vector<double>& out) {
  if (!seq || seq->empty()) return;
  const auto& runs = seq->runs();
  auto add = [&](const std::vector<std::int64_t>& v, double times) {
    if (out.size() < v.size()) out.resize(v.size(), 0.0);
    for (std::size_t i = 0; i < v.size(); ++i) out[i] += static_cast<double>(v[i]) * times;
  };
  if (runs.size() == 1) {
    add(runs[0].values, static_cast<double>(count));
    return;
  }
  for (const auto& r : runs) add(r.values, static_cast<double>(r.count));
}

/// Aggregates a rank's occurrences of an event node into call groups (one group when the
/// communicator, peer and root never change: closed form; else one pass over occurrences).
std::vector<CallGroup> call_groups(const EventNode& ev, const AltKey& key, std::uint64_t count) {
  ScalarView comm{alt_seq(ev.fields[static_cast<std::size_t>(Field::Comm)], key[kComm])};
  ScalarView peer{alt_seq(ev.fields[static_cast<std::size_t>(Field::Peer)], key[kPeer])};
  ScalarView root{alt_seq(ev.fields[static_cast<std::size_t>(Field::Root)], key[kRoot])};
  ScalarView bytes{alt_seq(ev.fields[static_cast<std::size_t>(Field::Bytes)], key[kBytes])};
  ScalarView bytes2{alt_seq(ev.fields[static_cast<std::size_t>(Field::Bytes2)], key[kBytes2])};
  const ArraySeq* sc =
      alt_array(ev.arrays[static_cast<std::size_t>(ArrayField::SendCounts)], key[kSendCounts]);
  const ArraySeq* rc =
      alt_array(ev.arrays[static_cast<std::size_t>(ArrayField::RecvCounts)], key[kRecvCounts]);
  if (count == 0) return {};
  if (comm.constant() && peer.constant() && root.constant()) {
    CallGroup g;
    g.comm = comm.first();
    g.peer = peer.first();
    g.root = root.first();
    g.calls = static_cast<double>(count);
    g.bytes = bytes.total(count);
    g.bytes2 = bytes2.total(count);
    add_array_total(sc, count, g.send_counts);
    add_array_total(rc, count, g.recv_counts);
    return {g};
  }
  std::map<std::array<std::int64_t, 3>, CallGroup> groups;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::array<std::int64_t, 3> k{comm.at(i), peer.at(i), root.at(i)};
    CallGroup& g = groups[k];
    g.comm = k[0];
    g.peer = k[1];
    g.root = k[2];
    g.calls += 1;
    g.bytes += static_cast<double>(bytes.at(i));
    g.bytes2 += static_cast<double>(bytes2.at(i));
    auto add = [&](const ArraySeq* s, std::vector<double>& out) {
      if (!s || s->empty()) return;
      const auto& v = s->at(std::min<std::uint64_t>(i, s->size() - 1));
      if (out.size() < v.size()) out.resize(v.size(), 0.0);
      for (std::size_t j = 0; j < v.size(); ++j) out[j] += static_cast<double>(v[j]);
    };
    add(sc, g.send_counts);
    add(rc, g.recv_counts);
  }
  std::vector<CallGroup> out;
  for (auto& [k, g] : groups) out.push_back(std::move(g));
  return out;
}

/// Walks the node tree; calls visit(node, event, ranks, exec) for every event node.
class TreeWalker {
 public:
  using Visit = std::function<void(const EventNode&, const RankList& ranks, ExecSource exec)>;
  TreeWalker(const Trace& trace, Visit visit) : trace_(trace), visit_(std::move(visit)) {}
  void run() {
    const RankList all = RankList::range(0, trace_.nranks);
    walk(trace_.nodes, all, nullptr);
  }

 private:
  void walk(const std::vector<Node>& nodes, const RankList& parent_ranks,
            const ElasticValue* parent_trips) {
    for (const auto& n : nodes) {
      const RankList& ranks = n.ranks.empty() ? parent_ranks : n.ranks;
      if (n.is_loop()) {
        // A loop's body runs (sum of its trip vector) times per rank; a loop with presence
        // flags only has trip entries for the visits it actually runs.
        walk(n.loop->body, ranks, &n.loop->trips);
      } else if (n.event) {
        visit_(*n.event, ranks,
               ExecSource{n.presence.empty() ? nullptr : &n.presence, parent_trips});
      }
    }
  }
  const Trace& trace_;
  Visit visit_;
};

/// Executions of an event node by a rank with these presence / trips alternatives.
std::uint64_t exec_count(const ExecSource& exec, std::int32_t presence_alt,
                         std::int32_t trips_alt) {
  const ValueSeq* s = nullptr;
  if (exec.presence) s = alt_seq(*exec.presence, presence_alt);
  if (!s) {  // no presence vector for this rank: present at every visit
    if (!exec.trips) return 1;
    s = alt_seq(*exec.trips, trips_alt);
    if (!s) return 0;
  }
  const double t = sum_values(*s);
  return t > 0 ? static_cast<std::uint64_t>(t) : 0;
}

/// Shared per-node machinery: labels every rank of the node with its alternative key.
class NodeKeys {
 public:
  explicit NodeKeys(std::int64_t nranks) {
    for (auto& l : labels_) l = std::make_unique<AltLabels>(nranks);
  }
  void prepare(const EventNode& ev, const ExecSource& exec) {
    static const ElasticValue kNone;
    labels_[kPresence]->prepare(exec.presence ? *exec.presence : kNone);
    labels_[kTrips]->prepare(exec.trips ? *exec.trips : kNone);
    labels_[kComm]->prepare(ev.fields[static_cast<std::size_t>(Field::Comm)]);
    labels_[kPeer]->prepare(ev.fields[static_cast<std::size_t>(Field::Peer)]);
    labels_[kRoot]->prepare(ev.fields[static_cast<std::size_t>(Field::Root)]);
    labels_[kBytes]->prepare(ev.fields[static_cast<std::size_t>(Field::Bytes)]);
    labels_[kBytes2]->prepare(ev.fields[static_cast<std::size_t>(Field::Bytes2)]);
    labels_[kSendCounts]->prepare(ev.arrays[static_cast<std::size_t>(ArrayField::SendCounts)]);
    labels_[kRecvCounts]->prepare(ev.arrays[static_cast<std::size_t>(ArrayField::RecvCounts)]);
  }
  AltKey key(std::int64_t rank) const {
    AltKey k{};
    for (std::size_t s = 0; s < kSlots; ++s) k[s] = labels_[s]->at(rank);
    return k;
  }

 private:
  std::array<std::unique_ptr<AltLabels>, kSlots> labels_;
};

}  // namespace

CommTriplets comm_matrix_sparse(const Trace& trace, Metric metric, CommKind kind) {
  const std::int64_t P = trace.nranks;
  PairCollector out(P);
  auto sink = out.sink();
  PairEmitter emitter(trace.comms, P, metric);
  NodeKeys keys(P);
  std::vector<char> start_ranks;  // ranks that start persistent requests: resolved by cursor
  TreeWalker walker(trace, [&](const EventNode& ev, const RankList& ranks, ExecSource exec) {
    const OpKind k = op_kind(ev.op);
    const bool coll = op_is_collective(ev.op);
    if (k == OpKind::Start) {
      if (!wants(kind, false)) return;
      if (start_ranks.empty()) start_ranks.assign(static_cast<std::size_t>(P), 0);
      for_each_rank(ranks, [&](std::int64_t r) {
        if (r >= 0 && r < P) start_ranks[static_cast<std::size_t>(r)] = 1;
      });
      return;
    }
    if (!(is_send_op(ev.op) && wants(kind, false)) && !(coll && wants(kind, true))) return;
    keys.prepare(ev, exec);
    std::map<AltKey, std::vector<CallGroup>> cache;
    for_each_rank(ranks, [&](std::int64_t r) {
      if (r < 0 || r >= P) return;
      const AltKey key = keys.key(r);
      auto it = cache.find(key);
      if (it == cache.end())
        it = cache.emplace(key, call_groups(ev, key, exec_count(exec, key[kPresence], key[kTrips])))
                 .first;
      for (const auto& g : it->second) {
        if (coll)
          emitter.collective(ev.op, r, g, sink);
        else
          emitter.p2p(r, g, sink);
      }
    });
  });
  walker.run();
  // Persistent sends: which init a Start refers to is sequential state of the rank (its
  // handle buffer), so the ranks that start persistent requests are walked with a cursor.
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(start_ranks.size()); ++r) {
    if (!start_ranks[static_cast<std::size_t>(r)]) continue;
    Cursor cursor(trace, r, TimingMode::None);
    EventAttributor attr(r, P, &trace.comms, metric, CommKind::PointToPoint);
    while (auto e = cursor.next()) {
      const OpKind k = op_kind(e->op);
      if (k == OpKind::Start || k == OpKind::PersistentSend || op_creates_request(e->op))
        attr.add(*e, [&](std::int64_t s, std::int64_t d, double v) {
          if (k == OpKind::Start) sink(s, d, v);
        });
    }
  }
  return out.finish();
}

std::vector<double> comm_matrix(const Trace& trace, Metric metric, CommKind kind,
                                std::uint64_t max_bytes) {
  const auto P = static_cast<std::uint64_t>(trace.nranks);
  if (P != 0 && P * P > max_bytes / sizeof(double))
    throw UsageError("a dense " + std::to_string(P) + " x " + std::to_string(P) +
                     " matrix does not fit the memory limit; use the sparse form");
  return comm_matrix_sparse(trace, metric, kind).to_dense();
}

// ---------------------------------------------------------------------------------------------
// Summary

Summary summary(const Trace& trace) {
  const std::int64_t P = trace.nranks;
  struct Row {
    SummaryRow row;
    std::vector<bool> seen;  ///< ranks that make the call
    bool timed = false;
  };
  std::map<Op, Row> by_op;
  std::map<std::pair<std::uint32_t, Op>, Row> by_site;
  NodeKeys keys(P);
  TreeWalker walker(trace, [&](const EventNode& ev, const RankList& ranks, ExecSource exec) {
    keys.prepare(ev, exec);
    Row& op_row = by_op[ev.op];
    Row& site_row = by_site[{ev.site, ev.op}];
    for (Row* r : {&op_row, &site_row})
      if (r->seen.empty()) r->seen.assign(static_cast<std::size_t>(P), false);
    // (executions per rank, bytes alt) -> ranks with that key
    std::map<std::pair<std::uint64_t, std::int32_t>, std::uint64_t> groups;
    std::map<std::pair<std::int32_t, std::int32_t>, std::uint64_t> per_exec;
    for_each_rank(ranks, [&](std::int64_t r) {
      if (r < 0 || r >= P) return;
      const AltKey k = keys.key(r);
      const std::pair<std::int32_t, std::int32_t> ek{k[kPresence], k[kTrips]};
      auto it = per_exec.find(ek);
      if (it == per_exec.end()) it = per_exec.emplace(ek, exec_count(exec, ek.first, ek.second)).first;
      if (it->second == 0) return;
      groups[{it->second, k[kBytes]}] += 1;
      op_row.seen[static_cast<std::size_t>(r)] = true;
      site_row.seen[static_cast<std::size_t>(r)] = true;
    });
    std::uint64_t calls = 0;
    double bytes = 0;
    const auto& bytes_field = ev.fields[static_cast<std::size_t>(Field::Bytes)];
    for (const auto& [k, nr] : groups) {
      const std::uint64_t per_rank = k.first;
      calls += per_rank * nr;
      bytes += ScalarView{alt_seq(bytes_field, k.second)}.total(per_rank) *
               static_cast<double>(nr);
    }
    for (Row* r : {&op_row, &site_row}) {
      SummaryRow& row = r->row;
      row.op = ev.op;
      row.site = ev.site;
      row.calls += calls;
      row.bytes += bytes;
      row.duration_ns += ev.duration.sum();
      row.compute_ns += ev.compute.sum();
      if (ev.duration.count() > 0) {
        row.min_duration_ns =
            r->timed ? std::min(row.min_duration_ns, ev.duration.min()) : ev.duration.min();
        row.max_duration_ns = std::max(row.max_duration_ns, ev.duration.max());
        r->timed = true;
      }
    }
  });
  walker.run();
  auto finish = [](Row& r) {
    r.row.ranks = static_cast<std::uint64_t>(std::count(r.seen.begin(), r.seen.end(), true));
    return r.row;
  };
  Summary s;
  for (auto& [op, r] : by_op) {
    SummaryRow row = finish(r);
    row.site = 0;
    s.total_calls += row.calls;
    s.total_bytes += row.bytes;
    s.by_op.push_back(row);
  }
  for (auto& [k, r] : by_site) s.by_site.push_back(finish(r));
  return s;
}

// ---------------------------------------------------------------------------------------------
// Timestep loops

namespace {

bool is_communication(Op op) {
  const OpKind k = op_kind(op);
  return op_is_point_to_point(op) || op_is_collective(op) || k == OpKind::Start ||
         k == OpKind::Completion || k == OpKind::Probe;
}

void collect_body(const std::vector<Node>& nodes, std::vector<std::uint32_t>& sites,
                  std::uint64_t& events, bool& comm) {
  for (const auto& n : nodes) {
    if (n.is_loop()) {
      collect_body(n.loop->body, sites, events, comm);
    } else if (n.event) {
      ++events;
      if (is_communication(n.event->op)) {
        comm = true;
        if (std::find(sites.begin(), sites.end(), n.event->site) == sites.end())
          sites.push_back(n.event->site);
      }
    }
  }
}

void find_timesteps(const std::vector<Node>& nodes, std::vector<std::size_t>& path,
                    const RankList& parent_ranks, std::vector<TimestepLoop>& out) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (!n.is_loop()) continue;
    path.push_back(i);
    const RankList& ranks = n.ranks.empty() ? parent_ranks : n.ranks;
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0;
    std::uint64_t visits = 0;
    for (const auto& [seq, who] : n.loop->trips.alternatives) {
      const auto total = static_cast<std::int64_t>(sum_values(seq));
      lo = std::min(lo, total);
      hi = std::max(hi, total);
      visits = std::max<std::uint64_t>(visits, seq.size());
    }
    if (n.loop->trips.alternatives.empty()) lo = 0;
    TimestepLoop loop;
    bool comm = false;
    collect_body(n.loop->body, loop.sites, loop.body_events, comm);
    if (comm && hi > 1) {
      loop.path = path;
      loop.ranks = ranks;
      loop.min_iterations = lo;
      loop.max_iterations = hi;
      loop.visits = visits;
      std::sort(loop.sites.begin(), loop.sites.end());
      out.push_back(std::move(loop));
    } else if (comm) {
      find_timesteps(n.loop->body, path, ranks, out);
    }
    path.pop_back();
  }
}

}  // namespace

std::vector<TimestepLoop> timestep_loops(const Trace& trace) {
  std::vector<TimestepLoop> out;
  std::vector<std::size_t> path;
  find_timesteps(trace.nodes, path, RankList::range(0, trace.nranks), out);
  return out;
}

}  // namespace scalatrace
