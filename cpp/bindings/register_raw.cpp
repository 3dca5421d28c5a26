// Raw recordings (ground truth, one uncompressed stream per rank).
#include "bindings.hpp"
#include "scalatrace/raw.hpp"

using namespace scalatrace;

void register_raw(py::module_& m) {
  py::class_<RankRecording>(m, "RankRecording", "Everything one rank recorded in raw mode.")
      .def_readonly("rank", &RankRecording::rank)
      .def_readonly("nranks", &RankRecording::nranks)
      .def_readonly("metadata", &RankRecording::metadata)
      .def_readonly("sites", &RankRecording::sites)
      .def_readonly("comms", &RankRecording::comms)
      .def_readonly("names", &RankRecording::names)
      .def("__len__", [](const RankRecording& r) { return r.events.size(); })
      .def("__getitem__",
           [](const RankRecording& r, std::int64_t i) {
             const auto n = static_cast<std::int64_t>(r.events.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n) throw py::index_error("event index out of range");
             return r.events[static_cast<std::size_t>(i)];
           })
      .def_property_readonly("events",
                             [](py::object self) {
                               return list_of_refs(self.cast<const RankRecording&>().events, self);
                             })
      .def("rank_table", [](const RankRecording& r, std::int64_t nranks) {
        RankTableBuilder b(r.rank, nranks > 0 ? nranks : r.nranks, r.comms);
        for (const auto& e : r.events) b.add(e);
        return b.finish();
      }, py::arg("nranks") = 0);
  m.def("read_raw", &read_raw, py::arg("path"), py::call_guard<py::gil_scoped_release>());
  m.def("read_raw_dir", &read_raw_dir, py::arg("dir"), py::call_guard<py::gil_scoped_release>());
}
