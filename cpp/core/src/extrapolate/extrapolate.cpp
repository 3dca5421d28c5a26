// Trace extrapolation: validation of the inputs, the search for the role partition whose laws
// explain every parameter, timing models, and the target trace built rank by rank through the
// collector's own compressor and radix-tree merge. See docs/extrapolation.md.
#include "scalatrace/extrapolate/extrapolate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "extrapolate/extrapolate_roles.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/extrapolate/even_counts.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/read/cursor.hpp"

namespace scalatrace {
namespace {

using extrap::ArrayPlan;
using extrap::RolePlan;
using extrap::ValuePlan;

std::string basename_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Sorted by size; rejects null, repeated sizes, different programs and too few sizes.
std::vector<std::size_t> validated_order(const std::vector<const Trace*>& inputs) {
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k] == nullptr || inputs[k]->nranks <= 0)
      throw UsageError("input trace " + std::to_string(k) + " is empty");
  std::vector<std::size_t> order(inputs.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return inputs[a]->nranks < inputs[b]->nranks; });
  for (std::size_t i = 1; i < order.size(); ++i)
    if (inputs[order[i]]->nranks == inputs[order[i - 1]]->nranks)
      throw ExtrapolationError("the same size twice: input traces " + std::to_string(order[i - 1]) + " and " +
                               std::to_string(order[i]) + " both have " + std::to_string(inputs[order[i]]->nranks) +
                               " ranks; give each size once");
  std::string program;
  std::size_t program_from = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    auto it = inputs[k]->metadata.find("program");
    if (it == inputs[k]->metadata.end()) continue;
    const auto p = basename_of(it->second);
    if (program.empty()) {
      program = p;
      program_from = k;
    } else if (p != program) {
      throw ExtrapolationError("traces of different programs: input " + std::to_string(program_from) + " is '" +
                               program + "' (" + std::to_string(inputs[program_from]->nranks) + " ranks), input " +
                               std::to_string(k) + " is '" + p + "' (" + std::to_string(inputs[k]->nranks) + " ranks)");
    }
  }
  if (inputs.size() < 3)
    throw ExtrapolationError("too few sizes: " + std::to_string(inputs.size()) +
                             " trace(s) given, extrapolation needs at least 3 different sizes (the laws have up to "
                             "2 unknowns per parameter in each dimension, and every law is checked on a size it was "
                             "not solved from)");
  return order;
}

Grid target_grid(const Topology& topo, const ExtrapolationOptions& opt) {
  if (!opt.target_grid.dims.empty()) {
    if (opt.target_grid.dims.size() != topo.ndims)
      throw UsageError("target dims " + opt.target_grid.to_string() + " have " +
                       std::to_string(opt.target_grid.dims.size()) + " dimensions but the inputs are " +
                       topo.explanation);
    for (auto d : opt.target_grid.dims)
      if (d <= 0) throw UsageError("target dims must be positive, got " + opt.target_grid.to_string());
    return opt.target_grid;
  }
  if (opt.target_ranks <= 0) throw UsageError("give the target size: ranks > 0 or dims");
  const auto grid = balanced_grid(opt.target_ranks, topo.ndims, topo.order);
  if (topo.order_ambiguous) {
    const auto other = balanced_grid(
        opt.target_ranks, topo.ndims,
        topo.order == GridOrder::FastestSmallest ? GridOrder::FastestLargest : GridOrder::FastestSmallest);
    if (!(other == grid))
      throw ExtrapolationError("the inputs' grids read the same in both orders (" + topo.explanation + "), but at " +
                               std::to_string(opt.target_ranks) + " ranks they differ (" + grid.to_string() + " or " +
                               other.to_string() + "); pass the target dims explicitly");
  }
  return grid;
}

std::int64_t eval_plan(const ValuePlan& p, const std::vector<std::int64_t>& features) {
  return p.constant ? p.value : p.law->eval(features);
}

