#pragma once
// Internal to the core: neighbour grids (docs/algorithms.md, "Neighbour grids"; format version 6).
//
// A halo exchange on a non-periodic process grid gives each kind of rank (corner, edge, face,
// interior) its own peers, tags, sizes and trip counts: a 3x3x3 grid has 27 kinds, a 2x2x2 grid
// 8, and a lossless trace holds one value sequence and one ranklist per kind. Yet every kind
// does the same thing: it walks one list of directions and skips those that leave the grid.
// A neighbour grid states exactly that: the ranks 0..N-1 laid out row-major over `dims`, and an
// ordered list of directions (the template). A rank's *mask* is the set of directions whose
// neighbour lies inside the grid, and an elastic value stated over the grid (GridValue) gives
// each rank, repeated `repeat` times, either the template's values at its mask's directions
// (Filtered) or their number (Count). The file then holds the template, not the kinds, and its
// size no longer depends on how many kinds the grid has.
//
// Everything here is exact: a grid form is used for an elastic value only if it gives every
// rank exactly the values the elastic gives it.
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "scalatrace/model/elastic.hpp"
#include "scalatrace/model/rank_list.hpp"
#include "scalatrace/model/trace.hpp"
#include "scalatrace/model/value_seq.hpp"

namespace scalatrace::neighbour_grid {

inline constexpr std::size_t kMaxDims = 3;
/// Largest |component| of a direction.
inline constexpr int kMaxReach = 3;
/// At most this many directions in a template (a rank's mask is a 64-bit set).
inline constexpr std::size_t kMaxDirections = 64;
/// Grids over more ranks are not used (their ranks are walked once per grid, in the writer and
/// in the reader: a few nanoseconds and 10 bytes per rank).
inline constexpr std::int64_t kMaxRanks = std::int64_t{1} << 21;
/// At most this many grids in one trace.
inline constexpr std::size_t kMaxGrids = 8;

using Direction = std::array<std::int8_t, kMaxDims>;

struct Grid {
  /// Extent of each dimension, outermost first; rank = ((c0 * d1) + c1) * d2 + c2.
  std::vector<std::int64_t> dims;
  /// The template: directions in the order the ranks visit them (components beyond dims.size()
  /// are 0).
  std::vector<Direction> directions;

  std::int64_t ranks() const;
  /// Rank stride of each dimension (the innermost is 1).
  std::vector<std::int64_t> strides() const;
  /// The largest |component| of the directions (at least 1).
  int reach() const;
  /// Rank offset of direction i.
  std::int64_t offset(std::size_t i) const;
  bool operator==(const Grid&) const = default;
};

/// Direction `d` as one number (base 2*reach+1 digits, outermost dimension first) and back.
std::uint64_t direction_code(const Direction& d, std::size_t ndims, int reach);
Direction direction_from_code(std::uint64_t code, std::size_t ndims, int reach);

/// A grid's ranks grouped by mask: ranks whose neighbours inside the grid are the same
/// directions form one class. Classes are numbered in the order of their first rank.
///
/// Built in one pass over the ranks (a table lookup each: a rank's class depends on its
/// coordinates only through their distance to the grid's ends, up to the reach). What is
/// derived from the ranks later (the classes of a ranklist, the ranklist of a set of classes)
/// is remembered: the elastic values of one trace share a few ranklists, and each costs a pass
/// over its ranks only once.
class GridClasses {
 public:
  explicit GridClasses(Grid grid);
  const Grid& grid() const { return grid_; }
  std::size_t size() const { return masks_.size(); }
  /// Bit i: direction i leads to a rank inside the grid.
  std::uint64_t mask(std::size_t cls) const { return masks_[cls]; }
  std::size_t class_of(std::int64_t rank) const { return class_of_[static_cast<std::size_t>(rank)]; }
  /// The classes of the ranks of `ranks`, each once, in the order of their first rank there;
  /// nullopt if a rank lies outside the grid.
  const std::optional<std::vector<std::size_t>>& classes_of(const RankList& ranks) const;
  /// The class's ranks, as RankList::from_sequence builds them.
  const RankList& ranks(std::size_t cls) const;
  /// The ranks of each group, group_of[class] naming a class's group (groups 0..ngroups-1), as
  /// RankList::from_sequence builds them (the form the merge gives a set of ranks): one pass
  /// over the ranks for all groups not seen before.
  std::vector<RankList> ranks_by_group(const std::vector<std::size_t>& group_of, std::size_t ngroups) const;

