// Neighbour grids (neighbour_grid.hpp; docs/algorithms.md, "Neighbour grids").
#include "format/neighbour_grid.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "model/value_arith.hpp"
#include "model/value_canonical.hpp"

namespace scalatrace::neighbour_grid {
namespace {

/// Bound on a value sequence's length in the searches below (longer ones are left as they are).
constexpr std::uint64_t kMaxSequence = std::uint64_t{1} << 24;

using Coords = std::array<std::int64_t, kMaxDims>;

Coords coords_of(std::int64_t rank, const std::vector<std::int64_t>& dims) {
  Coords c{};
  for (std::size_t k = dims.size(); k-- > 0;) {
    c[k] = rank % dims[k];
    rank /= dims[k];
  }
  return c;
}

/// Bit i set if direction i leads from `c` to a rank inside the grid.
std::uint64_t mask_at(const Coords& c, const Grid& g) {
  std::uint64_t mask = 0;
  for (std::size_t i = 0; i < g.directions.size(); ++i) {
    bool inside = true;
    for (std::size_t k = 0; k < g.dims.size() && inside; ++k) {
      const std::int64_t x = c[k] + g.directions[i][k];
      inside = x >= 0 && x < g.dims[k];
    }
    if (inside) mask |= std::uint64_t{1} << i;
  }
  return mask;
}

/// The ranks of a ranklist in sequence order, one at a time, without materialising them (an
/// odometer over each descriptor's dimensions, innermost first; no division per rank).
class RankStream {
 public:
  explicit RankStream(const RankList& ranks) : descriptors_(ranks.descriptors()) { enter(0); }
  /// The next rank; false at the end.
  bool next(std::int64_t& rank) {
    while (descriptor_ < descriptors_.size()) {
      if (left_ > 0) {
        rank = current_;
        --left_;
        if (left_ > 0) advance();
        return true;
      }
      enter(descriptor_ + 1);
    }
    return false;
  }

 private:
  void enter(std::size_t d) {
    descriptor_ = d;
    if (d >= descriptors_.size()) return;
    index_.assign(descriptors_[d].dims.size(), 0);
    current_ = descriptors_[d].start;
    left_ = descriptors_[d].size();
  }
  void advance() {
    const auto& dims = descriptors_[descriptor_].dims;
    for (std::size_t k = 0; k < dims.size(); ++k) {
      current_ += dims[k].second;
      if (++index_[k] < dims[k].first) return;
      current_ -= dims[k].second * dims[k].first;
      index_[k] = 0;
    }
  }

