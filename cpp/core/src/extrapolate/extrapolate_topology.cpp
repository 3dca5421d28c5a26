// Process grids and topology identification for extrapolation (thesis §3.2.1).
// See docs/extrapolation.md ("Topology identification").
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "scalatrace/extrapolate/extrapolate.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

namespace scalatrace {

std::int64_t Grid::size() const {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

std::vector<std::int64_t> Grid::coords(std::int64_t rank) const {
  std::vector<std::int64_t> c(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    c[i] = rank % dims[i];
    rank /= dims[i];
  }
  return c;
}

std::string Grid::to_string() const {
  std::string s;
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

Grid balanced_grid(std::int64_t n, std::size_t ndims, GridOrder order) {
  if (n <= 0 || ndims == 0 || ndims > 3) throw UsageError("balanced_grid needs n > 0 and 1 to 3 dimensions");
  auto dims = synthetic_grid(n, ndims);  // MPI_Dims_create's factors, largest first
  if (order == GridOrder::FastestSmallest) std::reverse(dims.begin(), dims.end());
  return Grid{dims};
}

RoleKey role_key(const Grid& grid, std::int64_t rank, int depth, std::int64_t modulus, bool root_apart) {
  RoleKey key;
  const auto c = grid.coords(rank);
  key.per_dim.reserve(c.size());
  for (std::size_t i = 0; i < c.size(); ++i)
    key.per_dim.emplace_back(std::min<std::int64_t>(c[i], depth),
                             std::min<std::int64_t>(grid.dims[i] - 1 - c[i], depth));
  key.residue = modulus > 1 ? rank % modulus : 0;
  key.depth = depth;
  key.modulus = modulus;
  key.root_apart = root_apart;
  key.root = root_apart && rank == 0;
  return key;
}

std::string RoleKey::to_string() const {
  static const char* kNames[] = {"x", "y", "z"};
  std::string s;
  for (std::size_t i = 0; i < per_dim.size(); ++i) {
    const auto [lo, hi] = per_dim[i];
    if (!s.empty()) s += ' ';
    s += i < 3 ? kNames[i] : "d" + std::to_string(i);
    s += ':';
    // lo < depth: at that distance from the low boundary; hi likewise; both = depth: interior
    if (lo == depth && hi == depth)
      s += "mid";
    else if (lo == hi)
      s += "lo+" + std::to_string(lo) + "=hi-" + std::to_string(hi);
    else if (lo < hi)
      s += "lo+" + std::to_string(lo);
    else
      s += "hi-" + std::to_string(hi);
  }
  if (modulus > 1) s += " r%" + std::to_string(modulus) + "=" + std::to_string(residue);
  if (root) return "rank 0";
  if (root_apart) s += std::string(s.empty() ? "" : " ") + "r>0";
  return s.empty() ? "all" : s;
}

namespace {

using Signature = std::vector<std::pair<std::int64_t, std::int64_t>>;

/// Each rank's communication end points: sorted distinct (communicator, relative peer).
std::vector<Signature> signatures(const Trace& t) {
  std::vector<Signature> out(static_cast<std::size_t>(t.nranks));
  for (std::int64_t r = 0; r < t.nranks; ++r) {
    std::set<std::pair<std::int64_t, std::int64_t>> ends;
    Cursor cur(t, r, TimingMode::None);
    while (auto e = cur.next()) {
      if (!op_is_point_to_point(e->op)) continue;
      for (Field f : {Field::Peer, Field::Peer2}) {
        const auto p = (*e)[f];
        if (p == kAnySource || p == kProcNull || (f == Field::Peer2 && p == 0)) continue;
        ends.emplace((*e)[Field::Comm], p);
      }
    }
    out[static_cast<std::size_t>(r)].assign(ends.begin(), ends.end());
  }
  return out;
}

/// Number of boundary classes the ranks occupy if every end-point group is a union of classes
/// at this depth in every input; 0 if some class mixes groups.
std::size_t classes_if_explained(const std::vector<std::vector<Signature>>& sigs, const std::vector<Grid>& grids,
                                 int depth) {
  std::size_t total = 0;
  for (std::size_t k = 0; k < grids.size(); ++k) {
    std::map<RoleKey, const Signature*> seen;
    for (std::int64_t r = 0; r < grids[k].size(); ++r) {
      const auto key = role_key(grids[k], r, depth, 1);
      const auto& sig = sigs[k][static_cast<std::size_t>(r)];
      auto [it, fresh] = seen.emplace(key, &sig);
      if (!fresh && *it->second != sig) return 0;
    }
    total += seen.size();
  }
  return total;
}

}  // namespace

std::vector<Topology> topology_candidates(const std::vector<const Trace*>& inputs, const std::vector<Grid>& given) {
  std::vector<std::vector<Signature>> sigs;
  for (const Trace* t : inputs) sigs.push_back(signatures(*t));
  // Without point-to-point calls every grid "explains" the (empty) end points: none is revealed.
  bool point_to_point = false;
  for (const auto& per_input : sigs)
    for (const auto& sig : per_input) point_to_point = point_to_point || !sig.empty();

  struct Candidate {
    std::size_t ndims;
    GridOrder order;
    std::vector<Grid> grids;
  };
  std::vector<Candidate> candidates;
  if (!given.empty()) {
    if (given.size() != inputs.size())
      throw UsageError("input_grids has " + std::to_string(given.size()) + " grids for " +
                       std::to_string(inputs.size()) + " traces");
    for (std::size_t k = 0; k < given.size(); ++k)
      if (given[k].size() != inputs[k]->nranks || given[k].dims.empty() || given[k].dims.size() > 3 ||
          given[k].dims.size() != given[0].dims.size())
        throw UsageError("input grid " + given[k].to_string() + " does not fit the trace of " +
                         std::to_string(inputs[k]->nranks) +
                         " ranks (1 to 3 dimensions, the same number for every input)");
    candidates.push_back({given[0].dims.size(), GridOrder::FastestSmallest, given});
  } else {
    for (std::size_t nd = 1; nd <= 3; ++nd)
      for (GridOrder order : {GridOrder::FastestSmallest, GridOrder::FastestLargest}) {
        if (nd == 1 && order == GridOrder::FastestLargest) continue;
        Candidate c{nd, order, {}};
        for (const Trace* t : inputs) c.grids.push_back(balanced_grid(t->nranks, nd, order));
        // The same grids in the other order: one candidate, marked ambiguous below.
        bool duplicate = false;
        for (const auto& o : candidates) duplicate = duplicate || (o.ndims == nd && o.grids == c.grids);
        if (!duplicate) candidates.push_back(std::move(c));
      }
  }

  struct Scored {
    const Candidate* c;
    int depth;  // 4: not explained
    std::size_t classes;
  };
  std::vector<Scored> scored;
  for (const auto& c : candidates) {
    Scored s{&c, 4, 0};
    for (int depth = 0; depth <= 3; ++depth)
      if (auto classes = classes_if_explained(sigs, c.grids, depth)) {
        s = Scored{&c, depth, classes};
        break;
      }
    scored.push_back(s);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
    if (a.depth != b.depth) return a.depth < b.depth;
    if (a.depth == 4) return false;  // unexplained: keep 1D, 2D, 3D order
    return a.classes < b.classes;
  });
  std::vector<Topology> out;
  for (const auto& s : scored) {
    Topology topo;
    topo.ndims = s.c->ndims;
    topo.order = s.c->order;
    bool other_order_same = false;
    if (given.empty() && topo.ndims > 1) {
      const auto other =
          topo.order == GridOrder::FastestSmallest ? GridOrder::FastestLargest : GridOrder::FastestSmallest;
      other_order_same = true;
      for (const Trace* t : inputs)
        other_order_same = other_order_same && balanced_grid(t->nranks, topo.ndims, other) ==
                                                   balanced_grid(t->nranks, topo.ndims, topo.order);
    }
    topo.order_ambiguous = other_order_same;
    topo.depth = s.depth == 4 ? 0 : s.depth;
    topo.depth_found = s.depth != 4 && point_to_point;
    topo.grids = s.c->grids;
    std::ostringstream why;
    why << topo.ndims << "D grid (";
    for (std::size_t k = 0; k < topo.grids.size(); ++k) why << (k ? ", " : "") << topo.grids[k].to_string();
    why << ")";
    if (s.depth == 4)
      why << ", not revealed by the point-to-point end points";
    else
      why << ", boundary depth " << s.depth << ", " << s.classes << " occupied boundary classes over all inputs";
    if (!given.empty()) why << " (grids given)";
    topo.explanation = why.str();
    out.push_back(std::move(topo));
  }
  return out;
}

Topology identify_topology(const std::vector<const Trace*>& inputs, const std::vector<Grid>& given) {
  auto all = topology_candidates(inputs, given);
  if (all.empty() || all.front().explanation.find("not revealed") != std::string::npos) {
    if (!all.empty() && !given.empty()) return all.front();
    throw ExtrapolationError(
        "topology not identified: no 1D, 2D or 3D row-major grid (balanced factorization of "
        "each rank count) explains which ranks share communication end points; pass the input "
        "grids explicitly (input_dims)");
  }
  return all.front();
}

}  // namespace scalatrace
