#pragma once
// Trace extrapolation (ScalaExtrap, thesis ch. 3): the merged trace of a large run from the
// merged traces of a few small runs of the same SPMD program. See docs/extrapolation.md.
//
// Pipeline (one file each):
//   extrapolate_topology.cpp  process grids, topology identification from the communication
//                             pattern (§3.2.1), boundary classes of ranks;
//   extrapolate_laws.cpp      linear laws in the grid sizes and coordinates, solved by Gaussian
//                             elimination and checked exactly on every input (§3.2.3);
//   extrapolate_match.cpp     roles (communication groups aligned across the inputs by their
//                             position in the grid, §3.2.2) and event matching inside a role;
//   extrapolate.cpp           the target trace: every target rank's events from the laws,
//                             compressed and merged like the collector does, plus the laws as
//                             formulas (metadata) and timing from per-node models (§3.2.5).
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scalatrace/model/trace.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {

/// Inputs that cannot be extrapolated (different programs, repeated sizes, too few sizes,
/// parameters without a linear law). The message names what and where.
struct ExtrapolationError : Error {
  using Error::Error;
};

/// A row-major process grid, fastest-varying dimension first: rank = x + X*(y + Y*z).
struct Grid {
  std::vector<std::int64_t> dims;
  std::int64_t size() const;
  std::vector<std::int64_t> coords(std::int64_t rank) const;
  /// "4x3" (fastest dimension first).
  std::string to_string() const;
  bool operator==(const Grid&) const = default;
};

/// How a program lays its ranks on a grid of a given rank count: the balanced factorization of
/// MPI_Dims_create with the smallest factor varying fastest (C programs that use
/// `rank / dims[1]`), or with the largest varying fastest (scalatrace's synthetic patterns).
enum class GridOrder { FastestSmallest, FastestLargest };

/// Balanced factorization of n into ndims factors (MPI_Dims_create), in the given order.
Grid balanced_grid(std::int64_t n, std::size_t ndims, GridOrder order);

/// Result of topology identification.
struct Topology {
  std::size_t ndims = 1;
  GridOrder order = GridOrder::FastestSmallest;
  /// True when the inputs cannot tell the two orders apart (all their grids are the same
  /// either way); a target rank count then needs explicit dims if the orders differ there.
  bool order_ambiguous = false;
  /// Boundary depth: how many layers of ranks next to each grid boundary communicate
  /// differently (1 for a nearest-neighbour stencil, 2 for distance-2 neighbours, 0: none).
  int depth = 0;
  /// The end points are explained by this grid at `depth` (false: the code's point-to-point
  /// calls do not reveal its grid, or it has none; the candidate is kept for collectives and
  /// communicators).
  bool depth_found = false;
  std::vector<Grid> grids;  ///< one per input, in input order
  std::string explanation;  ///< how it was found (for the report)
};

/// Topology identification (thesis §3.2.1): ranks are grouped by their communication
/// end points (communicator, relative peer); the grid is the balanced factorization (1, 2 or 3
/// dimensions, either order) under which every group is a union of boundary classes with the
/// smallest boundary depth and the fewest classes. `given` (optional) fixes the input grids.
Topology identify_topology(const std::vector<const Trace*>& inputs, const std::vector<Grid>& given = {});
/// Every candidate topology, best first: those that explain the end-point groups (by depth,
/// then classes), then the others (codes that talk only through collectives or derived
/// communicators do not reveal their grid in end points; extrapolation then keeps the first
/// candidate under which every parameter has a law).
std::vector<Topology> topology_candidates(const std::vector<const Trace*>& inputs, const std::vector<Grid>& given = {});

/// Boundary class of a rank: per dimension (distance to the low boundary, distance to the high
/// boundary), each capped at `depth`, plus rank mod `modulus`. Ranks of one class form one
/// communication group ("role") at every size. With `root_apart`, rank 0 is a role of its own
/// (`root`): codes whose rank 0 makes calls the others do not (a timer, a print) beside the
/// communication every rank makes.
struct RoleKey {
  std::vector<std::pair<std::int64_t, std::int64_t>> per_dim;
  std::int64_t residue = 0;
  int depth = 0;
  std::int64_t modulus = 1;
  bool root_apart = false;
  bool root = false;  ///< root_apart and this is rank 0's role
  bool operator==(const RoleKey&) const = default;
  auto operator<=>(const RoleKey&) const = default;
  /// "x:lo0 y:mid r%2=1" style; "rank 0" for the root role, "... r>0" for the others.
  std::string to_string() const;
};
RoleKey role_key(const Grid& grid, std::int64_t rank, int depth, std::int64_t modulus, bool root_apart = false);

// ---- linear laws ------------------------------------------------------------------------

/// The features a law may combine (values at one rank of one grid). Scalars: 1, the grid
/// sizes X, Y, Z and their products, floor(log2 P) and floor(sqrt P) (P = the rank count), the
/// rank's coordinates x, y, z, the rank terms y*X, z*X*Y, the rank r (2D, 3D) and its residues
/// r%2, r%3. Sequences (communicator members, array elements) add the element index j and j*X,
/// j*X*Y. Stage loops (a block of calls repeated n times, iteration k = 0 .. n-1, whose peers
/// change with k: recursive doubling, butterflies) add log2(X), log2(Y), log2(Z), k, n, 2^k,
/// 2^(n-1-k) and the relative peers with bit k or bit n-1-k of x (and of r) flipped,
/// ((x^2^k)-x). The last feature, P^2, is a divisor only (laws floor(N / P^2)), never a linear
/// term. Names follow the thesis: X is the fastest dimension.
struct FeatureSpace {
  std::size_t ndims = 1;
  bool with_index = false;
  bool with_stage = false;
  /// Periodic neighbours (ExtrapolationOptions::periodic): the relative rank of the +1 and -1
  /// neighbour along each dimension with wrap-around, ((x+1)%X-x), ((x+X-1)%X-x),
  /// X*((y+1)%Y-y), ..., X*Y*((z+Z-1)%Z-z); inserted before P^2, terms like the coordinates
  /// (a law of one periodic term is found before any law of several coordinate terms).
  bool periodic = false;
  std::vector<std::string> names;
  /// Division laws are compared with their remainder rivals (ExtrapolationOptions::
  /// uneven_splits_from_inputs).
  bool remainder_rivals = true;
  static FeatureSpace make(std::size_t ndims, bool with_index, bool with_stage = false, bool periodic = false);
  /// Feature values for a rank (coords) of a grid, element index j, stage k of n.
  std::vector<std::int64_t> values(const Grid& grid, const std::vector<std::int64_t>& coords, std::int64_t j = 0,
                                   std::int64_t k = 0, std::int64_t n = 0) const;
  /// Indices of features that depend on the rank (coordinates).
  bool rank_dependent(std::size_t feature) const;
  /// log2(P), sqrt(P), log2(X), log2(Y), log2(Z) and the transpose partner: terms only where
  /// they vary over the input points, tried where no law of the other features fits.
  bool exotic(std::size_t feature) const;
  /// Features that may be linear terms (all but the divisor-only P^2, which is last).
  std::size_t linear_count() const { return names.size() - 1; }
  /// Features a division law may divide by: the grid sizes and their products, P and P^2.
  std::vector<std::size_t> divisors() const;
  /// Index of the feature named `name`; throws UsageError if there is none.
  std::size_t index(const std::string& name) const;
  /// Index of the feature named `name`, if there is one.
  std::optional<std::size_t> find(const std::string& name) const;
};

/// value = sum_k (num[k] / den[k]) * feature[terms[k]], exact on every input point; or, for a
/// division law (div_scale != 0), value = div_scale * floor(div_numerator / feature[div_feature]) + div_offset
/// (strong scaling: a global size split over the ranks or a grid dimension with C's integer
/// division), also exact on every input point.
struct LinearLaw {
  std::vector<std::size_t> terms;
  std::vector<std::int64_t> num, den;
  std::int64_t div_scale = 0;      ///< 0: a linear law
  std::int64_t div_numerator = 0;  ///< N of floor(N / divisor)
  std::size_t div_feature = 0;     ///< the divisor
  bool div_exact = false;          ///< N / divisor had no remainder at any input
  /// Added to a division law: the law of another role at the same call site plus a constant
  /// (NPB LU's first column holds one row more: 8*floor(10560/X) + 2640 bytes).
  std::int64_t div_offset = 0;
  /// Inverse terms of a linear law: + inv_num[k] / (inv_den[k] * feature[inv_feature[k]]), a
  /// size split evenly over a grid size or P (NPB BT's faces of 80*(60/n)^2*(n-1) bytes:
  /// 288000/X - 288000/P). Used only where the target's divisor divides the least common
  /// multiple of the inputs' (solve_inverse_law): the inputs show that it splits there evenly.
  std::vector<std::size_t> inv_feature;
  std::vector<std::int64_t> inv_num, inv_den;
  /// A modular term of a stage law: + (num / den) * ((a*x + b*y + c*k + d) mod S) [* S], S the
  /// size at feature `size` (X), the mod non-negative: a cell coordinate in a multi-partition
  /// scheme (NPB BT's solve tags WEST + ((x+y-k) mod X) + X*((k-x) mod X)).
  struct ModTerm {
    std::int64_t a = 0, b = 0, c = 0, d = 0;
    bool times_size = false;
    std::int64_t num = 1, den = 1;
  };
  std::vector<ModTerm> mods;
  /// Feature indices of x, y, k and S for `mods` (y: SIZE_MAX in 1D).
  std::size_t mod_x = 0, mod_y = SIZE_MAX, mod_k = 0, mod_size = 0;
  /// A product of two cell extents (ext_scale != 0; NPB SP's solve buffers): value =
  /// ext_scale * (ext_size/S - ends(m1)) * (ext_size/S - ends(m2)), m1, m2 the modular
  /// coordinates mods[0], mods[1] and ends(m) = (m == 0) + (m == S-1): the points of a cell of
  /// ext_size/S per axis less the global boundary planes it holds (solve_extent_law).
  std::int64_t ext_scale = 0, ext_size = 0;
  /// Exact evaluation; throws ExtrapolationError if the result is not an integer.
  std::int64_t eval(const std::vector<std::int64_t>& features) const;
  /// "-X - 1", "8", "y*X + j", "8*floor(1000/P)", "floor(4096/P^2)", "8*floor(10560/X) + 2640".
  std::string formula(const FeatureSpace& space) const;
  bool uses_rank(const FeatureSpace& space) const;
  /// Number of unknowns the law was solved for (terms; 2 for a division law).
  std::size_t unknowns() const {
    if (ext_scale != 0) return 3;
    return div_scale != 0 ? 2 : terms.size() + inv_feature.size() + mods.size();
  }
  /// The value of modular term m at `features`.
  std::int64_t mod_value(const ModTerm& m, const std::vector<std::int64_t>& features) const;
};

/// Finds the law with the fewest terms that reproduces every (features, value) point exactly
/// (Gaussian elimination on linearly independent points, then exact integer verification).
/// `probes` are feature vectors where the law will be used: if two laws with the same number of
/// terms fit the data but disagree on a probe, the inputs do not determine the value and
/// nullopt is returned with the reason in `why` (naming both laws when `space` is given). At
/// most `max_terms` terms. A law with k terms must be checked on `check_points` more distinct
/// points than k (the thesis solves n+1 unknowns from n+1 traces exactly: check_points = 0);
/// constants need no check. Only the first `linear_features` features are used as terms.
/// Laws of the grid sizes and coordinates are preferred to laws that need log2(P) or sqrt(P)
/// (the simpler reading); when such a law also fits and differs at a probe, `note` (if given)
/// names the choice ("X - 1 chosen over 2*log2(P) - 1, ...").
std::optional<LinearLaw> solve_linear_law(const std::vector<std::vector<std::int64_t>>& points,
                                          const std::vector<std::int64_t>& values,
                                          const std::vector<std::vector<std::int64_t>>& probes, std::string* why,
                                          std::size_t max_terms = 4, std::size_t check_points = 1,
                                          std::size_t linear_features = SIZE_MAX, const FeatureSpace* space = nullptr,
                                          std::string* note = nullptr);

/// Strong-scaling laws value = a * floor(N / d) for a divisor feature d (`divisors`) where no
/// linear law fits: every scale a dividing the values' gcd (or only `scale` if > 0: a message's
/// bytes are its element count times the datatype size) and every N consistent with all points
/// (an interval) are considered; the law is returned only if all of them give the same values
/// at every probe, it was checked on 3 or more distinct divisor values (2 with a given `scale`:
/// N is then its one unknown), and values are not constant. Otherwise nullopt and the reason in
/// `why`.
std::optional<LinearLaw> solve_division_law(const std::vector<std::vector<std::int64_t>>& points,
                                            const std::vector<std::int64_t>& values,
                                            const std::vector<std::vector<std::int64_t>>& probes,
                                            const std::vector<std::size_t>& divisors, std::string* why,
                                            const FeatureSpace* space = nullptr, std::int64_t scale = 0);

/// Laws of a size split evenly: a constant plus up to 2 inverse terms c/d (d = X, Y, Z, P),
/// tried where no linear and no division law fits (NPB BT's faces 288000/X - 288000/P, its
/// solve buffers 864000/P + 28800/X + 240). A term c/d is a candidate only if every probe's d
/// divides the least common multiple L of the inputs' d: the inputs show that the program's
/// size is split evenly over every input's d (else c/d would not be exact there), so also over
/// any divisor of L, and the law cannot hide a remainder at the target. Every law of up to 3
/// terms that the points check (one distinct point beyond its terms) must agree at every probe,
/// else nullopt with "ambiguous: ..." in `why`; "under-determined" where only unchecked ones fit.
std::optional<LinearLaw> solve_inverse_law(const std::vector<std::vector<std::int64_t>>& points,
                                           const std::vector<std::int64_t>& values,
                                           const std::vector<std::vector<std::int64_t>>& probes,
                                           const FeatureSpace& space, std::string* why);

/// Stage laws with cell coordinates (FeatureSpace::with_stage): a constant plus up to 2
/// modular terms ((a*x + b*y + c*k + d) mod X), each possibly times X, with a, b, c in
/// {-1, 0, 1} and d in {-2, ..., 2}, tried where no linear and no division law fits: the
/// coordinates of the cell a rank works on at stage k of a multi-partition sweep (NPB BT and
/// SP: the cell at stage k of x_solve is ((k), (x+y-k) mod n, (k-x) mod n)). Checked and
/// determined as solve_inverse_law: every fitting law of up to 3 terms must agree at every probe.
std::optional<LinearLaw> solve_modular_law(const std::vector<std::vector<std::int64_t>>& points,
                                           const std::vector<std::int64_t>& values,
                                           const std::vector<std::vector<std::int64_t>>& probes,
                                           const FeatureSpace& space, std::string* why);

/// Stage laws of cell extents: a*(G/X - ends(m1))*(G/X - ends(m2)) for modular coordinates m1,
/// m2 as in solve_modular_law (without the factor X) and ends(m) = (m == 0) + (m == X-1), tried
/// where no other law fits: NPB SP's solve messages, 22 doubles per point of the stage's cell
/// face less the global boundary planes. a and G from an exact linear fit of a*G^2/X^2,
/// a*G/X*(ends(m1) + ends(m2)) and a*ends(m1)*ends(m2), verified on every point; the target's X
/// must divide the least common multiple of the inputs' (the even split, as solve_inverse_law),
/// and every pair (m1, m2) that reproduces the values must agree at every probe.
std::optional<LinearLaw> solve_extent_law(const std::vector<std::vector<std::int64_t>>& points,
                                          const std::vector<std::int64_t>& values,
                                          const std::vector<std::vector<std::int64_t>>& probes,
                                          const FeatureSpace& space, std::string* why);

/// The remainder of a division law: where the target splits N unevenly (N mod d != 0), the value
/// depends on how the program distributes the remainder, which the inputs show only where they
/// split N unevenly too. Rivals of `law` (its N, scale and offset): ceil(N/d), and where d has a
/// rank coordinate c (x for X, y for Y, z for Z, the rank for P) the balanced splits
/// floor(N/d) + (c < N%d) (NPB LU, BT, SP: the remainder on the first ranks) and
/// floor(N/d) + (c >= d - N%d). A rival that reproduces every input point (one element more at
/// none of them) and differs at a probe makes the law ambiguous: the message naming both, else "".
/// NPB BT and SP class W at 4, 9, 16 ranks: 24 and 36 grid points split evenly over 2, 3, 4
/// cells, not over 5 at 25 ranks, and their faces there differ from floor(N/5)'s.
std::string division_remainder_rival(const LinearLaw& law, const std::vector<std::vector<std::int64_t>>& points,
                                     const std::vector<std::vector<std::int64_t>>& probes,
                                     const FeatureSpace* space = nullptr);

// ---- extrapolation ----------------------------------------------------------------------

/// Fits the mean time of one event node over the input sizes and predicts it at the target:
/// (rank counts, mean ns per input, target rank count) -> predicted mean ns. Python passes
/// scalatrace.fit_scaling here.
using TimingModel =
    std::function<double(const std::vector<double>& sizes, const std::vector<double>& means, double target)>;

/// ExtrapolationOptions::max_ranks by default. Targets are also bounded by the trace format
/// (kMaxExtrapolationRanks: rank counts below 2^32), a limit that cannot be lifted.
inline constexpr std::int64_t kDefaultMaxExtrapolationRanks = std::int64_t{1} << 22;
inline constexpr std::int64_t kMaxExtrapolationRanks = (std::int64_t{1} << 32) - 1;

/// Value of a feature where it is not defined (the transpose partner on a grid whose X is not
/// a multiple of Y; with ExtrapolationOptions::assume_constant, a grid size equal at every
/// input): no law with it is fitted where it occurs, and none is evaluated there.
inline constexpr std::int64_t kUndefinedFeature = std::numeric_limits<std::int64_t>::min() / 8;

/// One call of a snippet (thesis §3.2.4, Fig. 3.7): an MPI operation, at one call site of the
/// largest input's call-site table or at any (site < 0).
struct SnippetCall {
  Op op = Op::Other;
  std::int64_t site = -1;
  bool operator==(const SnippetCall&) const = default;
};

/// The thesis' snippet filter (Fig. 3.7) over one rank's events: a finite-state machine that
/// keeps every complete occurrence of the snippet's call sequence and, outside a sequence, the
/// collectives (and Init, Finalize, communicator creation and freeing); everything else is
/// dropped. A sequence broken by an unexpected call is dropped whole (the unexpected call is then
/// read from the start state: kept if a collective, the start of a new sequence if it matches
/// the snippet's first call). `sites` are the events' sites in the snippet's table. Returns, per
/// event, whether it is kept.
std::vector<bool> snippet_keep(const std::vector<SnippetCall>& snippet, const std::vector<Op>& ops,
                               const std::vector<std::uint32_t>& sites);

/// The events every rank has (the thesis' LCS step of lossy extrapolation, §3.2.4, across the
/// ranks of one trace): per rank, whether each event is kept. The kept events of every rank are
/// the same sequence of calls (op and call site): the longest that is a subsequence of every
/// rank's, found by aligning the rank with the fewest events (the reference) with every other
/// distinct call sequence in turn. Where several alignments keep as many events, the one whose
/// kept events' parameters agree most with the reference's is taken (a rank that also works on
/// a coarse level through the same call sites keeps the events of the levels the reference
/// works on). UsageError if an alignment would need more than 2^25 table cells.
std::vector<std::vector<bool>> common_keep(const std::vector<std::vector<Event>>& ranks);

/// A trace of the events of `trace` that common_keep keeps (after leaving out the local calls
/// with drop_local), compressed and merged as the collector does, with mean timing: what
/// extrapolate(..., common_events) gives is compared and simulated against this at the target.
/// `dropped`: the events left out.
Trace common_events_trace(const Trace& trace, bool drop_local = false, std::uint64_t* dropped = nullptr);

struct ExtrapolationOptions {
  std::int64_t target_ranks = 0;  ///< target rank count (with the inputs' grid rule) or 0
  Grid target_grid;               ///< explicit target grid (overrides target_ranks)
  std::vector<Grid> input_grids;  ///< explicit input grids (skip identification), optional
  /// Per event node timing model; empty: the largest input's timing is kept unchanged and
  /// the metadata says so.
  TimingModel timing;
  std::uint64_t seed = 1;  ///< timing samples drawn from the largest input's histograms
  /// Largest target accepted (time and memory grow with the rank count: 1,048,576 ranks take
  /// minutes); a larger target is refused before any work with a UsageError naming this limit.
  std::int64_t max_ranks = kDefaultMaxExtrapolationRanks;
  /// Lossy extrapolation (thesis §3.2.4): drop the local calls (Op::Other: MPI_Comm_rank,
  /// MPI_Comm_size, MPI_Type_commit, ...) of every input before extrapolating; the dropped
  /// share is reported in the metadata (`extrapolation_dropped`).
  bool drop_local = false;
  /// Lossy extrapolation of data-dependent all-to-all counts (NPB IS): every input's Alltoallv /
  /// Ialltoallv count arrays are replaced by even splits of each call's mean total first
  /// (even_alltoall_counts); how far they were from even is reported in the metadata
  /// (`extrapolation_even_counts`).
  bool even_alltoall_counts = false;
  /// Lossy extrapolation with the thesis' snippet filter (§3.2.4, Fig. 3.7; see snippet_keep):
  /// every rank of every input is filtered before extrapolating, keeping the snippet's complete
  /// call sequences and the collectives; the dropped share is reported (`extrapolation_dropped`).
  /// Sites are the largest input's. Empty: no filter.
  std::vector<SnippetCall> snippet;
  /// Lossy extrapolation (thesis §3.2.4, LCS across ranks): after drop_local and the snippet,
  /// every input keeps only the events every one of its ranks has (common_keep); the dropped
  /// share per input is reported (`extrapolation_dropped`). For codes where some ranks do more
  /// than the others at some sizes (NPB MG's coarse levels, on which only some ranks hold
  /// points): the result is the common part, to be compared with a real trace through the same
  /// common_keep.
  bool common_events = false;
  /// Periodic neighbour features (FeatureSpace::periodic) for codes on a torus (NPB MG): a
  /// neighbour with wrap-around is one law for every rank whatever the dimension's size, and
  /// boundary depth 0 (one role for every rank) is tried first.
  bool periodic = false;
  /// A division law is refused where the target splits its N unevenly and no input shows how
  /// the program splits a remainder (see division_remainder_rival). Off only for laws read as a
  /// model of every size (scalable benchmarks, which write C's integer division as such).
  bool uneven_splits_from_inputs = true;
  /// Refuse instead of taking the simplest law where the inputs do not decide between laws that
  /// give different values at the target (what is otherwise a warning, `extrapolation_warnings`):
  /// for a user who needs the trace to be right or absent.
  bool refuse_undecided = false;
  /// A value that is the same at every input of its role is taken as that constant also where
  /// a grid size that is the same at every input changes at the target (NPB MG's Z = 4 at 16,
  /// 32 and 64 ranks, 8 at 128), where it is otherwise refused as ambiguous (the constant or a
  /// multiple of that size). Each such choice is a warning (`extrapolation_warnings`), so
  /// refuse_undecided still refuses it. For weak scaling, where per-rank sizes do not grow.
  bool assume_constant = false;
};

/// One extrapolated parameter as reported (metadata key `extrapolation_laws`).
struct ParameterLaw {
  std::string role;     ///< the role (communication group) it applies to
  std::string where;    ///< "Isend@site 3", "communicator 2", ...
  std::string field;    ///< "Peer", "members", "SendCounts"...
  std::string formula;  ///< distinct formulas over the occurrences, comma separated
  /// How the law was established: "exact on N points" (verified on every input value), or
  /// "exact on N points, shared from role R" (the role's own values do not determine it; the
  /// law of the same parameter at the same call site in role R reproduces them exactly);
  /// "...; simplest of several: A chosen over B" when a law with log2(P) or sqrt(P) also
  /// reproduces the values but differs at the target (a warning: add an input size to decide).
  std::string status;
};

/// A parameter of one role as a function of the size and the rank: a constant, or a law over
/// FeatureSpace::make(ndims, false) features (communicator members and array elements: over
/// FeatureSpace::make(ndims, true), j the element index). What a scalable benchmark evaluates.
struct LawValue {
  bool constant = true;
  std::int64_t value = 0;
  LinearLaw law;  ///< when !constant
};

/// An array parameter: constant, element by element (fixed length), or a length law plus an
/// element law per residue class of the element index (j mod modulus).
struct LawArray {
  enum class Kind { Constant, Elementwise, Sequence } kind = Kind::Constant;
  std::vector<std::int64_t> constant;
  std::vector<LawValue> elements;
  LawValue length;
  std::int64_t modulus = 1;
  std::vector<LawValue> by_residue;
};

/// One call of a role's event sequence, `repeat` times in a row (a run whose count follows a
/// law: a local call once per iteration of a loop whose trip count changes with the size).
struct LawEvent {
  Op op = Op::Other;
  std::uint32_t site = 0;
  LawValue repeat;
  std::array<LawValue, kFieldCount> fields;
  std::array<LawArray, kArrayFieldCount> arrays;
};

/// A communicator a role's ranks hold: size law and member law member(j).
struct LawComm {
  std::int64_t id = 0;
  LawValue length, member;
};

/// Every event of one role (the ranks of one boundary class and residue) with its laws: the
/// whole program of those ranks at any size where the role occurs (scalable benchmarks).
struct RoleLaws {
  RoleKey key;
  std::vector<LawEvent> events;
  std::vector<LawComm> comms;
};

struct ExtrapolationResult {
  Trace trace;
  Topology topology;
  Grid target;
  int depth = 0;
  std::int64_t modulus = 1;
  bool root_apart = false;  ///< rank 0 is a role of its own (RoleKey::root)
  std::vector<ParameterLaw> laws;
  std::vector<std::string> roles;     ///< role descriptions with their target ranklists
  std::vector<std::string> warnings;  ///< choices the inputs did not decide (simplest law taken)
  bool periodic = false;              ///< the laws are over FeatureSpace::make(..., periodic = true)
  std::uint64_t dropped_events = 0;   ///< drop_local, snippet: events dropped over all inputs
  /// snippet: events dropped per operation name (over all inputs)
  std::map<std::string, std::uint64_t> dropped_by_op;
  /// common_events: per input (by rank count), (events dropped as not common, events before)
  std::vector<std::pair<std::int64_t, std::pair<std::uint64_t, std::uint64_t>>> common_dropped;
  std::uint64_t input_events = 0;  ///< events of all inputs (before dropping)
  /// even_alltoall_counts: a description of what was evened (empty when the option is off).
  std::string even_counts;
  /// The chosen reading's laws, role by role (the target's roles): what generated scalable
  /// benchmarks evaluate at their own size.
  std::vector<RoleLaws> role_laws;
};

/// Extrapolates merged traces of one program at several sizes to the target size. Throws
/// ExtrapolationError naming the problem: different programs, the same size twice, too few
/// sizes, a role the inputs never show, parameters without a linear law (listed one per line).
ExtrapolationResult extrapolate(const std::vector<const Trace*>& inputs, const ExtrapolationOptions& options);

}  // namespace scalatrace