  const std::vector<RankDescriptor>& descriptors_;
  std::size_t descriptor_ = 0;
  std::vector<std::int64_t> index_;
  std::int64_t current_ = 0, left_ = 0;
};

/// Whether two ranklists hold the same ranks in the same order (descriptors may differ).
bool same_ranks(const RankList& a, const RankList& b) {
  if (a == b) return true;
  if (a.size() != b.size()) return false;
  RankStream x(a), y(b);
  std::int64_t r = 0, q = 0;
  while (x.next(r))
    if (!y.next(q) || r != q) return false;
  return true;
}

/// Sum of the ranklists' sizes equals `n` and every alternative has ranks: together they are
/// ranks 0..n-1 (ranklists of one elastic value are disjoint and inside the trace).
template <class E>
bool covers(const E& e, std::int64_t n) {
  std::int64_t total = 0;
  for (const auto& [seq, ranks] : e.alternatives) {
    if (ranks.empty() || seq.empty()) return false;
    total += ranks.size();
  }
  return total == n;
}

/// The divisors of n from 2 to n / 2, ascending (trial division up to the square root).
std::vector<std::int64_t> proper_divisors(std::int64_t n) {
  std::vector<std::int64_t> low, high;
  for (std::int64_t f = 2; f * f <= n; ++f) {
    if (n % f != 0) continue;
    low.push_back(f);
    if (f * f != n) high.push_back(n / f);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

/// Every way of writing n as an ordered product of 1 to kMaxDims factors of at least 2, the
/// factors taken from `divisors` (those of the rank count, ascending).
void factorisations(std::int64_t n, const std::vector<std::int64_t>& divisors, std::vector<std::int64_t>& prefix,
                    std::vector<std::vector<std::int64_t>>& out) {
  prefix.push_back(n);
  out.push_back(prefix);
  prefix.pop_back();
  if (prefix.size() + 1 >= kMaxDims) return;
  for (const std::int64_t f : divisors) {
    if (f * 2 > n) break;
    if (n % f != 0) continue;
    prefix.push_back(f);
    factorisations(n / f, divisors, prefix, out);
    prefix.pop_back();
  }
}

/// One period of a canonical sequence and its repeat count, when the sequence is exactly that:
/// a block repeated (or a constant, a period of one value); a short sequence is its own period.
std::optional<std::pair<std::vector<std::int64_t>, std::uint64_t>> period_of(const ValueSeq& seq) {
  const ValueSeq c = seq.canonical();
  const auto& blocks = c.blocks();
  if (blocks.size() == 1 && blocks.front().runs.size() == 1 && blocks.front().repeat == 1 &&
      blocks.front().runs.front().stride == 0)
    return std::pair{std::vector<std::int64_t>{blocks.front().runs.front().first}, blocks.front().runs.front().count};
  if (blocks.size() == 1 && blocks.front().repeat >= 2) {
    std::vector<std::int64_t> period;
    for (const auto& run : blocks.front().runs) {
      if (period.size() + run.count > kMaxDirections) return std::nullopt;
      for (std::uint64_t i = 0; i < run.count; ++i) period.push_back(value_arith::run_value(run, i));
    }
    return std::pair{std::move(period), blocks.front().repeat};
  }
  if (c.size() > kMaxDirections) return std::nullopt;
  return std::pair{c.to_vector(), std::uint64_t{1}};
}

/// Directions of `offsets` seen from `rank` on dims, or nullopt if one leaves the ranks, is
/// farther than kMaxReach or repeats.
std::optional<std::vector<Direction>> directions_from(std::int64_t rank, std::span<const std::int64_t> offsets,
                                                      const std::vector<std::int64_t>& dims, std::int64_t n) {
  const Coords c = coords_of(rank, dims);
  std::vector<Direction> out;
  for (const std::int64_t o : offsets) {
    if (o <= -n || o >= n) return std::nullopt;  // (also keeps rank + o from overflowing)
    const std::int64_t peer = rank + o;
    if (peer < 0 || peer >= n) return std::nullopt;
    const Coords p = coords_of(peer, dims);
    Direction d{};
    for (std::size_t k = 0; k < dims.size(); ++k) {
      const std::int64_t step = p[k] - c[k];
      if (step < -kMaxReach || step > kMaxReach) return std::nullopt;
      d[k] = static_cast<std::int8_t>(step);
    }
    if (std::find(out.begin(), out.end(), d) != out.end()) return std::nullopt;
    out.push_back(d);
  }
  return out;
}

/// One order of all directions that keeps every chain's order (Kahn's algorithm, the smallest
/// direction first among the free ones, so the result depends on the chains only), or nullopt
/// if the chains disagree or hold too many directions.
std::optional<std::vector<Direction>> merge_chains(const std::vector<std::vector<Direction>>& chains) {
  std::map<Direction, std::size_t> index;
  for (const auto& chain : chains)
    for (const auto& d : chain) index.emplace(d, 0);
  if (index.size() > kMaxDirections) return std::nullopt;
  std::vector<Direction> nodes;
  for (auto& [d, i] : index) {
    i = nodes.size();
    nodes.push_back(d);
  }
  std::vector<std::set<std::size_t>> next(nodes.size());
  std::vector<std::size_t> incoming(nodes.size(), 0);
  for (const auto& chain : chains)
    for (std::size_t j = 1; j < chain.size(); ++j) {
      const std::size_t a = index[chain[j - 1]], b = index[chain[j]];
      if (next[a].insert(b).second) ++incoming[b];
    }
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<>> free;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (incoming[i] == 0) free.push(i);
  std::vector<Direction> order;
  while (!free.empty()) {
    const std::size_t i = free.top();
    free.pop();
    order.push_back(nodes[i]);
    for (const std::size_t j : next[i])
      if (--incoming[j] == 0) free.push(j);
  }
  if (order.size() != nodes.size()) return std::nullopt;  // a cycle: no common order
  return order;
}

/// The template's values at the mask's directions.
std::vector<std::int64_t> filtered(std::span<const std::int64_t> values, std::uint64_t mask) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (mask >> i & 1) out.push_back(values[i]);
  return out;
}

/// Classes of the ranks of each alternative of an elastic value or array (each class once), or
/// nullopt if a rank lies outside the grid.
template <class E>
std::optional<std::vector<std::vector<std::size_t>>> classes_per_alternative(const E& e, const GridClasses& classes) {
  std::vector<std::vector<std::size_t>> out;
  for (const auto& alternative : e.alternatives) {
    const auto& found = classes.classes_of(alternative.second);
    if (!found) return std::nullopt;
    out.push_back(*found);
  }
  return out;
}

/// A hash of a ranklist's descriptors.
std::uint64_t descriptors_hash(const RankList& ranks) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&h](std::int64_t v) { h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ull; };
  for (const RankDescriptor& d : ranks.descriptors()) {
    mix(d.start);
    mix(static_cast<std::int64_t>(d.dims.size()));
    for (const auto& [count, stride] : d.dims) {
      mix(count);
      mix(stride);
    }
  }
  return h;
}

/// The coordinate of a dimension of extent d at position p (0 .. 2 * reach) of its distances
/// to the two ends: the first `reach` coordinates, one inside, the last `reach`.
std::int64_t coordinate_at_position(std::int64_t p, std::int64_t reach, std::int64_t d) {
  const std::int64_t c = p < reach ? p : p > reach ? d - 1 - (2 * reach - p) : reach;
  return std::clamp<std::int64_t>(c, 0, d - 1);
}

/// The rank offset of each direction of the grid's template.
std::vector<std::int64_t> offsets_of(const Grid& g) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < g.directions.size(); ++i) out.push_back(g.offset(i));
  return out;
}

