// Topologies and placements of the simulator: routes as link ids (torus: dimension order on the
// shorter way; fat tree: up-down, the up ports chosen by the destination; dragonfly: minimal,
// local-global-local) and the node of every rank. See docs/simulator.md ("Topology and
// placement").
#include "simulate/simulator_topology.hpp"

#include <limits>
#include <string>
#include <unordered_map>
#include <utility>

#include "scalatrace/support/errors.hpp"

namespace scalatrace {

namespace {

const char* kind_name(Topology::Kind k) {
  switch (k) {
    case Topology::Kind::Torus:
      return "torus";
    case Topology::Kind::FatTree:
      return "fat tree";
    case Topology::Kind::Dragonfly:
      return "dragonfly";
    default:
      return "flat";
  }
}

constexpr std::int64_t kMaxNodes = std::int64_t{1} << 30;

std::int64_t checked_product(const std::vector<std::int64_t>& v, const char* what) {
  std::int64_t n = 1;
  for (std::int64_t d : v) {
    if (d < 1) throw UsageError(std::string(what) + ": every size must be at least 1, got " + std::to_string(d));
    if (n > kMaxNodes / d) throw UsageError(std::string(what) + " has more than 2^30 nodes");
    n *= d;
  }
  return n;
}

/// splitmix64: a small, portable, seeded generator (the same placement on every platform).
struct SplitMix {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::int64_t below(std::int64_t n) { return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(n)); }
};

}  // namespace

std::int64_t Topology::nodes() const {
  switch (kind) {
    case Kind::Flat:
      return 0;
    case Kind::Torus:
      if (shape.empty()) throw UsageError("torus: give the nodes per dimension, e.g. {8, 8}");
      return checked_product(shape, "torus");
    case Kind::FatTree: {
      if (shape.size() != 1 || shape[0] < 2 || shape[0] % 2 != 0 || shape[0] > 1024)
        throw UsageError("fat tree: give {k}, k even between 2 and 1024 (k^3/4 nodes)");
      return shape[0] * shape[0] * shape[0] / 4;
    }
    case Kind::Dragonfly:
      if (shape.size() != 3) throw UsageError("dragonfly: give {groups, routers per group, nodes per router}");
      return checked_product(shape, "dragonfly");
  }
  return 0;
}

