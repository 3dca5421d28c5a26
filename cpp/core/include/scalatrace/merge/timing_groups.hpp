#pragma once
// Elastic timing (issue 9): an event node's timing kept per group of ranks whose compute-time
// distributions differ, merged where they agree. See docs/algorithms.md ("Timing groups").
#include <cstdint>

#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// True if two compute-time histograms describe the same behaviour: their typical values
/// (median-bin means, robust to a few preempted calls) differ by at most half the larger or
/// by at most 10 microseconds (less is noise: timer resolution, cache and scheduling effects).
/// The test of a node's first occurrences against its other ones (a warm-up or not). Groups of
/// ranks unite on a tighter rule (merge_timing): a small difference at every call adds up.
bool similar_timing(const Histogram& a, const Histogram& b);

/// What the timing-group rule knows about the whole merge.
struct TimingScope {
  /// The merged trace's rank count: bounds the chance that noise splits a group over the whole
  /// merge (a merge of n ranks compares each node's groups n - 1 times).
  std::int64_t nranks = 1;
  /// A rank's recorded time (MergeConfig::rank_time_ns); 0: unknown, no difference adds up.
  double rank_time_ns = 0;
};

/// Cross-rank merge of the timing of two matched event nodes: `a` (ranks `a_ranks`) absorbs
/// `b` (ranks `b_ranks`, disjoint from a's). The node-wide histograms always merge; groups merge
/// whose typical compute times are within 20 % or 2 us, or within 50 % or 10 us with
/// distributions at most half apart, unless (while the node's ranks fit in the group bound)
/// their mean compute times differ by an amount that, over one rank's calls of the node, adds
/// up to 1 % of a rank's recorded time beyond chance (docs/algorithms.md, "Timing groups");
/// beyond EventNode::kMaxTimingGroups the two closest
/// groups merge. When one group is left, `timing_groups` is cleared (the node-wide histograms
/// apply).
void merge_timing(EventNode& a, const RankList& a_ranks, EventNode&& b, const RankList& b_ranks,
                  const TimingScope& scope);

}  // namespace scalatrace
