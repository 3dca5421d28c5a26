// Deep copies and sizes of the compressed trace model.
#include "scalatrace/model/trace.hpp"

#include <string>

#include "scalatrace/model/rank_math.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {

Node Node::clone() const {
  Node n;
  n.ranks = ranks;
  n.presence = presence;
  if (event) n.event = std::make_unique<EventNode>(*event);
  if (loop) {
    n.loop = std::make_unique<LoopNode>();
    n.loop->trips = loop->trips;
    n.loop->body.reserve(loop->body.size());
    for (const auto& child : loop->body) n.loop->body.push_back(child.clone());
  }
  return n;
}

Trace Trace::clone() const {
  Trace t;
  t.metadata = metadata;
  t.nranks = nranks;
  t.sites = sites;
  t.comms = comms;
  t.names = names;
  t.clusters = clusters;
  t.nodes.reserve(nodes.size());
  for (const auto& n : nodes) t.nodes.push_back(n.clone());
  return t;
}

static std::size_t count_nodes(const std::vector<Node>& nodes) {
  std::size_t n = nodes.size();
  for (const auto& node : nodes)
    if (node.loop) n += count_nodes(node.loop->body);
  return n;
}

std::size_t Trace::node_count() const { return count_nodes(nodes); }

static void clear_timing_of(std::vector<Node>& nodes) {
  for (auto& n : nodes) {
    if (n.loop) clear_timing_of(n.loop->body);
    if (!n.event) continue;
    n.event->compute = Histogram(n.event->compute.sub_bins());
    n.event->duration = Histogram(n.event->duration.sub_bins());
    n.event->first_compute = Histogram(n.event->compute.sub_bins());
    n.event->timing_groups.clear();
  }
}

void Trace::clear_timing() { clear_timing_of(nodes); }

void validate_rank_clusters(const std::vector<RankCluster>& clusters, std::int64_t nranks) {
  if (clusters.empty()) return;
  std::int64_t total = 0;
  for (const auto& c : clusters) {
    if (!c.members.contains(c.representative))
      throw FormatError("rank cluster of representative " + std::to_string(c.representative) + " does not contain it");
    total += c.members.size();
    if (total > nranks) break;
  }
  if (total != nranks)
    throw FormatError("rank clusters hold " + std::to_string(total) + " ranks, the trace has " +
                      std::to_string(nranks) + " (they must partition the ranks)");
  std::vector<bool> seen(static_cast<std::size_t>(nranks), false);
  for (const auto& c : clusters) {
    bool overlap = false;
    for_each_rank(c.members, [&](std::int64_t r) {
      if (r < 0 || r >= nranks || seen[static_cast<std::size_t>(r)])
        overlap = true;
      else
        seen[static_cast<std::size_t>(r)] = true;
    });
    if (overlap)
      throw FormatError("rank clusters overlap (cluster of representative " + std::to_string(c.representative) + ")");
  }
}

}  // namespace scalatrace
