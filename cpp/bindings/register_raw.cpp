// Raw recordings (ground truth, one uncompressed stream per rank).
#include "bindings.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/raw.hpp"
#include "scalatrace/merge/merge.hpp"

#include "scalatrace/support/errors.hpp"

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
      .def_property_readonly(
          "events", [](py::object self) { return list_of_refs(self.cast<const RankRecording&>().events, self); })
      .def(
          "rank_table",
          [](const RankRecording& r, std::int64_t nranks) {
            RankTableBuilder b(r.rank, nranks > 0 ? nranks : r.nranks, r.comms);
            for (const auto& e : r.events) b.add(e);
            return b.finish();
          },
          py::arg("nranks") = 0);
  m.def(
      "compress_recordings",
      [](const std::vector<RankRecording>& recs, std::size_t window, std::size_t site_match) {
        py::gil_scoped_release release;
        if (recs.empty()) throw UsageError("no recordings to compress");
        std::int64_t nranks = 0;
        for (const auto& r : recs) nranks = std::max({nranks, r.nranks, r.rank + 1});
        std::vector<Trace> per_rank;
        per_rank.reserve(recs.size());
        MergeConfig merge_config{site_match, mean_recorded_time_ns(recs)};
        for (const auto& rec : recs) {
          CompressorConfig config;
          if (window > 0) config.window = window;
          config.site_match = site_match;
          IntraCompressor c(config);
          c.set_sites(&rec.sites);
          for (const auto& e : rec.events) c.push(e);
          per_rank.push_back(make_rank_trace(rec.rank, nranks, c.finish(), rec.sites, rec.comms, rec.names));
        }
        Trace t = merge_tree(std::move(per_rank), merge_config);
        for (const auto& [k, v] : recs.front().metadata) t.metadata.emplace(k, v);
        t.metadata["compressed_offline"] = "raw recordings";
        return t;
      },
      py::arg("recordings"), py::arg("window") = 0, py::arg("site_match") = kDefaultSiteMatchFrames,
      "Compresses and merges raw recordings offline, as the collector does at MPI_Finalize.");
  m.def("read_raw", &read_raw, py::arg("path"), py::call_guard<py::gil_scoped_release>());
  m.def("read_raw_dir", &read_raw_dir, py::arg("dir"), py::call_guard<py::gil_scoped_release>());
}