/// Tests the grid `dims` against the per-visit blocks of a peer elastic.
std::optional<Grid> try_dims(const ElasticValue& peers, const std::vector<std::vector<std::int64_t>>& blocks,
                             const std::vector<std::int64_t>& dims, std::int64_t n) {
  std::vector<std::vector<Direction>> chains;
  for (std::size_t a = 0; a < blocks.size(); ++a) {
    const RankList& ranks = peers.alternatives[a].second;
    auto first = directions_from(ranks.at(0), blocks[a], dims, n);
    if (!first) return std::nullopt;
    auto last = directions_from(ranks.at(ranks.size() - 1), blocks[a], dims, n);
    if (!last || *last != *first) return std::nullopt;
    chains.push_back(std::move(*first));
  }
  auto order = merge_chains(chains);
  if (!order) return std::nullopt;
  Grid grid{dims, std::move(*order)};
  const std::vector<std::int64_t> offsets = offsets_of(grid);
  // Sample ranks first (cheap), so that a wrong factorisation seldom costs the check of every
  // rank below: one rank of every class of the candidate grid (a combination of distances to
  // the grid's ends), and ranks spread over each alternative.
  const auto fits_at = [&](std::int64_t r, std::size_t a) {
    return r >= 0 && r < n && filtered(offsets, mask_at(coords_of(r, dims), grid)) == blocks[a];
  };
  const std::int64_t reach = grid.reach(), positions = 2 * reach + 1;
  std::int64_t combinations = 1;
  for (std::size_t k = 0; k < dims.size(); ++k) combinations *= positions;
  const std::vector<std::int64_t> strides = grid.strides();
  for (std::int64_t combination = 0; combination < combinations; ++combination) {
    std::int64_t r = 0;
    for (std::int64_t k = static_cast<std::int64_t>(dims.size()), rest = combination; k-- > 0; rest /= positions)
      r += coordinate_at_position(rest % positions, reach, dims[static_cast<std::size_t>(k)]) *
           strides[static_cast<std::size_t>(k)];
    std::size_t a = 0;
    while (a < blocks.size() && !peers.alternatives[a].second.contains(r)) ++a;
    if (a == blocks.size() || !fits_at(r, a)) return std::nullopt;
  }
  constexpr std::int64_t kSamples = 32;
  for (std::size_t a = 0; a < blocks.size(); ++a) {
    const RankList& ranks = peers.alternatives[a].second;
    const std::int64_t m = ranks.size();
    for (std::int64_t k = 1; k < kSamples && k < m; ++k)
      if (!fits_at(ranks.at(m * k / kSamples), a)) return std::nullopt;
  }
  GridClasses classes(grid);
  const auto found = classes_per_alternative(peers, classes);
  if (!found) return std::nullopt;
  const auto& per_alternative = *found;
  for (std::size_t a = 0; a < blocks.size(); ++a)
    for (const std::size_t c : per_alternative[a])
      if (filtered(offsets, classes.mask(c)) != blocks[a]) return std::nullopt;
  return grid;
}

}  // namespace