namespace sim {

Routes::Routes(const Topology& topology) : kind_(topology.kind), shape_(topology.shape), nodes_(topology.nodes()) {
  switch (kind_) {
    case Topology::Kind::Torus:
      links_ = nodes_ * 2 * static_cast<std::int64_t>(shape_.size());
      break;
    case Topology::Kind::FatTree: {
      const std::int64_t k = shape_[0], half = k / 2;
      const std::int64_t switches_per_layer = k * half;  // edge (and aggregation) switches
      links_ = 2 * nodes_ + 2 * switches_per_layer * half + 2 * switches_per_layer * half;
      break;
    }
    case Topology::Kind::Dragonfly: {
      const std::int64_t groups = shape_[0], routers = shape_[1];
      links_ = 2 * nodes_ + groups * routers * routers + groups * groups;
      break;
    }
    default:
      break;
  }
  if (links_ >= std::int64_t{std::numeric_limits<std::uint32_t>::max()})
    throw UsageError(std::string(kind_name(kind_)) + " has too many links (at most 2^32 - 1)");
}

void Routes::route(std::int64_t a, std::int64_t b, std::vector<std::uint32_t>& path) const {
  path.clear();
  switch (kind_) {
    case Topology::Kind::Torus:
      torus(a, b, path);
      break;
    case Topology::Kind::FatTree:
      fat_tree(a, b, path);
      break;
    case Topology::Kind::Dragonfly:
      dragonfly(a, b, path);
      break;
    default:
      break;
  }
}

// Link (node, dimension, direction) = node * 2D + 2 * dimension + (0: up, 1: down).
void Routes::torus(std::int64_t a, std::int64_t b, std::vector<std::uint32_t>& path) const {
  const auto dims = static_cast<std::int64_t>(shape_.size());
  std::int64_t here = a, stride = 1;
  for (std::int64_t d = 0; d < dims; ++d) {
    const std::int64_t n = shape_[static_cast<std::size_t>(d)];
    const std::int64_t from = (a / stride) % n, to = (b / stride) % n;
    const std::int64_t ahead = ((to - from) % n + n) % n;
    const bool up = ahead <= n - ahead;
    const std::int64_t steps = up ? ahead : n - ahead;
    std::int64_t c = from;
    for (std::int64_t s = 0; s < steps; ++s) {
      path.push_back(static_cast<std::uint32_t>(here * 2 * dims + 2 * d + (up ? 0 : 1)));
      const std::int64_t next = up ? (c + 1) % n : (c + n - 1) % n;
      here += (next - c) * stride;
      c = next;
    }
    stride *= n;
  }
}

// Links: node up [0, N), node down [N, 2N); edge switch e to aggregation j of its pod (up) and
// back (down), E * k/2 each; aggregation a to core i (up) and back (down), E * k/2 each.
void Routes::fat_tree(std::int64_t a, std::int64_t b, std::vector<std::uint32_t>& path) const {
  const std::int64_t half = shape_[0] / 2, per_pod = half * half, switches = shape_[0] * half;
  const std::int64_t edge_up = 2 * nodes_, edge_down = edge_up + switches * half;
  const std::int64_t agg_up = edge_down + switches * half, agg_down = agg_up + switches * half;
  const std::int64_t ea = a / half, eb = b / half, pa = a / per_pod, pb = b / per_pod;
  const std::int64_t j = b % half, i = (b / half) % half;  // up ports chosen by the destination
  const auto push = [&](std::int64_t id) { path.push_back(static_cast<std::uint32_t>(id)); };
  push(a);
  if (ea != eb) {
    push(edge_up + ea * half + j);
    if (pa != pb) {
      push(agg_up + (pa * half + j) * half + i);
      push(agg_down + (pb * half + j) * half + i);
    }
    push(edge_down + eb * half + j);
  }
  push(nodes_ + b);
}

// Links: node up [0, N), node down [N, 2N); local (group, from router, to router); global
// (from group, to group). Group g's link to group h (h != g) is on its router h % a, as SimGrid's
// DRAGONFLY cluster places them ("router n of each group is linked to group n"; one chassis).
void Routes::dragonfly(std::int64_t a, std::int64_t b, std::vector<std::uint32_t>& path) const {
  const std::int64_t groups = shape_[0], routers = shape_[1], per_router = shape_[2];
  const std::int64_t local = 2 * nodes_, global = local + groups * routers * routers;
  const std::int64_t ra = a / per_router, rb = b / per_router;
  const std::int64_t ga = ra / routers, gb = rb / routers;
  const auto push = [&](std::int64_t id) { path.push_back(static_cast<std::uint32_t>(id)); };
  const auto hop = [&](std::int64_t g, std::int64_t from, std::int64_t to) {
    if (from != to) push(local + (g * routers + from) * routers + to);
  };
  const auto gateway = [&](std::int64_t to) { return to % routers; };
  push(a);
  if (ga == gb) {
    hop(ga, ra % routers, rb % routers);
  } else {
    hop(ga, ra % routers, gateway(gb));
    push(global + ga * groups + gb);
    hop(gb, gateway(ga), rb % routers);
  }
  push(nodes_ + b);
}

std::vector<std::int64_t> place_ranks(const SimOptions& o, std::int64_t nranks) {
  const std::int64_t capacity = o.topology.nodes();  // 0: flat, unbounded
  const std::int64_t rpn = o.ranks_per_node;
  const std::int64_t used = (nranks + rpn - 1) / rpn;
  std::vector<std::int64_t> node(static_cast<std::size_t>(nranks));
  if (o.placement == Placement::Explicit) {
    if (static_cast<std::int64_t>(o.node_of_rank.size()) != nranks)
      throw UsageError("explicit placement: give one node per rank (" + std::to_string(nranks) + " ranks, " +
                       std::to_string(o.node_of_rank.size()) + " nodes given)");
    for (std::int64_t r = 0; r < nranks; ++r) {
      const std::int64_t n = o.node_of_rank[static_cast<std::size_t>(r)];
      // A flat network's nodes are numbered below the rank count (as many nodes as ranks at
      // most): per-node link state stays bounded by the trace.
      const std::int64_t limit = capacity > 0 ? capacity : nranks;
      if (n < 0 || n >= limit)
        throw UsageError("explicit placement: rank " + std::to_string(r) + " on node " + std::to_string(n) +
                         (capacity > 0 ? ", outside the topology's nodes 0.." : ", outside nodes 0..") +
                         std::to_string(limit - 1));
      node[static_cast<std::size_t>(r)] = n;
    }
    return node;
  }
  if (capacity > 0 && used > capacity)
    throw UsageError(std::to_string(nranks) + " ranks at " + std::to_string(rpn) + " per node need " +
                     std::to_string(used) + " nodes; the " + kind_name(o.topology.kind) + " has " +
                     std::to_string(capacity));
  switch (o.placement) {
    case Placement::Block:
      if (capacity == 0) return {};
      for (std::int64_t r = 0; r < nranks; ++r) node[static_cast<std::size_t>(r)] = r / rpn;
      break;
    case Placement::RoundRobin:
      for (std::int64_t r = 0; r < nranks; ++r) node[static_cast<std::size_t>(r)] = r % used;
      break;
    case Placement::Random: {
      SplitMix rng{o.placement_seed};
      // The job's nodes: `used` distinct nodes of the machine (partial Fisher-Yates over the
      // first ones drawn; the positions moved kept in a map, so a large machine costs memory for
      // the job's nodes only), then the ranks shuffled over their slots.
      const std::int64_t pool = capacity > 0 ? capacity : used;
      std::unordered_map<std::int64_t, std::int64_t> moved;
      const auto at = [&](std::int64_t i) {
        const auto it = moved.find(i);
        return it == moved.end() ? i : it->second;
      };
      std::vector<std::int64_t> nodes(static_cast<std::size_t>(used));
      for (std::int64_t i = 0; i < used; ++i) {
        const std::int64_t j = i + rng.below(pool - i);
        const std::int64_t picked = at(j);
        moved[j] = at(i);
        nodes[static_cast<std::size_t>(i)] = picked;
      }
      for (std::int64_t r = 0; r < nranks; ++r)
        node[static_cast<std::size_t>(r)] = nodes[static_cast<std::size_t>(r / rpn)];
      for (std::int64_t r = nranks - 1; r > 0; --r)
        std::swap(node[static_cast<std::size_t>(r)], node[static_cast<std::size_t>(rng.below(r + 1))]);
      break;
    }
    default:
      break;
  }
  return node;
}

}  // namespace sim
}  // namespace scalatrace