/// Sets the factor from the input means to the target mean for each timing group.
void apply_timing(RolePlan& role, const std::vector<extrap::ExpandedInput>& inputs, double target,
                  const TimingModel& model) {
  auto scale_of = [&](const std::vector<double>& means) {
    std::vector<double> xs, ys;
    for (std::size_t k = 0; k < means.size(); ++k)
      if (!std::isnan(means[k])) {
        xs.push_back(static_cast<double>(inputs[k].grid.size()));
        ys.push_back(means[k]);
      }
    if (!model || xs.size() < 2 || ys.back() <= 0) return 1.0;
    const double predicted = model(xs, ys, target);
    if (!std::isfinite(predicted) || predicted <= 0) return 0.0;
    return predicted / ys.back();
  };
  role.compute_scale.clear();
  role.duration_scale.clear();
  for (std::size_t g = 0; g < role.timing_keys.size(); ++g) {
    role.compute_scale.push_back(scale_of(role.compute_means[g]));
    role.duration_scale.push_back(scale_of(role.duration_means[g]));
  }
  // Samples of the role's rank in the largest input that has the role.
  std::size_t rep_index = 0;
  for (std::size_t m = 0; m < role.members.size(); ++m)
    if (role.members[m].first >= role.members[rep_index].first) rep_index = m;
  const auto rep = role.members[rep_index];
  Cursor cur(*inputs[rep.first].trace, rep.second, TimingMode::Sample,
             0x5ca1e + static_cast<std::uint64_t>(rep.second));
  auto sample = [&](extrap::EventPlan& ep, const Event& e) {
    ep.sample_compute = static_cast<std::uint64_t>(
        std::llround(static_cast<double>(e.compute_ns) * role.compute_scale[ep.timing_group]));
    ep.sample_duration = static_cast<std::uint64_t>(
        std::llround(static_cast<double>(e.duration_ns) * role.duration_scale[ep.timing_group]));
  };
  if (role.stages) {
    // A loop's body calls take the representative's first iteration's samples.
    std::size_t i = 0;
    for (const auto& unit : role.units[rep_index]) {
      const std::size_t period = unit.loop ? unit.period : 1;
      for (std::size_t b = 0; b < period && unit.count > 0; ++b)  // a loop it makes 0 times: none
        if (auto e = cur.next()) sample(role.events[i + b], *e);
      for (std::int64_t k = 1; k < unit.count; ++k)
        for (std::size_t b = 0; b < period; ++b) cur.next();
      i += period;
    }
    return;
  }
  const auto& rep_repeats = inputs[rep.first].repeats[static_cast<std::size_t>(rep.second)];
  for (std::size_t i = 0; i < role.events.size(); ++i) {
    auto e = cur.next();
    if (!e) break;
    sample(role.events[i], *e);
    // A run of identical calls: the representative's further calls of the run.
    for (std::int64_t k = 1; role.runs && i < rep_repeats.size() && k < rep_repeats[i]; ++k) cur.next();
  }
}

class RankGenerator {
 public:
  /// `sites`: the call-site table the events' sites index (matching by innermost frames).
  RankGenerator(const Grid& target, std::size_t ndims, const CallSiteTable& sites, bool periodic)
      : target_(target),
        sites_(sites),
        scalar_(FeatureSpace::make(ndims, false, false, periodic)),
        indexed_(FeatureSpace::make(ndims, true, false, periodic)),
        stage_(FeatureSpace::make(ndims, false, true, periodic)) {}

  /// The events of the target rank at `coords` (the role's plan evaluated there).
  std::vector<Event> events(const RolePlan& role, const std::vector<std::int64_t>& coords) {
    const auto fs = scalar_.values(target_, coords);
    std::vector<Event> out;
    for (std::size_t i = 0; i < role.events.size();) {
      const auto& ep = role.events[i];
      if (ep.loop_period > 0) {
        // A stage loop: its body n times, the laws evaluated at iteration k of n.
        const auto n = eval_at(ep.loop_count, fs, coords, 0, 0);
        if (n < 0 || n > (std::int64_t{1} << 20))
          throw ExtrapolationError("a loop trip-count law gives " + std::to_string(n) + " iterations of " +
                                   std::string(op_name(ep.op)) + "@site " + std::to_string(ep.site) + " at the target");
        for (std::int64_t k = 0; k < n; ++k)
          for (std::size_t b = 0; b < ep.loop_period; ++b) out.push_back(build(role.events[i + b], fs, coords, k, n));
        i += ep.loop_period;
        continue;
      }
      const Event e = build(ep, fs, coords, 0, 0);
      const auto repeat = eval_plan(ep.repeat, fs);
      if (repeat < 0 || repeat > (std::int64_t{1} << 28))
        throw ExtrapolationError("a repeat-count law gives " + std::to_string(repeat) + " calls of " +
                                 std::string(op_name(ep.op)) + "@site " + std::to_string(ep.site) + " at the target");
      for (std::int64_t k = 0; k < repeat; ++k) out.push_back(e);
      ++i;
    }
    return out;
  }

  std::vector<Node> nodes(const RolePlan& role, const std::vector<std::int64_t>& coords) {
    IntraCompressor compressor;
    compressor.set_sites(&sites_);
    for (const auto& e : events(role, coords)) compressor.push(e);
    return compressor.finish();
  }

  CommTable comms(const RolePlan& role, const std::vector<std::int64_t>& coords) {
    CommTable t;
    const auto fs = scalar_.values(target_, coords);
    for (const auto& cp : role.comms) {
      const auto len = eval_plan(cp.length, fs);
      if (len < 0)
        throw ExtrapolationError("communicator " + std::to_string(cp.id) + " gets a negative size at the target");
      const auto first = eval_plan(cp.member, indexed_.values(target_, coords, 0));
      const auto stride = len > 1 ? eval_plan(cp.member, indexed_.values(target_, coords, 1)) - first : 1;
      t.entries.push_back(CommEntry{cp.id, RankList::range(first, len, stride), RankList{}});
    }
    return t;
  }

 private:
  /// A plan's value: over the stage space (iteration k of n) if its law was found there.
  std::int64_t eval_at(const ValuePlan& p, const std::vector<std::int64_t>& fs, const std::vector<std::int64_t>& coords,
                       std::int64_t k, std::int64_t n) const {
    if (!p.staged) return eval_plan(p, fs);
    return eval_plan(p, stage_.values(target_, coords, 0, k, n));
  }

