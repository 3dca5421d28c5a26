// Elastic values (ValueSeq / ArraySeq + ranklists) and timing histograms.
#include "bindings.hpp"
#include "readable_text.hpp"
#include "scalatrace/model/elastic.hpp"
#include "scalatrace/model/histogram.hpp"
#include "scalatrace/model/value_seq.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

namespace {

/// "ElasticValue(0 (60 times))" for one sequence on every rank, "ElasticValue(ranks 0-3: 8;
/// ranks 4-8: 16 (2 times))" per alternative otherwise.
template <class Seq>
std::string elastic_repr(const Elastic<Seq>& e, const char* name) {
  std::string s = std::string(name) + "(";
  for (std::size_t i = 0; i < e.alternatives.size(); ++i) {
    if (i) s += "; ";
    const auto& [seq, ranks] = e.alternatives[i];
    if (!ranks.empty()) s += "ranks " + readable_ranks(ranks, 6) + ": ";
    if constexpr (std::is_same_v<Seq, ValueSeq>) {
      s += readable_values(seq);
    } else {
      s += std::to_string(seq.size()) + " arrays in " + std::to_string(seq.runs().size()) + " runs";
    }
  }
  return s + ")";
}

/// The alternatives as an HTML table (ranks, values) for Jupyter.
template <class Seq>
std::string elastic_html(const Elastic<Seq>& e, const char* name) {
  std::string s = std::string("<b>") + name + "</b><table><tr><th>ranks</th><th>values</th></tr>";
  for (const auto& [seq, ranks] : e.alternatives) {
    s += "<tr><td>" + (ranks.empty() ? std::string("all") : readable_ranks(ranks, 24)) + "</td><td>";
    if constexpr (std::is_same_v<Seq, ValueSeq>) {
      s += readable_values(seq, 24);
    } else {
      s += std::to_string(seq.size()) + " arrays in " + std::to_string(seq.runs().size()) + " runs";
    }
    s += "</td></tr>";
  }
  return s + "</table>";
}

template <class Seq>
const Seq& seq_for(const Elastic<Seq>& e, std::int64_t rank) {
  const Seq* s = e.for_rank(rank);
  if (!s) throw UsageError("no value recorded for rank " + std::to_string(rank));
  return *s;
}

std::uint64_t occurrence_index(std::int64_t occurrence, std::uint64_t size) {
  if (occurrence < 0 || static_cast<std::uint64_t>(occurrence) >= size)
    throw_out_of_range("occurrence " + std::to_string(occurrence) + " out of range (" + std::to_string(size) +
                       " recorded)");
  return static_cast<std::uint64_t>(occurrence);
}

/// The Python class of Elastic<Seq> (ElasticValue, ElasticArray): alternatives, value_at, len,
/// bool, repr.
template <class Seq>
py::class_<Elastic<Seq>> register_elastic(py::module_& m, const char* name, const char* doc) {
  using E = Elastic<Seq>;
  py::class_<E> cls(m, name, doc);
  cls.def_property_readonly(
         "alternatives",
         [](py::object self) {
           py::list out;
           for (const auto& [seq, ranks] : self.cast<const E&>().alternatives)
             out.append(py::make_tuple(py::cast(&seq, py::return_value_policy::reference_internal, self),
                                       py::cast(&ranks, py::return_value_policy::reference_internal, self)));
           return out;
         })
      .def(
          "value_at",
          [](const E& e, std::int64_t rank, std::int64_t occurrence) {
            const Seq& s = seq_for(e, rank);
            return s.at(occurrence_index(occurrence, s.size()));
          },
          py::arg("rank"), py::arg("occurrence") = 0,
          "Value the parameter took at the `occurrence`-th execution by `rank`.")
      .def("__len__", [](const E& e) { return e.alternatives.size(); })
      .def("__bool__", [](const E& e) { return !e.empty(); })
      .def("__repr__", [name](const E& e) { return elastic_repr(e, name); })
      .def("_repr_html_", [name](const E& e) { return elastic_html(e, name); });
  return cls;
}

}  // namespace

