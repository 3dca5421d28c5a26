#pragma once
// The compressed trace model shared by the intra-rank compressor, the cross-rank merge, the
// format, the cursor and every analysis. See docs/algorithms.md.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "scalatrace/model/callsite.hpp"
#include "scalatrace/model/comm_table.hpp"
#include "scalatrace/model/elastic.hpp"
#include "scalatrace/model/event.hpp"
#include "scalatrace/model/histogram.hpp"
#include "scalatrace/model/rank_list.hpp"
#include "scalatrace/model/value_histogram.hpp"

namespace scalatrace {

struct Node;

/// Timing of one group of ranks at an event node (merged traces): ranks whose compute-time
/// distributions agree share a group; ranks that really differ (a pipeline's last rank, an
/// overloaded rank) keep their own, so replay reproduces imbalance. See docs/algorithms.md.
struct TimingGroup {
  RankList ranks;
  Histogram compute;
  Histogram duration;
  Histogram first_compute;  ///< see EventNode::first_compute
  bool operator==(const TimingGroup&) const = default;
};

/// One field of a lossy trace (SCALATRACE_LOSSY, docs/lossy.md) kept as a value histogram: the
/// field's elastic value is then empty, and each occurrence is a draw from `values`.
struct LossyField {
  Field field = Field::Peer;
  ValueHistogram values;
  bool operator==(const LossyField&) const = default;
};

/// An MPI event node: op and call site identify it; every parameter is elastic.
struct EventNode {
  Op op = Op::Other;
  std::uint32_t site = 0;
  std::array<ElasticValue, kFieldCount> fields;
  std::array<ElasticArray, kArrayFieldCount> arrays;
  /// Approximate call-site matching (SCALATRACE_SITE_THRESHOLD > 0) only: the actual call-site
  /// id of each occurrence when they differ from `site`. Empty: every occurrence has `site`.
  ElasticValue site_ids;
  Histogram compute;   ///< compute time before the call, ns (all ranks)
  Histogram duration;  ///< time inside the call, ns (all ranks)
  /// Compute time before each rank's first occurrence of the node, ns: one value per rank,
  /// also counted in `compute`. A first iteration often runs long (connection set-up, cold
  /// caches, page faults) and every rank pays it in the same iteration; the cursor gives the
  /// first occurrence this time and the later ones `compute` without it (docs/algorithms.md,
  /// "First occurrences"). Empty: not recorded (files before version 7, or stored as similar
  /// to `compute`), and every occurrence uses `compute`.
  Histogram first_compute;
  /// Per rank group timing, at most kMaxTimingGroups groups whose ranklists partition the
  /// node's ranks. Empty: every rank has `compute` / `duration`.
  std::vector<TimingGroup> timing_groups;
  static constexpr std::size_t kMaxTimingGroups = 4;
  /// Lossy traces only: the fields kept as histograms, in Field order. Empty: every field is exact.
  std::vector<LossyField> lossy;
  /// The histogram of `f` if it is lossy here, else nullptr.
  const ValueHistogram* lossy_values(Field f) const {
    for (const auto& l : lossy)
      if (l.field == f) return &l.values;
    return nullptr;
  }
  /// The timing group `rank` belongs to; nullptr when the node-wide histograms apply.
  const TimingGroup* timing_group_for(std::int64_t rank) const;
  /// The compute / duration histograms that apply to `rank` (its group's, else the node's).
  const Histogram& compute_for(std::int64_t rank) const;
  const Histogram& duration_for(std::int64_t rank) const;
  const Histogram& first_compute_for(std::int64_t rank) const;
};

/// A loop (RSD / PRSD): body executed `trips` times per visit. Trip counts are elastic:
/// the k-th time a rank reaches this loop it runs trips.for_rank(r)->at(k) iterations.
struct LoopNode {
  ElasticValue trips;
  std::vector<Node> body;
};

struct Node {
  /// Ranks that take part in this node (merged traces). Per-rank queues leave it empty,
  /// meaning "the rank this queue belongs to".
  RankList ranks;
  /// Empty: the node happens at every visit. Otherwise a 0/1 value per visit (dummy events /
  /// pseudo-loops of approximate loop matching, thesis §5.2.2): 0 = skipped this visit.
  ElasticValue presence;
  std::unique_ptr<EventNode> event;  ///< exactly one of event / loop is set
  std::unique_ptr<LoopNode> loop;

  bool is_loop() const { return loop != nullptr; }
  Node() = default;
  Node(Node&&) noexcept = default;
  Node& operator=(Node&&) noexcept = default;
  Node clone() const;  ///< deep copy
};

/// A cluster of ranks in a clustered trace (SCALATRACE_CLUSTERS, docs/clustering.md): only the
/// representative's events were recorded into the trace; every member reads them (lossy).
struct RankCluster {
  std::int64_t representative = 0;
  RankList members;  ///< a set, includes the representative
  bool operator==(const RankCluster&) const = default;
};

struct Trace {
  std::map<std::string, std::string> metadata;  ///< program, command line, date, host, settings...
  std::int64_t nranks = 0;
  CallSiteTable sites;
  CommTable comms;
  std::vector<std::string> names;  ///< Op::Other function names (Field::NameId)
  std::vector<Node> nodes;
  /// Empty: every rank's own events are in the trace (lossless). Otherwise the rank clusters
  /// whose representatives' events stand for their members (format section 11).
  std::vector<RankCluster> clusters;

  Trace() = default;
  Trace(Trace&&) noexcept = default;
  Trace& operator=(Trace&&) noexcept = default;
  Trace clone() const;
  /// Total nodes (events and loops) in the tree.
  std::size_t node_count() const;
  /// Empties every event's timing histograms (keeping their bin layout) and timing groups:
  /// what is left depends only on the communication structure.
  void clear_timing();
};

/// Checks that clusters partition [0, nranks) and each representative is one of its members;
/// throws FormatError naming the problem.
void validate_rank_clusters(const std::vector<RankCluster>& clusters, std::int64_t nranks);

}  // namespace scalatrace