  /// One event of the plan at the rank (`fs`: its scalar features), iteration k of n.
  Event build(const extrap::EventPlan& ep, const std::vector<std::int64_t>& fs, const std::vector<std::int64_t>& coords,
              std::int64_t k, std::int64_t n) const {
    Event e;
    e.op = ep.op;
    e.site = ep.site;
    for (std::size_t f = 0; f < kFieldCount; ++f) e.fields[f] = eval_at(ep.fields[f], fs, coords, k, n);
    for (std::size_t a = 0; a < kArrayFieldCount; ++a) {
      const ArrayPlan& ap = ep.arrays[a];
      auto& out = e.arrays[a];
      switch (ap.kind) {
        case ArrayPlan::Kind::Constant:
          out = ap.constant;
          break;
        case ArrayPlan::Kind::Elementwise:
          out.clear();
          for (const auto& el : ap.elements) out.push_back(eval_plan(el, fs));
          break;
        case ArrayPlan::Kind::Sequence: {
          const auto len = eval_plan(ap.length, fs);
          if (len < 0 || len > (std::int64_t{1} << 28))
            throw ExtrapolationError("an array length law gives " + std::to_string(len) + " at the target");
          out.resize(static_cast<std::size_t>(len));
          for (std::int64_t j = 0; j < len; ++j)
            out[static_cast<std::size_t>(j)] =
                eval_plan(ap.by_residue[static_cast<std::size_t>(j % ap.modulus)], indexed_.values(target_, coords, j));
          break;
        }
      }
    }
    e.compute_ns = ep.sample_compute;
    e.duration_ns = ep.sample_duration;
    return e;
  }

  const Grid& target_;
  const CallSiteTable& sites_;
  FeatureSpace scalar_, indexed_, stage_;
};

LawValue law_value(const ValuePlan& p) {
  LawValue v;
  v.constant = p.constant;
  v.value = p.value;
  if (!p.constant && p.law) v.law = *p.law;
  return v;
}

/// The role's plan as public laws (timing left out: scalable benchmarks reproduce the calls).
RoleLaws role_laws(const RoleKey& key, const RolePlan& role) {
  RoleLaws out;
  out.key = key;
  for (const auto& ep : role.events) {
    LawEvent e;
    e.op = ep.op;
    e.site = ep.site;
    e.repeat = law_value(ep.repeat);
    for (std::size_t f = 0; f < kFieldCount; ++f) e.fields[f] = law_value(ep.fields[f]);
    for (std::size_t a = 0; a < kArrayFieldCount; ++a) {
      const ArrayPlan& ap = ep.arrays[a];
      LawArray& la = e.arrays[a];
      la.kind = static_cast<LawArray::Kind>(ap.kind);
      la.constant = ap.constant;
      for (const auto& el : ap.elements) la.elements.push_back(law_value(el));
      la.length = law_value(ap.length);
      la.modulus = ap.modulus;
      for (const auto& el : ap.by_residue) la.by_residue.push_back(law_value(el));
    }
    out.events.push_back(std::move(e));
  }
  for (const auto& cp : role.comms) out.comms.push_back(LawComm{cp.id, law_value(cp.length), law_value(cp.member)});
  return out;
}

std::string join_laws(const std::vector<ParameterLaw>& laws) {
  std::string s;
  for (const auto& l : laws) s += l.role + "\t" + l.where + "\t" + l.field + "\t" + l.formula + "\t" + l.status + "\n";
  return s;
}

}  // namespace

/// Refuses a target larger than the options allow before any work: the search and the build
/// both walk every target rank.
void check_target_size(const ExtrapolationOptions& opt) {
  constexpr std::int64_t kFormat = kMaxExtrapolationRanks;
  std::int64_t n = opt.target_ranks;
  std::string what = std::to_string(n) + " ranks";
  if (!opt.target_grid.dims.empty()) {
    n = 1;
    for (auto d : opt.target_grid.dims) {
      if (d <= 0) throw UsageError("target dims must be positive, got " + opt.target_grid.to_string());
      n = d > kFormat / n ? kFormat + 1 : n * d;  // saturates: only "above the format's limit" matters
    }
    what = "dims " + opt.target_grid.to_string() + " (" +
           (n > kFormat ? "more than " + std::to_string(kFormat) : std::to_string(n)) + " ranks)";
  }
  if (n > kFormat)
    throw UsageError("target of " + what + " exceeds the trace format's limit of " + std::to_string(kFormat) +
                     " ranks");
  if (n > opt.max_ranks)
    throw UsageError("target of " + what + " exceeds max_ranks=" + std::to_string(opt.max_ranks) +
                     " (extrapolation takes time and memory proportional to the rank count; 1,048,576 ranks "
                     "take minutes); pass a larger max_ranks to lift the limit");
}

namespace {

/// One (grid, boundary depth, rank modulus) tried: its role plans and laws, or its failures.
struct Attempt {
  const Topology* topo = nullptr;
  std::size_t candidate = 0;  ///< index of the grid among the candidates
  Grid target;
  int depth = 0;
  std::int64_t modulus = 1;
  bool root_apart = false;  ///< rank 0 is a role of its own
  std::map<RoleKey, RolePlan> roles;
  std::vector<ParameterLaw> laws;
  std::vector<extrap::Failure> failures;