std::int64_t Grid::ranks() const {
  std::int64_t n = 1;
  for (const std::int64_t d : dims) n *= d;
  return n;
}

std::vector<std::int64_t> Grid::strides() const {
  std::vector<std::int64_t> s(dims.size(), 1);
  for (std::size_t k = dims.size(); k-- > 1;) s[k - 1] = s[k] * dims[k];
  return s;
}

int Grid::reach() const {
  int r = 1;
  for (const auto& d : directions)
    for (const std::int8_t x : d) r = std::max(r, std::abs(static_cast<int>(x)));
  return r;
}

std::int64_t Grid::offset(std::size_t i) const {
  const auto s = strides();
  std::int64_t o = 0;
  for (std::size_t k = 0; k < dims.size(); ++k) o += directions[i][k] * s[k];
  return o;
}

std::uint64_t direction_code(const Direction& d, std::size_t ndims, int reach) {
  std::uint64_t code = 0;
  for (std::size_t k = 0; k < ndims; ++k)
    code = code * static_cast<std::uint64_t>(2 * reach + 1) + static_cast<std::uint64_t>(d[k] + reach);
  return code;
}

Direction direction_from_code(std::uint64_t code, std::size_t ndims, int reach) {
  Direction d{};
  const auto base = static_cast<std::uint64_t>(2 * reach + 1);
  for (std::size_t k = ndims; k-- > 0;) {
    d[k] = static_cast<std::int8_t>(static_cast<int>(code % base) - reach);
    code /= base;
  }
  return d;
}

GridClasses::GridClasses(Grid grid) : grid_(std::move(grid)) {
  // A rank's mask depends on each coordinate only through its distance to the grid's two ends,
  // counted up to the reach: at most 2 * reach + 1 positions per dimension. So each rank costs
  // one lookup, and the masks are computed once per combination of positions.
  const std::size_t nd = grid_.dims.size();
  const std::int64_t reach = grid_.reach(), positions = 2 * reach + 1;
  std::vector<std::vector<std::int64_t>> position(nd);  // per dimension and coordinate
  for (std::size_t k = 0; k < nd; ++k) {
    const std::int64_t d = grid_.dims[k];
    position[k].resize(static_cast<std::size_t>(d));
    for (std::int64_t c = 0; c < d; ++c)
      position[k][static_cast<std::size_t>(c)] = c < reach           ? c
                                                 : d - 1 - c < reach ? positions - 1 - (d - 1 - c)
                                                                     : reach;
  }
  std::vector<int> class_of_combination;  // -1: not seen yet
  std::int64_t combinations = 1;
  for (std::size_t k = 0; k < nd; ++k) combinations *= positions;
  class_of_combination.assign(static_cast<std::size_t>(combinations), -1);

  const std::int64_t n = grid_.ranks();
  class_of_.resize(static_cast<std::size_t>(n));
  Coords c{};
  for (std::int64_t r = 0; r < n; ++r) {
    std::int64_t combination = 0;
    for (std::size_t k = 0; k < nd; ++k)
      combination = combination * positions + position[k][static_cast<std::size_t>(c[k])];
    int& cls = class_of_combination[static_cast<std::size_t>(combination)];
    if (cls < 0) {
      const std::uint64_t mask = mask_at(c, grid_);
      const auto known = std::find(masks_.begin(), masks_.end(), mask);
      cls = static_cast<int>(known - masks_.begin());
      if (known == masks_.end()) masks_.push_back(mask);
    }
    class_of_[static_cast<std::size_t>(r)] = static_cast<std::uint16_t>(cls);
    for (std::size_t k = nd; k-- > 0;) {  // next coordinates, innermost fastest
      if (++c[k] < grid_.dims[k]) break;
      c[k] = 0;
    }
  }
}

