// Roles and event matching for extrapolation (thesis §3.2.2, §3.2.3): ranks of every input are
// grouped by boundary class ("role"), which aligns the communication groups of different
// sizes by their position in the grid whatever order the merge left them in; inside a role the
// k-th event of every rank is the same MPI call, and each of its parameters gets a linear law.
// See docs/extrapolation.md ("Roles and matching").
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "extrapolate/extrapolate_roles.hpp"
#include "scalatrace/read/cursor.hpp"

namespace scalatrace::extrap {

std::vector<ExpandedInput> expand_inputs(const std::vector<const Trace*>& inputs, const std::vector<Grid>& grids,
                                         CanonicalTables& tables) {
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
    in.comms.resize(static_cast<std::size_t>(t.nranks));
    for (std::int64_t r = 0; r < t.nranks; ++r) {
      auto& evs = in.events[static_cast<std::size_t>(r)];
      Cursor cur(t, r, TimingMode::Mean);
      while (auto e = cur.next()) {
        if (e->site < site_map.size()) e->site = site_map[e->site];
        if (e->op == Op::Other) {
          auto& id = (*e)[Field::NameId];
          if (id >= 0 && static_cast<std::size_t>(id) < name_map.size()) id = name_map[static_cast<std::size_t>(id)];
        }
        evs.push_back(std::move(*e));
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
  return corners;
}

namespace {

std::string site_text(const EventPlan& e) { return std::string(op_name(e.op)) + "@site " + std::to_string(e.site); }

std::string values_text(const std::vector<std::int64_t>& values,
                        const std::vector<std::pair<std::size_t, std::int64_t>>& members,
                        const std::vector<ExpandedInput>& inputs) {
  std::ostringstream s;
  std::size_t shown = 0;
  for (std::size_t m = 0; m < values.size() && shown < 6; ++m, ++shown)
    s << (shown ? ", " : "") << values[m] << " (P=" << inputs[members[m].first].grid.size() << " rank "
      << members[m].second << ")";
  if (values.size() > 6) s << ", ...";
  return s.str();
}

/// Laws of one role, memoized by value column (every timestep repeats the same columns).
class RoleSolver {
 public:
  RoleSolver(const std::vector<ExpandedInput>& inputs, const RolePlan& role, const Grid& target, std::size_t ndims)
      : scalar_(FeatureSpace::make(ndims, false)), indexed_(FeatureSpace::make(ndims, true)) {
    for (const auto& [k, r] : role.members) points_.push_back(scalar_.values(inputs[k].grid, inputs[k].grid.coords(r)));
    for (const auto& c : role_corners(role.key, target)) {
      probes_.push_back(scalar_.values(target, c));
      for (std::int64_t j : {0, 1, 2, 7}) index_probes_.push_back(indexed_.values(target, c, j));
    }
  }
  const FeatureSpace& scalar_space() const { return scalar_; }
  const FeatureSpace& index_space() const { return indexed_; }

  /// Scalar law for a column (one value per role member); nullopt with `why` if none.
  std::optional<ValuePlan> scalar(const std::vector<std::int64_t>& column, std::string& why) {
    ValuePlan p;
    if (std::all_of(column.begin(), column.end(), [&](std::int64_t v) { return v == column[0]; })) {
      p.value = column[0];
      return p;
    }
    for (auto v : column)
      if (v <= -(std::int64_t{1} << 39) || v >= (std::int64_t{1} << 50)) {
        why = "a special value (wildcard, MPI_PROC_NULL, undefined) appears for some ranks only";
        return std::nullopt;
      }
    auto it = memo_.find(column);
    if (it == memo_.end()) {
      std::string w;
      auto law = solve_linear_law(points_, column, probes_, &w);
      it = memo_.emplace(column, std::make_pair(law ? std::make_shared<const LinearLaw>(*law) : nullptr, w)).first;
    }
    if (!it->second.first) {
      why = it->second.second;
      return std::nullopt;
    }
    p.constant = false;
    p.law = it->second.first;
    return p;
  }

  /// Law over (member, element index) points.
  std::optional<ValuePlan> indexed(const std::vector<std::vector<std::int64_t>>& pts,
                                   const std::vector<std::int64_t>& vals, std::string& why) {
    ValuePlan p;
    if (std::all_of(vals.begin(), vals.end(), [&](std::int64_t v) { return v == vals[0]; })) {
      p.value = vals[0];
      return p;
    }
    auto law = solve_linear_law(pts, vals, index_probes_, &why);
    if (!law) return std::nullopt;
    p.constant = false;
    p.law = std::make_shared<const LinearLaw>(*law);
    return p;
  }
  const std::vector<std::int64_t>& point(std::size_t m) const { return points_[m]; }

 private:
  FeatureSpace scalar_, indexed_;
  std::vector<std::vector<std::int64_t>> points_, probes_, index_probes_;
  std::map<std::vector<std::int64_t>, std::pair<std::shared_ptr<const LinearLaw>, std::string>> memo_;
};

std::string plan_text(const ValuePlan& p, const FeatureSpace& space) {
  return p.constant ? std::to_string(p.value) : p.law->formula(space);
}

bool plan_uses_rank(const ValuePlan& p, const FeatureSpace& space) { return !p.constant && p.law->uses_rank(space); }

/// Collects distinct formulas per (op@site, parameter) of a role, in order of appearance.
class LawReport {
 public:
  void add(const std::string& where, const std::string& field, const std::string& formula) {
    auto key = std::make_pair(where, field);
    auto it = index_.find(key);
    if (it == index_.end()) {
      it = index_.emplace(key, rows_.size()).first;
      rows_.push_back({key, {}});
    }
    auto& list = rows_[it->second].second;
    if (std::find(list.begin(), list.end(), formula) == list.end()) list.push_back(formula);
  }
  void flush(const std::string& role, std::vector<ParameterLaw>& out) const {
    for (const auto& [key, list] : rows_) {
      // Only parameters that change with the size or the rank are worth a line.
      bool varying = false;
      for (const auto& f : list) varying = varying || f.find_first_of("XYZxyzjr") != std::string::npos;
      if (!varying) continue;
      std::string text;
      for (std::size_t i = 0; i < list.size() && i < 24; ++i) text += (i ? ", " : "") + list[i];
      if (list.size() > 24) text += ", ... (" + std::to_string(list.size()) + " distinct)";
      out.push_back(ParameterLaw{role, key.first, key.second, text});
    }
  }

 private:
  std::map<std::pair<std::string, std::string>, std::size_t> index_;
  std::vector<std::pair<std::pair<std::string, std::string>, std::vector<std::string>>> rows_;
};

/// Checks that every member has the reference member's event shape and communicators.
bool same_shape(const std::vector<ExpandedInput>& inputs, const RolePlan& role, const std::string& name,
                std::vector<std::string>& failures) {
  const auto [k0, r0] = role.members.front();
  const auto& ref = inputs[k0].events[static_cast<std::size_t>(r0)];
  const auto& ref_comms = inputs[k0].comms[static_cast<std::size_t>(r0)];
  for (const auto& [k, r] : role.members) {
    const auto& evs = inputs[k].events[static_cast<std::size_t>(r)];
    auto where = [&, k = k, r = r] {
      return "role " + name + ": rank " + std::to_string(r) + " of the " + std::to_string(inputs[k].grid.size()) +
             "-rank trace and rank " + std::to_string(r0) + " of the " + std::to_string(inputs[k0].grid.size()) +
             "-rank trace";
    };
    if (evs.size() != ref.size()) {
      failures.push_back(where() + " have " + std::to_string(evs.size()) + " and " + std::to_string(ref.size()) +
                         " events (event counts that change with the size are not extrapolated)");
      return false;
    }
    for (std::size_t i = 0; i < evs.size(); ++i)
      if (evs[i].op != ref[i].op || evs[i].site != ref[i].site) {
        failures.push_back(where() + " differ at event " + std::to_string(i) + ": " + std::string(op_name(evs[i].op)) +
                           "@site " + std::to_string(evs[i].site) + " vs " + std::string(op_name(ref[i].op)) +
                           "@site " + std::to_string(ref[i].site) + " (different programs or inputs?)");
        return false;
      }
    const auto& comms = inputs[k].comms[static_cast<std::size_t>(r)];
    bool same_ids = comms.size() == ref_comms.size();
    for (std::size_t c = 0; same_ids && c < comms.size(); ++c) same_ids = comms[c].id == ref_comms[c].id;
    if (!same_ids) {
      failures.push_back(where() + " hold different communicators");
      return false;
    }
  }
  return true;
}

/// Plans one role: a law for every parameter of every event, for the communicators the role's
/// ranks hold, and the mean times per timing group. Each step is one method; problems go to
/// `failures` (at most 8 lines per role), the laws found to the role's LawReport.
class RolePlanner {
 public:
  RolePlanner(const std::vector<ExpandedInput>& inputs, RolePlan& role, const Grid& target, std::size_t ndims,
              std::vector<std::string>& failures)
      : inputs_(inputs),
        role_(role),
        name_(role.key.to_string()),
        failures_(failures),
        solver_(inputs, role, target, ndims),
        scalar_(solver_.scalar_space()),
        indexed_(solver_.index_space()),
        nm_(role.members.size()),
        column_(nm_) {}

  /// Plans the events, the communicators and the timing groups; the role's laws go to `laws`.
  void plan(std::vector<ParameterLaw>& laws) {
    const auto [k0, r0] = role_.members.front();
    const auto& ref = inputs_[k0].events[static_cast<std::size_t>(r0)];
    role_.events.resize(ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) plan_event(i, ref[i]);
    // Communicators held by the role's ranks: length and members as laws.
    const auto& ref_comms = inputs_[k0].comms[static_cast<std::size_t>(r0)];
    for (std::size_t c = 0; c < ref_comms.size(); ++c) plan_comm(c, ref_comms[c].id);
    plan_timing();
    report_.flush(name_, laws);
  }

 private:
  const std::vector<Event>& member_events(std::size_t m) const {
    return inputs_[role_.members[m].first].events[static_cast<std::size_t>(role_.members[m].second)];
  }
  const std::vector<HeldComm>& member_comms(std::size_t m) const {
    return inputs_[role_.members[m].first].comms[static_cast<std::size_t>(role_.members[m].second)];
  }
  /// Index-space features of element j of member m.
  std::vector<std::int64_t> index_point(std::size_t m, std::size_t j) const {
    const auto& [k, r] = role_.members[m];
    return indexed_.values(inputs_[k].grid, inputs_[k].grid.coords(r), static_cast<std::int64_t>(j));
  }
  void fail(const std::string& text) {
    if (reported_++ < 8) failures_.push_back("role " + name_ + ", " + text);
  }
  void note_rank(const ValuePlan& p, const FeatureSpace& space) {
    role_.rank_dependent = role_.rank_dependent || plan_uses_rank(p, space);
  }

  void plan_event(std::size_t i, const Event& ref) {
    EventPlan& ep = role_.events[i];
    ep.op = ref.op;
    ep.site = ref.site;
    const std::string where = site_text(ep) + " (event " + std::to_string(i) + ")";
    auto [git, fresh] = groups_.emplace(std::make_pair(ep.op, ep.site), groups_.size());
    ep.timing_group = git->second;
    for (std::size_t f = 0; f < kFieldCount; ++f) plan_field(ep, i, f, where);
    for (std::size_t a = 0; a < kArrayFieldCount; ++a) plan_array(ep, i, a, where);
  }

  void plan_field(EventPlan& ep, std::size_t i, std::size_t f, const std::string& where) {
    for (std::size_t m = 0; m < nm_; ++m) column_[m] = member_events(m)[i].fields[f];
    std::string why;
    auto plan = solver_.scalar(column_, why);
    const auto fname = std::string(field_name(static_cast<Field>(f)));
    if (!plan) {
      fail(where + ", " + fname + ": " + why + "; values " + values_text(column_, role_.members, inputs_));
      return;
    }
    ep.fields[f] = *plan;
    note_rank(*plan, scalar_);
    report_.add(site_text(ep), fname, plan_text(*plan, scalar_));
  }

  /// An array parameter: constant if every member has the same array, element by element if
  /// they have the same length, else a length law and element laws by residue of the index.
  void plan_array(EventPlan& ep, std::size_t i, std::size_t a, const std::string& where) {
    const auto& first = member_events(0)[i].arrays[a];
    bool all_equal = true, same_length = true;
    for (std::size_t m = 1; m < nm_; ++m) {
      const auto& arr = member_events(m)[i].arrays[a];
      all_equal = all_equal && arr == first;
      same_length = same_length && arr.size() == first.size();
    }
    if (all_equal)
      ep.arrays[a].constant = first;
    else if (same_length)
      plan_elementwise(ep, i, a, where);
    else
      plan_sequence(ep, i, a, where);
  }

  void plan_elementwise(EventPlan& ep, std::size_t i, std::size_t a, const std::string& where) {
    ArrayPlan& ap = ep.arrays[a];
    const auto aname = std::string(array_field_name(static_cast<ArrayField>(a)));
    ap.kind = ArrayPlan::Kind::Elementwise;
    const std::size_t length = member_events(0)[i].arrays[a].size();
    for (std::size_t j = 0; j < length; ++j) {
      for (std::size_t m = 0; m < nm_; ++m) column_[m] = member_events(m)[i].arrays[a][j];
      std::string why;
      auto plan = solver_.scalar(column_, why);
      if (!plan) {
        fail(where + ", " + aname + "[" + std::to_string(j) + "]: " + why);
        plan = ValuePlan{};
      }
      note_rank(*plan, scalar_);
      report_.add(site_text(ep), aname + "[" + std::to_string(j) + "]", plan_text(*plan, scalar_));
      ap.elements.push_back(*plan);
    }
  }

  void plan_sequence(EventPlan& ep, std::size_t i, std::size_t a, const std::string& where) {
    ArrayPlan& ap = ep.arrays[a];
    const auto aname = std::string(array_field_name(static_cast<ArrayField>(a)));
    ap.kind = ArrayPlan::Kind::Sequence;
    for (std::size_t m = 0; m < nm_; ++m) column_[m] = static_cast<std::int64_t>(member_events(m)[i].arrays[a].size());
    std::string why;
    auto length = solver_.scalar(column_, why);
    if (!length) {
      fail(where + ", length of " + aname + ": " + why + "; lengths " + values_text(column_, role_.members, inputs_));
      return;
    }
    ap.length = *length;
    if (!solve_residues(ap, i, a)) {
      fail(where + ", " + aname +
           ": the elements follow no linear law in j (nor one per residue of j mod 2, 3, 4 or 6)");
      return;
    }
    std::string text = "len " + plan_text(ap.length, scalar_) + ": ";
    for (std::int64_t c = 0; c < ap.modulus; ++c) {
      note_rank(ap.by_residue[static_cast<std::size_t>(c)], indexed_);
      const std::string residue =
          ap.modulus > 1 ? "j%" + std::to_string(ap.modulus) + "=" + std::to_string(c) + " -> " : "";
      text += (c ? "; " : "") + residue + plan_text(ap.by_residue[static_cast<std::size_t>(c)], indexed_);
    }
    report_.add(site_text(ep), aname, text);
  }

  /// Element laws of a variable-length array: the smallest modulus (1, 2, 3, 4 or 6) for which
  /// every residue class of the element index follows a law. False if none does.
  bool solve_residues(ArrayPlan& ap, std::size_t i, std::size_t a) {
    for (std::int64_t mod : {1, 2, 3, 4, 6}) {
      std::vector<ValuePlan> classes;
      for (std::int64_t c = 0; c < mod; ++c) {
        auto law = residue_law(i, a, mod, c);
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

  /// The law of the elements j = c (mod `mod`) of array a of event i, over all members.
  std::optional<ValuePlan> residue_law(std::size_t i, std::size_t a, std::int64_t mod, std::int64_t c) {
    std::vector<std::vector<std::int64_t>> pts;
    std::vector<std::int64_t> vals;
    for (std::size_t m = 0; m < nm_; ++m) {
      const auto& arr = member_events(m)[i].arrays[a];
      for (std::size_t j = static_cast<std::size_t>(c); j < arr.size(); j += static_cast<std::size_t>(mod)) {
        pts.push_back(index_point(m, j));
        vals.push_back(arr[j]);
      }
    }
    if (pts.empty()) return std::nullopt;
    std::string w;
    return solver_.indexed(pts, vals, w);
  }

  /// Communicator c of the role's ranks: its size as a scalar law, member j as an indexed law.
  void plan_comm(std::size_t c, std::int64_t id) {
    CommPlan cp;
    cp.id = id;
    const std::string where = "communicator " + std::to_string(cp.id);
    for (std::size_t m = 0; m < nm_; ++m) column_[m] = static_cast<std::int64_t>(member_comms(m)[c].members.size());
    std::string why;
    auto length = solver_.scalar(column_, why);
    if (!length) {
      fail(where + ", size: " + why + "; sizes " + values_text(column_, role_.members, inputs_));
      return;
    }
    cp.length = *length;
    std::vector<std::vector<std::int64_t>> pts;
    std::vector<std::int64_t> vals;
    for (std::size_t m = 0; m < nm_; ++m) {
      const auto& mem = member_comms(m)[c].members;
      for (std::size_t j = 0; j < mem.size(); ++j) {
        pts.push_back(index_point(m, j));
        vals.push_back(mem[j]);
      }
    }
    auto member = pts.empty() ? std::optional<ValuePlan>(ValuePlan{}) : solver_.indexed(pts, vals, why);
    if (!member) {
      fail(where + ", members: " + why);
      return;
    }
    cp.member = *member;
    note_rank(cp.member, indexed_);
    report_.add(where, "size", plan_text(cp.length, scalar_));
    report_.add(where, "member j", plan_text(cp.member, indexed_));
    role_.comms.push_back(std::move(cp));
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
        const auto g = role_.events[i].timing_group;
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
  std::vector<std::string>& failures_;
  RoleSolver solver_;
  const FeatureSpace& scalar_;
  const FeatureSpace& indexed_;
  const std::size_t nm_;              ///< members of the role
  std::vector<std::int64_t> column_;  ///< one value per member (scratch)
  LawReport report_;
  std::map<std::pair<Op, std::uint32_t>, std::size_t> groups_;  ///< (op, site) -> timing group
  std::size_t reported_ = 0;                                    ///< failures of this role so far
};

/// The needed roles of one (depth, modulus), with the (input, rank) pairs that play each.
std::map<RoleKey, RolePlan> group_roles(const std::vector<ExpandedInput>& inputs, int depth, std::int64_t modulus,
                                        const std::set<RoleKey>& needed) {
  std::map<RoleKey, RolePlan> roles;
  for (std::size_t k = 0; k < inputs.size(); ++k)
    for (std::int64_t r = 0; r < inputs[k].grid.size(); ++r) {
      auto key = role_key(inputs[k].grid, r, depth, modulus);
      if (!needed.count(key)) continue;
      auto& role = roles[key];
      role.key = key;
      role.members.emplace_back(k, r);
    }
  return roles;
}

/// Can the role get laws? It must occur at two sizes at least, with one event shape.
bool plannable(const std::vector<ExpandedInput>& inputs, const RolePlan& role, const std::string& name,
               std::vector<std::string>& failures) {
  std::set<std::size_t> sizes;
  for (const auto& m : role.members) sizes.insert(m.first);
  if (sizes.size() < 2) {
    failures.push_back("role " + name + " occurs only in the " +
                       std::to_string(inputs[role.members.front().first].grid.size()) +
                       "-rank input: its values cannot be checked for a dependence on the size");
    return false;
  }
  return same_shape(inputs, role, name, failures);
}

}  // namespace

std::map<RoleKey, RolePlan> plan_roles(const std::vector<ExpandedInput>& inputs, const Grid& target, std::size_t ndims,
                                       int depth, std::int64_t modulus, const std::set<RoleKey>& needed,
                                       std::vector<std::string>& failures, std::vector<ParameterLaw>& laws) {
  std::map<RoleKey, RolePlan> roles = group_roles(inputs, depth, modulus, needed);
  for (auto& [key, role] : roles) {
    if (!plannable(inputs, role, key.to_string(), failures)) continue;
    RolePlanner(inputs, role, target, ndims, failures).plan(laws);
  }
  return roles;
}

}  // namespace scalatrace::extrap