  /// How many input traces the target's roles draw on: a reading of the inputs under which
  /// some input plays no role at the target (a 3D grid 1x2x3 whose roles all have X = 1,
  /// and the target's X = 2) was not checked against that input.
  std::size_t inputs_used() const {
    std::set<std::size_t> used;
    for (const auto& [key, role] : roles)
      for (const auto& m : role.members) used.insert(m.first);
    return used.size();
  }
  std::size_t structural() const {
    return static_cast<std::size_t>(
        std::count_if(failures.begin(), failures.end(), [](const extrap::Failure& f) { return f.structural; }));
  }
  bool only_ambiguous() const {
    return std::all_of(failures.begin(), failures.end(), [](const extrap::Failure& f) { return f.ambiguous; });
  }
  std::string describe() const {
    return topo->explanation + "; boundary depth " + std::to_string(depth) + ", rank modulus " +
           std::to_string(modulus) + (root_apart ? ", rank 0 a role of its own" : "") + "; target grid " +
           target.to_string();
  }
};

/// The closer of two failed attempts. Grids the point-to-point end points reveal come first, in
/// the order of identification (the grid the code communicates on is where its parameters'
/// problems are worth naming), then the others; within one grid, and among the others, fewer
/// structural problems (a role no input shows, event sequences that differ), then an attempt
/// whose problems are all ambiguities (every input value fits a law, the inputs only do not
/// decide the target) before one with a parameter no law reproduces or the inputs cannot
/// check, then fewer parameters without a law; ties keep the earlier one. (Planning an attempt
/// stops once it has more problems than the closest one and one is not an ambiguity: such an
/// attempt is never closer under this order.)
bool closer(const Attempt& a, const Attempt& b) {
  const bool ra = a.topo->depth_found, rb = b.topo->depth_found;
  if (ra != rb) return ra;
  if (ra && a.topo != b.topo) return a.candidate < b.candidate;
  if (a.structural() != b.structural()) return a.structural() < b.structural();
  if (a.only_ambiguous() != b.only_ambiguous()) return a.only_ambiguous();
  return a.failures.size() < b.failures.size();
}

std::string event_text(const Event& e) {
  std::string s = std::string(op_name(e.op)) + "@site " + std::to_string(e.site);
  for (std::size_t f = 0; f < kFieldCount; ++f)
    if (e.fields[f] != 0) s += " " + std::string(field_name(static_cast<Field>(f))) + "=" + std::to_string(e.fields[f]);
  for (std::size_t a = 0; a < kArrayFieldCount; ++a)
    if (!e.arrays[a].empty()) {
      s += " " + std::string(array_field_name(static_cast<ArrayField>(a))) + "=[";
      for (std::size_t j = 0; j < e.arrays[a].size() && j < 8; ++j)
        s += (j ? "," : "") + std::to_string(e.arrays[a][j]);
      s += e.arrays[a].size() > 8 ? ",...]" : "]";
    }
  return s;
}

/// The first target rank whose events or communicators differ between two successful attempts,
/// described; "" if they build the same trace. An alternative whose laws cannot be evaluated
/// at the target (`alternative_broken`) builds no trace and is not a competitor.
std::string disagreement(const Attempt& a, const Attempt& b, bool periodic, bool& alternative_broken) {
  // Events only (never compressed here), so no call-site table is needed for matching.
  static const CallSiteTable kNoSites;
  RankGenerator ga(a.target, a.topo->ndims, kNoSites, periodic), gb(b.target, b.topo->ndims, kNoSites, periodic);
  alternative_broken = false;
  const std::int64_t n = a.target.size();
  for (std::int64_t r = 0; r < n; ++r) {
    const auto& ra = a.roles.at(role_key(a.target, r, a.depth, a.modulus, a.root_apart));
    const auto& rb = b.roles.at(role_key(b.target, r, b.depth, b.modulus, b.root_apart));
    const auto ca = a.target.coords(r), cb = b.target.coords(r);
    const auto ea = ga.events(ra, ca);
    std::vector<Event> eb;
    CommTable ta = ga.comms(ra, ca), tb;
    try {
      eb = gb.events(rb, cb);
      tb = gb.comms(rb, cb);
    } catch (const Error&) {
      alternative_broken = true;
      return "";
    }
    const std::string where =
        "rank " + std::to_string(r) + " (grid " + a.target.to_string() + " or " + b.target.to_string() + ")";
    for (std::size_t i = 0; i < std::min(ea.size(), eb.size()); ++i)
      if (!(ea[i].op == eb[i].op && ea[i].site == eb[i].site && ea[i].fields == eb[i].fields &&
            ea[i].arrays == eb[i].arrays))
        return where + " event " + std::to_string(i) + ": " + event_text(ea[i]) + " vs " + event_text(eb[i]);
    if (ea.size() != eb.size())
      return where + ": " + std::to_string(ea.size()) + " vs " + std::to_string(eb.size()) + " events";
    for (std::size_t c = 0; c < std::min(ta.entries.size(), tb.entries.size()); ++c)
      if (ta.entries[c].id != tb.entries[c].id ||
          ta.entries[c].members.to_vector() != tb.entries[c].members.to_vector())
        return where + ": communicator " + std::to_string(ta.entries[c].id) + " has members " +
               ta.entries[c].members.to_string() + " vs " + tb.entries[c].members.to_string();
    if (ta.entries.size() != tb.entries.size()) return where + ": different communicators";
  }
  return "";
}

}  // namespace

