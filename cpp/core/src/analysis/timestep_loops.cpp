// Timestep loops: outermost loops with repeated communication (ScalaTrace §5.3).
#include <algorithm>
#include <limits>

#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/model/site_match.hpp"

namespace scalatrace {

// ---------------------------------------------------------------------------------------------
// Timestep loops

namespace {

bool is_communication(Op op) {
  const OpKind k = op_kind(op);
  return op_is_point_to_point(op) || op_is_collective(op) || k == OpKind::Start || k == OpKind::Completion ||
         k == OpKind::Probe;
}

void collect_body(const std::vector<Node>& nodes, std::size_t nsites, std::vector<std::uint32_t>& sites,
                  std::uint64_t& events, bool& comm) {
  for (const auto& n : nodes) {
    if (n.is_loop()) {
      collect_body(n.loop->body, nsites, sites, events, comm);
    } else if (n.event) {
      ++events;
      if (is_communication(n.event->op)) {
        comm = true;
        for (std::uint32_t site : occurrence_sites(*n.event, nsites))
          if (std::find(sites.begin(), sites.end(), site) == sites.end()) sites.push_back(site);
      }
    }
  }
}

std::uint64_t event_nodes(const std::vector<Node>& nodes) {
  std::uint64_t n = 0;
  for (const auto& c : nodes) n += c.loop ? event_nodes(c.loop->body) : (c.event ? 1 : 0);
  return n;
}

/// k if `loop`'s body is a loop running a constant k >= 2 trips (the steps) followed only by a
/// few event nodes (fewer than the steps have: the every-k-th-step calls); else 1.
std::int64_t periodic_extra_factor(const LoopNode& loop) {
  if (loop.body.size() < 2) return 1;
  const Node& steps = loop.body.front();
  if (!steps.loop || !steps.presence.empty() || steps.loop->trips.alternatives.empty()) return 1;
  std::int64_t k = 0;
  for (const auto& [seq, who] : steps.loop->trips.alternatives) {
    if (seq.empty() || !seq.is_constant()) return 1;
    if (k != 0 && seq.at(0) != k) return 1;
    k = seq.at(0);
  }
  std::uint64_t extra = 0;
  for (std::size_t i = 1; i < loop.body.size(); ++i) {
    if (!loop.body[i].event) return 1;
    ++extra;
  }
  return (k >= 2 && extra < event_nodes(steps.loop->body)) ? k : 1;
}

void find_timesteps(const std::vector<Node>& nodes, std::size_t nsites, std::vector<std::size_t>& path,
                    const RankList& parent_ranks, std::vector<TimestepLoop>& out) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (!n.is_loop()) continue;
    path.push_back(i);
    const RankList& ranks = n.ranks.empty() ? parent_ranks : n.ranks;
    // The loop as written: where the compressor split it into a loop whose whole body is
    // another loop (Loop(3){Loop(2){B}}), the iterations are the inner loop's (6).
    const LoopNode* counted = n.loop.get();
    while (counted->body.size() == 1 && counted->body.front().loop && counted->body.front().presence.empty())
      counted = counted->body.front().loop.get();
    // Likewise a timestep loop with a call every k-th step (an Allreduce every 2 steps) is
    // folded as Loop(n/k){Loop(k){step} Allreduce}: it is reported with n iterations.
    const std::int64_t every = periodic_extra_factor(*counted);
    if (every > 1) counted = counted->body.front().loop.get();
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0;
    std::uint64_t visits = 0;
    for (const auto& [seq, who] : counted->trips.alternatives) {
      const auto total = static_cast<std::int64_t>(sum_values(seq));
      lo = std::min(lo, total);
      hi = std::max(hi, total);
    }
    for (const auto& [seq, who] : n.loop->trips.alternatives) visits = std::max<std::uint64_t>(visits, seq.size());
    if (counted->trips.alternatives.empty()) lo = 0;
    TimestepLoop loop;
    bool comm = false;
    collect_body(n.loop->body, nsites, loop.sites, loop.body_events, comm);
    if (comm && hi > 1) {
      loop.path = path;
      loop.ranks = ranks;
      loop.min_iterations = lo;
      loop.max_iterations = hi;
      loop.visits = visits;
      std::sort(loop.sites.begin(), loop.sites.end());
      out.push_back(std::move(loop));
    } else if (comm) {
      find_timesteps(n.loop->body, nsites, path, ranks, out);
    }
    path.pop_back();
  }
}

}  // namespace

std::vector<TimestepLoop> timestep_loops(const Trace& trace) {
  std::vector<TimestepLoop> out;
  std::vector<std::size_t> path;
  find_timesteps(trace.nodes, trace.sites.size(), path, RankList::range(0, trace.nranks), out);
  return out;
}

}  // namespace scalatrace
