// Communication matrices: from the compressed structure (one walk over the node tree) and by
// brute force over concrete events (ground truth). See analysis.hpp for the attribution model.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "analysis/structure_walk.hpp"
#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/compress/lossy.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {

std::vector<double> CommTriplets::to_dense() const {
  std::vector<double> m(static_cast<std::size_t>(nranks * nranks), 0.0);
  for (std::size_t i = 0; i < value.size(); ++i) m[static_cast<std::size_t>(src[i] * nranks + dst[i])] += value[i];
  return m;
}

// ---------------------------------------------------------------------------------------------
// Attribution of (aggregated) calls to sender/receiver pairs

namespace {

/// Calls of one op by one rank with equal communicator / peer / root, aggregated.
struct CallGroup {
  std::int64_t comm = 0, peer = 0, root = 0;
  double calls = 0;  ///< number of calls (messages per pair)
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
        emit(j, static_cast<std::size_t>(j) < counts.size() ? counts[static_cast<std::size_t>(j)] : fallback);
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
CommTriplets finish_pairs(std::vector<std::pair<std::uint64_t, double>>& pairs, std::int64_t nranks) {
  std::sort(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
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

/// Memory per collected pair: the (key, value) entry, its triplet, and the copy of a fold.
constexpr std::uint64_t kBytesPerPair = 40;

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

class PairCollector {
 public:
  PairCollector(std::int64_t nranks, std::uint64_t max_bytes)
      : nranks_(static_cast<std::uint64_t>(nranks)), limit_(std::max<std::uint64_t>(max_bytes / kBytesPerPair, 1024)) {}
  PairSink sink() {
    return [this](std::int64_t s, std::int64_t d, double v) {
      if (v == 0) return;
      if (pairs_.size() >= limit_)
        throw UsageError("the communication matrix has more entries than fit the memory limit (" +
                         std::to_string(limit_) +
                         " pairs); restrict the kind (e.g. p2p) or "
                         "analyse a smaller trace");
      pairs_.emplace_back(static_cast<std::uint64_t>(s) * nranks_ + static_cast<std::uint64_t>(d), v);
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
      pairs_.emplace_back(static_cast<std::uint64_t>(t.src[i]) * nranks_ + static_cast<std::uint64_t>(t.dst[i]),
                          t.value[i]);
    next_fold_ = std::max<std::size_t>(2 * pairs_.size(), std::size_t{1} << 22);
  }
  std::uint64_t nranks_;
  std::uint64_t limit_;
  std::vector<std::pair<std::uint64_t, double>> pairs_;
  std::size_t next_fold_ = std::size_t{1} << 22;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Brute force over concrete events

EventAttributor::EventAttributor(std::int64_t rank, std::int64_t nranks, const CommTable* comms, Metric metric,
                                 CommKind kind)
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
  PairCollector out(trace.nranks, matrix_memory_limit());
  auto sink = out.sink();
  for (std::int64_t r = 0; r < trace.nranks; ++r) {
    Cursor cursor(trace, r, TimingMode::None);
    EventAttributor attr(r, trace.nranks, &trace.comms, metric, kind);
    while (auto e = cursor.next()) attr.add(*e, sink);
  }
  return out.finish();
}

CommTriplets comm_matrix_of_recordings(const std::vector<RankRecording>& recs, Metric metric, CommKind kind) {
  std::int64_t nranks = 0;
  for (const auto& r : recs) nranks = std::max({nranks, r.nranks, r.rank + 1});
  PairCollector out(nranks, matrix_memory_limit());
  auto sink = out.sink();
  for (const auto& rec : recs) {
    EventAttributor attr(rec.rank, nranks, &rec.comms, metric, kind);
    for (const auto& e : rec.events) attr.add(e, sink);
  }
  return out.finish();
}

// ---------------------------------------------------------------------------------------------
// Aggregating a node's occurrences into call groups

namespace {

using namespace structure_walk;

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
  const ArraySeq* sc = alt_array(ev.arrays[static_cast<std::size_t>(ArrayField::SendCounts)], key[kSendCounts]);
  const ArraySeq* rc = alt_array(ev.arrays[static_cast<std::size_t>(ArrayField::RecvCounts)], key[kRecvCounts]);
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

}  // namespace

std::uint64_t matrix_memory_limit() {
  constexpr std::uint64_t kDefault = std::uint64_t{8} << 30;
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return kDefault;
  return std::min(kDefault, static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2);
}

std::uint64_t collective_pair_bound(const Trace& trace, CommKind kind) {
  if (!wants(kind, true)) return 0;
  const auto P = static_cast<std::uint64_t>(std::max<std::int64_t>(trace.nranks, 0));
  const std::uint64_t all_pairs = P * (P > 0 ? P - 1 : 0);
  constexpr std::uint64_t kEnumerated = 4096;  // comm ids are small: more means "any"
  std::set<std::int64_t> ids;
  bool any_id = false;
  TreeWalker walker(trace, [&](const EventNode& ev, const RankList&, ExecSource) {
    if (!op_is_collective(ev.op) || ev.op == Op::Barrier || ev.op == Op::Ibarrier || any_id) return;
    const ElasticValue& comm = ev.fields[static_cast<std::size_t>(Field::Comm)];
    if (comm.empty()) ids.insert(0);  // field not stored: 0 = MPI_COMM_WORLD
    for (const auto& [seq, ranks] : comm.alternatives)
      for (const auto& block : seq.blocks())
        for (const auto& run : block.runs) {
          if (run.stride != 0 && run.count > kEnumerated) any_id = true;
          for (std::uint64_t k = 0; k < std::min(run.count, kEnumerated) && !any_id; ++k)
            ids.insert(run.first + run.stride * static_cast<std::int64_t>(k));
          if (run.stride == 0) break;
        }
  });
  walker.run();
  if (any_id) return all_pairs;
  std::uint64_t bound = 0;
  for (std::int64_t id : ids) {
    bool in_table = false;
    for (const auto& e : trace.comms.entries) {
      if (e.id != id) continue;
      in_table = true;
      const auto n = static_cast<std::uint64_t>(e.members.size());
      bound += n * (n > 0 ? n - 1 : 0);
      if (bound >= all_pairs) return all_pairs;
    }
    if (!in_table && id == 0) bound += all_pairs;  // WORLD without a table entry
    if (bound >= all_pairs) return all_pairs;
  }
  return bound;
}

CommTriplets comm_matrix_sparse(const Trace& trace, Metric metric, CommKind kind, std::uint64_t max_bytes) {
  const std::int64_t P = trace.nranks;
  if (kind != CommKind::Collective && is_lossy(trace))
    throw LossyTraceError(
        "a lossy trace (SCALATRACE_LOSSY) keeps point-to-point peers or sizes as histograms: its point-to-point "
        "matrix is not exact; simulate it (drawn messages, SimResult pairs) or use kind=\"collective\"");
  const std::uint64_t bound = collective_pair_bound(trace, kind);
  if (bound > max_bytes / kBytesPerPair)
    throw UsageError("the collectives of this " + std::to_string(P) + "-rank trace can attribute traffic to up to " +
                     std::to_string(bound) + " (sender, receiver) pairs (about " + gib(bound * kBytesPerPair) +
                     " to collect), over the memory limit of " + gib(max_bytes) +
                     "; use kind=\"p2p\" for point-to-point traffic, or summary() for per-operation totals");
  PairCollector out(P, max_bytes);
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
        it = cache.emplace(key, call_groups(ev, key, exec_count(exec, key[kPresence], key[kTrips]))).first;
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

std::vector<double> comm_matrix(const Trace& trace, Metric metric, CommKind kind, std::uint64_t max_bytes) {
  const auto P = static_cast<std::uint64_t>(trace.nranks);
  if (P != 0 && P * P > max_bytes / sizeof(double))
    throw UsageError("a dense " + std::to_string(P) + " x " + std::to_string(P) + " matrix (" +
                     gib(P * P * sizeof(double)) + ") does not fit the memory limit of " + gib(max_bytes) +
                     "; use the sparse form");
  return comm_matrix_sparse(trace, metric, kind, max_bytes).to_dense();
}

}  // namespace scalatrace
