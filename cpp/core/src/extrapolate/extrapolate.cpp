// Trace extrapolation: validation of the inputs, the search for the role partition whose laws
// explain every parameter, timing models, and the target trace built rank by rank through the
// collector's own compressor and radix-tree merge. See docs/extrapolation.md.
#include "scalatrace/extrapolate/extrapolate.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "extrapolate/extrapolate_roles.hpp"
#include "scalatrace/compress/compressor.hpp"
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
  auto rep = role.members.front();
  for (const auto& m : role.members)
    if (m.first >= rep.first) rep = m;
  Cursor cur(*inputs[rep.first].trace, rep.second, TimingMode::Sample,
             0x5ca1e + static_cast<std::uint64_t>(rep.second));
  for (auto& ep : role.events) {
    auto e = cur.next();
    if (!e) break;
    ep.sample_compute = static_cast<std::uint64_t>(
        std::llround(static_cast<double>(e->compute_ns) * role.compute_scale[ep.timing_group]));
    ep.sample_duration = static_cast<std::uint64_t>(
        std::llround(static_cast<double>(e->duration_ns) * role.duration_scale[ep.timing_group]));
  }
}

class RankGenerator {
 public:
  /// `sites`: the call-site table the events' sites index (matching by innermost frames).
  RankGenerator(const Grid& target, std::size_t ndims, const CallSiteTable& sites)
      : target_(target),
        sites_(sites),
        scalar_(FeatureSpace::make(ndims, false)),
        indexed_(FeatureSpace::make(ndims, true)) {}

  std::vector<Node> nodes(const RolePlan& role, const std::vector<std::int64_t>& coords) {
    const auto fs = scalar_.values(target_, coords);
    IntraCompressor compressor;
    compressor.set_sites(&sites_);
    Event e;
    for (const auto& ep : role.events) {
      e.op = ep.op;
      e.site = ep.site;
      for (std::size_t f = 0; f < kFieldCount; ++f) e.fields[f] = eval_plan(ep.fields[f], fs);
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
              out[static_cast<std::size_t>(j)] = eval_plan(ap.by_residue[static_cast<std::size_t>(j % ap.modulus)],
                                                           indexed_.values(target_, coords, j));
            break;
          }
        }
      }
      e.compute_ns = ep.sample_compute;
      e.duration_ns = ep.sample_duration;
      compressor.push(e);
    }
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
  const Grid& target_;
  const CallSiteTable& sites_;
  FeatureSpace scalar_, indexed_;
};

std::string join_laws(const std::vector<ParameterLaw>& laws) {
  std::string s;
  for (const auto& l : laws) s += l.role + "\t" + l.where + "\t" + l.field + "\t" + l.formula + "\n";
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

ExtrapolationResult extrapolate(const std::vector<const Trace*>& inputs_in, const ExtrapolationOptions& options) {
  check_target_size(options);
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

  // The topology and role partition: the first candidate grid (best explained first), the
  // smallest boundary depth and rank modulus under which every parameter of every role has a
  // law and every target rank's role occurs in the inputs.
  std::map<RoleKey, RolePlan> roles;
  std::vector<std::string> best_failures;
  std::string best_topology, target_problem;
  std::vector<extrap::ExpandedInput> expanded;
  extrap::CanonicalTables tables;
  bool found = false;
  for (const auto& topo : candidates) {
    Grid target;
    try {
      target = target_grid(topo, options);
    } catch (const Error& e) {
      if (target_problem.empty()) target_problem = e.what();
      continue;
    }
    const std::int64_t n = target.size();
    tables = extrap::CanonicalTables{};
    expanded = extrap::expand_inputs(inputs, topo.grids, tables);
    for (std::int64_t modulus : {1, 2, 3, 4}) {
      for (int depth = topo.depth; depth <= 3 && !found; ++depth) {
        std::vector<std::string> failures;
        std::vector<ParameterLaw> laws;
        std::set<RoleKey> needed;
        std::map<RoleKey, std::int64_t> first_rank;
        for (std::int64_t r = 0; r < n; ++r) {
          auto key = role_key(target, r, depth, modulus);
          if (needed.insert(key).second) first_rank.emplace(key, r);
        }
        auto plans = extrap::plan_roles(expanded, target, topo.ndims, depth, modulus, needed, failures, laws);
        std::size_t missing = 0;
        for (const auto& key : needed)
          if (!plans.count(key) && missing++ < 4)
            failures.push_back("target rank " + std::to_string(first_rank[key]) + " is in role " + key.to_string() +
                               " which no input shows (the inputs are too small for "
                               "boundary depth " +
                               std::to_string(depth) + ")");
        if (failures.empty()) {
          roles = std::move(plans);
          res.laws = std::move(laws);
          res.depth = depth;
          res.modulus = modulus;
          res.topology = topo;
          res.target = target;
          found = true;
        } else if (best_failures.empty() || failures.size() < best_failures.size()) {
          best_failures = std::move(failures);
          best_topology = topo.explanation;
        }
      }
      if (found) break;
    }
    if (found) break;
  }
  if (!found) {
    if (best_failures.empty()) throw ExtrapolationError(target_problem);
    std::string msg =
        "cannot extrapolate: no grid and role partition explains every parameter; "
        "the closest (" +
        best_topology + ") leaves these problems:";
    for (const auto& f : best_failures) msg += "\n  " + f;
    throw ExtrapolationError(msg);
  }
  const Grid& target = res.target;
  const std::int64_t n = target.size();
  if (expanded.empty() || !(expanded.front().grid == res.topology.grids.front()))
    expanded = extrap::expand_inputs(inputs, res.topology.grids, tables);

  for (auto& [key, role] : roles) apply_timing(role, expanded, static_cast<double>(n), options.timing);

  RankGenerator gen(target, res.topology.ndims, tables.sites);
  std::map<RoleKey, std::vector<Node>> cache;
  std::map<RoleKey, std::int64_t> role_ranks;
  TreeMerger merger;
  for (std::int64_t r = 0; r < n; ++r) {
    const auto key = role_key(target, r, res.depth, res.modulus);
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
                              std::to_string(res.modulus) + ", " + std::to_string(roles.size()) + " roles";
  md["extrapolation_laws"] = join_laws(res.laws);
  md["extrapolation_timing"] = options.timing ? "per event node model (mean time over the input sizes)"
                                              : "copied from the largest input (no timing model)";
  return res;
}

}  // namespace scalatrace
