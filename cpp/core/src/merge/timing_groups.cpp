// Elastic timing groups. A merged event node keeps one (compute, duration) histogram pair per
// group of ranks; groups partition the node's ranks. Merging two nodes pools both sides' groups
// and combines groups whose compute times are close (same_timing_group). The number of groups is
// bounded (EventNode::kMaxTimingGroups): beyond it, the two groups with the closest typical
// compute times are combined, so the trace size does not grow with the rank count, while ranks
// that really differ (the ends of a pipeline, an overloaded rank) keep their own timing.
#include "scalatrace/merge/timing_groups.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace scalatrace {
namespace {

// similar_timing: is a first occurrence unusual (a warm-up)? Also the widest band in which two
// groups of ranks may unite.
constexpr double kRelativeTolerance = 0.5;
constexpr double kAbsoluteToleranceNs = 10000.0;
// same_timing_group: within 20 % or 2 us two groups always unite. A slower rank's small
// difference at every call adds up over a run: on NPB CG at 2 ranks one rank computed 50-70 %
// longer in all, a little at every call, and one shared mean hid the rank that sets the
// run's time (docs/algorithms.md, "Timing groups").
constexpr double kGroupRelativeTolerance = 0.2;
constexpr double kGroupAbsoluteToleranceNs = 2000.0;
// Between the two bands, groups split where their distributions are apart: the largest gap
// between their cumulative distributions (the Kolmogorov-Smirnov distance) above one half. A
// distance, not a test alone: a test's power grows with the run's length, so a longer run would
// split more groups (an oversubscribed stencil's trace grew from 447 to 538 bytes between 10 and
// 1,000 timesteps with one), where the distance between two fixed distributions converges to its
// value. The test still has to find the gap beyond chance, at a level of 1 % over the whole
// merge (a merge of n ranks compares each node's groups n - 1 times): a group of a few values,
// or one of thousands of comparisons between groups of random draws, does not split on noise.
constexpr double kSplitDistance = 0.5;
constexpr double kFalseSplitChance = 0.01;
constexpr std::uint64_t kSplitMinCount = 8;
// A difference that adds up. The bands above compare one call's typical time, and a slower
// rank can stay inside them at every call: on NPB EP at 2 ranks one rank computed 17 % less in
// all, 1 ms calls within 20 % of each other, and the shared mean lost the rank that set the
// run's time (-7.5 % predicted; -0.1 % with each rank's own timing). So two groups also split
// where the difference of their mean compute times, over one rank's calls of the node, is at
// least 1 % of a rank's recorded time (TimingScope::rank_time_ns) and beyond chance: a z test of
// the two means (histogram variances) at the level above. A share of the run, not a count:
// the same difference keeps the same share when the run grows.
constexpr double kAddsUpShare = 0.01;

bool within(const Histogram& a, const Histogram& b, double relative, double absolute_ns) {
  if (a.count() == 0 || b.count() == 0) return true;
  const double ta = a.typical(), tb = b.typical();
  const double diff = std::abs(ta - tb);
  return diff <= absolute_ns || diff <= relative * std::max(ta, tb);
}

/// The fraction of a histogram's values at most `x`, each bin's values taken as spread
/// uniformly over its [min, max].
double fraction_at_most(const Histogram& h, double x) {
  double below = 0;
  for (const HistogramBin& bin : h.bins()) {
    const auto lo = static_cast<double>(bin.min), hi = static_cast<double>(bin.max);
    if (hi <= x)
      below += static_cast<double>(bin.count);
    else if (lo < x)
      below += static_cast<double>(bin.count) * (x - lo) / (hi - lo);
  }
  return below / static_cast<double>(h.count());
}

/// The Kolmogorov-Smirnov distance of two binned distributions: the largest gap between their
/// cumulative fractions, at any bin edge of either.
double distribution_distance(const Histogram& a, const Histogram& b) {
  double gap = 0;
  for (const Histogram* h : {&a, &b})
    for (const HistogramBin& bin : h->bins())
      for (const std::uint64_t edge : {bin.min, bin.max}) {
        const auto x = static_cast<double>(edge);
        gap = std::max(gap, std::abs(fraction_at_most(a, x) - fraction_at_most(b, x)));
      }
  return gap;
}

/// The Kolmogorov-Smirnov critical gap between two groups of na and nb values at the level
/// kFalseSplitChance / nranks: sqrt(-ln(level / 2) / 2) sqrt((na + nb) / (na nb)).
double critical_gap(double na, double nb, std::int64_t nranks) {
  const double level = kFalseSplitChance / static_cast<double>(std::max<std::int64_t>(nranks, 1));
  return std::sqrt(-std::log(level / 2) / 2) * std::sqrt((na + nb) / (na * nb));
}

/// The two-sided normal critical value at the level kFalseSplitChance / nranks: the z with
/// P(|Z| > z) = erfc(z / sqrt 2) = level, by bisection (remembered for the last rank count).
double critical_z(std::int64_t nranks) {
  thread_local std::int64_t cached_nranks = -1;
  thread_local double cached_z = 0;
  if (nranks == cached_nranks) return cached_z;
  const double level = kFalseSplitChance / static_cast<double>(std::max<std::int64_t>(nranks, 1));
  double lo = 0, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erfc(mid / std::sqrt(2.0)) > level ? lo : hi) = mid;
  }
  cached_nranks = nranks;
  cached_z = hi;
  return hi;
}