const std::optional<std::vector<std::size_t>>& GridClasses::classes_of(const RankList& ranks) const {
  const std::uint64_t h = descriptors_hash(ranks);
  for (auto [it, end] = classes_of_index_.equal_range(h); it != end; ++it)
    if (classes_of_ranks_[it->second].first == ranks) return classes_of_ranks_[it->second].second;
  std::optional<std::vector<std::size_t>> found{std::in_place};
  std::vector<bool> seen(masks_.size(), false);
  const auto n = static_cast<std::int64_t>(class_of_.size());
  RankStream stream(ranks);
  for (std::int64_t r = 0; stream.next(r);) {
    if (r < 0 || r >= n) {
      found.reset();
      break;
    }
    const std::size_t c = class_of_[static_cast<std::size_t>(r)];
    if (!seen[c]) {
      seen[c] = true;
      found->push_back(c);
    }
  }
  classes_of_index_.emplace(h, classes_of_ranks_.size());
  classes_of_ranks_.emplace_back(ranks, std::move(found));
  return classes_of_ranks_.back().second;
}

const RankList& GridClasses::ranks(std::size_t cls) const {
  const std::vector<std::size_t> key{cls};
  if (!group_ranks_.contains(key)) {
    std::vector<std::size_t> group_of(masks_.size(), 1);
    group_of[cls] = 0;
    (void)ranks_by_group(group_of, 2);  // remembers the class's ranklist
  }
  return group_ranks_.at(key);
}

std::vector<RankList> GridClasses::ranks_by_group(const std::vector<std::size_t>& group_of, std::size_t ngroups) const {
  // Each group's classes (its key), then one pass over the ranks for the groups not seen before.
  std::vector<std::vector<std::size_t>> keys(ngroups);
  for (std::size_t c = 0; c < group_of.size(); ++c) keys[group_of[c]].push_back(c);
  std::vector<bool> wanted(ngroups, false);
  bool any = false;
  for (std::size_t g = 0; g < ngroups; ++g) {
    wanted[g] = !group_ranks_.contains(keys[g]);
    any = any || wanted[g];
  }
  if (any) {
    std::vector<std::vector<std::int64_t>> members(ngroups);
    for (std::size_t r = 0; r < class_of_.size(); ++r) {
      const std::size_t g = group_of[class_of_[r]];
      if (wanted[g]) members[g].push_back(static_cast<std::int64_t>(r));
    }
    for (std::size_t g = 0; g < ngroups; ++g)
      if (wanted[g]) group_ranks_.emplace(keys[g], RankList::from_sequence(members[g]));
  }
  std::vector<RankList> out;
  out.reserve(ngroups);
  for (std::size_t g = 0; g < ngroups; ++g) out.push_back(group_ranks_.at(keys[g]));
  return out;
}

/// The elastic whose alternatives are the distinct sequences `sequence_of(class)` gives (nullopt:
/// no elastic), in class order, each with the ranks of its classes.
template <class Seq, class F>
std::optional<Elastic<Seq>> by_class(const GridClasses& classes, F&& sequence_of) {
  Elastic<Seq> out;
  std::vector<std::size_t> alternative_of;  // per class
  for (std::size_t c = 0; c < classes.size(); ++c) {
    std::optional<Seq> seq = sequence_of(c);
    if (!seq) return std::nullopt;
    std::size_t a = 0;
    while (a < out.alternatives.size() && !(out.alternatives[a].first == *seq)) ++a;
    if (a == out.alternatives.size()) out.alternatives.emplace_back(std::move(*seq), RankList{});
    alternative_of.push_back(a);
  }
  std::vector<RankList> ranks = classes.ranks_by_group(alternative_of, out.alternatives.size());
  for (std::size_t a = 0; a < out.alternatives.size(); ++a) out.alternatives[a].second = std::move(ranks[a]);
  return out;
}

