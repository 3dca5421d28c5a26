// Elastic timing groups. A merged event node keeps one (compute, duration) histogram pair per
// group of ranks; groups partition the node's ranks. Merging two nodes pools both sides' groups
// and combines groups whose compute times are close (same_timing_group). The number of groups is
// bounded (EventNode::kMaxTimingGroups): beyond it, the two groups with the closest typical
// compute times are combined, so the trace size does not grow with the rank count, while ranks
// that really differ (the ends of a pipeline, an overloaded rank) keep their own timing.
#include "scalatrace/merge/timing_groups.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace scalatrace {
namespace {

// similar_timing: is a first occurrence unusual (a warm-up)?
constexpr double kRelativeTolerance = 0.5;
constexpr double kAbsoluteToleranceNs = 10000.0;
// same_timing_group: do two groups of ranks compute alike? Tighter: in NPB CG at 2 ranks one
// rank computed 60-75 % longer before every call of a 10-20 us step in 2 of 5 runs; the slower
// rank sets the run's time, which one shared mean hid (docs/algorithms.md, "Timing groups").
constexpr double kGroupRelativeTolerance = 0.2;
constexpr double kGroupAbsoluteToleranceNs = 2000.0;
// The chance, over a whole merge, that noise splits a group of ranks that compute alike: the
// Kolmogorov-Smirnov test's level at each comparison is this over the trace's rank count (a
// merge of n ranks compares each node's groups n - 1 times).
constexpr double kFalseSplitChance = 0.01;

bool within(const Histogram& a, const Histogram& b, double relative, double absolute_ns) {
  if (a.count() == 0 || b.count() == 0) return true;
  const double ta = a.typical(), tb = b.typical();
  const double diff = std::abs(ta - tb);
  return diff <= absolute_ns || diff <= relative * std::max(ta, tb);
}

/// The fraction of a histogram's values at most `x`, each bin's values taken as spread
/// uniformly over its [min, max].
double fraction_below(const Histogram& h, double x) {
  double below = 0;
  for (const HistogramBin& b : h.bins()) {
    const auto lo = static_cast<double>(b.min), hi = static_cast<double>(b.max);
    if (hi <= x)
      below += static_cast<double>(b.count);
    else if (lo < x)
      below += static_cast<double>(b.count) * (x - lo) / (hi - lo);
  }
  return below / static_cast<double>(h.count());
}

/// Whether two histograms' values come from distributions that differ, beyond what their
/// counts explain: the two-sample Kolmogorov-Smirnov test on the binned distributions (the
/// largest gap between them, at any bin edge of either), at the level kFalseSplitChance / nranks
/// (critical coefficient sqrt(-ln(level / 2) / 2): 1.73 at 2 ranks, 3.27 at a million).
bool distributions_differ(const Histogram& a, const Histogram& b, std::int64_t nranks) {
  const double level = kFalseSplitChance / static_cast<double>(std::max<std::int64_t>(nranks, 1));
  const double critical = std::sqrt(-std::log(level / 2) / 2);
  double gap = 0;
  for (const Histogram* h : {&a, &b})
    for (const HistogramBin& bin : h->bins())
      for (const std::uint64_t edge : {bin.min, bin.max}) {
        const auto x = static_cast<double>(edge);
        gap = std::max(gap, std::abs(fraction_below(a, x) - fraction_below(b, x)));
      }
  const double na = static_cast<double>(a.count()), nb = static_cast<double>(b.count());
  return gap > critical * std::sqrt((na + nb) / (na * nb));
}

/// Whether two groups' compute times are close enough for one shared timing. Groups whose
/// typical values differ by more than half the larger and 10 us (similar_timing) always split;
/// by more than 20 % and 2 us, they split where their distributions differ beyond what their
/// counts explain (distributions_differ): a short run's few values per rank, an event of few
/// occurrences or a typical value on the edge between two bins do not split a group.
bool same_timing_group(const Histogram& a, const Histogram& b, std::int64_t nranks) {
  if (within(a, b, kGroupRelativeTolerance, kGroupAbsoluteToleranceNs)) return true;
  if (!within(a, b, kRelativeTolerance, kAbsoluteToleranceNs)) return false;
  return !distributions_differ(a, b, nranks);
}

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
  return within(a, b, kRelativeTolerance, kAbsoluteToleranceNs);
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

void merge_timing(EventNode& a, const RankList& a_ranks, EventNode&& b, const RankList& b_ranks, std::int64_t nranks) {
  std::vector<TimingGroup> groups = groups_of(a, a_ranks);
  std::vector<TimingGroup> incoming = groups_of(b, b_ranks);
  a.compute.merge(b.compute);
  a.duration.merge(b.duration);
  a.first_compute.merge(b.first_compute);
  for (auto& g : incoming) {
    auto same = std::find_if(groups.begin(), groups.end(),
                             [&](const TimingGroup& h) { return same_timing_group(h.compute, g.compute, nranks); });
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
