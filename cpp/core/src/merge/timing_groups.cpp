// Elastic timing groups. A merged event node keeps one (compute, duration) histogram pair per
// group of ranks; groups partition the node's ranks. Merging two nodes pools both sides' groups
// and combines groups whose compute times are similar (similar_timing). The number of groups is
// bounded (EventNode::kMaxTimingGroups): beyond it, the two groups with the closest typical
// compute times are combined, so the trace size does not grow with the rank count, while ranks
// that really differ (the ends of a pipeline, an overloaded rank) keep their own timing.
#include "scalatrace/merge/timing_groups.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace scalatrace {
namespace {

constexpr double kRelativeTolerance = 0.5;
constexpr double kAbsoluteToleranceNs = 10000.0;

void absorb(TimingGroup& into, TimingGroup&& from) {
  into.ranks = into.ranks.unite(from.ranks);
  into.compute.merge(from.compute);
  into.duration.merge(from.duration);
  into.first_compute.merge(from.first_compute);
}

std::vector<TimingGroup> groups_of(EventNode& e, const RankList& ranks) {
  if (!e.timing_groups.empty()) return std::move(e.timing_groups);
  std::vector<TimingGroup> out;
  out.push_back(TimingGroup{ranks, e.compute, e.duration, e.first_compute});
  return out;
}

}  // namespace

bool similar_timing(const Histogram& a, const Histogram& b) {
  if (a.count() == 0 || b.count() == 0) return true;
  const double ta = a.typical(), tb = b.typical();
  const double diff = std::abs(ta - tb);
  return diff <= kAbsoluteToleranceNs || diff <= kRelativeTolerance * std::max(ta, tb);
}

const TimingGroup* EventNode::timing_group_for(std::int64_t rank) const {
  for (const auto& g : timing_groups)
    if (g.ranks.contains(rank)) return &g;
  return nullptr;
}

const Histogram& EventNode::compute_for(std::int64_t rank) const {
  const TimingGroup* g = timing_group_for(rank);
  return g != nullptr ? g->compute : compute;
}

const Histogram& EventNode::duration_for(std::int64_t rank) const {
  const TimingGroup* g = timing_group_for(rank);
  return g != nullptr ? g->duration : duration;
}

const Histogram& EventNode::first_compute_for(std::int64_t rank) const {
  const TimingGroup* g = timing_group_for(rank);
  return g != nullptr ? g->first_compute : first_compute;
}

void merge_timing(EventNode& a, const RankList& a_ranks, EventNode&& b, const RankList& b_ranks) {
  std::vector<TimingGroup> groups = groups_of(a, a_ranks);
  std::vector<TimingGroup> incoming = groups_of(b, b_ranks);
  a.compute.merge(b.compute);
  a.duration.merge(b.duration);
  a.first_compute.merge(b.first_compute);
  for (auto& g : incoming) {
    auto same = std::find_if(groups.begin(), groups.end(),
                             [&](const TimingGroup& h) { return similar_timing(h.compute, g.compute); });
    if (same != groups.end())
      absorb(*same, std::move(g));
    else
      groups.push_back(std::move(g));
  }
  while (groups.size() > EventNode::kMaxTimingGroups) {
    std::size_t bi = 0, bj = 1;
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < groups.size(); ++i)
      for (std::size_t j = i + 1; j < groups.size(); ++j) {
        const double d = std::abs(groups[i].compute.typical() - groups[j].compute.typical());
        if (d < best) {
          best = d;
          bi = i;
          bj = j;
        }
      }
    absorb(groups[bi], std::move(groups[bj]));
    groups.erase(groups.begin() + static_cast<std::ptrdiff_t>(bj));
  }
  if (groups.size() == 1) groups.clear();
  // A canonical order (by first rank) so that equal traces encode equally.
  std::sort(groups.begin(), groups.end(),
            [](const TimingGroup& x, const TimingGroup& y) { return x.ranks.at(0) < y.ranks.at(0); });
  a.timing_groups = std::move(groups);
}

}  // namespace scalatrace