 private:
  Grid grid_;
  std::vector<std::uint64_t> masks_;
  std::vector<std::uint16_t> class_of_;
  /// Ranklists of sets of classes (sorted class numbers), built on first use.
  mutable std::map<std::vector<std::size_t>, RankList> group_ranks_;
  /// classes_of, remembered per ranklist (looked up by a hash of its descriptors; a deque keeps
  /// the references classes_of returns valid).
  mutable std::deque<std::pair<RankList, std::optional<std::vector<std::size_t>>>> classes_of_ranks_;
  mutable std::unordered_multimap<std::uint64_t, std::size_t> classes_of_index_;
};

/// Filtered: the template's values at the rank's directions; Count: their number; Offsets: the
/// rank offsets of its directions (a Filtered template that the grid implies: rank-relative
/// peers, stored without values).
enum class Form : std::uint8_t { Filtered = 0, Count = 1, Offsets = 2 };
inline constexpr std::uint64_t kFormCount = 3;

/// An elastic value stated over a grid (see above).
struct GridValue {
  std::size_t grid = 0;  ///< index of the grid in the trace's grid list
  Form form = Form::Filtered;
  /// Filtered: one value per direction of the template (empty for Count and Offsets).
  std::vector<std::int64_t> values;
  std::uint64_t repeat = 1;
  bool operator==(const GridValue&) const = default;
};

/// An elastic array stated over a grid: with k the number of a rank's directions inside the
/// grid, its array sequence is one vector repeated `repeat_per_direction * k + repeat_base`
/// times, the arithmetic progression of `length_per_direction * k + length_base` values from
/// `first_per_direction * k + first_base` in steps of `stride`. A Waitall over a halo
/// exchange's 2k requests (2k, 2k - 1, ..., 1 once per visit), and the empty request arrays of
/// its k Irecv calls per visit, are such arrays.
struct GridArray {
  std::size_t grid = 0;
  std::int64_t first_per_direction = 0, first_base = 0, stride = 0;
  std::int64_t length_per_direction = 0, length_base = 0;
  std::int64_t repeat_per_direction = 0, repeat_base = 1;
  bool operator==(const GridArray&) const = default;
};

/// The grid walked by an elastic value of rank-relative peers (Peer = peer - rank), if there is
/// one: every rank's peers are, once per visit, its neighbours inside the grid in the template's
/// order. Among the factorisations of `nranks` (1 to 3 dimensions) that fit, the one with the
/// fewest directions. Needs at least two alternatives covering ranks 0..nranks-1.
std::optional<Grid> find_grid(const ElasticValue& peers, std::int64_t nranks);

/// `e` stated over the grid of `classes`, if that gives every rank exactly its values (Count
/// tried first; a Filtered template equal to the grid's offsets becomes Offsets). Needs at least two alternatives
/// covering the grid's ranks.
std::optional<GridValue> fit(const ElasticValue& e, const GridClasses& classes, std::size_t grid_index);

/// The elastic value a GridValue stands for: one alternative per distinct value sequence (in
/// canonical form), in the order of their first ranks. Never expands the repeats.
ElasticValue expand(const GridValue& v, const GridClasses& classes);

/// `e` stated over the grid of `classes` as a GridArray, if that gives every rank exactly its
/// arrays. Needs at least two alternatives covering the grid's ranks.
std::optional<GridArray> fit_array(const ElasticArray& e, const GridClasses& classes, std::size_t grid_index);

/// The elastic array a GridArray stands for (as expand); nullopt if a rank's length would be
/// negative or above `max_length`, or its repeat count below 1.
std::optional<ElasticArray> expand_array(const GridArray& v, const GridClasses& classes, std::int64_t max_length);

/// The grids of a trace and the elastic values stated over them (the writer's choice).
struct TraceGrids {
  std::vector<Grid> grids;
  /// Elastic values of the trace's nodes (by address) that a grid states exactly.
  std::unordered_map<const ElasticValue*, GridValue> values;
  /// Elastic arrays of the nodes that a grid states exactly.
  std::unordered_map<const ElasticArray*, GridArray> arrays;
};

/// Grids from the nodes' Peer and Peer2 fields (find_grid, at most kMaxGrids), then every
/// elastic value and array of the nodes (presence, trip counts, call-site ids, fields) with two or more
/// alternatives that one of them states (fit) exactly: expand gives back the same sequences, in
/// the same form and order, for the same sets of ranks (as RankList::from_sequence writes them).
TraceGrids find_trace_grids(const std::vector<Node>& nodes, std::int64_t nranks);

}  // namespace scalatrace::neighbour_grid
