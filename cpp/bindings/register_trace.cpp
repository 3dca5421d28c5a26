// The compressed trace model: Trace, Node (loop or event), call sites, communicators.
#include "bindings.hpp"
#include "readable_text.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/model/site_match.hpp"
#include "scalatrace/model/trace.hpp"

using namespace scalatrace;

namespace {

const ElasticValue& field_by_name(const EventNode& ev, const std::string& name) {
  for (std::size_t f = 0; f < kFieldCount; ++f)
    if (field_name(static_cast<Field>(f)) == name) return ev.fields[f];
  throw_unknown_name("unknown field '" + name + "'");
}

}  // namespace

void register_trace(py::module_& m) {
  py::class_<Frame>(m, "Frame")
      .def_readonly("module", &Frame::module)
      .def_readonly("offset", &Frame::offset)
      .def("__repr__", [](const Frame& f) {
        return "Frame(module=" + std::to_string(f.module) + ", offset=" + std::to_string(f.offset) + ")";
      });
  py::class_<CallSite>(m, "CallSite")
      .def_property_readonly("frames",
                             [](py::object self) { return list_of_refs(self.cast<const CallSite&>().frames, self); })
      .def_readonly("hash", &CallSite::hash)
      .def_readonly("symbol", &CallSite::symbol)
      .def_readonly("location", &CallSite::location)
      .def("__repr__", [](const CallSite& s) {
        return "CallSite(" + (s.symbol.empty() ? std::string("?") : s.symbol) +
               (s.location.empty() ? "" : " at " + s.location) + ", " + std::to_string(s.frames.size()) + " frames)";
      });
  py::class_<CallSiteTable>(m, "CallSiteTable")
      .def_readonly("modules", &CallSiteTable::modules)
      .def_property_readonly(
          "sites", [](py::object self) { return list_of_refs(self.cast<const CallSiteTable&>().sites, self); })
      .def("__len__", &CallSiteTable::size);
  py::class_<CommEntry>(m, "CommEntry")
      .def_readonly("id", &CommEntry::id)
      .def_readonly("members", &CommEntry::members)
      .def_readonly("holders", &CommEntry::holders)
      .def("__repr__", [](const CommEntry& c) {
        return "CommEntry(id=" + std::to_string(c.id) + ", members=[" + readable_ranks(c.members) + "], holders=[" +
               readable_ranks(c.holders) + "])";
      });
  py::class_<CommTable>(m, "CommTable")
      .def_property_readonly("entries",
                             [](py::object self) { return list_of_refs(self.cast<const CommTable&>().entries, self); })
      .def("__len__", [](const CommTable& t) { return t.entries.size(); });

  py::class_<EventNode>(m, "EventNode")
      .def_property_readonly("op", [](const EventNode& e) { return std::string(op_name(e.op)); })
      .def_property_readonly("op_code", [](const EventNode& e) { return static_cast<int>(e.op); })
      .def_property_readonly("kind", [](const EventNode& e) { return std::string(op_kind_name(op_kind(e.op))); })
      .def_readonly("site", &EventNode::site)
      .def_readonly("site_ids", &EventNode::site_ids,
                    "Per-occurrence call-site ids where the occurrences' sites differ from `site` (call sites "
                    "matched by their innermost frames); empty when every occurrence has `site`.")
      .def(
          "occurrence_sites", [](const EventNode& e, std::size_t nsites) { return occurrence_sites(e, nsites); },
          py::arg("nsites"),
          "Sorted call-site ids of the node's occurrences (`nsites`: size of the trace's call-site table).")
      .def("field", &field_by_name, py::arg("name"), py::return_value_policy::reference_internal)
      .def_property_readonly(
          "fields",
          [](py::object self) {
            const auto& e = self.cast<const EventNode&>();
            py::dict out;
            for (std::size_t f = 0; f < kFieldCount; ++f)
              if (!e.fields[f].empty())
                out[py::str(std::string(field_name(static_cast<Field>(f))))] =
                    py::cast(&e.fields[f], py::return_value_policy::reference_internal, self);
            return out;
          },
          "Recorded scalar parameters by name (only those present).")
      .def_property_readonly("arrays",
                             [](py::object self) {
                               const auto& e = self.cast<const EventNode&>();
                               py::dict out;
                               for (std::size_t f = 0; f < kArrayFieldCount; ++f)
                                 if (!e.arrays[f].empty())
                                   out[py::str(std::string(array_field_name(static_cast<ArrayField>(f))))] =
                                       py::cast(&e.arrays[f], py::return_value_policy::reference_internal, self);
                               return out;
                             })
      .def_readonly("compute", &EventNode::compute)
      .def_readonly("duration", &EventNode::duration)
      .def_readonly("first_compute", &EventNode::first_compute,
                    "Compute time before each rank's first occurrence of the node (one value per rank, "
                    "also in `compute`); empty when not recorded or like the others.")
      .def_property_readonly(
          "timing_groups",
          [](py::object self) {
            const auto& e = self.cast<const EventNode&>();
            py::list out;
            for (const auto& g : e.timing_groups)
              out.append(py::make_tuple(g.ranks,
                                        py::cast(&g.compute, py::return_value_policy::reference_internal, self),
                                        py::cast(&g.duration, py::return_value_policy::reference_internal, self)));
            return out;
          },
          "[(RankList, compute Histogram, duration Histogram), ...]: timing per group of ranks "
          "whose compute times differ; empty when every rank shares `compute` / `duration`.")
      .def(
          "compute_for", [](const EventNode& e, std::int64_t rank) { return e.compute_for(rank); }, py::arg("rank"),
          "The compute-time histogram that applies to `rank`.")
      .def(
          "first_compute_for", [](const EventNode& e, std::int64_t rank) { return e.first_compute_for(rank); },
          py::arg("rank"), "The first-occurrence compute-time histogram that applies to `rank`.");

  py::class_<LoopNode>(m, "LoopNode")
      .def_readonly("trips", &LoopNode::trips)
      .def_property_readonly("body",
                             [](py::object self) { return list_of_refs(self.cast<const LoopNode&>().body, self); });

  py::class_<Node>(m, "Node")
      .def_readonly("ranks", &Node::ranks)
      .def_readonly("presence", &Node::presence)
      .def("is_loop", &Node::is_loop)
      .def_property_readonly("event",
                             [](py::object self) -> py::object {
                               const auto& n = self.cast<const Node&>();
                               if (!n.event) return py::none();
                               return py::cast(n.event.get(), py::return_value_policy::reference_internal, self);
                             })
      .def_property_readonly("loop", [](py::object self) -> py::object {
        const auto& n = self.cast<const Node&>();
        if (!n.loop) return py::none();
        return py::cast(n.loop.get(), py::return_value_policy::reference_internal, self);
      });

  py::class_<Trace>(m, "Trace")
      .def_readonly("metadata", &Trace::metadata)
      .def_readonly("nranks", &Trace::nranks)
      .def_readonly("sites", &Trace::sites)
      .def_readonly("comms", &Trace::comms)
      .def_readonly("names", &Trace::names)
      .def_property_readonly("nodes",
                             [](py::object self) { return list_of_refs(self.cast<const Trace&>().nodes, self); })
      .def("node_count", &Trace::node_count)
      .def(
          "encode",
          [](const Trace& t, bool entropy_coded) {
            return py::bytes(encode_trace(t, false, entropy_coded ? PayloadCoding::Entropy : PayloadCoding::Plain));
          },
          py::arg("entropy_coded") = true,
          "The .sct file's bytes; entropy_coded=False stores the payload plain (its sections readable "
          "as docs/format.md lays them out).")
      .def("structure_bytes", [](const Trace& t) { return structure_bytes(t); })
      .def("write", &write_trace_file, py::arg("path"));

  m.def("read_trace_file", &read_trace_file, py::arg("path"), py::call_guard<py::gil_scoped_release>());
  m.def("decode_trace", [](const py::bytes& b) { return decode_trace(std::string_view(b)); });
  m.def(
      "trace_byte_breakdown",
      [](const py::bytes& b) {
        const std::string_view bytes = b;
        std::vector<ByteBreakdownPart> parts;
        {
          py::gil_scoped_release release;
          parts = trace_byte_breakdown(bytes);
        }
        py::list out;
        for (const auto& p : parts) out.append(py::make_tuple(p.part, p.bytes, p.stored_bytes));
        return out;
      },
      py::arg("data"),
      "Where a trace file's bytes go: (part, payload bytes, stored bytes) per part. Raises "
      "TraceFormatError as decode_trace.");
  m.def("op_names", [] {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < kOpCount; ++i) out.emplace_back(op_name(static_cast<Op>(i)));
    return out;
  });
  m.def("op_kind_names", [] {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < kOpCount; ++i) out.emplace_back(op_kind_name(op_kind(static_cast<Op>(i))));
    return out;
  });
  m.def("field_names", [] {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < kFieldCount; ++i) out.emplace_back(field_name(static_cast<Field>(i)));
    return out;
  });
}
