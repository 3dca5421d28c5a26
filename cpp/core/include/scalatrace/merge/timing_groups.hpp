#pragma once
// Elastic timing (issue 9): an event node's timing kept per group of ranks whose compute-time
// distributions differ, merged where they agree. See docs/algorithms.md ("Timing groups").
#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// True if two compute-time histograms describe the same behaviour: their typical values
/// (median-bin means, robust to a few preempted calls) differ by at most half the larger or
/// by at most 10 microseconds (less is noise: timer resolution, cache and scheduling effects).
bool similar_timing(const Histogram& a, const Histogram& b);

/// Cross-rank merge of the timing of two matched event nodes: `a` (ranks `a_ranks`) absorbs
/// `b` (ranks `b_ranks`, disjoint from a's). The node-wide histograms always merge; groups with
/// similar compute times merge; beyond EventNode::kMaxTimingGroups the two closest groups
/// merge. When one group is left, `timing_groups` is cleared (the node-wide histograms apply).
void merge_timing(EventNode& a, const RankList& a_ranks, EventNode&& b, const RankList& b_ranks);

}  // namespace scalatrace
