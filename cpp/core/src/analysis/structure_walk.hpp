#pragma once
// Internal to the core: the walk over a Trace's node tree shared by the structural analyses
// (comm_matrix_sparse, summary). Every event node is visited once with the ranks that execute it;
// ranks are labelled by the elastic alternative of each parameter that applies to them, so the
// analyses can aggregate groups of ranks in closed form instead of expanding per rank.
#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace::structure_walk {

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
      restrict_ = !empty_ && !value.alternatives[0].second.empty() ? &value.alternatives[0].second : nullptr;
      // A set of nranks distinct ranks in [0, nranks) is all of them.
      if (restrict_ && restrict_->size() == nranks_) {
        bool in_range = true;
        for (const auto& d : restrict_->descriptors())
          if (d.start < 0 || d.start >= nranks_) in_range = false;
        if (in_range && restrict_->contains(0) && restrict_->contains(nranks_ - 1)) restrict_ = nullptr;
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
enum Slot : std::size_t { kPresence, kTrips, kComm, kPeer, kRoot, kBytes, kBytes2, kSendCounts, kRecvCounts, kSlots };
using AltKey = std::array<std::int32_t, kSlots>;

/// How often a rank executes a node: the number of 1s in the node's presence vector if it has
/// one for the rank (one entry per visit), else the enclosing loop's total trips (the trip
/// vector has one entry per visit of the loop, so nesting needs no multiplication), else 1.
struct ExecSource {
  const ElasticValue* presence = nullptr;  ///< null: the node runs at every visit
  const ElasticValue* trips = nullptr;     ///< of the enclosing loop; null: top level
};

inline const ValueSeq* alt_seq(const ElasticValue& v, std::int32_t idx) {
  if (idx < 0 || static_cast<std::size_t>(idx) >= v.alternatives.size()) return nullptr;
  return &v.alternatives[static_cast<std::size_t>(idx)].first;
}
inline const ArraySeq* alt_array(const ElasticArray& v, std::int32_t idx) {
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
  void walk(const std::vector<Node>& nodes, const RankList& parent_ranks, const ElasticValue* parent_trips) {
    for (const auto& n : nodes) {
      const RankList& ranks = n.ranks.empty() ? parent_ranks : n.ranks;
      if (n.is_loop()) {
        // A loop's body runs (sum of its trip vector) times per rank; a loop with presence
        // flags only has trip entries for the visits it actually runs.
        walk(n.loop->body, ranks, &n.loop->trips);
      } else if (n.event) {
        visit_(*n.event, ranks, ExecSource{n.presence.empty() ? nullptr : &n.presence, parent_trips});
      }
    }
  }
  const Trace& trace_;
  Visit visit_;
};

/// Executions of an event node by a rank with these presence / trips alternatives.
inline std::uint64_t exec_count(const ExecSource& exec, std::int32_t presence_alt, std::int32_t trips_alt) {
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

}  // namespace scalatrace::structure_walk
