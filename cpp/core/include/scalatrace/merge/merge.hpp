#pragma once
// Cross-rank merge (ScalaTrace §3, ScalaTrace 2 §5.2.4): merges two compressed traces of
// disjoint rank sets into one, keeping every rank's event order, with ranklists and elastic
// values. See docs/algorithms.md.
#include <vector>

#include "scalatrace/model/recording.hpp"
#include "scalatrace/model/site_match.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace {

struct MergeConfig {
  /// Event nodes of different ranks match when op and call-site class are equal: the same
  /// innermost `site_match` frames (0: the same whole stack). The collector passes its
  /// SCALATRACE_SITE_MATCH, the one its compressor used. Sites that differ within a class are
  /// kept per occurrence (EventNode::site_ids), so any setting is lossless.
  std::size_t site_match = kDefaultSiteMatchFrames;
  /// A rank's recorded time, the mean over the ranks of recorded_time_ns() summed over each
  /// rank's events: timing groups whose difference adds up to 1 % of it split (docs/algorithms.md,
  /// "Timing groups"). 0 (traces not from recordings, e.g. the harness'): that rule is off.
  double rank_time_ns = 0;
};

/// What one recorded event adds to its rank's recorded time: its compute and its call, but
/// not MPI_Init's or MPI_Init_thread's (before the program's MPI part, and MPI's start-up).
inline double recorded_time_ns(const Event& e) {
  return is_mpi_init(e.op) ? 0.0 : static_cast<double>(e.compute_ns) + static_cast<double>(e.duration_ns);
}

/// MergeConfig::rank_time_ns for merging these recordings: the mean over them of recorded_time_ns
/// summed over each one's events (0 when there are none).
inline double mean_recorded_time_ns(const std::vector<RankRecording>& recordings) {
  if (recordings.empty()) return 0.0;
  double sum = 0;
  for (const auto& r : recordings)
    for (const auto& e : r.events) sum += recorded_time_ns(e);
  return sum / static_cast<double>(recordings.size());
}

/// Turns one rank's compressed queue into a Trace whose ranklists say {rank}.
Trace make_rank_trace(std::int64_t rank, std::int64_t nranks, std::vector<Node> nodes, CallSiteTable sites,
                      CommTable comms, std::vector<std::string> names);

/// master absorbs slave (ranks must be disjoint). Call-site and name ids of the slave are
/// remapped into the master's tables.
void merge_into(Trace& master, Trace&& slave, const MergeConfig& config = {});

/// Puts the nodes of one-rank traces (rank segments, docs/format.md) before `trace`'s nodes, in
/// the given order, after importing their call sites, names and communicators. Each rank's
/// events become its segments' events followed by its events in `trace`.
void prepend_rank_segments(Trace& trace, std::vector<Trace>&& segments);

/// Merges traces bottom-up over a binary radix tree (index i merges with i + 2^k).
Trace merge_tree(std::vector<Trace> traces, const MergeConfig& config = {});

/// The same radix-tree merge, fed one trace at a time in rank order (0, 1, 2, ...): partial
/// results are kept like the digits of a binary counter, so at most log2(n) + 1 traces are
/// held at once. finish() returns what merge_tree would return for the same inputs.
class TreeMerger {
 public:
  explicit TreeMerger(MergeConfig config = {}) : config_(config) {}
  void push(Trace&& trace);
  Trace finish();
  std::size_t held() const { return stack_.size(); }

 private:
  MergeConfig config_;
  std::vector<std::pair<std::size_t, Trace>> stack_;  ///< (subtree size, partial result)
};

}  // namespace scalatrace