std::optional<Grid> find_grid(const ElasticValue& peers, std::int64_t nranks) {
  if (peers.alternatives.size() < 2 || nranks < 2 || nranks > kMaxRanks || !covers(peers, nranks)) return std::nullopt;
  // Each alternative is one block of peers per visit, repeated once per visit.
  std::vector<std::pair<std::vector<std::int64_t>, std::uint64_t>> periods;
  std::uint64_t visits = 0;
  for (const auto& alternative : peers.alternatives) {
    auto p = period_of(alternative.first);
    if (!p) return std::nullopt;
    visits = std::gcd(visits, p->second);
    periods.push_back(std::move(*p));
  }
  std::vector<std::vector<std::int64_t>> blocks;
  for (const auto& [period, repeat] : periods) {
    std::vector<std::int64_t> block;
    for (std::uint64_t i = 0; i < repeat / visits; ++i) block.insert(block.end(), period.begin(), period.end());
    if (block.size() > kMaxDirections) return std::nullopt;
    blocks.push_back(std::move(block));
  }
  std::vector<std::vector<std::int64_t>> candidates;
  std::vector<std::int64_t> prefix;
  factorisations(nranks, proper_divisors(nranks), prefix, candidates);
  // Any grid in which every rank talks to all others fits (2x2x2 ranks also fit as 2x4, with
  // steps of up to 3): the nearest neighbours win, then the fewest directions, then the most
  // dimensions.
  auto rank_of = [](const Grid& g) {
    return std::tuple{g.reach(), g.directions.size(), -static_cast<std::ptrdiff_t>(g.dims.size())};
  };
  std::optional<Grid> best;
  for (const auto& dims : candidates) {
    auto grid = try_dims(peers, blocks, dims, nranks);
    if (grid && (!best || rank_of(*grid) < rank_of(*best))) best = std::move(grid);
  }
  return best;
}

std::optional<GridValue> fit(const ElasticValue& e, const GridClasses& classes, std::size_t grid_index) {
  const std::size_t ndirs = classes.grid().directions.size();
  if (e.alternatives.size() < 2 || !covers(e, classes.grid().ranks())) return std::nullopt;
  for (const auto& alternative : e.alternatives)
    if (alternative.first.size() > kMaxSequence) return std::nullopt;
  const auto found = classes_per_alternative(e, classes);
  if (!found) return std::nullopt;
  const auto& per_alternative = *found;

  // Count: every rank holds the number of its directions, once per visit.
  {
    bool ok = true;
    const std::uint64_t repeat = e.alternatives.front().first.size();
    for (std::size_t a = 0; a < e.alternatives.size() && ok; ++a) {
      const ValueSeq& seq = e.alternatives[a].first;
      ok = seq.size() == repeat && seq.is_constant();
      for (const std::size_t c : per_alternative[a]) ok = ok && seq.at(0) == std::popcount(classes.mask(c));
    }
    if (ok) return GridValue{grid_index, Form::Count, {}, repeat};
  }

  // Filtered: every rank holds the template's values at its directions, once per visit.
  std::vector<std::optional<std::int64_t>> slots(ndirs);
  std::uint64_t repeat = 0;
  for (std::size_t a = 0; a < e.alternatives.size(); ++a) {
    const ValueSeq& seq = e.alternatives[a].first;
    const ValueSeq canonical = seq.canonical();
    std::optional<std::uint64_t> checked_width;
    for (const std::size_t c : per_alternative[a]) {
      const std::uint64_t mask = classes.mask(c);
      const auto width = static_cast<std::uint64_t>(std::popcount(mask));
      if (width == 0 || seq.size() % width != 0) return std::nullopt;
      const std::uint64_t r = seq.size() / width;
      if (repeat != 0 && r != repeat) return std::nullopt;
      repeat = r;
      std::vector<std::int64_t> block;
      for (std::uint64_t i = 0; i < width; ++i) block.push_back(seq.at(i));
      if (checked_width != width) {
        if (canonical_repeated(block, repeat) != canonical) return std::nullopt;
        checked_width = width;
      }
      std::size_t j = 0;
      for (std::size_t i = 0; i < ndirs; ++i) {
        if (!(mask >> i & 1)) continue;
        if (slots[i] && *slots[i] != block[j]) return std::nullopt;
        slots[i] = block[j++];
      }
    }
  }
  GridValue v{grid_index, Form::Filtered, {}, repeat};
  for (const auto& s : slots) v.values.push_back(s.value_or(0));
  if (v.values == offsets_of(classes.grid())) {
    v.form = Form::Offsets;
    v.values.clear();
  }
  return v;
}

