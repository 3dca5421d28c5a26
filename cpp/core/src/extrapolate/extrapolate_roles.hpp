#pragma once
// Internal to extrapolation: inputs expanded per rank, roles (communication groups aligned
// across the inputs) and the per-role plans that generate a target rank's events.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "scalatrace/extrapolate/extrapolate.hpp"

namespace scalatrace::extrap {

/// One communicator a rank holds: id and members (world ranks in communicator order).
struct HeldComm {
  std::int64_t id = 0;
  std::vector<std::int64_t> members;
};

/// One input trace expanded: every rank's events (call sites and function-name ids mapped to
/// the canonical tables, mean timing), the same events as runs of identical consecutive events
/// (`runs[r][i]` repeated `repeats[r][i]` times: a local call once per iteration of a loop whose
/// trip count changes with the size is one run whose count gets a law), and communicators.
struct ExpandedInput {
  const Trace* trace = nullptr;
  Grid grid;
  std::vector<std::vector<Event>> events;
  std::vector<std::vector<Event>> runs;
  std::vector<std::vector<std::int64_t>> repeats;
  std::vector<std::vector<HeldComm>> comms;
};

/// Call-site and name tables of the output (the largest input's), with each input's ids mapped.
struct CanonicalTables {
  CallSiteTable sites;
  std::vector<std::string> names;
};

/// What lossy extrapolation leaves out of the inputs (thesis §3.2.4), and what it left out.
struct InputFilter {
  bool drop_local = false;           ///< Op::Other events are left out
  std::vector<SnippetCall> snippet;  ///< non-empty: only what snippet_keep keeps stays
  std::uint64_t dropped = 0, total = 0;
  std::map<std::string, std::uint64_t> dropped_by_op;
  bool common = false;  ///< then only the events every rank of an input has (common_keep)
  /// common: per input (rank count, (events dropped as not common, events before that step))
  std::vector<std::pair<std::int64_t, std::pair<std::uint64_t, std::uint64_t>>> common_dropped;
};

/// Expands every rank of every input (inputs sorted by size; the last one is canonical),
/// leaving out what `filter` says (lossy extrapolation) and counting it there.
std::vector<ExpandedInput> expand_inputs(const std::vector<const Trace*>& inputs, const std::vector<Grid>& grids,
                                         CanonicalTables& tables, InputFilter& filter);

/// A parameter value at a target rank: a constant or a law over FeatureSpace features.
struct ValuePlan {
  bool constant = true;
  std::int64_t value = 0;
  std::shared_ptr<const LinearLaw> law;  ///< when !constant
  bool staged = false;                   ///< the law is over the stage space (k, n, flipped bits)
};

/// An array parameter: constant, element by element (fixed length), or a length law plus
/// element laws by residue class of the element index (j mod modulus).
struct ArrayPlan {
  enum class Kind { Constant, Elementwise, Sequence } kind = Kind::Constant;
  std::vector<std::int64_t> constant;
  std::vector<ValuePlan> elements;    ///< Elementwise
  ValuePlan length;                   ///< Sequence
  std::int64_t modulus = 1;           ///< Sequence: residue classes of j
  std::vector<ValuePlan> by_residue;  ///< Sequence: element law per class
};

struct EventPlan {
  Op op = Op::Other;
  std::uint32_t site = 0;
  ValuePlan repeat{true, 1, nullptr};  ///< how many identical consecutive events
  /// First event of a stage loop: the loop body is this event and the next loop_period - 1,
  /// repeated loop_count times (k = 0 .. n-1); 0: not a loop start.
  std::size_t loop_period = 0;
  ValuePlan loop_count;
  std::array<ValuePlan, kFieldCount> fields;
  std::array<ArrayPlan, kArrayFieldCount> arrays;
  std::size_t timing_group = 0;                           ///< index into RolePlan::timing_scale
  std::uint64_t sample_compute = 0, sample_duration = 0;  ///< representative's timing
};

struct CommPlan {
  std::int64_t id = 0;
  ValuePlan length;  ///< scalar features
  ValuePlan member;  ///< index features: member j
};

/// A stretch of a member's events in a role planned as stage loops: one event (not a loop), or
/// a loop body of `period` events (distinct calls) repeated `count` times, from `start`.
struct Unit {
  std::size_t start = 0;
  std::size_t period = 1;
  std::int64_t count = 1;
  bool loop = false;
};

/// Everything needed to generate any target rank of one role.
struct RolePlan {
  RoleKey key;
  std::vector<std::pair<std::size_t, std::int64_t>> members;  ///< (input, rank)
  std::vector<EventPlan> events;
  std::vector<CommPlan> comms;
  /// Per (op, site) of the role: the input means of compute / duration time and the factor
  /// applied to the representative's samples at the target.
  std::vector<std::pair<Op, std::uint32_t>> timing_keys;
  std::vector<std::vector<double>> compute_means, duration_means;  ///< [group][input]
  std::vector<double> compute_scale, duration_scale;
  bool rank_dependent = false;  ///< some law uses the rank's coordinates
  /// The events are runs of identical calls with a repeat-count law (the members' event
  /// counts differ but their runs match), else one plan per event.
  bool runs = false;
  /// The members' event counts differ by loops whose body calls change with the iteration
  /// (a peer that flips bit k): each member's events as units (`units[m]`, same shape for all),
  /// one plan per event of the reference member's units with loops planned over (k, n).
  bool stages = false;
  std::vector<std::vector<Unit>> units;
};

/// A reason extrapolation cannot proceed. Structural problems (a role the inputs never show,
/// event sequences that differ inside a role) come before parameter problems in the order of
/// attempts; parameter problems name the role, call site, parameter and values.
struct Failure {
  bool structural = false;
  std::string text;
  /// Several laws reproduce the values but differ at the target: the inputs fit this reading,
  /// they only do not decide it.
  bool ambiguous = false;
  /// The values fit a law that no spare input point checks (under-determined), or the role
  /// occurs at one input size only: neither wrong nor shown to be undecided.
  bool unchecked = false;
  /// Event sequences differ inside a role that holds rank 0 of some input: a reading with rank
  /// 0 as a role of its own (RoleKey::root_apart) may explain them.
  bool root_shape = false;
};

/// The order in which a refusal names the parameter problems of an attempt, most certain first:
/// 0 for values no law reproduces, 1 for an ambiguity (two laws reproduce every value and give
/// different values at the target), 2 for a law the inputs cannot check; structural problems 3.
inline int failure_rank(const Failure& f) {
  if (f.structural) return 3;
  if (f.ambiguous) return 1;
  return f.unchecked ? 2 : 0;
}

/// Builds every role plan for one (depth, modulus). Problems (shapes that differ inside a role,
/// parameters without a law) are appended to `failures`, one line each; laws to `laws`.
/// Only roles in `needed` (the target's) are planned. A parameter whose own values do not
/// determine its law (ambiguous, under-determined, or a role seen at one input size only)
/// takes the law of the same parameter at the same call site in another role, if exactly one
/// such law reproduces its values and they agree at the target.
/// Planning stops early (the plans are then incomplete) once `failures` holds more than
/// `budget` entries and one of them is not only an ambiguity: the attempt can no longer succeed
/// nor be the closest one.
std::map<RoleKey, RolePlan> plan_roles(const std::vector<ExpandedInput>& inputs, const Grid& target, std::size_t ndims,
                                       int depth, std::int64_t modulus, const std::set<RoleKey>& needed,
                                       std::vector<Failure>& failures, std::vector<ParameterLaw>& laws,
                                       std::size_t budget = SIZE_MAX, bool remainder_rivals = true,
                                       bool periodic = false, bool assume_constant = false, bool root_apart = false);

/// Corners of the coordinate box a role covers at the target grid (probe points for laws).
std::vector<std::vector<std::int64_t>> role_corners(const RoleKey& key, const Grid& target);

}  // namespace scalatrace::extrap
