// Extrapolation (scalatrace.extrapolate): the core's extrapolate() with a Python timing model.
#include <pybind11/functional.h>

#include "bindings.hpp"
#include "scalatrace/extrapolate/even_counts.hpp"
#include "scalatrace/extrapolate/extrapolate.hpp"
#include "scalatrace/read/cursor.hpp"

using namespace scalatrace;

namespace {

/// A law as Python data: an int (constant), or {"terms": [(feature, num, den), ...]} (the sum of
/// num/den * feature), or {"div": (scale, numerator, divisor feature, offset)}
/// (scale*floor(N/d) + offset).
py::object law_object(const LawValue& v, const FeatureSpace& space) {
  if (v.constant) return py::int_(v.value);
  if (!v.law.inv_feature.empty() || !v.law.mods.empty() || v.law.ext_scale != 0)
    throw UsageError("the law " + v.law.formula(space) +
                     " (inverse sizes or cell coordinates) has no form in scalable benchmarks yet");
  py::dict d;
  if (v.law.div_scale != 0) {
    d["div"] =
        py::make_tuple(v.law.div_scale, v.law.div_numerator, space.names.at(v.law.div_feature), v.law.div_offset);
  } else {
    py::list terms;
    for (std::size_t k = 0; k < v.law.terms.size(); ++k)
      terms.append(py::make_tuple(space.names.at(v.law.terms[k]), v.law.num[k], v.law.den[k]));
    d["terms"] = terms;
  }
  d["formula"] = v.law.formula(space);
  return d;
}

py::object array_object(const LawArray& a, const FeatureSpace& scalar, const FeatureSpace& indexed) {
  py::dict d;
  switch (a.kind) {
    case LawArray::Kind::Constant:
      d["kind"] = "constant";
      d["values"] = a.constant;
      break;
    case LawArray::Kind::Elementwise: {
      d["kind"] = "elementwise";
      py::list el;
      for (const auto& v : a.elements) el.append(law_object(v, scalar));
      d["values"] = el;
      break;
    }
    case LawArray::Kind::Sequence: {
      d["kind"] = "sequence";
      d["length"] = law_object(a.length, scalar);
      d["modulus"] = a.modulus;
      py::list el;
      for (const auto& v : a.by_residue) el.append(law_object(v, indexed));
      d["by_residue"] = el;
      break;
    }
  }
  return d;
}

/// The laws of an extrapolation, role by role, for scalable benchmark generation.
py::dict program_object(const ExtrapolationResult& res) {
  const auto nd = res.topology.ndims;
  const auto scalar = FeatureSpace::make(nd, false, false, res.periodic),
             indexed = FeatureSpace::make(nd, true, false, res.periodic);
  py::dict out;
  out["periodic"] = res.periodic;
  out["ndims"] = nd;
  out["order"] = res.topology.order == GridOrder::FastestSmallest ? "fastest_smallest" : "fastest_largest";
  out["order_ambiguous"] = res.topology.order_ambiguous;
  out["depth"] = res.depth;
  out["modulus"] = res.modulus;
  out["root_apart"] = res.root_apart;
  py::list grids;
  for (const auto& g : res.topology.grids) grids.append(g.dims);
  out["input_grids"] = grids;
  out["probe_grid"] = res.target.dims;
  out["warnings"] = res.warnings;
  py::list roles;
  for (const auto& rl : res.role_laws) {
    py::dict role;
    role["name"] = rl.key.to_string();
    role["per_dim"] = rl.key.per_dim;
    role["residue"] = rl.key.residue;
    role["root"] = rl.key.root;
    py::list events;
    for (const auto& e : rl.events) {
      py::dict ev;
      ev["op"] = std::string(op_name(e.op));
      ev["site"] = e.site;
      ev["repeat"] = law_object(e.repeat, scalar);
      py::dict fields, arrays;
      for (std::size_t f = 0; f < kFieldCount; ++f)
        fields[py::str(std::string(field_name(static_cast<Field>(f))))] = law_object(e.fields[f], scalar);
      for (std::size_t a = 0; a < kArrayFieldCount; ++a)
        arrays[py::str(std::string(array_field_name(static_cast<ArrayField>(a))))] =
            array_object(e.arrays[a], scalar, indexed);
      ev["fields"] = fields;
      ev["arrays"] = arrays;
      events.append(ev);
    }
    role["events"] = events;
    py::list comms;
    for (const auto& c : rl.comms) {
      py::dict cd;
      cd["id"] = c.id;
      cd["size"] = law_object(c.length, scalar);
      cd["member"] = law_object(c.member, indexed);
      comms.append(cd);
    }
    role["comms"] = comms;
    roles.append(role);
  }
  out["roles"] = roles;
  return out;
}

/// (operation name, call site or -1) pairs as snippet calls; an unknown name is a UsageError.
std::vector<SnippetCall> snippet_calls(const std::vector<std::pair<std::string, std::int64_t>>& snippet) {
  std::vector<SnippetCall> out;
  for (const auto& [name, site] : snippet) {
    const auto op = op_from_name(name);
    if (!op) throw UsageError("snippet: unknown MPI operation \"" + name + "\"");
    out.push_back(SnippetCall{*op, site < 0 ? -1 : site});
  }
  return out;
}

}  // namespace

