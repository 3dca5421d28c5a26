#pragma once
// Elastic timing (issue 9): an event node's timing kept per group of ranks whose compute-time
// distributions differ, merged where they agree. See docs/algorithms.md ("Timing groups").
#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// True if two compute-time histograms describe the same behaviour: their typical values
/// (median-bin means, robust to a few preempted calls) differ by at most half the larger or
/// by at most 10 microseconds (less is noise: timer resolution, cache and scheduling effects).
/// The test of a node's first occurrences against its other ones (a warm-up or not). Groups of
/// ranks unite on a tighter test (within 20 % or 2 us, merge_timing): a small difference at
/// every call adds up over a run.
bool similar_timing(const Histogram& a, const Histogram& b);

/// Cross-rank merge of the timing of two matched event nodes: `a` (ranks `a_ranks`) absorbs
/// `b` (ranks `b_ranks`, disjoint from a's). The node-wide histograms always merge; groups whose
/// typical compute times are within 20 % of the larger or 2 us merge, and up to 50 % or 10 us
/// where their distributions differ by no more than noise; beyond EventNode::kMaxTimingGroups
/// the two closest groups merge. When one group is left, `timing_groups` is cleared (the node-wide histograms apply).
/// `nranks`, the trace's rank count, sets the noise test's level (1 % over the whole merge).
void merge_timing(EventNode& a, const RankList& a_ranks, EventNode&& b, const RankList& b_ranks, std::int64_t nranks);

}  // namespace scalatrace