ElasticValue expand(const GridValue& v, const GridClasses& classes) {
  const std::vector<std::int64_t> offsets = offsets_of(classes.grid());
  return *by_class<ValueSeq>(classes, [&](std::size_t c) -> std::optional<ValueSeq> {
    const std::uint64_t mask = classes.mask(c);
    if (v.form == Form::Count) {
      const std::int64_t width = std::popcount(mask);
      return canonical_repeated(std::span<const std::int64_t>(&width, 1), v.repeat);
    }
    return canonical_repeated(filtered(v.form == Form::Offsets ? offsets : v.values, mask), v.repeat);
  });
}

namespace {

/// The exact linear function y = per * k + base through the points (k, y), if there is one
/// (per = 0 if every point has the same k; 0, 0 for no points).
std::optional<std::pair<std::int64_t, std::int64_t>> line_through(
    const std::vector<std::pair<std::int64_t, std::int64_t>>& points) {
  if (points.empty()) return std::pair<std::int64_t, std::int64_t>{0, 0};
  const auto& [k0, y0] = points.front();
  std::optional<std::int64_t> per;
  for (const auto& [k, y] : points) {
    if (k == k0) {
      if (y != y0) return std::nullopt;
      continue;
    }
    const __int128 dy = static_cast<__int128>(y) - y0, dk = static_cast<__int128>(k) - k0;
    if (dy % dk != 0 || dy / dk > INT64_MAX || dy / dk < INT64_MIN) return std::nullopt;
    if (per && *per != dy / dk) return std::nullopt;
    per = static_cast<std::int64_t>(dy / dk);
  }
  const __int128 base = static_cast<__int128>(y0) - static_cast<__int128>(per.value_or(0)) * k0;
  if (base > INT64_MAX || base < INT64_MIN) return std::nullopt;
  return std::pair{per.value_or(0), static_cast<std::int64_t>(base)};
}

}  // namespace

std::optional<GridArray> fit_array(const ElasticArray& e, const GridClasses& classes, std::size_t grid_index) {
  if (e.alternatives.size() < 2 || !covers(e, classes.grid().ranks())) return std::nullopt;
  for (const auto& alternative : e.alternatives)
    if (alternative.first.runs().size() != 1) return std::nullopt;
  const auto found = classes_per_alternative(e, classes);
  if (!found) return std::nullopt;
  const auto& per_alternative = *found;
  GridArray v{grid_index};
  std::optional<std::int64_t> stride;
  std::vector<std::pair<std::int64_t, std::int64_t>> firsts, lengths, repeats;
  for (std::size_t a = 0; a < e.alternatives.size(); ++a) {
    const auto& run = e.alternatives[a].first.runs().front();
    if (run.values.size() > kMaxSequence || run.count > static_cast<std::uint64_t>(INT64_MAX)) return std::nullopt;
    for (std::size_t i = 1; i < run.values.size(); ++i) {
      const std::int64_t step = value_arith::wrap_sub(run.values[i], run.values[i - 1]);
      if (stride && *stride != step) return std::nullopt;
      stride = step;
    }
    for (const std::size_t c : per_alternative[a]) {
      const std::int64_t k = std::popcount(classes.mask(c));
      if (!run.values.empty()) firsts.emplace_back(k, run.values.front());
      lengths.emplace_back(k, static_cast<std::int64_t>(run.values.size()));
      repeats.emplace_back(k, static_cast<std::int64_t>(run.count));
    }
  }
  const auto first = line_through(firsts), length = line_through(lengths), repeat = line_through(repeats);
  if (!first || !length || !repeat) return std::nullopt;
  std::tie(v.first_per_direction, v.first_base) = *first;
  std::tie(v.length_per_direction, v.length_base) = *length;
  std::tie(v.repeat_per_direction, v.repeat_base) = *repeat;
  v.stride = stride.value_or(0);
  return v;
}