void register_extrapolate(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ExtrapolationError& e) {
      auto cls = py::module_::import("scalatrace.extrapolate").attr("ExtrapolationError");
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
  m.def(
      "extrapolate",
      [](const std::vector<const Trace*>& traces, std::int64_t ranks, std::vector<std::int64_t> dims,
         const std::vector<std::vector<std::int64_t>>& input_dims, std::optional<py::function> timing,
         std::int64_t max_ranks, bool drop_local, bool refuse_undecided,
         const std::vector<std::pair<std::string, std::int64_t>>& snippet, bool periodic, bool even_counts,
         bool common_events, bool assume_constant) {
        ExtrapolationOptions opt;
        opt.common_events = common_events;
        opt.assume_constant = assume_constant;
        opt.max_ranks = max_ranks;
        opt.drop_local = drop_local;
        opt.even_alltoall_counts = even_counts;
        opt.refuse_undecided = refuse_undecided;
        opt.snippet = snippet_calls(snippet);
        opt.periodic = periodic;
        opt.target_ranks = ranks;
        opt.target_grid.dims = std::move(dims);
        for (const auto& g : input_dims) opt.input_grids.push_back(Grid{g});
        if (timing) {
          py::function f = *timing;
          opt.timing = [f](const std::vector<double>& xs, const std::vector<double>& ys, double target) {
            py::gil_scoped_acquire gil;
            return f(xs, ys, target).cast<double>();
          };
        }
        ExtrapolationResult res = extrapolate(traces, opt);
        return std::move(res.trace);
      },
      py::arg("traces"), py::arg("ranks"), py::arg("dims"), py::arg("input_dims"), py::arg("timing"),
      py::arg("max_ranks") = kDefaultMaxExtrapolationRanks, py::arg("drop_local") = false,
      py::arg("refuse_undecided") = false, py::arg("snippet") = std::vector<std::pair<std::string, std::int64_t>>{},
      py::arg("periodic") = false, py::arg("even_counts") = false, py::arg("common_events") = false,
      py::arg("assume_constant") = false, "Extrapolated trace at the target size (see scalatrace.extrapolate).");
  m.def(
      "common_keep",
      [](const Trace& trace, bool drop_local) {
        // Every rank's events as the cursor gives them (what Trace.events yields), local calls
        // left out first with drop_local; then the events every rank has.
        std::vector<std::vector<Event>> ranks(static_cast<std::size_t>(trace.nranks));
        std::vector<std::vector<std::size_t>> index(ranks.size());
        std::vector<std::vector<bool>> keep(ranks.size());
        for (std::int64_t r = 0; r < trace.nranks; ++r) {
          Cursor cur(trace, r, TimingMode::None);
          std::size_t i = 0;
          auto& k = keep[static_cast<std::size_t>(r)];
          while (auto e = cur.next()) {
            k.push_back(false);
            if (!(drop_local && e->op == Op::Other)) {
              index[static_cast<std::size_t>(r)].push_back(i);
              ranks[static_cast<std::size_t>(r)].push_back(std::move(*e));
            }
            ++i;
          }
        }
        const auto common = common_keep(ranks);
        for (std::size_t r = 0; r < ranks.size(); ++r)
          for (std::size_t j = 0; j < common[r].size(); ++j)
            if (common[r][j]) keep[r][index[r][j]] = true;
        return keep;
      },
      py::arg("trace"), py::arg("drop_local") = false,
      "Per rank and event, whether it is one of the events every rank has (see "
      "scalatrace.extrapolate.common_events_filter).");
  m.def(
      "common_events_trace",
      [](const Trace& trace, bool drop_local) {
        std::uint64_t dropped = 0;
        Trace out = common_events_trace(trace, drop_local, &dropped);
        return py::make_tuple(py::cast(std::move(out)), dropped);
      },
      py::arg("trace"), py::arg("drop_local") = false,
      "A trace of the events every rank has, and the number of events left out.");
  m.def(
      "snippet_keep",
      [](const std::vector<std::pair<std::string, std::int64_t>>& snippet, const std::vector<std::string>& ops,
         const std::vector<std::uint32_t>& sites) {
        std::vector<Op> parsed;
        for (const auto& name : ops) {
          const auto op = op_from_name(name);
          if (!op) throw UsageError("snippet_keep: unknown MPI operation \"" + name + "\"");
          parsed.push_back(*op);
        }
        return snippet_keep(snippet_calls(snippet), parsed, sites);
      },
      py::arg("snippet"), py::arg("ops"), py::arg("sites"),
      "Per event, whether the thesis' snippet filter keeps it (see scalatrace.extrapolate.snippet_filter).");
  m.def(
      "even_alltoall_counts",
      [](const Trace& trace) {
        EvenCountsReport report;
        Trace out = even_alltoall_counts(trace, &report);
        py::dict d;
        d["nodes"] = report.nodes;
        d["calls"] = report.calls;
        d["changed_arrays"] = report.changed_arrays;
        d["max_element_deviation"] = report.max_element_deviation;
        d["max_total_deviation"] = report.max_total_deviation;
        return py::make_tuple(py::cast(std::move(out)), d);
      },
      py::arg("trace"), "A copy whose Alltoallv count arrays are even splits of each call's mean total, and a report.");
  m.def(
      "balanced_grid",
      [](std::int64_t n, std::size_t ndims, const std::string& order) {
        if (order != "fastest_smallest" && order != "fastest_largest")
          throw UsageError("balanced_grid: order must be \"fastest_smallest\" or \"fastest_largest\", not \"" + order +
                           "\"");
        return balanced_grid(n, ndims,
                             order == "fastest_largest" ? GridOrder::FastestLargest : GridOrder::FastestSmallest)
            .dims;
      },
      py::arg("n"), py::arg("ndims"), py::arg("order"),
      "The grid extrapolation lays n ranks on, fastest dimension first: MPI_Dims_create's balanced "
      "factorization into ndims (1 to 3) factors, the largest varying fastest (\"fastest_largest\") "
      "or slowest (\"fastest_smallest\").");
  m.def(
      "extrapolation_program",
      [](const std::vector<const Trace*>& traces, std::int64_t ranks, bool drop_local) {
        ExtrapolationOptions opt;
        opt.drop_local = drop_local;
        opt.target_ranks = ranks;
        // The laws are a model of every size: C's integer division as written, the remainder of
        // an uneven split included (docs/codegen.md).
        opt.uneven_splits_from_inputs = false;
        return program_object(extrapolate(traces, opt));
      },
      py::arg("traces"), py::arg("ranks"), py::arg("drop_local") = false,
      "The laws of every role, extrapolated to a probe size `ranks` (see scalatrace.scalable).");
}
