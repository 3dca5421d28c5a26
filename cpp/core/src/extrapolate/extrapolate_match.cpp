// Roles and event matching for extrapolation (thesis §3.2.2, §3.2.3): ranks of every input are
// grouped by boundary class ("role"), which aligns the communication groups of different
// sizes by their position in the grid whatever order the merge left them in; inside a role the
// k-th event of every rank is the same MPI call, and each of its parameters gets a linear law.
// See docs/extrapolation.md ("Roles and matching").
#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "extrapolate/extrapolate_roles.hpp"
#include "scalatrace/read/cursor.hpp"

namespace scalatrace::extrap {

namespace {

bool same_event(const Event& a, const Event& b) {
  return a.op == b.op && a.site == b.site && a.fields == b.fields && a.arrays == b.arrays;
}

/// Kept outside a snippet sequence: what every rank's structure needs (thesis §3.2.4: the
/// collectives; here also Init/Finalize and communicator creation and freeing).
bool kept_outside_sequences(Op op) {
  const auto k = op_kind(op);
  return op_is_collective(op) || k == OpKind::Lifecycle || k == OpKind::CommCreate || k == OpKind::CommFree;
}

}  // namespace

}  // namespace scalatrace::extrap

namespace scalatrace {

std::vector<bool> snippet_keep(const std::vector<SnippetCall>& snippet, const std::vector<Op>& ops,
                               const std::vector<std::uint32_t>& sites) {
  if (ops.size() != sites.size()) throw UsageError("snippet_keep needs one site per operation");
  std::vector<bool> keep(ops.size(), false);
  if (snippet.empty()) {
    keep.assign(ops.size(), true);
    return keep;
  }
  auto matches = [&](std::size_t i, const SnippetCall& c) {
    return ops[i] == c.op && (c.site < 0 || static_cast<std::int64_t>(sites[i]) == c.site);
  };
  std::size_t state = 0;  // START, or the number of the snippet's calls matched so far
  std::vector<std::size_t> pending;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (state > 0) {
      if (matches(i, snippet[state])) {
        pending.push_back(i);
        if (++state == snippet.size()) {  // ACCEPT: the pending sequence is kept
          for (auto p : pending) keep[p] = true;
          pending.clear();
          state = 0;
        }
        continue;
      }
      pending.clear();  // ERROR: the broken sequence is dropped; the call is read from START
      state = 0;
    }
    if (matches(i, snippet[0])) {
      if (snippet.size() == 1) {
        keep[i] = true;
      } else {
        pending.push_back(i);
        state = 1;
      }
    } else if (extrap::kept_outside_sequences(ops[i])) {
      keep[i] = true;
    }
  }
  return keep;  // a sequence still pending at the end is dropped
}

}  // namespace scalatrace

namespace scalatrace::extrap {

std::vector<ExpandedInput> expand_inputs(const std::vector<const Trace*>& inputs, const std::vector<Grid>& grids,
                                         CanonicalTables& tables, InputFilter& filter) {
  filter.dropped = filter.total = 0;
  filter.dropped_by_op.clear();
  filter.common_dropped.clear();
  tables.sites = inputs.back()->sites;
  tables.names = inputs.back()->names;
  std::vector<ExpandedInput> out;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Trace& t = *inputs[k];
    std::vector<std::uint32_t> site_map(t.sites.size());
    for (std::uint32_t s = 0; s < t.sites.size(); ++s) site_map[s] = tables.sites.import(t.sites, s);
    std::vector<std::int64_t> name_map(t.names.size());
    for (std::size_t n = 0; n < t.names.size(); ++n) {
      auto it = std::find(tables.names.begin(), tables.names.end(), t.names[n]);
      if (it == tables.names.end()) {
        tables.names.push_back(t.names[n]);
        it = tables.names.end() - 1;
      }
      name_map[n] = it - tables.names.begin();
    }
    ExpandedInput in;
    in.trace = &t;
    in.grid = grids[k];
    in.events.resize(static_cast<std::size_t>(t.nranks));
    in.runs.resize(static_cast<std::size_t>(t.nranks));
    in.repeats.resize(static_cast<std::size_t>(t.nranks));
    in.comms.resize(static_cast<std::size_t>(t.nranks));
    // Every rank's events with what lossy extrapolation keeps of them (local calls, snippet),
    // then, with common_events, only the kept events every rank has.
    std::vector<std::vector<Event>> all(static_cast<std::size_t>(t.nranks));
    std::vector<std::vector<bool>> keep(static_cast<std::size_t>(t.nranks));
    for (std::int64_t r = 0; r < t.nranks; ++r) {
      auto& evs = all[static_cast<std::size_t>(r)];
      auto& kept = keep[static_cast<std::size_t>(r)];
      Cursor cur(t, r, TimingMode::Mean);
      while (auto e = cur.next()) {
        if (e->site < site_map.size()) e->site = site_map[e->site];
        evs.push_back(std::move(*e));
      }
      kept.assign(evs.size(), true);
      if (!filter.snippet.empty()) {
        std::vector<Op> ops;
        std::vector<std::uint32_t> sites;
        for (const auto& e : evs) {
          ops.push_back(e.op);
          sites.push_back(e.site);
        }
        kept = snippet_keep(filter.snippet, ops, sites);
      }
      for (std::size_t i = 0; i < evs.size(); ++i)
        if (filter.drop_local && evs[i].op == Op::Other) kept[i] = false;
    }
    std::vector<std::vector<bool>> uncommon(all.size());
    for (std::size_t r = 0; r < all.size(); ++r) uncommon[r].assign(all[r].size(), false);
    if (filter.common) {
      std::vector<std::vector<Event>> before(all.size());
      std::uint64_t count = 0, dropped = 0;
      for (std::size_t r = 0; r < all.size(); ++r)
        for (std::size_t i = 0; i < all[r].size(); ++i)
          if (keep[r][i]) before[r].push_back(all[r][i]);
      const auto common = common_keep(before);
      for (std::size_t r = 0; r < all.size(); ++r) {
        std::size_t j = 0;
        for (std::size_t i = 0; i < all[r].size(); ++i) {
          if (!keep[r][i]) continue;
          ++count;
          if (!common[r][j++]) {
            uncommon[r][i] = true;
            ++dropped;
          }
        }
      }
      filter.common_dropped.emplace_back(t.nranks, std::make_pair(dropped, count));
    }
    for (std::int64_t r = 0; r < t.nranks; ++r) {
      auto& evs = in.events[static_cast<std::size_t>(r)];
      auto& runs = in.runs[static_cast<std::size_t>(r)];
      auto& reps = in.repeats[static_cast<std::size_t>(r)];
      auto& rank_events = all[static_cast<std::size_t>(r)];
      const auto& kept = keep[static_cast<std::size_t>(r)];
      const auto& dropped_as_uncommon = uncommon[static_cast<std::size_t>(r)];
      for (std::size_t i = 0; i < rank_events.size(); ++i) {
        ++filter.total;
        if (!kept[i]) ++filter.dropped_by_op[std::string(op_name(rank_events[i].op))];
        if (!kept[i] || dropped_as_uncommon[i]) ++filter.dropped;
      }
      for (std::size_t i = 0; i < rank_events.size(); ++i) {
        if (!kept[i] || dropped_as_uncommon[i]) continue;
        Event& e = rank_events[i];
        if (e.op == Op::Other) {
          auto& id = e[Field::NameId];
          if (id >= 0 && static_cast<std::size_t>(id) < name_map.size()) id = name_map[static_cast<std::size_t>(id)];
        }
        if (!runs.empty() && same_event(runs.back(), e)) {
          ++reps.back();  // a run of identical calls (the mean timing of its first one is kept)
        } else {
          runs.push_back(e);
          reps.push_back(1);
        }
        evs.push_back(std::move(e));
      }
      auto& held = in.comms[static_cast<std::size_t>(r)];
      for (const auto& entry : t.comms.entries) {
        if (!entry.holders.empty() && !entry.holders.contains(r)) continue;
        if (entry.id == 1) continue;  // MPI_COMM_SELF: implicit
        held.push_back(HeldComm{entry.id, entry.members.to_vector()});
      }
      std::stable_sort(held.begin(), held.end(), [](const HeldComm& a, const HeldComm& b) { return a.id < b.id; });
    }
    out.push_back(std::move(in));
  }
  return out;
}

std::vector<std::vector<std::int64_t>> role_corners(const RoleKey& key, const Grid& target) {
  if (key.root) return {std::vector<std::int64_t>(target.dims.size(), 0)};  // rank 0 alone
  std::vector<std::vector<std::int64_t>> per_dim;
  for (std::size_t i = 0; i < key.per_dim.size(); ++i) {
    const auto [lo, hi] = key.per_dim[i];
    const std::int64_t s = target.dims[i];
    std::vector<std::int64_t> options;
    if (lo < key.depth)
      options = {lo};
    else if (hi < key.depth)
      options = {s - 1 - hi};
    else
      options = {key.depth, s - 1 - key.depth};
    std::vector<std::int64_t> valid;
    for (auto c : options)
      if (c >= 0 && c < s && std::min<std::int64_t>(c, key.depth) == lo &&
          std::min<std::int64_t>(s - 1 - c, key.depth) == hi)
        valid.push_back(c);
    if (valid.empty()) return {};
    per_dim.push_back(valid);
  }
  std::vector<std::vector<std::int64_t>> corners{{}};
  for (const auto& opts : per_dim) {
    std::vector<std::vector<std::int64_t>> next;
    for (const auto& c : corners)
      for (auto o : opts) {
        auto d = c;
        d.push_back(o);
        next.push_back(d);
      }
    corners = std::move(next);
  }
  if (!key.root_apart) return corners;
  // Rank 0 is a role of its own: the others' corner at rank 0 is replaced by its neighbours
  // along each axis that are in the class.
  const std::vector<std::int64_t> origin(target.dims.size(), 0);
  const auto at = std::find(corners.begin(), corners.end(), origin);
  if (at == corners.end()) return corners;
  corners.erase(at);
  for (std::size_t d = 0; d < origin.size(); ++d) {
    auto c = origin;
    c[d] = 1;
    if (c[d] >= target.dims[d] || std::find(corners.begin(), corners.end(), c) != corners.end()) continue;
    bool in_class = true;
    for (std::size_t i = 0; i < c.size(); ++i)
      in_class = in_class && std::min<std::int64_t>(c[i], key.depth) == key.per_dim[i].first &&
                 std::min<std::int64_t>(target.dims[i] - 1 - c[i], key.depth) == key.per_dim[i].second;
    if (in_class) corners.push_back(c);
  }
  return corners;
}

namespace {

std::string site_text(const EventPlan& e) { return std::string(op_name(e.op)) + "@site " + std::to_string(e.site); }

std::string values_text(const std::vector<std::int64_t>& values,
                        const std::vector<std::pair<std::size_t, std::int64_t>>& members,
                        const std::vector<ExpandedInput>& inputs) {
  // One value per input size first (the values that matter for a law), then others.
  std::ostringstream s;
  std::set<std::size_t> sizes_shown;
  std::vector<std::size_t> order;
  for (std::size_t m = 0; m < values.size(); ++m)
    if (sizes_shown.insert(members[m].first).second) order.push_back(m);
  for (std::size_t m = 0; m < values.size() && order.size() < 6; ++m)
    if (std::find(order.begin(), order.end(), m) == order.end()) order.push_back(m);
  for (std::size_t i = 0; i < order.size() && i < 6; ++i) {
    const auto m = order[i];
    s << (i ? ", " : "") << values[m] << " (P=" << inputs[members[m].first].grid.size() << " rank " << members[m].second
      << ")";
  }
  if (values.size() > order.size()) s << ", ...";
  return s.str();
}

std::string plan_text(const ValuePlan& p, const FeatureSpace& space) {
  return p.constant ? std::to_string(p.value) : p.law->formula(space);
}

bool plan_uses_rank(const ValuePlan& p, const FeatureSpace& space) { return !p.constant && p.law->uses_rank(space); }

/// Does the plan reproduce every value exactly?
bool reproduces(const ValuePlan& p, const std::vector<std::vector<std::int64_t>>& points,
                const std::vector<std::int64_t>& values) {
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (p.constant) {
      if (values[i] != p.value) return false;
      continue;
    }
    try {
      if (p.law->eval(points[i]) != values[i]) return false;
    } catch (const Error&) {
      return false;
    }
  }
  return true;
}