/// Whether the difference of two groups' mean compute times adds up, over one rank's calls of
/// the node, to kAddsUpShare of a rank's recorded time, beyond chance.
bool difference_adds_up(const TimingGroup& a, const TimingGroup& b, const TimingScope& scope) {
  const Histogram &x = a.compute, &y = b.compute;
  // Two values at least on each side, for a spread to test against.
  if (scope.rank_time_ns <= 0 || x.count() < 2 || y.count() < 2) return false;
  const double diff = std::abs(x.mean() - y.mean());
  const double calls = std::min(static_cast<double>(x.count()) / static_cast<double>(a.ranks.size()),
                                static_cast<double>(y.count()) / static_cast<double>(b.ranks.size()));
  if (diff * calls < kAddsUpShare * scope.rank_time_ns) return false;
  const double spread =
      std::sqrt(x.variance() / static_cast<double>(x.count()) + y.variance() / static_cast<double>(y.count()));
  return diff > critical_z(scope.nranks) * spread;
}

/// Whether two groups' compute times are close enough for one shared timing: never where their
/// difference adds up (difference_adds_up); within 20 % or 2 us, always; beyond 50 % and
/// 10 us (similar_timing), never; between, unless both hold at least kSplitMinCount values and
/// their distributions are more than half apart, by a gap that chance does not explain.
bool same_timing_group(const TimingGroup& ga, const TimingGroup& gb, const TimingScope& scope) {
  if (difference_adds_up(ga, gb, scope)) return false;
  const Histogram &a = ga.compute, &b = gb.compute;
  if (within(a, b, kGroupRelativeTolerance, kGroupAbsoluteToleranceNs)) return true;
  if (!within(a, b, kRelativeTolerance, kAbsoluteToleranceNs)) return false;
  if (a.count() < kSplitMinCount || b.count() < kSplitMinCount) return true;
  const double gap = distribution_distance(a, b);
  return gap <= kSplitDistance ||
         gap <= critical_gap(static_cast<double>(a.count()), static_cast<double>(b.count()), scope.nranks);
}

void absorb(TimingGroup& into, TimingGroup&& from) {
  into.ranks = into.ranks.unite(from.ranks);
  into.compute.merge(from.compute);
  into.duration.merge(from.duration);
  into.first_compute.merge(from.first_compute);
}

/// `g` joins the first of `groups` with the same timing, or becomes a group of its own.
void unite_into(std::vector<TimingGroup>& groups, TimingGroup&& g, const TimingScope& scope) {
  auto same =
      std::find_if(groups.begin(), groups.end(), [&](const TimingGroup& h) { return same_timing_group(h, g, scope); });
  if (same != groups.end())
    absorb(*same, std::move(g));
  else
    groups.push_back(std::move(g));
}

/// `pool`'s groups, those with the same timing united.
std::vector<TimingGroup> united(std::vector<TimingGroup>&& pool, const TimingScope& scope) {
  std::vector<TimingGroup> out;
  for (auto& g : pool) unite_into(out, std::move(g), scope);
  return out;
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

void merge_timing(EventNode& a, const RankList& a_ranks, EventNode&& b, const RankList& b_ranks,
                  const TimingScope& scope) {
  std::vector<TimingGroup> groups = groups_of(a, a_ranks);
  std::vector<TimingGroup> incoming = groups_of(b, b_ranks);
  // Differences that add up split groups only while the node's ranks fit in the group bound
  // (every rank can keep a group of its own): beyond it, ranks of random speeds would fill the
  // bound with scattered ranklists, whose size grows with the rank count (kAddsUpShare). The
  // groups such a difference kept apart are judged by the bands alone once the node outgrows
  // the bound.
  constexpr auto kBound = static_cast<std::int64_t>(EventNode::kMaxTimingGroups);
  TimingScope rule = scope;
  if (a_ranks.size() + b_ranks.size() > kBound && scope.rank_time_ns > 0) {
    rule.rank_time_ns = 0;
    if (a_ranks.size() <= kBound) groups = united(std::move(groups), rule);
    if (b_ranks.size() <= kBound) incoming = united(std::move(incoming), rule);
  }
  a.compute.merge(b.compute);
  a.duration.merge(b.duration);
  a.first_compute.merge(b.first_compute);
  for (auto& g : incoming) unite_into(groups, std::move(g), rule);
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