void register_values(py::module_& m) {
  py::class_<ValueSeq>(m, "ValueSeq", "Loop-compressed sequence of integer values.")
      .def("__len__", [](const ValueSeq& s) { return s.size(); })
      .def("__getitem__",
           [](const ValueSeq& s, std::int64_t i) {
             const auto n = static_cast<std::int64_t>(s.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n) throw py::index_error("index out of range");
             return s.at(static_cast<std::uint64_t>(i));
           })
      .def("to_numpy", [](const ValueSeq& s) { return to_numpy(s.to_vector()); })
      .def("is_constant", &ValueSeq::is_constant)
      .def_property_readonly(
          "blocks",
          [](const ValueSeq& s) {
            py::list out;
            for (const auto& b : s.blocks()) {
              py::list runs;
              for (const auto& r : b.runs) runs.append(py::make_tuple(r.first, r.stride, r.count));
              out.append(py::make_tuple(runs, b.repeat));
            }
            return out;
          },
          "[( [(first, stride, count), ...], repeat ), ...]")
      .def("__eq__", [](const ValueSeq& a, const ValueSeq& b) { return a == b; })
      .def("__str__", [](const ValueSeq& s) { return readable_values(s); })
      .def("__repr__", [](const ValueSeq& s) { return "ValueSeq(" + readable_values(s) + ")"; })
      .def_property_readonly("notation", &ValueSeq::to_string,
                             "The thesis notation of dumps: runs first:stride:count, xN repeats.");

  py::class_<ArraySeq>(m, "ArraySeq", "Run-length compressed sequence of integer vectors.")
      .def("__len__", [](const ArraySeq& s) { return s.size(); })
      .def("__getitem__",
           [](const ArraySeq& s, std::int64_t i) {
             const auto n = static_cast<std::int64_t>(s.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n) throw py::index_error("index out of range");
             return s.at(static_cast<std::uint64_t>(i));
           })
      .def_property_readonly("runs", [](const ArraySeq& s) {
        py::list out;
        for (const auto& r : s.runs()) out.append(py::make_tuple(r.values, r.count));
        return out;
      });

  register_elastic<ValueSeq>(m, "ElasticValue", "A parameter's values: (ValueSeq, RankList) alternatives.")
      .def(
          "for_rank",
          [](py::object self, std::int64_t rank) -> py::object {
            const ValueSeq* s = self.cast<const ElasticValue&>().for_rank(rank);
            if (!s) return py::none();
            return py::cast(s, py::return_value_policy::reference_internal, self);
          },
          py::arg("rank"), "The value sequence of `rank`, or None.");
  register_elastic<ArraySeq>(m, "ElasticArray", "An array parameter's values: (ArraySeq, RankList) alternatives.");

  py::class_<Histogram>(m, "Histogram", "Timing histogram (nanoseconds).")
      .def_property_readonly("count", &Histogram::count)
      .def_property_readonly("sum", &Histogram::sum)
      .def_property_readonly("min", &Histogram::min)
      .def_property_readonly("max", &Histogram::max)
      .def_property_readonly("mean", &Histogram::mean)
      .def_property_readonly("sub_bins", &Histogram::sub_bins)
      .def_property_readonly("coarsening", &Histogram::coarsening,
                             "Each bin covers 2**coarsening bins of the finest layout.")
      .def_property_readonly("typical", &Histogram::typical,
                             "Mean of the bin holding the median (robust to outliers), ns.")
      .def_property_readonly(
          "bins",
          [](const Histogram& h) {
            py::list out;
            for (const auto& b : h.bins()) out.append(py::make_tuple(b.index, b.count, b.min, b.max, b.sum));
            return out;
          },
          "[(index, count, min, max, sum), ...] of the non-empty bins.")
      .def("__repr__", [](const Histogram& h) {
        return "Histogram(count=" + std::to_string(h.count()) + ", mean=" + std::to_string(h.mean()) +
               " ns, min=" + std::to_string(h.min()) + ", max=" + std::to_string(h.max()) + ")";
      });
}