std::optional<std::int64_t> value_at(const ValuePlan& p, const std::vector<std::int64_t>& probe) {
  if (p.constant) return p.value;
  try {
    return p.law->eval(probe);
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::size_t distinct_points(const std::vector<std::vector<std::int64_t>>& points) {
  return std::set<std::vector<std::int64_t>>(points.begin(), points.end()).size();
}

/// A division law checked on 2 divisor values only (its scale, the datatype size, is known, so
/// N is its one unknown): the laws it was chosen over, if they also reproduce every value and
/// differ at the target. Those are a linear law with no point left to check it (-1400*X + 8400
/// beside 8*floor(1400/X) at X = 2, 4) and the same division with a multiple of the scale
/// (several elements per index: 16*floor(700/X)). "" if none competes.
std::string division_alternatives(const LinearLaw& law, const std::vector<std::vector<std::int64_t>>& points,
                                  const std::vector<std::int64_t>& values,
                                  const std::vector<std::vector<std::int64_t>>& probes, const FeatureSpace& space) {
  if (law.div_scale == 0) return "";
  std::set<std::int64_t> divisors;
  for (const auto& p : points) divisors.insert(p[law.div_feature]);
  if (divisors.size() >= 3) return "";
  auto differs = [&](const LinearLaw& other) {
    for (const auto& probe : probes) {
      try {
        if (other.eval(probe) != law.eval(probe)) return true;
      } catch (const Error&) {
        return true;
      }
    }
    return false;
  };
  const std::string chosen = law.formula(space) + " (one unknown, N, checked on 2 divisor values: elements of " +
                             std::to_string(law.div_scale) + " bytes, floor(N/d) of them) chosen over ";
  std::string why;
  // A linear law that gives a negative count at the target is no law of bytes.
  auto negative = [&](const LinearLaw& other) {
    for (const auto& probe : probes) {
      try {
        if (other.eval(probe) < 0) return true;
      } catch (const Error&) {
      }
    }
    return false;
  };
  if (auto linear = solve_linear_law(points, values, probes, &why, 2, 0, space.linear_count(), &space)) {
    if (differs(*linear) && !negative(*linear))
      return chosen + linear->formula(space) +
             " (no point left to check it); both reproduce every input value, "
             "they differ at the target";
  } else if (why.rfind("ambiguous", 0) == 0) {
    return chosen + "linear laws with no point left to check them (" + why.substr(11) + ")";
  }
  std::int64_t g = 0;
  for (auto v : values) g = std::gcd(g, v);
  for (std::int64_t m = 2; law.div_scale * m <= g && m <= 64; ++m) {
    if (g % (law.div_scale * m) != 0) continue;
    std::string w;
    auto other = solve_division_law(points, values, probes, {law.div_feature}, &w, &space, law.div_scale * m);
    if (other && differs(*other))
      return chosen + other->formula(space) + " (" + std::to_string(m) +
             " elements per index); both reproduce every input value, they differ at the target";
    if (!other && w.rfind("ambiguous", 0) == 0)
      return chosen + "a scale of " + std::to_string(law.div_scale * m) + " bytes (" + w + ")";
  }
  return "";
}

/// A message's bytes (elements times the datatype size) are never negative: a linear law that
/// gives a negative count at the target is no law of them (1400*log2(P) - 175*X*Y reproduces
/// NPB CG's 2800, 2800, 1400 bytes at 4x2, 4x4, 8x4 and gives -2800 at 8x8).
void drop_negative(std::optional<LinearLaw>& law, const std::vector<std::vector<std::int64_t>>& probes,
                   const FeatureSpace& space, std::string& why) {
  for (const auto& probe : probes) {
    std::int64_t v = 0;
    try {
      v = law->eval(probe);
    } catch (const Error&) {
      continue;
    }
    if (v < 0) {
      why = "no linear law: " + law->formula(space) + " reproduces every input value but gives " + std::to_string(v) +
            " bytes at the target";
      law.reset();
      return;
    }
  }
}

/// The note of a division law taken where linear laws were ambiguous (`why` names two of them).
std::string over_ambiguous_linear(const LinearLaw& law, const std::string& why, const FeatureSpace& space) {
  return law.formula(space) + " (a strong-scaling division, determined at the target) chosen over linear laws (" + why +
         ")";
}

/// The note of an inverse-size law taken where a linear law with no point left to check it
/// (`why`, "under-determined: ...") also reproduces the values.
std::string inverse_over_unchecked(const LinearLaw& law, const std::string& why, const FeatureSpace& space) {
  return law.formula(space) +
         " (an even split of a size, checked) chosen over a linear law that the inputs cannot check (" +
         why.substr(std::string("under-determined: ").size()) + ")";
}

/// Laws of one role, memoized by value column (every timestep repeats the same columns).
class RoleSolver {
 public:
  RoleSolver(const std::vector<ExpandedInput>& inputs, const RolePlan& role, const Grid& target, std::size_t ndims,
             bool remainder_rivals, bool periodic, bool assume_constant = false)
      : scalar_(FeatureSpace::make(ndims, false, false, periodic)),
        indexed_(FeatureSpace::make(ndims, true, false, periodic)),
        assume_constant_(assume_constant) {
    scalar_.remainder_rivals = indexed_.remainder_rivals = remainder_rivals;
    for (const auto& [k, r] : role.members) points_.push_back(scalar_.values(inputs[k].grid, inputs[k].grid.coords(r)));
    for (const auto& c : role_corners(role.key, target)) {
      probes_.push_back(scalar_.values(target, c));
      for (std::int64_t j : {0, 1, 2, 7}) index_probes_.push_back(indexed_.values(target, c, j));
    }
    // Features that do not vary over the role's inputs but do at the target (a grid size that is
    // 3 in every input having the role, 4 at the target): a constant may be a multiple of them.
    for (std::size_t f = 1; f < scalar_.linear_count() && !points_.empty(); ++f) {
      if (scalar_.exotic(f)) continue;
      bool constant = true, differs = false;
      for (const auto& p : points_) constant = constant && p[f] == points_[0][f];
      for (const auto& p : probes_) differs = differs || p[f] != points_[0][f];
      if (constant && differs && points_[0][f] != 0) aliases_.push_back(f);
    }
    // assume_constant: such a feature is no term of any law (undefined at every point, as a
    // feature some grid lacks), so values equal at every input stay constants and the others
    // follow the features that vary.
    if (assume_constant_)
      for (auto f : aliases_) {
        for (auto& p : points_) p[f] = kUndefinedFeature;
        for (auto& p : probes_) p[f] = kUndefinedFeature;
      }
  }
  const FeatureSpace& scalar_space() const { return scalar_; }
  /// assume_constant and some grid size is the same at every input of the role, not at the
  /// target (the case the option is for).
  bool assume_constant() const { return assume_constant_ && !aliases_.empty(); }
  const FeatureSpace& index_space() const { return indexed_; }
  const std::vector<std::vector<std::int64_t>>& points() const { return points_; }
  const std::vector<std::vector<std::int64_t>>& probes() const { return probes_; }
  const std::vector<std::vector<std::int64_t>>& index_probes() const { return index_probes_; }

  /// Scalar law for a column (one value per role member); nullopt with `why` if none.
  /// `deferrable`: the values fit several laws (ambiguous, under-determined), so a law shared
  /// with another role may decide.
  /// `scale` (> 0): the values are element counts times this datatype size.
  /// `identity`: the field names a thing (communicator, function, operator, datatype size),
  /// not an amount, and is not read as a multiple of a grid size.
  std::optional<ValuePlan> scalar(const std::vector<std::int64_t>& column, std::string& why, bool& deferrable,
                                  std::int64_t scale = 0, bool identity = false, std::string* note = nullptr) {
    deferrable = false;
    ValuePlan p;
    if (std::all_of(column.begin(), column.end(), [&](std::int64_t v) { return v == column[0]; })) {
      const auto c = column[0];
      if (!identity && c != 0 && c > -(std::int64_t{1} << 39) && c < (std::int64_t{1} << 50) && !aliases_.empty()) {
        const auto f = aliases_.front();
        const auto& name = scalar_.names[f];
        if (assume_constant_) {  // as asked (one warning for the extrapolation, not per value)
          p.value = c;
          return p;
        }
        why = "ambiguous: the constant " + std::to_string(c) + " and " + std::to_string(c) + "*" + name + "/" +
              std::to_string(points_[0][f]) + " both reproduce every input value (" + name + " is " +
              std::to_string(points_[0][f]) + " at every input having this role) but differ at the target";
        deferrable = true;
        return std::nullopt;
      }
      p.value = c;
      return p;
    }
    for (auto v : column)
      if (v <= -(std::int64_t{1} << 39) || v >= (std::int64_t{1} << 50)) {
        why = "a special value (wildcard, MPI_PROC_NULL, undefined) appears for some ranks only";
        return std::nullopt;
      }
    auto key = column;
    key.push_back(scale);
    auto it = memo_.find(key);
    if (it == memo_.end()) {
      std::string w, chosen;
      auto law = solve_linear_law(points_, column, probes_, &w, 4, 1, scalar_.linear_count(), &scalar_, &chosen);
      if (law && scale > 0) drop_negative(law, probes_, scalar_, w);
      bool defer = is_deferrable(w);
      // No checked linear law (none at all, or only one with no point left to check it): a
      // strong-scaling division, which is checked on 3 divisor values at least.
      // Where linear laws are ambiguous, a division may still fit; it is taken with a warning
      // naming them.
      if (!law) {
        std::string wd;
        law = solve_division_law(points_, column, probes_, scalar_.divisors(), &wd, &scalar_, scale);
        if (!law && wd.rfind("ambiguous", 0) == 0 && w.rfind("ambiguous", 0) != 0) {
          w = wd;
          defer = true;
        }
        if (law) {
          chosen = w.rfind("ambiguous", 0) == 0 ? over_ambiguous_linear(*law, w, scalar_)
                                                : division_alternatives(*law, points_, column, probes_, scalar_);
          defer = !chosen.empty();  // a law shared from a role that decides it comes first
        }
      }
      // A size split evenly over the grid (c/X, c/P terms: NPB BT's faces), where neither fits.
      if (!law && w.rfind("ambiguous", 0) != 0) {
        std::string wi;
        law = solve_inverse_law(points_, column, probes_, scalar_, &wi);
        if (law) {
          chosen = w.rfind("under-determined", 0) == 0 ? inverse_over_unchecked(*law, w, scalar_) : "";
          defer = !chosen.empty();
        } else if (wi.rfind("ambiguous", 0) == 0) {
          w = wi;
          defer = true;
        }
      }
      it = memo_
               .emplace(std::move(key),
                        Solved{law ? std::make_shared<const LinearLaw>(*law) : nullptr, w, defer, chosen})
               .first;
    }
    if (!it->second.law) {
      why = it->second.why;
      deferrable = it->second.deferrable;
      return std::nullopt;
    }
    p.constant = false;
    p.law = it->second.law;
    if (note) *note = it->second.note;
    // A law others compete with (a division checked on 2 divisor values): a law of the same
    // parameter that another role determines is taken first.
    deferrable = it->second.law && it->second.deferrable;
    return p;
  }

  /// A relative peer read as a neighbour in the process grid (ScalaExtrap's relative
  /// coordinates, thesis §3.2.2): dx + dy*X + dz*X*Y with each of dx, dy, dz in {-1, 0, 1}, the
  /// offset of the rank one step or none along each axis (LULESH's 26 neighbours). Each input
  /// point alone nearly decides it, so where the linear laws are ambiguous or under-determined
  /// (cube inputs move X, Y and Z together, so X*Y + X + 1 is a 3-term law seen at 3 sizes) the
  /// one neighbour offset that reproduces every input value is the reading taken, with `note`
  /// naming it. nullopt if no offset, or more than one, reproduces them.
  std::optional<ValuePlan> grid_neighbour(const std::vector<std::int64_t>& column, const std::string& why,
                                          std::string& note) const {
    std::vector<std::size_t> axes{scalar_.index("1")};  // the feature of each axis' step
    if (scalar_.ndims >= 2) axes.push_back(scalar_.index("X"));
    if (scalar_.ndims >= 3) axes.push_back(scalar_.index("X*Y"));
    std::optional<std::vector<std::int64_t>> found;
    std::vector<std::int64_t> d(axes.size(), -1);
    for (;;) {
      bool fits = std::any_of(d.begin(), d.end(), [](std::int64_t v) { return v != 0; });
      for (std::size_t i = 0; fits && i < points_.size(); ++i) {
        std::int64_t v = 0;
        for (std::size_t a = 0; a < axes.size(); ++a) v += d[a] * points_[i][axes[a]];
        fits = v == column[i];
      }
      if (fits) {
        if (found) return std::nullopt;  // two offsets: the inputs do not tell which
        found = d;
      }
      std::size_t a = 0;
      while (a < d.size() && d[a] == 1) d[a++] = -1;
      if (a == d.size()) break;
      ++d[a];
    }
    if (!found) return std::nullopt;
    LinearLaw law;
    for (std::size_t a = 0; a < axes.size(); ++a)
      if ((*found)[a] != 0) {
        law.terms.push_back(axes[a]);
        law.num.push_back((*found)[a]);
        law.den.push_back(1);
      }
    std::string offset;
    for (std::size_t a = 0; a < found->size(); ++a)
      offset += std::string(a ? ", " : "") + ((*found)[a] > 0 ? "+1" : (*found)[a] < 0 ? "-1" : "0");
    note = law.formula(scalar_) + " (the grid neighbour at (" + offset +
           "), the only offset of at most one step per axis that reproduces every input value) chosen where " + why;
    ValuePlan p;
    p.constant = false;
    p.law = std::make_shared<const LinearLaw>(std::move(law));
    return p;
  }

  /// Law over (member, element index) points.
  /// `scale` (> 0): the values are element counts times this datatype size (count arrays).
  std::optional<ValuePlan> indexed(const std::vector<std::vector<std::int64_t>>& pts,
                                   const std::vector<std::int64_t>& vals, std::string& why, bool& deferrable,
                                   std::int64_t scale = 0) {
    deferrable = false;
    ValuePlan p;
    if (std::all_of(vals.begin(), vals.end(), [&](std::int64_t v) { return v == vals[0]; })) {
      p.value = vals[0];
      return p;
    }
    auto law = solve_linear_law(pts, vals, index_probes_, &why, 4, 1, indexed_.linear_count(), &indexed_);
    if (!law) {
      // Elements of a strong-scaled all-to-all (the same count to every peer, N / P^2): a
      // division law, checked as for scalars; where other laws also fit and differ at the
      // target it is refused, naming them (no "simplest" choice for array elements).
      std::string wd;
      auto division = solve_division_law(pts, vals, index_probes_, indexed_.divisors(), &wd, &indexed_, scale);
      if (division) {
        const auto others = division_alternatives(*division, pts, vals, index_probes_, indexed_);
        if (others.empty()) {
          law = division;
        } else {
          why = "ambiguous: " + others;
          deferrable = true;
          return std::nullopt;
        }
      }
    }
    if (!law) {
      deferrable = is_deferrable(why);
      return std::nullopt;
    }
    p.constant = false;
    p.law = std::make_shared<const LinearLaw>(*law);
    return p;
  }

 private:
  static bool is_deferrable(const std::string& why) {
    return why.rfind("ambiguous", 0) == 0 || why.rfind("under-determined", 0) == 0;
  }
  struct Solved {
    std::shared_ptr<const LinearLaw> law;
    std::string why;
    bool deferrable = false;
    std::string note;  ///< the simplest of several laws was taken (see solve_linear_law)
  };
  FeatureSpace scalar_, indexed_;
  std::vector<std::vector<std::int64_t>> points_, probes_, index_probes_;
  bool assume_constant_ = false;      ///< aliases are no terms, constants stay constants
  std::vector<std::size_t> aliases_;  ///< features constant over the inputs, not at the target
  std::map<std::vector<std::int64_t>, Solved> memo_;
};

/// Collects distinct formulas per (op@site, parameter) of a role, in order of appearance, with
/// how each was established.
class LawReport {
 public:
  void add(const std::string& where, const std::string& field, const std::string& formula, std::size_t points,
           const std::string& shared_from = "", const std::string& note = "") {
    auto key = std::make_pair(where, field);
    auto it = index_.find(key);
    if (it == index_.end()) {
      it = index_.emplace(key, rows_.size()).first;
      rows_.push_back(Row{key, {}, points, {}, {}});
    }
    auto& row = rows_[it->second];
    if (std::find(row.formulas.begin(), row.formulas.end(), formula) == row.formulas.end())
      row.formulas.push_back(formula);
    row.points = std::min(row.points, points);
    if (!shared_from.empty() && std::find(row.shared.begin(), row.shared.end(), shared_from) == row.shared.end())
      row.shared.push_back(shared_from);
    if (!note.empty() && std::find(row.notes.begin(), row.notes.end(), note) == row.notes.end())
      row.notes.push_back(note);
  }
  void flush(const std::string& role, std::vector<ParameterLaw>& out) const {
    for (const auto& row : rows_) {
      // Only parameters that change with the size or the rank are worth a line.
      bool varying = false;
      for (const auto& f : row.formulas) varying = varying || f.find_first_of("XYZxyzjrPkn") != std::string::npos;
      if (!varying && row.shared.empty() && row.notes.empty()) continue;
      std::string text;
      for (std::size_t i = 0; i < row.formulas.size() && i < 24; ++i) text += (i ? ", " : "") + row.formulas[i];
      if (row.formulas.size() > 24) text += ", ... (" + std::to_string(row.formulas.size()) + " distinct)";
      std::string status = "exact on " + std::to_string(row.points) + " points";
      if (!row.shared.empty()) {
        status += ", shared from role";
        for (std::size_t i = 0; i < row.shared.size(); ++i) status += (i ? ", " : " ") + row.shared[i];
      }
      for (const auto& note : row.notes) status += "; simplest of several: " + note;
      out.push_back(ParameterLaw{role, row.key.first, row.key.second, text, status});
    }
  }

 private:
  struct Row {
    std::pair<std::string, std::string> key;
    std::vector<std::string> formulas;
    std::size_t points = 0;
    std::vector<std::string> shared;
    std::vector<std::string> notes;
  };
  std::map<std::pair<std::string, std::string>, std::size_t> index_;
  std::vector<Row> rows_;
};

/// Laws found in the roles that determine them, by (op@site or communicator, parameter): the
/// candidates for a parameter whose own values do not determine its law.
struct SharedLaw {
  ValuePlan plan;
  std::string role;
  bool indexed = false;
  std::string note = "";  ///< the law was a choice among several (its own role's warning)
};
using LawPool = std::map<std::pair<std::string, std::string>, std::vector<SharedLaw>>;

/// The same value plan (a constant, or the same law term by term).
bool same_plan(const ValuePlan& a, const ValuePlan& b) {
  if (a.constant != b.constant || a.staged != b.staged) return false;
  if (a.constant) return a.value == b.value;
  const auto &x = *a.law, &y = *b.law;
  auto same_mods = [](const LinearLaw& p, const LinearLaw& q) {
    if (p.mods.size() != q.mods.size()) return false;
    if (!p.mods.empty() && (p.mod_x != q.mod_x || p.mod_y != q.mod_y || p.mod_k != q.mod_k || p.mod_size != q.mod_size))
      return false;
    for (std::size_t i = 0; i < p.mods.size(); ++i) {
      const auto &m = p.mods[i], &n = q.mods[i];
      if (m.a != n.a || m.b != n.b || m.c != n.c || m.d != n.d || m.times_size != n.times_size || m.num != n.num ||
          m.den != n.den)
        return false;
    }
    return true;
  };
  return x.terms == y.terms && x.num == y.num && x.den == y.den && x.div_scale == y.div_scale &&
         x.ext_scale == y.ext_scale && x.ext_size == y.ext_size && x.div_numerator == y.div_numerator &&
         x.div_feature == y.div_feature && x.div_exact == y.div_exact && x.div_offset == y.div_offset &&
         x.inv_feature == y.inv_feature && x.inv_num == y.inv_num && x.inv_den == y.inv_den && same_mods(x, y);
}

/// Adds a law to the pool unless that role already gave the same law for that parameter: a call
/// site inside a loop gives the same law at every iteration (NPB CG: thousands of events per
/// rank at a handful of sites), and every deferred parameter walks its key's laws.
void pool_add(LawPool& pool, const std::pair<std::string, std::string>& key, SharedLaw law) {
  auto& laws = pool[key];
  for (const auto& l : laws)
    if (l.indexed == law.indexed && l.role == law.role && same_plan(l.plan, law.plan)) return;
  laws.push_back(std::move(law));
}

/// A parameter waiting for a shared law: where its plan goes and the values it must reproduce.
struct Deferred {
  RolePlan* role = nullptr;
  LawReport* report = nullptr;
  std::string role_name;
  ValuePlan* slot = nullptr;
  std::pair<std::string, std::string> key;  ///< (where, parameter) as in the pool and report
  std::string where;                        ///< for the failure text (with the event index)
  bool indexed = false;
  std::vector<std::vector<std::int64_t>> points, probes;
  std::vector<std::int64_t> values;
  std::string why, values_text;
  /// The parameter's own law, taken if no other role's law reproduces its values, with the
  /// note naming the laws it was chosen over.
  std::optional<ValuePlan> own = std::nullopt;
  std::string own_note = "";
  /// The parameter is an amount (not a communicator, operator or function id): another role's
  /// law plus a constant may explain it.
  bool amount = true;
};

using Signature = std::vector<std::pair<Op, std::uint32_t>>;

/// The calls of events [i, i + p) of `evs`, or empty if they run past the end.
Signature signature(const std::vector<Event>& evs, std::size_t i, std::size_t p) {
  if (i + p > evs.size()) return {};
  Signature sig;
  for (std::size_t b = i; b < i + p; ++b) sig.emplace_back(evs[b].op, evs[b].site);
  return sig;
}

bool distinct_calls(const Signature& sig) {
  return std::set<std::pair<Op, std::uint32_t>>(sig.begin(), sig.end()).size() == sig.size();
}

constexpr std::size_t kMaxLoopBody = 8;  ///< events in a stage loop's body

/// Loop bodies of one member: scanning left to right, the shortest block of distinct calls
/// (at most kMaxLoopBody) that is repeated right after itself, then past its repetitions.
void find_bodies(const std::vector<Event>& evs, std::set<Signature>& bodies) {
  for (std::size_t i = 0; i < evs.size();) {
    std::size_t advance = 1;
    for (std::size_t p = 1; p <= kMaxLoopBody; ++p) {
      const auto sig = signature(evs, i, p);
      if (sig.empty() || !distinct_calls(sig) || signature(evs, i + p, p) != sig) continue;
      std::size_t count = 2;
      while (signature(evs, i + count * p, p) == sig) ++count;
      bodies.insert(sig);
      advance = count * p;
      break;
    }
    i += advance;
  }
}

/// Innermost loops only: a body that contains another one (an outer loop whose inner loops run
/// once at some size) is dropped, so that every size parses into the same units.
std::set<Signature> innermost(const std::set<Signature>& bodies) {
  std::set<Signature> out;
  for (const auto& b : bodies) {
    bool contains = false;
    for (const auto& c : bodies)
      if (c.size() < b.size() && std::search(b.begin(), b.end(), c.begin(), c.end()) != b.end()) contains = true;
    if (!contains) out.insert(b);
  }
  return out;
}

/// A member's events as units: at each position the longest body that starts there, with its
/// repetitions (once counts: the loop of a size where it runs once), else one event.
std::vector<Unit> parse_units(const std::vector<Event>& evs, const std::set<Signature>& bodies) {
  std::vector<Unit> units;
  for (std::size_t i = 0; i < evs.size();) {
    const Signature* best = nullptr;
    for (const auto& b : bodies)
      if ((!best || b.size() > best->size()) && signature(evs, i, b.size()) == b) best = &b;
    if (!best) {
      units.push_back(Unit{i, 1, 1, false});
      ++i;
      continue;
    }
    const auto p = best->size();
    std::int64_t count = 1;
    while (signature(evs, i + static_cast<std::size_t>(count) * p, p) == *best) ++count;
    units.push_back(Unit{i, p, count, true});
    i += static_cast<std::size_t>(count) * p;
  }
  return units;
}

/// Stage-loop units of every member of the role, if all members parse into the same shape
/// (the same loops and single events in the same order; trip counts may differ). A loop that a
/// member does not make at all is a loop of trip count 0 there (a loop of n - 2 stages on 2
/// cells: NPB BT's back substitution as gfortran -O2 compiles it), so each member is aligned
/// with the member that has the most loops: a loop unit it lacks becomes one of count 0 where
/// its next unit starts. On a mismatch, `problem` says where.
bool stage_units(const std::vector<ExpandedInput>& inputs, RolePlan& role, std::string& problem) {
  std::set<Signature> bodies;
  for (const auto& [k, r] : role.members) find_bodies(inputs[k].events[static_cast<std::size_t>(r)], bodies);
  bodies = innermost(bodies);
  if (bodies.empty()) return false;
  role.units.clear();
  for (const auto& [k, r] : role.members)
    role.units.push_back(parse_units(inputs[k].events[static_cast<std::size_t>(r)], bodies));
  auto events_of = [&](std::size_t m) -> const std::vector<Event>& {
    return inputs[role.members[m].first].events[static_cast<std::size_t>(role.members[m].second)];
  };
  auto loops = [](const std::vector<Unit>& units) {
    return std::count_if(units.begin(), units.end(), [](const Unit& u) { return u.loop; });
  };
  std::size_t skel = 0;
  for (std::size_t m = 1; m < role.units.size(); ++m)
    if (loops(role.units[m]) > loops(role.units[skel])) skel = m;
  const auto ref = role.units[skel];
  const auto& ref_events = events_of(skel);
  for (std::size_t m = 0; m < role.units.size(); ++m) {
    if (m == skel) continue;
    const auto& units = role.units[m];
    const auto& evs = events_of(m);
    std::vector<Unit> aligned;
    std::size_t i = 0;
    for (std::size_t u = 0; u < ref.size(); ++u) {
      const auto& b = ref[u];
      if (i < units.size()) {
        const auto& a = units[i];
        if (a.loop == b.loop && a.period == b.period &&
            signature(evs, a.start, a.period) == signature(ref_events, b.start, b.period)) {
          aligned.push_back(a);
          ++i;
          continue;
        }
      }
      if (b.loop) {  // not made by this member: a loop of trip count 0
        aligned.push_back(Unit{i < units.size() ? units[i].start : evs.size(), b.period, 0, true});
        continue;
      }
      if (i == units.size()) {
        problem = std::to_string(units.size()) + " and " + std::to_string(ref.size()) + " loops and single calls";
        return false;
      }
      const auto& a = units[i];
      problem = "unit " + std::to_string(aligned.size()) + " differs: " + std::string(op_name(evs[a.start].op)) +
                "@site " + std::to_string(evs[a.start].site) + (a.loop ? " (loop)" : "") + " vs " +
                std::string(op_name(ref_events[b.start].op)) + "@site " + std::to_string(ref_events[b.start].site) +
                (b.loop ? " (loop)" : "");
      return false;
    }
    if (i != units.size()) {
      problem = std::to_string(units.size()) + " and " + std::to_string(ref.size()) + " loops and single calls";
      return false;
    }
    role.units[m] = std::move(aligned);
  }
  // A loop's trip count may change with the size, not between the ranks of one input (ranks
  // that skip calls at a boundary belong to different roles, not to a loop).
  for (std::size_t u = 0; u < ref.size(); ++u) {
    std::map<std::size_t, std::int64_t> count_of_input;
    for (std::size_t m = 0; m < role.units.size(); ++m) {
      const auto [it, fresh] = count_of_input.emplace(role.members[m].first, role.units[m][u].count);
      if (!fresh && it->second != role.units[m][u].count) {
        problem = "unit " + std::to_string(u) + ": a loop runs " + std::to_string(it->second) + " and " +
                  std::to_string(role.units[m][u].count) + " times at ranks of the same input";
        return false;
      }
    }
  }
  return true;
}

/// Where `longer` is `shorter` with one block of events inserted: the block's start and length
/// (length 0: they differ otherwise).
std::pair<std::size_t, std::size_t> inserted_block(const std::vector<Event>& longer,
                                                   const std::vector<Event>& shorter) {
  if (longer.size() <= shorter.size()) return {0, 0};
  auto same = [](const Event& a, const Event& b) { return a.op == b.op && a.site == b.site; };
  std::size_t pre = 0, post = 0;
  while (pre < shorter.size() && same(longer[pre], shorter[pre])) ++pre;
  while (post < shorter.size() - pre && same(longer[longer.size() - 1 - post], shorter[shorter.size() - 1 - post]))
    ++post;
  if (pre + post != shorter.size()) return {0, 0};
  return {pre, longer.size() - shorter.size()};
}

/// Rank 0's calls that the other ranks of its role do not make, where rank 0's events are
/// another member's of the same input with one block inserted, at every input that has both
/// (codes whose rank 0 reads a timer or prints): "rank 0 makes 1 call more than rank 1 ...";
/// "" otherwise.
std::string root_extra_calls(const std::vector<ExpandedInput>& inputs, const RolePlan& role, const std::string& name) {
  std::string text;
  std::size_t shown = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const bool has_root = std::any_of(role.members.begin(), role.members.end(),
                                      [&](const auto& m) { return m.first == k && m.second == 0; });
    const auto other = std::find_if(role.members.begin(), role.members.end(),
                                    [&](const auto& m) { return m.first == k && m.second != 0; });
    if (!has_root || other == role.members.end()) continue;
    const auto& root = inputs[k].events[0];
    const auto& evs = inputs[k].events[static_cast<std::size_t>(other->second)];
    const auto [at, len] = inserted_block(root, evs);
    if (len == 0) return "";
    if (shown++ > 0) {
      text += ", " + std::to_string(inputs[k].grid.size()) + " ranks: event " + std::to_string(at);
      continue;
    }
    text = "role " + name + ": rank 0 makes " + std::to_string(len) + " call" + (len > 1 ? "s" : "") + " that rank " +
           std::to_string(other->second) + " and the other ranks of its role do not (";
    for (std::size_t i = at; i < at + len && i < at + 4; ++i)
      text += (i > at ? ", " : "") + std::string(op_name(root[i].op)) + "@site " + std::to_string(root[i].site);
    text += std::string(len > 4 ? ", ..." : "") + "; " + std::to_string(root.size()) + " events vs " +
            std::to_string(evs.size()) + ") at event " + std::to_string(at) + " of the " +
            std::to_string(inputs[k].grid.size()) + "-rank trace";
  }
  return text;
}

/// Which event list of the members a role is planned on: one plan per event if every member
/// has the reference member's (op, call site) sequence; else runs of identical calls if their
/// run sequences match (a loop of local calls whose trip count changes with the size).
/// Reports the first difference otherwise.
bool same_shape(const std::vector<ExpandedInput>& inputs, RolePlan& role, const std::string& name,
                std::vector<Failure>& failures) {
  const auto [k0, r0] = role.members.front();
  const auto& ref_comms = inputs[k0].comms[static_cast<std::size_t>(r0)];
  auto where = [&](std::size_t k, std::int64_t r) {
    return "role " + name + ": rank " + std::to_string(r) + " of the " + std::to_string(inputs[k].grid.size()) +
           "-rank trace and rank " + std::to_string(r0) + " of the " + std::to_string(inputs[k0].grid.size()) +
           "-rank trace";
  };
  auto compare = [&](bool runs, std::string* problem) {
    const auto& ref = (runs ? inputs[k0].runs : inputs[k0].events)[static_cast<std::size_t>(r0)];
    for (const auto& [k, r] : role.members) {
      const auto& evs = (runs ? inputs[k].runs : inputs[k].events)[static_cast<std::size_t>(r)];
      if (evs.size() != ref.size()) {
        if (problem)
          *problem = where(k, r) + " have " + std::to_string(evs.size()) + " and " + std::to_string(ref.size()) +
                     (runs ? " runs of identical calls" : " events") +
                     " (event counts that change with the size are extrapolated for runs of one repeated "
                     "call and for loops of up to 8 distinct calls; lossy extrapolation drops local calls)";
        return false;
      }
      for (std::size_t i = 0; i < evs.size(); ++i)
        if (evs[i].op != ref[i].op || evs[i].site != ref[i].site) {
          if (problem)
            *problem = where(k, r) + " differ at " + (runs ? "run " : "event ") + std::to_string(i) + ": " +
                       std::string(op_name(evs[i].op)) + "@site " + std::to_string(evs[i].site) + " vs " +
                       std::string(op_name(ref[i].op)) + "@site " + std::to_string(ref[i].site) +
                       " (different programs or inputs?)";
          return false;
        }
    }
    return true;
  };
  std::string problem, stage_problem;
  role.runs = role.stages = false;
  if (compare(false, &problem)) {
  } else if (compare(true, nullptr)) {
    role.runs = true;
  } else if (stage_units(inputs, role, stage_problem)) {
    role.stages = true;
  } else {
    Failure f{true, problem + (stage_problem.empty() ? "" : "; as loops whose trip count changes: " + stage_problem)};
    if (!role.key.root &&
        std::any_of(role.members.begin(), role.members.end(), [](const auto& m) { return m.second == 0; })) {
      f.root_shape = true;
      const auto extra = root_extra_calls(inputs, role, name);
      if (!extra.empty()) f.text = extra + "; " + f.text;
    }
    failures.push_back(std::move(f));
    return false;
  }
  for (const auto& [k, r] : role.members) {
    const auto& comms = inputs[k].comms[static_cast<std::size_t>(r)];
    bool same_ids = comms.size() == ref_comms.size();
    for (std::size_t c = 0; same_ids && c < comms.size(); ++c) same_ids = comms[c].id == ref_comms[c].id;
    if (!same_ids) {
      failures.push_back({true, where(k, r) + " hold different communicators"});
      return false;
    }
  }
  return true;
}

/// Stage-loop laws by (call site, parameter): the role that found each and the law. Rank 0's
/// role (RoleKey::root) takes one of them where its own points do not decide.
using StagePool = std::map<std::pair<std::string, std::string>,
                           std::vector<std::pair<std::string, std::shared_ptr<const LinearLaw>>>>;

/// Plans one role: a law for every parameter of every event, for the communicators the role's
/// ranks hold, and the mean times per timing group. Each step is one method; problems go to
/// `failures` (at most 8 lines per role), the laws found to the role's LawReport and the pool,
/// parameters whose own values do not determine a law to `deferred`. A role seen at one input
/// size only (`single_size`) defers every parameter: its values cannot show a dependence on
/// the size, so only laws shared with other roles are accepted.
class RolePlanner {
 public:
  RolePlanner(const std::vector<ExpandedInput>& inputs, RolePlan& role, const Grid& target, std::size_t ndims,
              bool single_size, std::vector<Failure>& failures, LawReport& report, LawPool& pool,
              std::vector<Deferred>& deferred, bool remainder_rivals, bool periodic, bool assume_constant = false)
      : inputs_(inputs),
        role_(role),
        name_(role.key.to_string()),
        single_size_(single_size),
        failures_(failures),
        report_(report),
        pool_(pool),
        deferred_(deferred),
        solver_(inputs, role, target, ndims, remainder_rivals, periodic, assume_constant),
        stage_([&] {
          auto space = FeatureSpace::make(ndims, false, true, periodic);
          space.remainder_rivals = remainder_rivals;
          return space;
        }()),
        target_(target),
        scalar_(solver_.scalar_space()),
        indexed_(solver_.index_space()),
        nm_(role.members.size()),
        column_(nm_) {}
  RolePlanner& with_stage_pool(StagePool& pool) {
    stage_pool_ = &pool;
    return *this;
  }

  /// Plans the events, the communicators and the timing groups.
  void plan() {
    if (role_.stages) {
      plan_stages();
    } else {
      const auto& ref = member_events(0);
      role_.events.resize(ref.size());
      // A role with 8 parameters without a law is refused: the rest would only cost time.
      for (std::size_t i = 0; i < ref.size() && reported_ < 8; ++i) plan_event(i, ref[i]);
    }
    // Communicators held by the role's ranks: length and members as laws.
    const auto [k0, r0] = role_.members.front();
    const auto& ref_comms = inputs_[k0].comms[static_cast<std::size_t>(r0)];
    role_.comms.reserve(ref_comms.size());  // deferred laws point into it
    for (std::size_t c = 0; c < ref_comms.size(); ++c) plan_comm(c, ref_comms[c].id);
    plan_timing();
  }

 private:
  const std::vector<Event>& member_events(std::size_t m) const {
    const auto& in = inputs_[role_.members[m].first];
    return (role_.runs ? in.runs : in.events)[static_cast<std::size_t>(role_.members[m].second)];
  }
  /// Event i of the plan as member m plays it (a single call of a stage-loop role: the unit's).
  const Event& member_event(std::size_t m, std::size_t i) const {
    if (!role_.stages) return member_events(m)[i];
    return member_events(m)[role_.units[m][unit_of_[i]].start];
  }
  std::int64_t member_repeat(std::size_t m, std::size_t i) const {
    if (!role_.runs) return 1;
    return inputs_[role_.members[m].first].repeats[static_cast<std::size_t>(role_.members[m].second)][i];
  }
  const std::vector<HeldComm>& member_comms(std::size_t m) const {
    return inputs_[role_.members[m].first].comms[static_cast<std::size_t>(role_.members[m].second)];
  }
  /// Index-space features of element j of member m.
  std::vector<std::int64_t> index_point(std::size_t m, std::size_t j) const {
    const auto& [k, r] = role_.members[m];
    return indexed_.values(inputs_[k].grid, inputs_[k].grid.coords(r), static_cast<std::int64_t>(j));
  }
  void fail(const std::string& text, bool ambiguous = false) {
    if (reported_++ < 8) failures_.push_back({false, "role " + name_ + ", " + text, ambiguous});
  }
  void note_rank(const ValuePlan& p, const FeatureSpace& space) {
    role_.rank_dependent = role_.rank_dependent || plan_uses_rank(p, space);
  }

  /// A scalar parameter (one value per member): its own law, or deferred to a shared one.
  void plan_scalar(ValuePlan& slot, const std::string& where_site, const std::string& where, const std::string& name,
                   std::int64_t scale = 0) {
    std::string why, note;
    bool deferrable = false;
    std::optional<ValuePlan> plan;
    const bool structural = name == "Comm" || name == "NameId" || name == "RedOp" || name == "NewComm" ||
                            name == "DtSize" || name == "DtSize2";
    const bool uniform = std::all_of(column_.begin(), column_.end(), [&](std::int64_t v) { return v == column_[0]; });
    if (single_size_ && structural && uniform) {
      slot = ValuePlan{true, column_[0], nullptr};  // ids and operators, not sizes
      return;
    }
    if (single_size_) {
      why = "the role occurs only in the " + std::to_string(inputs_[role_.members[0].first].grid.size()) +
            "-rank input, so its values cannot show a dependence on the size";
      deferrable = true;
    } else {
      plan = solver_.scalar(column_, why, deferrable, scale, structural, &note);
      if (!plan && deferrable && (name == "Peer" || name == "Peer2")) plan = solver_.grid_neighbour(column_, why, note);
    }
    // Deferred: a law shared by another role decides; a law of its own (one others compete
    // with) is taken if none does.
    if (deferrable) {
      deferred_.push_back(Deferred{&role_,
                                   &report_,
                                   name_,
                                   &slot,
                                   {where_site, name},
                                   where,
                                   false,
                                   solver_.points(),
                                   solver_.probes(),
                                   column_,
                                   why,
                                   values_text(column_, role_.members, inputs_),
                                   plan,
                                   note,
                                   !structural});
      if (plan) note_rank(*plan, scalar_);
      return;
    }
    if (!plan && role_.stages && !structural) {
      if (auto cell = single_cell_law(why)) {
        slot = *cell;
        note_rank(slot, stage_);
        report_.add(where_site, name, plan_text(slot, stage_), distinct_points(solver_.points()), "", "");
        return;
      }
    }
    if (!plan) {
      fail(where + ", " + name + ": " + why + "; values " + values_text(column_, role_.members, inputs_));
      return;
    }
    slot = *plan;
    note_rank(*plan, scalar_);
    pool_add(pool_, {where_site, name}, SharedLaw{*plan, name_, false});
    report_.add(where_site, name, plan_text(*plan, scalar_), distinct_points(solver_.points()), "", note);
  }

  /// Bytes and Bytes2 are element counts times the datatype size (DtSize, DtSize2): that size
  /// if every member has the same one, else 0 (any scale).
  std::int64_t datatype_size(std::size_t i, Field f) const {
    if (f != Field::Bytes && f != Field::Bytes2) return 0;
    const Field dt = f == Field::Bytes ? Field::DtSize : Field::DtSize2;
    const auto d = member_event(0, i)[dt];
    for (std::size_t m = 1; m < nm_; ++m)
      if (member_event(m, i)[dt] != d) return 0;
    return d > 0 ? d : 0;
  }

  /// Count arrays hold bytes: element counts times the datatype size (DtSize for SendCounts,
  /// DtSize2 for RecvCounts) if every member has the same one, else 0.
  std::int64_t array_element_size(std::size_t i, ArrayField a) const {
    if (a == ArrayField::SendCounts) return datatype_size(i, Field::Bytes);
    if (a == ArrayField::RecvCounts) return datatype_size(i, Field::Bytes2);
    return 0;
  }

  void plan_event(std::size_t i, const Event& ref) {
    EventPlan& ep = role_.events[i];
    ep.op = ref.op;
    ep.site = ref.site;
    const std::string where = site_text(ep) + " (" + (role_.runs ? "run " : "event ") + std::to_string(i) + ")";
    auto [git, fresh] = groups_.emplace(std::make_pair(ep.op, ep.site), groups_.size());
    ep.timing_group = git->second;
    if (role_.runs) {
      for (std::size_t m = 0; m < nm_; ++m) column_[m] = member_repeat(m, i);
      plan_scalar(ep.repeat, site_text(ep), where, "repeat count");
    }
    for (std::size_t f = 0; f < kFieldCount; ++f) {
      for (std::size_t m = 0; m < nm_; ++m) column_[m] = member_event(m, i).fields[f];
      plan_scalar(ep.fields[f], site_text(ep), where, std::string(field_name(static_cast<Field>(f))),
                  datatype_size(i, static_cast<Field>(f)));
    }
    for (std::size_t a = 0; a < kArrayFieldCount; ++a) plan_array(ep, i, a, where);
  }

  /// A role whose members' events are units (single calls and stage loops): one plan per
  /// event of the reference member's units, a loop's body once with laws over (k, n).
  void plan_stages() {
    const auto& ref_units = role_.units.front();
    for (std::size_t u = 0; u < ref_units.size(); ++u)
      for (std::size_t b = 0; b < (ref_units[u].loop ? ref_units[u].period : 1); ++b) unit_of_.push_back(u);
    role_.events.resize(unit_of_.size());
    const auto& ref = member_events(0);
    for (std::size_t i = 0, u = 0; u < ref_units.size() && reported_ < 8; ++u) {
      if (!ref_units[u].loop) {
        plan_event(i, ref[ref_units[u].start]);
        ++i;
        continue;
      }
      plan_loop(u, i);
      i += ref_units[u].period;
    }
  }

  /// Stage-space features of member m at iteration k of a loop of n.
  std::vector<std::int64_t> stage_point(std::size_t m, std::int64_t k, std::int64_t n) const {
    const auto& [in, r] = role_.members[m];
    return stage_.values(inputs_[in].grid, inputs_[in].grid.coords(r), 0, k, n);
  }

  /// Every rank of the role's box at the target (its corners where that is more than 4096
  /// ranks), without rank 0 where rank 0 is a role of its own.
  std::vector<std::vector<std::int64_t>> role_box() const {
    const auto corners = role_corners(role_.key, target_);
    if (corners.empty()) return {};
    std::vector<std::int64_t> lo = corners.front(), hi = corners.front();
    for (const auto& c : corners)
      for (std::size_t d = 0; d < c.size(); ++d) {
        lo[d] = std::min(lo[d], c[d]);
        hi[d] = std::max(hi[d], c[d]);
      }
    std::int64_t count = 1;
    for (std::size_t d = 0; d < lo.size(); ++d) count *= hi[d] - lo[d] + 1;
    if (count > 4096) return corners;
    std::vector<std::vector<std::int64_t>> coords;
    std::vector<std::int64_t> c = lo;
    for (bool more = true; more;) {
      if (!role_.key.root_apart || role_.key.root ||
          std::any_of(c.begin(), c.end(), [](std::int64_t v) { return v != 0; }))
        coords.push_back(c);
      std::size_t d = 0;
      while (d < c.size() && c[d] == hi[d]) c[d] = lo[d], ++d;
      if (d == c.size())
        more = false;
      else
        ++c[d];
    }
    return coords;
  }

  /// A single call of a stage-loop role whose value no scalar law explains: the coordinates or
  /// the extent of a cell, as a loop body's (solve_modular_law, solve_extent_law) at k = 0 of
  /// n = 0, checked at every rank of the role's target box (NPB BT at gfortran -O2: the back
  /// substitution's first send, stage n - 1, has a call site of its own outside the loop).
  std::optional<ValuePlan> single_cell_law(std::string& why) const {
    std::vector<std::vector<std::int64_t>> pts, dense;
    for (std::size_t m = 0; m < nm_; ++m) pts.push_back(stage_point(m, 0, 0));
    for (const auto& c : role_box()) dense.push_back(stage_.values(target_, c, 0, 0, 0));
    if (dense.empty()) return std::nullopt;
    for (const int kind : {1, 2}) {
      std::string w;
      const auto law = kind == 1 ? solve_modular_law(pts, column_, dense, stage_, &w)
                                 : solve_extent_law(pts, column_, dense, stage_, &w);
      if (law) return ValuePlan{false, 0, std::make_shared<const LinearLaw>(*law), true};
      if (w.rfind("ambiguous", 0) == 0) {
        why = w;
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  /// Loop u (plan events from i0): its trip count, then every parameter of every body call over
  /// the points (member, iteration k).
  void plan_loop(std::size_t u, std::size_t i0) {
    const std::size_t src = loop_source(u);
    const auto& ref = member_events(src);
    const auto& ref_unit = role_.units[src][u];
    EventPlan& head = role_.events[i0];
    head.loop_period = ref_unit.period;
    const std::string loop_where = "loop of " + std::to_string(ref_unit.period) + " calls from " +
                                   std::string(op_name(ref[ref_unit.start].op)) + "@site " +
                                   std::to_string(ref[ref_unit.start].site);
    for (std::size_t m = 0; m < nm_; ++m) column_[m] = role_.units[m][u].count;
    if (!plan_loop_count(head.loop_count, loop_where)) return;
    // Probes: the role's target corners at the first and last iteration.
    std::vector<std::vector<std::int64_t>> probes;
    for (const auto& c : role_corners(role_.key, target_)) {
      const auto zero = stage_.values(target_, c, 0, 0, 0);
      const auto n =
          head.loop_count.constant
              ? head.loop_count.value
              : value_at(head.loop_count, head.loop_count.staged ? zero : solver_.scalar_space().values(target_, c))
                    .value_or(0);
      for (std::int64_t k : {std::int64_t{0}, n - 1})
        if (k >= 0) probes.push_back(stage_.values(target_, c, 0, k, n));
    }
    // Every rank of the role's target box at every iteration, where that is not too many: a
    // modular law (cell coordinates) differs from its rivals at ranks and stages between corners.
    std::vector<std::vector<std::int64_t>> dense;
    {
      for (const auto& c : role_box()) {
        const auto n =
            head.loop_count.constant
                ? head.loop_count.value
                : value_at(head.loop_count, head.loop_count.staged ? stage_.values(target_, c, 0, 0, 0)
                                                                   : solver_.scalar_space().values(target_, c))
                      .value_or(0);
        for (std::int64_t k = 0; k < std::min<std::int64_t>(n, 64) && dense.size() < 65536; ++k)
          dense.push_back(stage_.values(target_, c, 0, k, n));
      }
      if (dense.empty()) dense = probes;
    }
    for (std::size_t b = 0; b < ref_unit.period; ++b) {
      const std::size_t i = i0 + b;
      const Event& e = ref[ref_unit.start + b];
      EventPlan& ep = role_.events[i];
      ep.op = e.op;
      ep.site = e.site;
      const std::string where = site_text(ep) + " (" + loop_where + ", call " + std::to_string(b) + ")";
      auto [git, fresh] = groups_.emplace(std::make_pair(ep.op, ep.site), groups_.size());
      ep.timing_group = git->second;
      for (std::size_t f = 0; f < kFieldCount; ++f)
        plan_stage_field(ep.fields[f], u, b, f, probes, dense, site_text(ep), where,
                         std::string(field_name(static_cast<Field>(f))));
      for (std::size_t a = 0; a < kArrayFieldCount; ++a) {
        const auto& first = e.arrays[a];
        bool all_equal = true;
        for (std::size_t m = 0; m < nm_ && all_equal; ++m)
          for (std::int64_t k = 0; k < role_.units[m][u].count && all_equal; ++k)
            all_equal = loop_event(m, u, k, b).arrays[a] == first;
        if (all_equal)
          ep.arrays[a].constant = first;
        else
          fail(where + ", " + std::string(array_field_name(static_cast<ArrayField>(a))) +
               ": an array that changes inside a stage loop is not extrapolated");
      }
    }
  }

  /// The datatype size of Bytes / Bytes2 of call b of loop u if every iteration of every member
  /// has the same one, else 0 (see datatype_size).
  std::int64_t datatype_size_in_loop(std::size_t u, std::size_t b, Field f) const {
    if (f != Field::Bytes && f != Field::Bytes2) return 0;
    const Field dt = f == Field::Bytes ? Field::DtSize : Field::DtSize2;
    const auto d = loop_event(loop_source(u), u, 0, b)[dt];
    for (std::size_t m = 0; m < nm_; ++m)
      for (std::int64_t k = 0; k < role_.units[m][u].count; ++k)
        if (loop_event(m, u, k, b)[dt] != d) return 0;
    return d > 0 ? d : 0;
  }

  /// The first member that makes loop u at least once (a member may make it 0 times).
  std::size_t loop_source(std::size_t u) const {
    for (std::size_t m = 0; m < nm_; ++m)
      if (role_.units[m][u].count > 0) return m;
    return 0;
  }

  const Event& loop_event(std::size_t m, std::size_t u, std::int64_t k, std::size_t b) const {
    const auto& unit = role_.units[m][u];
    return member_events(m)[unit.start + static_cast<std::size_t>(k) * unit.period + b];
  }

  /// A loop's trip count (column_ holds one per member): constant, else a logarithm of a grid
  /// size or P plus a constant (a loop over the bits of a size: the body's calls depend on 2^k),
  /// else any scalar law.
  bool plan_loop_count(ValuePlan& slot, const std::string& where) {
    const bool uniform = std::all_of(column_.begin(), column_.end(), [&](std::int64_t v) { return v == column_[0]; });
    if (!uniform) {
      std::vector<std::shared_ptr<const LinearLaw>> fits;
      for (const char* name : {"log2(X)", "log2(Y)", "log2(Z)", "log2(P)"}) {
        if (std::find(stage_.names.begin(), stage_.names.end(), name) == stage_.names.end()) continue;
        const auto f = stage_.index(name);
        std::set<std::int64_t> distinct;
        std::optional<std::int64_t> offset;
        bool fits_all = true;
        for (std::size_t m = 0; m < nm_ && fits_all; ++m) {
          const auto v = stage_point(m, 0, 0)[f];
          distinct.insert(v);
          if (!offset) offset = column_[m] - v;
          fits_all = column_[m] - v == *offset;
        }
        if (!fits_all || distinct.size() < 2) continue;
        auto law = std::make_shared<LinearLaw>();
        if (*offset != 0) {
          law->terms.push_back(0);
          law->num.push_back(*offset);
          law->den.push_back(1);
        }
        law->terms.push_back(f);
        law->num.push_back(1);
        law->den.push_back(1);
        fits.push_back(law);
      }
      for (const auto& c : role_corners(role_.key, target_)) {
        const auto pt = stage_.values(target_, c, 0, 0, 0);
        for (std::size_t f = 1; f < fits.size(); ++f)
          if (fits[f]->eval(pt) != fits[0]->eval(pt)) {
            fail(where + ", trip count: ambiguous: " + fits[0]->formula(stage_) + " and " + fits[f]->formula(stage_) +
                 " both reproduce every input value but differ at the target; values " +
                 values_text(column_, role_.members, inputs_));
            return false;
          }
      }
      // A law of the sizes that also reproduces every trip count (X - 1 beside log2(P) - 1 at
      // P = 4, 9, 16: NPB SP's sweeps of n - 1 stages) and differs at the target leaves the
      // count undecided: refused, never the logarithm taken silently.
      if (!fits.empty()) {
        std::string w;
        bool deferrable = false;
        const auto linear = solver_.scalar(column_, w, deferrable);
        if (linear && !linear->constant)
          for (const auto& c : role_corners(role_.key, target_)) {
            const auto a = fits[0]->eval(stage_.values(target_, c, 0, 0, 0));
            const auto b = value_at(*linear, solver_.scalar_space().values(target_, c));
            if (b && *b != a) {
              fail(where + ", trip count: ambiguous: " + fits[0]->formula(stage_) + " and " +
                       plan_text(*linear, solver_.scalar_space()) + " both reproduce every input value but give " +
                       std::to_string(a) + " and " + std::to_string(*b) + " at the target; values " +
                       values_text(column_, role_.members, inputs_),
                   true);
              return false;
            }
          }
      }
      if (!fits.empty()) {
        slot = ValuePlan{false, 0, fits[0], true};
        report_.add(where, "trip count", fits[0]->formula(stage_), distinct_points(solver_.points()));
        return true;
      }
    }
    plan_scalar(slot, where, where, "trip count");
    return true;
  }

  /// Field f of call b of loop u over (member, k): constant, else the fewest-term law over the
  /// stage space that reproduces every value exactly and is determined at the probes.
  void plan_stage_field(ValuePlan& slot, std::size_t u, std::size_t b, std::size_t f,
                        const std::vector<std::vector<std::int64_t>>& probes,
                        const std::vector<std::vector<std::int64_t>>& dense, const std::string& where_site,
                        const std::string& where, const std::string& name) {
    std::vector<std::vector<std::int64_t>> pts;
    std::vector<std::int64_t> vals, key;
    for (std::size_t m = 0; m < nm_; ++m) {
      const auto n = role_.units[m][u].count;
      key.push_back(n);
      for (std::int64_t k = 0; k < n; ++k) {
        pts.push_back(stage_point(m, k, n));
        vals.push_back(loop_event(m, u, k, b).fields[f]);
      }
    }
    if (std::all_of(vals.begin(), vals.end(), [&](std::int64_t v) { return v == vals[0]; })) {
      std::fill(column_.begin(), column_.end(), vals[0]);
      plan_scalar(slot, where_site, where, name);  // constants: the aliases and sharing of scalars
      return;
    }
    const auto scale = datatype_size_in_loop(u, b, static_cast<Field>(f));
    key.push_back(-1);
    key.push_back(scale);
    key.insert(key.end(), vals.begin(), vals.end());
    auto it = stage_memo_.find(key);
    if (it == stage_memo_.end()) {
      std::string why, note;
      auto law = solve_linear_law(pts, vals, probes, &why, 3, 1, stage_.linear_count(), &stage_, &note);
      if (law && scale > 0) drop_negative(law, probes, stage_, why);
      if (!law) {  // strong scaling, as for single calls
        std::string wd;
        law = solve_division_law(pts, vals, probes, stage_.divisors(), &wd, &stage_, scale);
        if (!law && wd.rfind("ambiguous", 0) == 0 && why.rfind("ambiguous", 0) != 0) why = wd;
        if (law)
          note = why.rfind("ambiguous", 0) == 0 ? over_ambiguous_linear(*law, why, stage_)
                                                : division_alternatives(*law, pts, vals, probes, stage_);
      }
      // An even split of a size (c/X, c/P: NPB BT's solve buffers), then the coordinates of the
      // cell a rank works on at stage k (modular laws: NPB BT's solve tags), where neither fits.
      // Then the extent of that cell less the global boundary planes (NPB SP's solve buffers).
      for (const int kind : {0, 1, 2}) {
        if (law || why.rfind("ambiguous", 0) == 0) break;
        std::string wi;
        law = kind == 0   ? solve_inverse_law(pts, vals, dense, stage_, &wi)
              : kind == 1 ? solve_modular_law(pts, vals, dense, stage_, &wi)
                          : solve_extent_law(pts, vals, dense, stage_, &wi);
        if (law)
          note = why.rfind("under-determined", 0) == 0 ? inverse_over_unchecked(*law, why, stage_) : "";
        else if (wi.rfind("ambiguous", 0) == 0 || (kind == 0 && wi.rfind("no law", 0) != 0))
          why = wi;
      }
      it = stage_memo_
               .emplace(key, StageSolved{law ? std::make_shared<const LinearLaw>(*law) : nullptr, law ? note : why})
               .first;
    }
    if (!it->second.first && role_.key.root && stage_pool_) {
      // Rank 0's loop seen at few sizes: the law another role found at this call site, if it
      // reproduces every value of rank 0 and every such law agrees at the target's rank 0.
      const auto found = stage_pool_->find({where_site, name});
      std::vector<std::pair<std::string, std::shared_ptr<const LinearLaw>>> fits;
      if (found != stage_pool_->end())
        for (const auto& cand : found->second) {
          bool ok = true;
          try {
            for (std::size_t i = 0; i < pts.size() && ok; ++i) ok = cand.second->eval(pts[i]) == vals[i];
          } catch (const Error&) {
            ok = false;
          }
          if (ok) fits.push_back(cand);
        }
      bool agree = !fits.empty();
      for (std::size_t c = 1; c < fits.size() && agree; ++c)
        for (const auto& d : dense) {
          try {
            agree = agree && fits[c].second->eval(d) == fits[0].second->eval(d);
          } catch (const Error&) {
            agree = false;
          }
        }
      if (agree) {
        slot = ValuePlan{false, 0, fits[0].second, true};
        note_rank(slot, stage_);
        report_.add(where_site, name, plan_text(slot, stage_), pts.size(), fits[0].first);
        return;
      }
    }
    if (!it->second.first && it->second.second.rfind("under-determined", 0) == 0) {
      std::string note;
      if (auto law = single_call_law(u, b, f, note)) {
        slot = ValuePlan{false, 0, std::move(law), false};
        note_rank(slot, scalar_);
        report_.add(where_site, name, plan_text(slot, scalar_), pts.size(), "", note);
        return;
      }
    }
    if (!it->second.first) {
      std::vector<std::int64_t> firsts;                          // the first iteration's value per member, for the text
      std::vector<std::pair<std::size_t, std::int64_t>> makers;  // members that make the loop
      for (std::size_t m = 0; m < nm_; ++m)
        if (role_.units[m][u].count > 0) {
          firsts.push_back(loop_event(m, u, 0, b).fields[f]);
          makers.push_back(role_.members[m]);
        }
      fail(where + ", " + name + ": " + it->second.second + " (over the iterations k of the loop); first iteration " +
               values_text(firsts, makers, inputs_),
           it->second.second.rfind("ambiguous", 0) == 0);
      return;
    }
    slot = ValuePlan{false, 0, it->second.first, true};
    note_rank(slot, stage_);
    report_.add(where_site, name, plan_text(slot, stage_), pts.size(), "", it->second.second);
    if (stage_pool_ && !role_.key.root) {
      auto& laws = (*stage_pool_)[{where_site, name}];
      if (laws.size() < 8) laws.emplace_back(name_, it->second.first);
    }
  }

  /// A loop body's field whose own points do not check a law (a loop that runs at too few
  /// sizes: 0 times at the smallest input) may take the law of the same field of a single call
  /// of the role, checked on that call's own points, if it reproduces every value of the loop at
  /// every member and iteration (NPB BT at gfortran -O2: the back substitution's first send,
  /// outside the loop, has the loop's buffer size at every input, and the loop runs at 3 of 4
  /// sizes). Taken with a note (a warning; strict refuses it).
  std::shared_ptr<const LinearLaw> single_call_law(std::size_t u, std::size_t b, std::size_t f, std::string& note) {
    const auto& units = role_.units.front();
    for (std::size_t u2 = 0; u2 < units.size(); ++u2) {
      if (units[u2].loop) continue;
      std::vector<std::int64_t> col;
      for (std::size_t m = 0; m < nm_; ++m) col.push_back(member_events(m)[role_.units[m][u2].start].fields[f]);
      if (std::all_of(col.begin(), col.end(), [&](std::int64_t v) { return v == col[0]; })) continue;
      std::string w;
      auto law = solve_linear_law(solver_.points(), col, solver_.probes(), &w, 3, 1, scalar_.linear_count(), &scalar_);
      if (!law) law = solve_inverse_law(solver_.points(), col, solver_.probes(), scalar_, &w);
      if (!law) continue;
      bool fits = true;
      try {
        for (std::size_t m = 0; m < nm_ && fits; ++m)
          for (std::int64_t k = 0; k < role_.units[m][u].count && fits; ++k)
            fits = law->eval(solver_.points()[m]) == loop_event(m, u, k, b).fields[f];
      } catch (const Error&) {
        fits = false;
      }
      if (!fits) continue;
      const Event& e = member_events(0)[role_.units[0][u2].start];
      note = law->formula(scalar_) + " (the law of " + std::string(op_name(e.op)) + "@site " + std::to_string(e.site) +
             " in this role, checked on its own points) chosen where the loop's points do not check a law of their "
             "own";
      return std::make_shared<const LinearLaw>(*law);
    }
    return nullptr;
  }

  /// An array parameter: constant if every member has the same array, element by element if
  /// they have the same length, else a length law and element laws by residue of the index.
  void plan_array(EventPlan& ep, std::size_t i, std::size_t a, const std::string& where) {
    const auto& first = member_event(0, i).arrays[a];
    bool all_equal = true, same_length = true;
    for (std::size_t m = 1; m < nm_; ++m) {
      const auto& arr = member_event(m, i).arrays[a];
      all_equal = all_equal && arr == first;
      same_length = same_length && arr.size() == first.size();
    }
    // Request offsets follow from the event sequence, which the role shares at every size.
    const bool structural = static_cast<ArrayField>(a) == ArrayField::Requests;
    if (all_equal && (!single_size_ || structural)) {
      ep.arrays[a].constant = first;
      const auto aname = std::string(array_field_name(static_cast<ArrayField>(a)));
      for (std::size_t j = 0; j < first.size(); ++j)
        pool_add(pool_, {site_text(ep), aname + "[" + std::to_string(j) + "]"},
                 SharedLaw{ValuePlan{true, first[j], nullptr}, name_, false});
    } else if (same_length)
      plan_elementwise(ep, i, a, where);
    else
      plan_sequence(ep, i, a, where);
  }

  void plan_elementwise(EventPlan& ep, std::size_t i, std::size_t a, const std::string& where) {
    ArrayPlan& ap = ep.arrays[a];
    const auto aname = std::string(array_field_name(static_cast<ArrayField>(a)));
    ap.kind = ArrayPlan::Kind::Elementwise;
    const std::size_t length = member_event(0, i).arrays[a].size();
    ap.elements.assign(length, ValuePlan{});  // deferred laws point into it
    for (std::size_t j = 0; j < length; ++j) {
      for (std::size_t m = 0; m < nm_; ++m) column_[m] = member_event(m, i).arrays[a][j];
      plan_scalar(ap.elements[j], site_text(ep), where, aname + "[" + std::to_string(j) + "]");
    }
  }

  void plan_sequence(EventPlan& ep, std::size_t i, std::size_t a, const std::string& where) {
    ArrayPlan& ap = ep.arrays[a];
    const auto aname = std::string(array_field_name(static_cast<ArrayField>(a)));
    ap.kind = ArrayPlan::Kind::Sequence;
    for (std::size_t m = 0; m < nm_; ++m) column_[m] = static_cast<std::int64_t>(member_event(m, i).arrays[a].size());
    plan_scalar(ap.length, site_text(ep), where, "length of " + aname);
    const std::int64_t scale = array_element_size(i, static_cast<ArrayField>(a));
    // One law for every element first. Where this role's inputs do not decide it (a division
    // checked on two sizes only: an all-to-all's N / P^2 in a role seen at two sizes), a law of
    // another role at the same call site may, as for scalars.
    std::vector<std::vector<std::int64_t>> pts;
    std::vector<std::int64_t> vals;
    element_points(i, a, 1, 0, pts, vals);
    std::string why;
    bool deferrable = false;
    std::optional<ValuePlan> whole;
    if (!pts.empty()) whole = solver_.indexed(pts, vals, why, deferrable, scale);
    if (whole) {
      ap.modulus = 1;
      ap.by_residue = {*whole};
      pool_add(pool_, {site_text(ep), aname + " element j"}, SharedLaw{*whole, name_, true});
    } else if (!solve_residues(ap, i, a, scale)) {
      if ((deferrable || single_size_) && !pts.empty()) {
        ap.modulus = 1;
        ap.by_residue.assign(1, ValuePlan{});
        defer_indexed(&ap.by_residue[0], {site_text(ep), aname + " element j"}, where, std::move(pts), std::move(vals),
                      why.empty() ? "the role occurs at one input size only" : why);
        return;
      }
      fail(where + ", " + aname +
           ": the elements follow no linear law in j (nor one per residue of j mod 2, 3, 4 or 6)");
      return;
    }
    std::string text;
    for (std::int64_t c = 0; c < ap.modulus; ++c) {
      note_rank(ap.by_residue[static_cast<std::size_t>(c)], indexed_);
      const std::string residue =
          ap.modulus > 1 ? "j%" + std::to_string(ap.modulus) + "=" + std::to_string(c) + " -> " : "";
      text += (c ? "; " : "") + residue + plan_text(ap.by_residue[static_cast<std::size_t>(c)], indexed_);
    }
    report_.add(site_text(ep), aname + " element j", text, distinct_points(solver_.points()));
  }

  /// Element laws of a variable-length array whose elements follow no one law: the smallest
  /// modulus (2, 3, 4 or 6) for which every residue class of the element index follows a law.
  /// False if none does.
  bool solve_residues(ArrayPlan& ap, std::size_t i, std::size_t a, std::int64_t scale) {
    for (std::int64_t mod : {2, 3, 4, 6}) {
      std::vector<ValuePlan> classes;
      for (std::int64_t c = 0; c < mod; ++c) {
        auto law = residue_law(i, a, mod, c, scale);
        if (!law) break;
        classes.push_back(*law);
      }
      if (classes.size() == static_cast<std::size_t>(mod)) {
        ap.modulus = mod;
        ap.by_residue = std::move(classes);
        return true;
      }
    }
    return false;
  }

  /// An indexed law (array elements, communicator members) that this role's inputs do not
  /// decide: settled later by a law of another role for the same parameter (see resolve).
  void defer_indexed(ValuePlan* slot, std::pair<std::string, std::string> key, const std::string& where,
                     std::vector<std::vector<std::int64_t>> pts, std::vector<std::int64_t> vals, std::string why) {
    deferred_.push_back(Deferred{&role_, &report_, name_, slot, std::move(key), where, true, std::move(pts),
                                 solver_.index_probes(), std::move(vals), std::move(why), ""});
  }

  /// The (member, element index) points and values of the elements j = c (mod `mod`) of array a
  /// of event i, over all members.
  void element_points(std::size_t i, std::size_t a, std::int64_t mod, std::int64_t c,
                      std::vector<std::vector<std::int64_t>>& pts, std::vector<std::int64_t>& vals) const {
    for (std::size_t m = 0; m < nm_; ++m) {
      const auto& arr = member_event(m, i).arrays[a];
      for (std::size_t j = static_cast<std::size_t>(c); j < arr.size(); j += static_cast<std::size_t>(mod)) {
        pts.push_back(index_point(m, j));
        vals.push_back(arr[j]);
      }
    }
  }

  /// The law of the elements j = c (mod `mod`) of array a of event i, over all members.
  std::optional<ValuePlan> residue_law(std::size_t i, std::size_t a, std::int64_t mod, std::int64_t c,
                                       std::int64_t scale) {
    std::vector<std::vector<std::int64_t>> pts;
    std::vector<std::int64_t> vals;
    element_points(i, a, mod, c, pts, vals);
    if (pts.empty()) return std::nullopt;
    std::string w;
    bool deferrable = false;
    return solver_.indexed(pts, vals, w, deferrable, scale);
  }

  /// MPI_COMM_WORLD (id 0) by definition: P members 0..P-1, checked on every input (the
  /// member's c-th communicator).
  bool plan_world(CommPlan& cp, std::size_t c = 0) {
    for (std::size_t m = 0; m < nm_; ++m) {
      const auto& mem = member_comms(m)[c].members;
      const auto p = inputs_[role_.members[m].first].grid.size();
      if (static_cast<std::int64_t>(mem.size()) != p) return false;
      for (std::size_t j = 0; j < mem.size(); ++j)
        if (mem[j] != static_cast<std::int64_t>(j)) return false;
    }
    const char* product = scalar_.ndims == 1 ? "X" : scalar_.ndims == 2 ? "X*Y" : "X*Y*Z";
    auto size = std::make_shared<LinearLaw>();
    size->terms = {scalar_.index(product)};
    size->num = {1};
    size->den = {1};
    auto member = std::make_shared<LinearLaw>();
    member->terms = {indexed_.index("j")};
    member->num = {1};
    member->den = {1};
    cp.length = ValuePlan{false, 0, size};
    cp.member = ValuePlan{false, 0, member};
    return true;
  }

  /// Communicator c of the role's ranks: its size as a scalar law, member j as an indexed law
  /// (MPI_COMM_WORLD: by definition).
  void plan_comm(std::size_t c, std::int64_t id) {
    role_.comms.push_back(CommPlan{});
    CommPlan& cp = role_.comms.back();
    cp.id = id;
    const std::string where = "communicator " + std::to_string(cp.id);
    if (id == 0 && c == 0 && plan_world(cp)) {
      report_.add(where, "size", "P (MPI_COMM_WORLD)", distinct_points(solver_.points()));
      return;
    }
    // assume_constant, where a grid size is the same at every input: a communicator that is
    // every rank in order at every input (NPB MG's comm_work, split off MPI_COMM_WORLD) stays
    // so, rather than 4*X*Y where Z is 4 throughout.
    if (solver_.assume_constant() && plan_world(cp, c)) {
      report_.add(where, "size", "P (every rank at every input; assume_constant)", distinct_points(solver_.points()));
      return;
    }
    for (std::size_t m = 0; m < nm_; ++m) column_[m] = static_cast<std::int64_t>(member_comms(m)[c].members.size());
    plan_scalar(cp.length, where, where, "size");
    std::vector<std::vector<std::int64_t>> pts;
    std::vector<std::int64_t> vals;
    for (std::size_t m = 0; m < nm_; ++m) {
      const auto& mem = member_comms(m)[c].members;
      for (std::size_t j = 0; j < mem.size(); ++j) {
        pts.push_back(index_point(m, j));
        vals.push_back(mem[j]);
      }
    }
    if (pts.empty()) return;
    std::string why;
    bool deferrable = single_size_;
    std::optional<ValuePlan> member;
    if (single_size_)
      why = "the role occurs at one input size only";
    else
      member = solver_.indexed(pts, vals, why, deferrable);
    if (!member) {
      if (deferrable) {
        defer_indexed(&cp.member, {where, "member j"}, where, std::move(pts), std::move(vals), why);
        return;
      }
      fail(where + ", members: " + why);
      return;
    }
    cp.member = *member;
    note_rank(cp.member, indexed_);
    pool_add(pool_, {where, "member j"}, SharedLaw{*member, name_, true});
    report_.add(where, "member j", plan_text(cp.member, indexed_), distinct_points(pts));
  }

  /// Timing groups: per (op, site), the mean times of every input (NaN where the role does not
  /// occur at that size).
  void plan_timing() {
    const std::size_t ngroups = groups_.size(), ninputs = inputs_.size();
    role_.timing_keys.resize(ngroups);
    for (const auto& [g, idx] : groups_) role_.timing_keys[idx] = g;
    role_.compute_means.assign(ngroups, std::vector<double>(ninputs, 0.0));
    role_.duration_means.assign(ngroups, std::vector<double>(ninputs, 0.0));
    std::vector<std::vector<double>> counts(ngroups, std::vector<double>(ninputs, 0.0));
    for (std::size_t m = 0; m < nm_; ++m) {
      const auto k = role_.members[m].first;
      const auto& evs = member_events(m);
      for (std::size_t i = 0; i < evs.size(); ++i) {
        // Stage loops: an event's group is its call's (the plan has each loop's body once).
        std::size_t g = 0;
        if (role_.stages) {
          const auto it = groups_.find({evs[i].op, evs[i].site});
          if (it == groups_.end()) continue;  // a loop whose planning stopped (reported)
          g = it->second;
        } else {
          g = role_.events[i].timing_group;
        }
        role_.compute_means[g][k] += static_cast<double>(evs[i].compute_ns);
        role_.duration_means[g][k] += static_cast<double>(evs[i].duration_ns);
        counts[g][k] += 1;
      }
    }
    for (std::size_t g = 0; g < ngroups; ++g)
      for (std::size_t k = 0; k < ninputs; ++k) {
        const bool occurs = counts[g][k] > 0;
        const double nan = std::numeric_limits<double>::quiet_NaN();
        role_.compute_means[g][k] = occurs ? role_.compute_means[g][k] / counts[g][k] : nan;
        role_.duration_means[g][k] = occurs ? role_.duration_means[g][k] / counts[g][k] : nan;
      }
  }

  const std::vector<ExpandedInput>& inputs_;
  RolePlan& role_;
  const std::string name_;
  const bool single_size_;
  std::vector<Failure>& failures_;
  LawReport& report_;
  LawPool& pool_;
  std::vector<Deferred>& deferred_;
  RoleSolver solver_;
  const FeatureSpace stage_;  ///< scalar features plus a stage loop's (k, n, flipped bits)
  const Grid& target_;
  std::vector<std::size_t> unit_of_;  ///< stage-loop roles: plan event -> unit of the members
  /// A stage-space law and, with it, the note of a choice among several (else why none).
  struct StageSolved {
    std::shared_ptr<const LinearLaw> first;
    std::string second;
  };
  std::map<std::vector<std::int64_t>, StageSolved> stage_memo_;
  StagePool* stage_pool_ = nullptr;
  const FeatureSpace& scalar_;
  const FeatureSpace& indexed_;
  const std::size_t nm_;                                        ///< members of the role
  std::vector<std::int64_t> column_;                            ///< one value per member (scratch)
  std::map<std::pair<Op, std::uint32_t>, std::size_t> groups_;  ///< (op, site) -> timing group
  std::size_t reported_ = 0;                                    ///< failures of this role so far
};

/// `law` plus the constant `c` (a linear law's constant term, a division law's offset).
std::shared_ptr<const LinearLaw> plus_constant(const LinearLaw& law, std::int64_t c) {
  auto out = std::make_shared<LinearLaw>(law);
  if (out->div_scale != 0) {
    out->div_offset += c;
    return out;
  }
  auto it = std::find(out->terms.begin(), out->terms.end(), std::size_t{0});
  if (it == out->terms.end()) {
    out->terms.push_back(0);
    out->num.push_back(c);
    out->den.push_back(1);
    return out;
  }
  const auto k = static_cast<std::size_t>(it - out->terms.begin());
  out->num[k] += c * out->den[k];
  if (out->num[k] == 0) {
    out->terms.erase(out->terms.begin() + static_cast<std::ptrdiff_t>(k));
    out->num.erase(out->num.begin() + static_cast<std::ptrdiff_t>(k));
    out->den.erase(out->den.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return out;
}

/// Another role's law at the same call site plus a constant that reproduces every value: the
/// constant is its one unknown, so the law must take 2 or more distinct values over the
/// parameter's points (one to solve it, one to check it). NPB LU: the first column of ranks
/// holds one grid row more than the others, so its faces are the others' 8*floor(10560/X)
/// bytes plus 2640. nullopt if the law does not fit so.
std::optional<ValuePlan> offset_fit(const SharedLaw& shared, const Deferred& d) {
  if (shared.plan.constant || shared.indexed || d.indexed) return std::nullopt;
  std::set<std::int64_t> distinct;
  std::optional<std::int64_t> c;
  for (std::size_t i = 0; i < d.points.size(); ++i) {
    const auto v = value_at(shared.plan, d.points[i]);
    if (!v) return std::nullopt;
    distinct.insert(*v);
    const auto diff = static_cast<__int128>(d.values[i]) - *v;
    if (diff > (std::int64_t{1} << 50) || diff < -(std::int64_t{1} << 50)) return std::nullopt;
    if (!c) c = static_cast<std::int64_t>(diff);
    if (*c != static_cast<std::int64_t>(diff)) return std::nullopt;
  }
  if (distinct.size() < 2 || !c || *c == 0) return std::nullopt;
  ValuePlan plan;
  plan.constant = false;
  plan.law = plus_constant(*shared.plan.law, *c);
  return plan;
}

/// What became of a deferred parameter in one round.
enum class Settled { Yes, Failed, Open };

/// Settles a deferred parameter with the laws other roles found for the same parameter at the
/// same call site: those that reproduce every one of its values; they must agree wherever the
/// role occurs at the target. Without one: its own law if it has one (`own_allowed`), else, with
/// `offsets`, another role's law plus a constant (see offset_fit), else it stays open. `last`:
/// an open parameter is a failure, naming the candidates. A settled law joins `pool` (as
/// `added`) for the parameters of later rounds.
Settled resolve(Deferred& d, const LawPool& pool, const FeatureSpace& scalar, const FeatureSpace& indexed,
                std::vector<Failure>& failures, bool offsets, bool last, LawPool& added) {
  const FeatureSpace& space = d.indexed ? indexed : scalar;
  struct Fit {
    ValuePlan plan;
    std::string role, note, text;
  };
  std::vector<Fit> fits;
  auto it = pool.find(d.key);
  auto add_fit = [&](const ValuePlan& plan, const SharedLaw& law) {
    auto text = plan_text(plan, space);
    for (const auto& f : fits)
      if (f.text == text) return;  // the same law from several roles: once
    fits.push_back({plan, law.role, law.note, std::move(text)});
  };
  if (it != pool.end())
    for (const auto& law : it->second)
      if (law.indexed == d.indexed && law.role != d.role_name && reproduces(law.plan, d.points, d.values))
        add_fit(law.plan, law);
  auto report_failure = [&](const std::string& text) {
    failures.push_back({false,
                        "role " + d.role_name + ", " + d.where + ", " + d.key.second + ": " + text +
                            (d.values_text.empty() ? "" : "; values " + d.values_text),
                        text.rfind("ambiguous", 0) == 0, text.rfind("ambiguous", 0) != 0});
    return Settled::Failed;
  };
  auto settle = [&](const ValuePlan& plan, const std::string& from, const std::string& note) {
    *d.slot = plan;
    d.role->rank_dependent = d.role->rank_dependent || plan_uses_rank(plan, space);
    d.report->add(d.key.first, d.key.second, plan_text(plan, space), distinct_points(d.points), from, note);
    pool_add(added, d.key, SharedLaw{plan, d.role_name, d.indexed, note});
    return Settled::Yes;
  };
  if (fits.empty() && d.own) return settle(*d.own, "", d.own_note);
  bool offset = false;
  if (fits.empty() && offsets && d.amount && it != pool.end())
    for (const auto& law : it->second)
      if (law.role != d.role_name)
        if (auto plan = offset_fit(law, d)) {
          add_fit(*plan, law);
          offset = true;
        }
  if (fits.empty()) {
    if (!last) return Settled::Open;
    return report_failure(d.why +
                          "; no law of the same parameter at this call site in another role reproduces its values, "
                          "alone or plus a constant");
  }
  for (const auto& probe : d.probes)
    for (std::size_t f = 1; f < fits.size(); ++f) {
      const auto a = value_at(fits[0].plan, probe), b = value_at(fits[f].plan, probe);
      if (a != b)
        return report_failure("ambiguous: the laws " + plan_text(fits[0].plan, space) + " (role " + fits[0].role +
                              (offset ? " plus a constant" : "") + ") and " + plan_text(fits[f].plan, space) +
                              " (role " + fits[f].role + (offset ? " plus a constant" : "") +
                              ") both reproduce its values but differ at the target (" +
                              (a ? std::to_string(*a) : std::string("none")) + " vs " +
                              (b ? std::to_string(*b) : std::string("none")) + "); " + d.why);
    }
  // A division law shared from a role whose inputs showed no remainder either, read at this
  // role's points: how the program splits a remainder at the target may not be in them.
  if (!fits[0].plan.constant && fits[0].plan.law && !fits[0].plan.staged) {
    const auto rival = division_remainder_rival(*fits[0].plan.law, d.points, d.probes, &space);
    if (!rival.empty()) return report_failure(rival);
  }
  return settle(fits[0].plan, fits[0].role + (offset ? " plus a constant" : ""), fits[0].note);
}

/// The needed roles of one (depth, modulus), with the (input, rank) pairs that play each.
std::map<RoleKey, RolePlan> group_roles(const std::vector<ExpandedInput>& inputs, int depth, std::int64_t modulus,
                                        bool root_apart, const std::set<RoleKey>& needed) {
  std::map<RoleKey, RolePlan> roles;
  for (std::size_t k = 0; k < inputs.size(); ++k)
    for (std::int64_t r = 0; r < inputs[k].grid.size(); ++r) {
      auto key = role_key(inputs[k].grid, r, depth, modulus, root_apart);
      if (!needed.count(key)) continue;
      auto& role = roles[key];
      role.key = key;
      role.members.emplace_back(k, r);
    }
  return roles;
}

std::size_t input_sizes(const RolePlan& role) {
  std::set<std::size_t> sizes;
  for (const auto& m : role.members) sizes.insert(m.first);
  return sizes.size();
}

}  // namespace

std::map<RoleKey, RolePlan> plan_roles(const std::vector<ExpandedInput>& inputs, const Grid& target, std::size_t ndims,
                                       int depth, std::int64_t modulus, const std::set<RoleKey>& needed,
                                       std::vector<Failure>& failures, std::vector<ParameterLaw>& laws,
                                       std::size_t budget, bool remainder_rivals, bool periodic, bool assume_constant,
                                       bool root_apart) {
  std::map<RoleKey, RolePlan> roles = group_roles(inputs, depth, modulus, root_apart, needed);
  std::map<RoleKey, LawReport> reports;
  LawPool pool;
  StagePool stage_pool;
  std::vector<Deferred> deferred;
  // Roles seen at two sizes or more first: their laws form the pool the others draw from.
  auto hopeless = [&] {
    return failures.size() > budget &&
           std::any_of(failures.begin(), failures.end(), [](const Failure& f) { return !f.ambiguous; });
  };
  for (bool single : {false, true})
    for (auto& [key, role] : roles) {
      if (hopeless()) return roles;
      if ((input_sizes(role) < 2) != single) continue;
      if (!same_shape(inputs, role, key.to_string(), failures)) continue;
      RolePlanner(inputs, role, target, ndims, single, failures, reports[key], pool, deferred, remainder_rivals,
                  periodic, assume_constant)
          .with_stage_pool(stage_pool)
          .plan();
    }
  auto scalar = FeatureSpace::make(ndims, false, false, periodic),
       indexed = FeatureSpace::make(ndims, true, false, periodic);
  scalar.remainder_rivals = indexed.remainder_rivals = remainder_rivals;
  // First the laws the roles determined themselves; then, round by round, also the laws the
  // deferred parameters settled on (a role seen at one size may need the law another deferred
  // parameter took) and other roles' laws plus a constant, until no more settle.
  const std::size_t before = failures.size();
  std::vector<Deferred*> open;
  LawPool added;
  for (auto& d : deferred) {
    if (failures.size() > before + 24) break;  // enough to report
    if (resolve(d, pool, scalar, indexed, failures, false, false, added) == Settled::Open) open.push_back(&d);
  }
  for (bool progress = true; !open.empty();) {
    const bool last = !progress;
    for (auto& [key, laws] : added)
      for (auto& law : laws) pool_add(pool, key, std::move(law));
    added.clear();
    progress = false;
    std::vector<Deferred*> still;
    for (auto* d : open) {
      if (failures.size() > before + 24) break;
      const auto r = resolve(*d, pool, scalar, indexed, failures, true, last, added);
      progress = progress || r == Settled::Yes;
      if (r == Settled::Open) still.push_back(d);
    }
    open = std::move(still);
    if (last) break;
  }
  for (const auto& [key, report] : reports) report.flush(key.to_string(), laws);
  return roles;
}

}  // namespace scalatrace::extrap
