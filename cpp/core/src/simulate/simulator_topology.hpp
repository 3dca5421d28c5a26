#pragma once
// The simulator's topologies and placements (not a public header): the route of a message
// between two nodes as a list of link ids (torus, fat tree, dragonfly), and the node of every
// rank. Defined in simulator_topology.cpp. See docs/simulator.md ("Topology and placement").
#include <cstdint>
#include <vector>

#include "scalatrace/simulate/simulator.hpp"

namespace scalatrace::sim {

/// Deterministic routes over a Topology's directed links, numbered 0 .. links()-1.
class Routes {
 public:
  explicit Routes(const Topology& topology);

  std::int64_t nodes() const { return nodes_; }
  std::int64_t links() const { return links_; }
  /// Replaces `path` by the links from node a to node b (a != b), in order.
  void route(std::int64_t a, std::int64_t b, std::vector<std::uint32_t>& path) const;

 private:
  void torus(std::int64_t a, std::int64_t b, std::vector<std::uint32_t>& path) const;
  void fat_tree(std::int64_t a, std::int64_t b, std::vector<std::uint32_t>& path) const;
  void dragonfly(std::int64_t a, std::int64_t b, std::vector<std::uint32_t>& path) const;

  Topology::Kind kind_;
  std::vector<std::int64_t> shape_;
  std::int64_t nodes_ = 0, links_ = 0;
};

/// The node of every rank under the options' placement (empty for the default Block placement
/// on a flat network, where node = rank / ranks_per_node is computed on the fly). Throws
/// UsageError when the ranks do not fit the topology or an explicit list is wrong.
std::vector<std::int64_t> place_ranks(const SimOptions& options, std::int64_t nranks);

}  // namespace scalatrace::sim