std::optional<ElasticArray> expand_array(const GridArray& v, const GridClasses& classes, std::int64_t max_length) {
  return by_class<ArraySeq>(classes, [&](std::size_t c) -> std::optional<ArraySeq> {
    const __int128 k = std::popcount(classes.mask(c));
    const __int128 length = static_cast<__int128>(v.length_per_direction) * k + v.length_base;
    const __int128 first = static_cast<__int128>(v.first_per_direction) * k + v.first_base;
    const __int128 repeat = static_cast<__int128>(v.repeat_per_direction) * k + v.repeat_base;
    if (length < 0 || length > max_length || repeat < 1 || repeat > INT64_MAX) return std::nullopt;
    std::vector<std::int64_t> values;
    for (__int128 i = 0; i < length; ++i)
      values.push_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(first + i * v.stride)));
    return ArraySeq::from_runs({ArraySeq::Run{std::move(values), static_cast<std::uint64_t>(repeat)}});
  });
}

namespace {

/// f(elastic, field or nullptr) for every elastic value of the nodes.
template <class F>
void for_each_elastic(const std::vector<Node>& nodes, F&& f) {
  for (const Node& n : nodes) {
    f(n.presence, nullptr);
    if (n.loop) {
      f(n.loop->trips, nullptr);
      for_each_elastic(n.loop->body, f);
    }
    if (n.event) {
      f(n.event->site_ids, nullptr);
      for (std::size_t i = 0; i < kFieldCount; ++i) {
        const auto field = static_cast<Field>(i);
        f(n.event->fields[i], &field);
      }
    }
  }
}

/// Equal sequences, in the same order, for the same sets of ranks (a ranklist's descriptors may
/// differ: the merge can cut a set into less regular pieces than RankList::from_sequence).
template <class E>
bool same_alternatives(const E& got, const E& want) {
  if (got.alternatives.size() != want.alternatives.size()) return false;
  for (std::size_t a = 0; a < want.alternatives.size(); ++a) {
    const auto& [seq, ranks] = got.alternatives[a];
    if (!(seq == want.alternatives[a].first)) return false;
    if (!same_ranks(ranks, want.alternatives[a].second)) return false;
  }
  return true;
}

void for_each_array(const std::vector<Node>& nodes, const std::function<void(const ElasticArray&)>& f) {
  for (const Node& n : nodes) {
    if (n.loop) for_each_array(n.loop->body, f);
    if (n.event)
      for (const auto& a : n.event->arrays) f(a);
  }
}

}  // namespace

TraceGrids find_trace_grids(const std::vector<Node>& nodes, std::int64_t nranks) {
  TraceGrids out;
  if (nranks < 2 || nranks > kMaxRanks) return out;
  for_each_elastic(nodes, [&](const ElasticValue& e, const Field* field) {
    if (!field || (*field != Field::Peer && *field != Field::Peer2) || out.grids.size() >= kMaxGrids) return;
    if (e.alternatives.size() < 2) return;
    auto grid = find_grid(e, nranks);
    if (grid && std::find(out.grids.begin(), out.grids.end(), *grid) == out.grids.end())
      out.grids.push_back(std::move(*grid));
  });
  if (out.grids.empty()) return out;
  std::vector<GridClasses> classes;
  for (const auto& g : out.grids) classes.emplace_back(g);
  for_each_elastic(nodes, [&](const ElasticValue& e, const Field*) {
    if (e.alternatives.size() < 2 || out.values.contains(&e)) return;
    // Only where the reader gets back the same alternatives: the same sequences in the same
    // (canonical) form, in the same order, each for the same ranks.
    for (std::size_t g = 0; g < classes.size(); ++g)
      if (auto v = fit(e, classes[g], g); v && same_alternatives(expand(*v, classes[g]), e)) {
        out.values.emplace(&e, std::move(*v));
        return;
      }
  });
  for_each_array(nodes, [&](const ElasticArray& e) {
    for (std::size_t g = 0; g < classes.size(); ++g)
      if (auto v = fit_array(e, classes[g], g)) {
        const auto back = expand_array(*v, classes[g], kMaxSequence);
        if (back && same_alternatives(*back, e)) {
          out.arrays.emplace(&e, *v);
          return;
        }
      }
  });
  return out;
}

}  // namespace scalatrace::neighbour_grid