ExtrapolationResult extrapolate(const std::vector<const Trace*>& inputs_given, const ExtrapolationOptions& options) {
  check_target_size(options);
  std::vector<Trace> evened;
  std::vector<const Trace*> inputs_in = inputs_given;
  std::string even_text;
  if (options.even_alltoall_counts) {
    EvenCountsReport total;
    for (const Trace* t : inputs_given) {
      EvenCountsReport one;
      evened.push_back(even_alltoall_counts(*t, &one));
      total.nodes += one.nodes;
      total.calls += one.calls;
      total.changed_arrays += one.changed_arrays;
      total.max_element_deviation = std::max(total.max_element_deviation, one.max_element_deviation);
      total.max_total_deviation = std::max(total.max_total_deviation, one.max_total_deviation);
    }
    for (std::size_t k = 0; k < evened.size(); ++k) inputs_in[k] = &evened[k];
    std::ostringstream text;
    text.precision(3);
    text << "lossy: the count arrays of " << total.calls << " Alltoallv/Ialltoallv calls of the inputs were made even"
         << " (the mean total over the ranks split evenly, in whole elements); " << total.changed_arrays
         << " send or receive arrays changed, by up to " << 100.0 * total.max_element_deviation << "% per element and "
         << 100.0 * total.max_total_deviation << "% per total";
    even_text = text.str();
  }
  const auto order = validated_order(inputs_in);
  std::vector<const Trace*> inputs;
  std::vector<Grid> given;
  for (auto k : order) {
    inputs.push_back(inputs_in[k]);
    if (!options.input_grids.empty()) {
      if (options.input_grids.size() != inputs_in.size())
        throw UsageError("input_grids has " + std::to_string(options.input_grids.size()) + " grids for " +
                         std::to_string(inputs_in.size()) + " traces");
      given.push_back(options.input_grids[k]);
    }
  }
  ExtrapolationResult res;
  const auto candidates = topology_candidates(inputs, given);
  extrap::CanonicalTables tables;
  for (const auto& call : options.snippet)
    if (call.site >= static_cast<std::int64_t>(inputs.back()->sites.size()))
      throw UsageError("snippet call " + std::string(op_name(call.op)) + "@" + std::to_string(call.site) +
                       ": the largest input has call sites 0.." + std::to_string(inputs.back()->sites.size() - 1));
  extrap::InputFilter filter{options.drop_local, options.snippet, 0, 0, {}, options.common_events, {}};
  auto expanded = extrap::expand_inputs(inputs, candidates.front().grids, tables, filter);
  res.common_dropped = filter.common_dropped;
  res.dropped_events = filter.dropped;
  res.input_events = filter.total;
  res.dropped_by_op = filter.dropped_by_op;
  res.periodic = options.periodic;

  // Every candidate grid (best explained first) with the smallest boundary depth and rank
  // modulus under which every parameter of every role has a law and every target rank's role
  // occurs in the inputs. The first such grid builds the trace; every other one that also
  // explains the inputs must build the same trace at the target, or the inputs do not decide.
  // Rank 0's event count changes with the size, and not only by runs of one repeated call: the
  // code may have stage loops, whose roles may only show at a smaller boundary depth than the
  // end points' (NPB CG: every rank has its own end points, every role at depth 2 occurs at
  // one input size only, and its log2 loops are read at depth 1 or 0).
  bool counts_change = false;
  for (std::size_t k = 1; k < expanded.size(); ++k)
    counts_change = counts_change || (expanded[k].events[0].size() != expanded[0].events[0].size() &&
                                      expanded[k].runs[0].size() != expanded[0].runs[0].size());
  std::vector<Attempt> explained;
  Attempt closest;
  // Grids under which no parameter is wrong but some are ambiguous (several laws reproduce the
  // values and differ at the target): the inputs fit them too, so they compete.
  std::vector<Attempt> undecided;
  std::string target_problem;
  for (const auto& topo : candidates) {
    Grid target;
    try {
      target = target_grid(topo, options);
    } catch (const Error& e) {
      if (target_problem.empty()) target_problem = e.what();
      continue;
    }
    for (std::size_t k = 0; k < expanded.size(); ++k) expanded[k].grid = topo.grids[k];
    const std::int64_t n = target.size();
    bool found = false;
    Attempt first_undecided;
    // Boundary depths from the one the end points show up to 3, then the smaller ones: codes
    // whose peers follow a law in the rank's bits (butterflies, CG's reductions) show every rank
    // as its own class, and their laws hold for the whole row or grid (depth 0: one role).
    // Periodic neighbour laws hold for every rank of a torus: one role (depth 0) first.
    std::vector<int> depths;
    if (options.periodic) depths.push_back(0);
    for (int d = topo.depth; d <= 3; ++d)
      if (!options.periodic || d > 0) depths.push_back(d);
    for (int d = options.periodic ? 1 : 0; d < topo.depth; ++d) depths.push_back(d);
    bool stage_loops = false;    // some role of an attempt at this grid was read as stage loops
    bool roles_missing = false;  // some attempt at this grid has target roles no input shows
    for (std::int64_t modulus : {1, 2, 3, 4}) {
      // Each depth as it is, then, where rank 0's events differ from those of the other ranks of
      // its role (a timer or a print only rank 0 makes), with rank 0 as a role of its own.
      bool root_shape = false;
      for (std::size_t step = 0; step < 2 * depths.size() && !found; ++step) {
        const int depth = depths[step / 2];
        const bool apart = step % 2 == 1;
        if (apart && !root_shape) continue;
        root_shape = false;
        Attempt a{&topo, static_cast<std::size_t>(&topo - candidates.data()), target, depth, modulus, apart, {}, {},
                  {}};
        std::set<RoleKey> needed;
        std::map<RoleKey, std::int64_t> first_rank;
        for (std::int64_t r = 0; r < n; ++r) {
          auto key = role_key(target, r, depth, modulus, apart);
          if (needed.insert(key).second) first_rank.emplace(key, r);
        }
        // Target roles no input shows (structural problems) first: they decide whether this
        // attempt can still be the closest one, and planning stops once it cannot.
        std::set<RoleKey> shown;
        for (std::size_t k = 0; k < expanded.size(); ++k)
          for (std::int64_t r = 0; r < expanded[k].grid.size(); ++r) {
            auto key = role_key(expanded[k].grid, r, depth, modulus, apart);
            if (needed.count(key)) shown.insert(std::move(key));
          }
        std::size_t missing = 0;
        for (const auto& key : needed)
          if (!shown.count(key) && missing++ < 4)
            a.failures.push_back({true, "target rank " + std::to_string(first_rank[key]) + " is in role " +
                                            key.to_string() +
                                            " which no input shows (the inputs are too small for boundary depth " +
                                            std::to_string(depth) + ")"});
        // An attempt with more structural problems than the closest one, or as many and more
        // failures, is neither explained nor closer: it is planned only as far as that shows.
        // A depth below the identified one is a fallback: it counts only if it explains every
        // parameter, and is never the attempt a refusal reports.
        const bool fallback = depth < topo.depth && !(options.periodic && depth == 0);
        // Only codes with stage loops, or whose target roles at the deeper depths no input shows
        // (a transpose partner gives every rank its own end points), need it.
        if (fallback && !stage_loops && !counts_change && !roles_missing) continue;
        if (!fallback && missing > 0) roles_missing = true;
        std::size_t budget = SIZE_MAX;
        bool skip = closest.topo && a.structural() > closest.structural();
        if (closest.topo && a.structural() == closest.structural()) budget = closest.failures.size();
        if (fallback) {
          skip = a.structural() > 0;
          budget = 0;  // stops at the first parameter without a law
        }
        if (!skip)
          a.roles =
              extrap::plan_roles(expanded, target, topo.ndims, depth, modulus, needed, a.failures, a.laws, budget,
                                 options.uneven_splits_from_inputs, options.periodic, options.assume_constant, apart);
        for (const auto& [key, role] : a.roles) stage_loops = stage_loops || role.stages;
        for (const auto& f : a.failures) root_shape = root_shape || (!apart && f.root_shape);
        if (std::getenv("SCALATRACE_EXTRAPOLATE_DEBUG")) {  // every attempt's first problems
          std::fprintf(stderr, "attempt %s depth %d modulus %lld%s: %zu problems%s\n", topo.explanation.c_str(), depth,
                       static_cast<long long>(modulus), apart ? " rank 0 apart" : "", a.failures.size(),
                       skip ? " (skipped)" : "");
          for (std::size_t f = 0; f < a.failures.size() && f < 4; ++f)
            std::fprintf(stderr, "  %s\n", a.failures[f].text.substr(0, 600).c_str());
        }
        const bool only_ambiguous = a.only_ambiguous();
        if (a.failures.empty()) {
          explained.push_back(std::move(a));
          found = true;
        } else {
          if (only_ambiguous && !first_undecided.topo && !fallback) first_undecided = a;
          // A fallback under which every role occurs and the values fit but some are not
          // decided (8*floor(1400/X) or 8*floor(1401/X)?) tells more than roles no input shows.
          // Among such fallbacks, the one with the fewest undecided values.
          const bool closest_fallback = closest.topo && closest.depth < closest.topo->depth;
          const bool telling_fallback = fallback && !skip && only_ambiguous && a.structural() == 0 &&
                                        (!closest.topo || closest.structural() > 0 ||
                                         (closest_fallback && a.failures.size() < closest.failures.size()));
          if ((!fallback && (!closest.topo || closer(a, closest))) || telling_fallback) closest = std::move(a);
        }
      }
      if (found) break;
    }
    // A dimension of size 1 in every input is no dimension of the inputs: such a reading adds
    // one at the target and is not a competitor of readings the inputs show.
    bool degenerate = false;
    for (std::size_t d = 0; d < topo.ndims; ++d) {
      bool unit = true;
      for (const auto& g : topo.grids) unit = unit && g.dims[d] == 1;
      degenerate = degenerate || (unit && target.dims[d] > 1);
    }
    if (!found && first_undecided.topo && !degenerate) undecided.push_back(std::move(first_undecided));
  }
  if (explained.empty()) {
    if (!closest.topo) throw ExtrapolationError(target_problem);
    // The parameter problem that decides the refusal leads: the first of the most certain kind
    // (values no law reproduces, then an ambiguity, then a law the inputs cannot check; see
    // failure_rank); every structural problem (a role no input shows: at most a few) follows,
    // then further parameters in the order they were found.
    auto lead = std::min_element(closest.failures.begin(), closest.failures.end(),
                                 [](const extrap::Failure& x, const extrap::Failure& y) {
                                   return extrap::failure_rank(x) < extrap::failure_rank(y);
                                 });
    std::rotate(closest.failures.begin(), lead, lead + 1);
    if (!closest.failures.front().structural)
      std::stable_partition(closest.failures.begin() + 1, closest.failures.end(),
                            [](const extrap::Failure& f) { return f.structural; });
    std::string msg =
        "cannot extrapolate: " + closest.failures.front().text + "\n  (closest attempt: " + closest.describe() + ")";
    const std::size_t shown = std::max<std::size_t>(8, closest.structural());
    if (closest.failures.size() > 1) msg += "\n  further problems:";
    for (std::size_t i = 1; i < closest.failures.size() && i <= shown; ++i) msg += "\n  " + closest.failures[i].text;
    if (closest.failures.size() > shown + 1)
      msg += "\n  ... and " + std::to_string(closest.failures.size() - shown - 1) + " more";
    throw ExtrapolationError(msg);
  }
  // The reading the inputs determine best: the one that draws on the most inputs (earlier
  // candidates first on ties). Readings that draw on fewer inputs are set aside; every
  // other one must build the same trace.
  std::stable_sort(explained.begin(), explained.end(),
                   [](const Attempt& a, const Attempt& b) { return a.inputs_used() > b.inputs_used(); });
  // Competitors: readings that draw on as many inputs, and whose grid the point-to-point end
  // points reveal if the chosen one's does (a grid under which ranks with different end points
  // share a boundary class is contradicted by the inputs).
  auto competes = [&](const Attempt& a) {
    return a.inputs_used() >= explained.front().inputs_used() &&
           (a.topo->depth_found || !explained.front().topo->depth_found);
  };
  std::size_t agreeing = 0, set_aside = 0;
  for (std::size_t i = 1; i < explained.size(); ++i) {
    if (!competes(explained[i])) {
      ++set_aside;
      continue;
    }
    bool broken = false;
    const auto diff = disagreement(explained.front(), explained[i], options.periodic, broken);
    if (!diff.empty())
      throw ExtrapolationError(
          "ambiguous: two grids explain every input value but give different traces at the target:\n  (1) " +
          explained.front().describe() + "\n  (2) " + explained[i].describe() + "\n  first difference at " + diff +
          "\n  add an input size that tells them apart, or pass the input and target grids (input_dims, dims)");
    if (!broken) ++agreeing;
  }
  // A grid under which some value is only undetermined competes if the end points reveal it:
  // when they reveal no grid (collectives only), it is no evidence against a reading under
  // which every value is determined.
  for (const auto& u : undecided)
    if (competes(u) && u.topo->depth_found)
      throw ExtrapolationError(
          "ambiguous: two grids fit every input value but the inputs do not decide the trace at the target:\n  (1) " +
          explained.front().describe() + "\n  (2) " + u.describe() + ", under which " + u.failures.front().text +
          "\n  add an input size that tells them apart, or pass the input and target grids (input_dims, dims)");
  Attempt& chosen = explained.front();
  std::map<RoleKey, RolePlan>& roles = chosen.roles;
  res.laws = std::move(chosen.laws);
  for (const auto& law : res.laws) {
    const auto at = law.status.find("; simplest of several: ");
    if (at != std::string::npos)
      res.warnings.push_back("role " + law.role + ", " + law.where + ", " + law.field + ": " +
                             law.status.substr(at + 23));
  }
  if (options.assume_constant) {
    // Grid sizes the same at every input that change at the target: kept out of every law.
    const auto& grids = chosen.topo->grids;
    std::string sizes;
    for (std::size_t d = 0; d < chosen.target.dims.size(); ++d) {
      bool same = true;
      for (const auto& g : grids) same = same && d < g.dims.size() && g.dims[d] == grids.front().dims[d];
      if (same && d < grids.front().dims.size() && grids.front().dims[d] != chosen.target.dims[d])
        sizes += std::string(sizes.empty() ? "" : ", ") + "XYZ"[d] + " = " + std::to_string(grids.front().dims[d]) +
                 " at every input, " + std::to_string(chosen.target.dims[d]) + " at the target";
    }
    if (!sizes.empty())
      res.warnings.push_back("assume_constant: " + sizes +
                             "; no law uses it (values equal at every input are constants, as in weak scaling)");
  }
  if (options.refuse_undecided && !res.warnings.empty()) {
    std::string text =
        "undecided: the inputs do not decide between laws that differ at the target (refused, as "
        "asked; without strict the simplest law is taken with a warning):";
    for (const auto& w : res.warnings) text += "\n  " + w;
    throw ExtrapolationError(text + "\n  add an input size that tells them apart");
  }
  res.depth = chosen.depth;
  res.modulus = chosen.modulus;
  res.root_apart = chosen.root_apart;
  res.topology = *chosen.topo;
  res.target = chosen.target;
  const Grid& target = res.target;
  const std::int64_t n = target.size();
  for (std::size_t k = 0; k < expanded.size(); ++k) expanded[k].grid = res.topology.grids[k];

  for (auto& [key, role] : roles) apply_timing(role, expanded, static_cast<double>(n), options.timing);

  RankGenerator gen(target, res.topology.ndims, tables.sites, options.periodic);
  std::map<RoleKey, std::vector<Node>> cache;
  std::map<RoleKey, std::int64_t> role_ranks;
  TreeMerger merger;
  for (std::int64_t r = 0; r < n; ++r) {
    const auto key = role_key(target, r, res.depth, res.modulus, res.root_apart);
    const RolePlan& role = roles.at(key);
    ++role_ranks[key];
    const auto coords = target.coords(r);
    std::vector<Node> nodes;
    if (!role.rank_dependent) {
      auto it = cache.find(key);
      if (it == cache.end()) it = cache.emplace(key, gen.nodes(role, coords)).first;
      nodes.reserve(it->second.size());
      for (const auto& node : it->second) nodes.push_back(node.clone());
    } else {
      nodes = gen.nodes(role, coords);
    }
    merger.push(make_rank_trace(r, n, std::move(nodes), tables.sites, gen.comms(role, coords), tables.names));
  }
  res.trace = merger.finish();

  for (const auto& [key, role] : roles) res.role_laws.push_back(role_laws(key, role));
  for (const auto& [key, count] : role_ranks)
    res.roles.push_back(key.to_string() + ": " + std::to_string(count) + " ranks, " +
                        std::to_string(roles.at(key).members.size()) + " input ranks");
  auto& md = res.trace.metadata;
  md = inputs.back()->metadata;
  md.erase("merge_seconds");
  md.erase("peak_memory_bytes");
  std::string from, grids;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    from += (k ? "," : "") + std::to_string(inputs[k]->nranks);
    grids += (k ? "," : "") + res.topology.grids[k].to_string();
  }
  md["extrapolated_from"] = from;
  md["extrapolation_input_grids"] = grids;
  md["extrapolation_grid"] = target.to_string();
  md["extrapolation_topology"] = res.topology.explanation;
  md["extrapolation_roles"] = "boundary depth " + std::to_string(res.depth) + ", rank modulus " +
                              std::to_string(res.modulus) + (res.root_apart ? ", rank 0 a role of its own" : "") +
                              ", " + std::to_string(roles.size()) + " roles";
  md["extrapolation_alternatives"] =
      std::to_string(agreeing) + " other grid(s) also explain the inputs and build the same trace at the target" +
      (set_aside ? "; " + std::to_string(set_aside) +
                       " set aside (they leave some input unused at the target, or the end points contradict them)"
                 : "");
  md["extrapolation_laws"] = join_laws(res.laws);
  md["extrapolation_timing"] = options.timing ? "per event node model (mean time over the input sizes)"
                                              : "copied from the largest input (no timing model)";
  if (!res.warnings.empty()) {
    std::string text;
    for (const auto& w : res.warnings) text += w + "\n";
    md["extrapolation_warnings"] = text;
  }
  std::uint64_t uncommon = 0;  // dropped by the common-events step, reported on its own
  for (const auto& entry : res.common_dropped) uncommon += entry.second.first;
  const std::uint64_t filtered = res.dropped_events - uncommon;
  if (!options.snippet.empty()) {
    std::ostringstream share;
    share.precision(3);
    share << "lossy (snippet";
    for (const auto& call : options.snippet)
      share << " " << op_name(call.op) << (call.site >= 0 ? "@" + std::to_string(call.site) : "");
    share << "): " << filtered << " of " << res.input_events << " input events ("
          << (res.input_events ? 100.0 * static_cast<double>(filtered) / static_cast<double>(res.input_events) : 0.0)
          << "%) were outside the snippet's sequences and were dropped before extrapolating (";
    bool first = true;
    for (const auto& [op, count] : res.dropped_by_op) {
      share << (first ? "" : ", ") << op << " " << count;
      first = false;
    }
    share << ")" << (options.drop_local ? "; local calls (Other) dropped as well" : "");
    md["extrapolation_dropped"] = share.str();
  } else if (options.drop_local) {
    std::ostringstream share;
    share.precision(3);
    share << "lossy: " << filtered << " of " << res.input_events << " input events ("
          << (res.input_events ? 100.0 * static_cast<double>(filtered) / static_cast<double>(res.input_events) : 0.0)
          << "%) were local calls (Other) and were dropped before extrapolating";
    md["extrapolation_dropped"] = share.str();
  }
  if (options.common_events) {
    // The LCS step's share per input, after whatever the other lossy options dropped.
    std::ostringstream share;
    share.precision(3);
    share << "lossy (common events): the events not every rank of an input has were dropped before "
             "extrapolating:";
    bool first = true;
    for (const auto& [ranks, counts] : res.common_dropped) {
      const auto [dropped, before] = counts;
      share << (first ? " " : "; ") << dropped << " of " << before << " at " << ranks << " ranks ("
            << (before ? 100.0 * static_cast<double>(dropped) / static_cast<double>(before) : 0.0) << "%)";
      first = false;
    }
    const auto it = md.find("extrapolation_dropped");
    md["extrapolation_dropped"] = it == md.end() ? share.str() : it->second + "; " + share.str();
  }
  if (options.even_alltoall_counts) md["extrapolation_even_counts"] = even_text;
  res.even_counts = even_text;
  return res;
}

}  // namespace scalatrace
