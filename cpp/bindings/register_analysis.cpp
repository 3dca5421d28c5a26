// Analyses: communication matrices (dense / sparse), summaries, timestep loops.
#include "bindings.hpp"
#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

namespace {

Metric parse_metric(const std::string& s) {
  if (s == "bytes") return Metric::Bytes;
  if (s == "messages") return Metric::Messages;
  throw UsageError("metric must be 'bytes' or 'messages', not '" + s + "'");
}
CommKind parse_kind(const std::string& s) {
  if (s == "p2p") return CommKind::PointToPoint;
  if (s == "collective") return CommKind::Collective;
  if (s == "all") return CommKind::All;
  throw UsageError("kind must be 'p2p', 'collective' or 'all', not '" + s + "'");
}

py::tuple triplets_to_numpy(CommTriplets&& t) {
  return py::make_tuple(to_numpy(std::move(t.src)), to_numpy(std::move(t.dst)), to_numpy(std::move(t.value)), t.nranks);
}

py::array dense_to_numpy(std::vector<double>&& m, std::int64_t n) {
  auto* heap = new std::vector<double>(std::move(m));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<double>*>(p); });
  return py::array_t<double>({n, n},
                             {static_cast<py::ssize_t>(n * sizeof(double)), static_cast<py::ssize_t>(sizeof(double))},
                             heap->data(), owner);
}

}  // namespace

void register_analysis(py::module_& m) {
  m.def(
      "comm_matrix",
      [](const Trace& t, const std::string& metric, const std::string& kind) {
        const Metric mt = parse_metric(metric);
        const CommKind k = parse_kind(kind);
        std::vector<double> dense;
        {
          py::gil_scoped_release release;
          dense = comm_matrix(t, mt, k);
        }
        return dense_to_numpy(std::move(dense), t.nranks);
      },
      py::arg("trace"), py::arg("metric") = "bytes", py::arg("kind") = "p2p");
  m.def(
      "comm_matrix_sparse",
      [](const Trace& t, const std::string& metric, const std::string& kind) {
        const Metric mt = parse_metric(metric);
        const CommKind k = parse_kind(kind);
        CommTriplets r;
        {
          py::gil_scoped_release release;
          r = comm_matrix_sparse(t, mt, k);
        }
        return triplets_to_numpy(std::move(r));
      },
      py::arg("trace"), py::arg("metric") = "bytes", py::arg("kind") = "p2p", "(src, dst, value, nranks) triplets.");
  m.def(
      "comm_matrix_by_expansion",
      [](const Trace& t, const std::string& metric, const std::string& kind) {
        return triplets_to_numpy(comm_matrix_by_expansion(t, parse_metric(metric), parse_kind(kind)));
      },
      py::arg("trace"), py::arg("metric") = "bytes", py::arg("kind") = "p2p");
  m.def(
      "comm_matrix_of_recordings",
      [](const std::vector<RankRecording>& recs, const std::string& metric, const std::string& kind) {
        return triplets_to_numpy(comm_matrix_of_recordings(recs, parse_metric(metric), parse_kind(kind)));
      },
      py::arg("recordings"), py::arg("metric") = "bytes", py::arg("kind") = "p2p");

  py::class_<SummaryRow>(m, "SummaryRow")
      .def_property_readonly("op", [](const SummaryRow& r) { return std::string(op_name(r.op)); })
      .def_readonly("name_id", &SummaryRow::name_id)
      .def_readonly("site", &SummaryRow::site)
      .def_readonly("calls", &SummaryRow::calls)
      .def_readonly("ranks", &SummaryRow::ranks)
      .def_readonly("bytes", &SummaryRow::bytes)
      .def_readonly("duration_ns", &SummaryRow::duration_ns)
      .def_readonly("compute_ns", &SummaryRow::compute_ns)
      .def_readonly("min_duration_ns", &SummaryRow::min_duration_ns)
      .def_readonly("max_duration_ns", &SummaryRow::max_duration_ns);
  py::class_<Summary>(m, "Summary")
      .def_readonly("by_op", &Summary::by_op)
      .def_readonly("by_site", &Summary::by_site)
      .def_readonly("total_calls", &Summary::total_calls)
      .def_readonly("total_bytes", &Summary::total_bytes);
  m.def("summary", &summary, py::arg("trace"));

  py::class_<TimestepLoop>(m, "TimestepLoop")
      .def_readonly("path", &TimestepLoop::path)
      .def_readonly("ranks", &TimestepLoop::ranks)
      .def_readonly("min_iterations", &TimestepLoop::min_iterations)
      .def_readonly("max_iterations", &TimestepLoop::max_iterations)
      .def_readonly("visits", &TimestepLoop::visits)
      .def_readonly("sites", &TimestepLoop::sites)
      .def_readonly("body_events", &TimestepLoop::body_events);
  m.def("timestep_loops", &timestep_loops, py::arg("trace"));
}
