// Max-min fair sharing of links among flows, event-driven (flow starts and ends), with the
// rates recomputed by progressive filling over the flows connected to the change only. See
// docs/simulator.md ("Fair sharing").
#include "simulate/flow_sharing.hpp"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "scalatrace/support/errors.hpp"

namespace scalatrace::sim {

namespace {}  // namespace

std::uint32_t FairSharing::add(double start, double work, double cap, const std::uint32_t* links, std::size_t nlinks,
                               double weight) {
  if (link_ids_.size() + nlinks > std::numeric_limits<std::uint32_t>::max())
    throw UsageError("fair sharing: too many messages crossing links in one run (" + std::to_string(flows_.size()) +
                     "); simulate with sharing first_come");
  Flow f{};
  f.start = start;
  f.work = work;
  f.cap = cap;
  f.weight = weight;
  f.first_link = static_cast<std::uint32_t>(link_ids_.size());
  f.nlinks = static_cast<std::uint32_t>(nlinks);
  f.end = start;
  link_ids_.insert(link_ids_.end(), links, links + nlinks);
  flows_.push_back(f);
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

void FairSharing::clear() {
  flows_.clear();
  link_ids_.clear();
}

void FairSharing::solve() {
  const std::size_t n = flows_.size();
  std::uint32_t nlinks = 0;
  for (std::uint32_t l : link_ids_) nlinks = std::max(nlinks, l + 1);
  on_link_.assign(nlinks, {});
  link_mark_.assign(nlinks, 0);
  flow_mark_.assign(n, 0);
  link_left_.assign(nlinks, 0.0);
  link_unfrozen_.assign(nlinks, 0);
  link_weight_.assign(nlinks, 0.0);
  mark_ = 0;
  heap_.clear();
  dirty_links_.clear();
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return flows_[a].start < flows_[b].start; });
  const auto later = [](const Finish& a, const Finish& b) {
    return a.time != b.time ? a.time > b.time : a.flow > b.flow;
  };
  const auto stale = [&](const Finish& e) {
    const Flow& f = flows_[e.flow];
    return !f.active || f.version != e.version;
  };
  constexpr double kNever = std::numeric_limits<double>::infinity();
  std::size_t next = 0;
  for (;;) {
    while (!heap_.empty() && stale(heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      heap_.pop_back();
    }
    const double next_start = next < n ? flows_[order[next]].start : kNever;
    const double next_finish = heap_.empty() ? kNever : heap_.front().time;
    if (next_start == kNever && next_finish == kNever) break;
    const double now = std::min(next_start, next_finish);
    // Flows ending now leave their links...
    while (!heap_.empty() && heap_.front().time <= now) {
      const Finish e = heap_.front();
      std::pop_heap(heap_.begin(), heap_.end(), later);
      heap_.pop_back();
      if (stale(e)) continue;
      Flow& f = flows_[e.flow];
      f.active = false;
      f.end = e.time;
      for (std::uint32_t k = 0; k < f.nlinks; ++k) {
        const std::uint32_t l = link_ids_[f.first_link + k];
        auto& on = on_link_[l];
        on.erase(std::find(on.begin(), on.end(), e.flow));
        dirty_links_.push_back(l);
      }
    }
    // ... and flows starting now join theirs.
    while (next < n && flows_[order[next]].start <= now) {
      const std::uint32_t i = order[next++];
      Flow& f = flows_[i];
      if (f.work <= 0 || f.nlinks == 0) {
        f.end = f.start + (f.work > 0 ? f.work / f.cap : 0.0);
        continue;
      }
      f.active = true;
      f.remaining = f.work;
      f.updated = now;
      f.rate = 0;
      for (std::uint32_t k = 0; k < f.nlinks; ++k) {
        const std::uint32_t l = link_ids_[f.first_link + k];
        on_link_[l].push_back(i);
        dirty_links_.push_back(l);
      }
    }
    reshare(now);
  }
}

void FairSharing::reshare(double now) {
  if (dirty_links_.empty()) return;
  // The connected component(s) of the changed links: links and the active flows crossing them.
  ++mark_;
  comp_links_.clear();
  comp_flows_.clear();
  for (std::uint32_t l : dirty_links_) {
    if (link_mark_[l] == mark_) continue;
    link_mark_[l] = mark_;
    comp_links_.push_back(l);
  }
  dirty_links_.clear();
  for (std::size_t q = 0; q < comp_links_.size(); ++q) {
    for (std::uint32_t i : on_link_[comp_links_[q]]) {
      if (flow_mark_[i] == mark_) continue;
      flow_mark_[i] = mark_;
      comp_flows_.push_back(i);
      const Flow& f = flows_[i];
      for (std::uint32_t k = 0; k < f.nlinks; ++k) {
        const std::uint32_t l = link_ids_[f.first_link + k];
        if (link_mark_[l] == mark_) continue;
        link_mark_[l] = mark_;
        comp_links_.push_back(l);
      }
    }
  }
  // Progressive filling, bottleneck first: the link with the least share (capacity left over
  // the summed weights of its unfrozen flows) saturates first, its flows freeze at that share
  // times their weight and leave the rest of their other links to the others; a flow whose cap
  // over its weight is below every share freezes at its cap. Links are taken from a heap of
  // shares (an entry is stale if the link's share has moved). With unit weights the weight sums
  // are the flow counts, exactly.
  for (std::uint32_t i : comp_flows_) {
    Flow& f = flows_[i];
    old_rate_.push_back(f.rate);
    f.rate = -1;  // unfrozen
  }
  link_heap_.clear();
  for (std::uint32_t l : comp_links_) {
    link_left_[l] = 1.0;
    link_unfrozen_[l] = static_cast<std::uint32_t>(on_link_[l].size());
    double weights = 0;
    for (std::uint32_t i : on_link_[l]) weights += flows_[i].weight;
    link_weight_[l] = weights;
    if (link_unfrozen_[l] > 0) link_heap_.push_back(Share{1.0 / weights, l});
  }
  const auto larger = [](const Share& a, const Share& b) {
    return a.share != b.share ? a.share > b.share : a.link > b.link;
  };
  std::make_heap(link_heap_.begin(), link_heap_.end(), larger);
  capped_.clear();
  // A flow's cap, as a share per unit of weight (its rate is its weight times its link's share).
  const auto capped_share = [&](std::uint32_t i) { return flows_[i].cap / flows_[i].weight; };
  for (std::uint32_t i : comp_flows_)
    if (flows_[i].cap < 1.0) capped_.push_back(i);
  std::stable_sort(capped_.begin(), capped_.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return capped_share(a) < capped_share(b); });
  std::size_t next_capped = 0;
  const auto freeze = [&](std::uint32_t i, double rate) {
    Flow& f = flows_[i];
    f.rate = rate;
    for (std::uint32_t k = 0; k < f.nlinks; ++k) {
      const std::uint32_t m = link_ids_[f.first_link + k];
      link_left_[m] -= rate;
      link_weight_[m] -= f.weight;
      if (--link_unfrozen_[m] > 0) {
        link_heap_.push_back(Share{std::max(0.0, link_left_[m]) / link_weight_[m], m});
        std::push_heap(link_heap_.begin(), link_heap_.end(), larger);
      }
    }
  };
  while (!link_heap_.empty()) {
    const Share top = link_heap_.front();
    std::pop_heap(link_heap_.begin(), link_heap_.end(), larger);
    link_heap_.pop_back();
    const std::uint32_t l = top.link;
    if (link_unfrozen_[l] == 0 || top.share != std::max(0.0, link_left_[l]) / link_weight_[l]) continue;
    while (next_capped < capped_.size() && flows_[capped_[next_capped]].rate >= 0) ++next_capped;
    if (next_capped < capped_.size() && capped_share(capped_[next_capped]) < top.share) {
      const std::uint32_t i = capped_[next_capped++];
      freeze(i, flows_[i].cap);
      link_heap_.push_back(top);  // still valid unless the capped flow crossed it (then stale)
      std::push_heap(link_heap_.begin(), link_heap_.end(), larger);
      continue;
    }
    for (std::uint32_t i : on_link_[l])
      if (flows_[i].rate < 0) freeze(i, flows_[i].weight * top.share);
  }
  // Flows whose rate changed: their work done so far at the old rate, and a new finishing time
  // (the others' queued times stay valid).
  const auto later = [](const Finish& a, const Finish& b) {
    return a.time != b.time ? a.time > b.time : a.flow > b.flow;
  };
  for (std::size_t q = 0; q < comp_flows_.size(); ++q) {
    Flow& f = flows_[comp_flows_[q]];
    const double before = old_rate_[q];
    if (before == f.rate) continue;
    f.remaining = std::max(0.0, f.remaining - before * (now - f.updated));
    f.updated = now;
    ++f.version;
    heap_.push_back(Finish{now + f.remaining / f.rate, comp_flows_[q], f.version});
    std::push_heap(heap_.begin(), heap_.end(), later);
  }
  old_rate_.clear();
}

}  // namespace scalatrace::sim
