// Concrete events: one rank's calls via Cursor, and rank tables as NumPy structured arrays.
#include "bindings.hpp"
#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/read/lossy_occurrences.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

void RankTableBuilder::add(const Event& e) {
  RankTableRow row{};
  row.rank = rank_;
  row.op = static_cast<std::uint16_t>(e.op);
  row.bytes = e[Field::Bytes];
  row.tag = e[Field::Tag];
  row.comm = e[Field::Comm];
  row.site = e.site;
  row.compute_ns = e.compute_ns;
  row.duration_ns = e.duration_ns;
  row.peer = -1;
  const OpKind k = op_kind(e.op);
  const bool p2p = k == OpKind::BlockingSend || k == OpKind::BlockingRecv || k == OpKind::SendRecv ||
                   k == OpKind::NonblockingSend || k == OpKind::NonblockingRecv || k == OpKind::Probe ||
                   k == OpKind::PersistentSend || k == OpKind::PersistentRecv;
  if (p2p) {
    const std::int64_t peer = e[Field::Peer];
    if (peer == kProcNull) {
      row.peer = -2;
    } else if (peer != kAnySource) {
      const auto me = comm_rank_and_size(*comms_, row.comm, rank_, nranks_).first;
      if (me >= 0) row.peer = world_rank_of(*comms_, row.comm, rank_, me + peer, nranks_);
    }
  } else if (op_is_collective(e.op)) {
    switch (e.op) {
      case Op::Bcast:
      case Op::Ibcast:
      case Op::Reduce:
      case Op::Ireduce:
      case Op::Gather:
      case Op::Igather:
      case Op::Gatherv:
      case Op::Igatherv:
      case Op::Scatter:
      case Op::Iscatter:
      case Op::Scatterv:
      case Op::Iscatterv:
        row.peer = world_rank_of(*comms_, row.comm, rank_, e[Field::Root], nranks_);
        break;
      default:
        break;
    }
  }
  rows_.push_back(row);
}

py::array RankTableBuilder::finish() {
  auto* heap = new std::vector<RankTableRow>(std::move(rows_));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<RankTableRow>*>(p); });
  return py::array(py::dtype::of<RankTableRow>(), {static_cast<py::ssize_t>(heap->size())},
                   {static_cast<py::ssize_t>(sizeof(RankTableRow))}, heap->data(), owner);
}

TimingMode parse_timing_mode(const std::string& timing) {
  if (timing == "mean") return TimingMode::Mean;
  if (timing == "sample") return TimingMode::Sample;
  if (timing == "none") return TimingMode::None;
  throw UsageError("timing must be 'mean', 'sample' or 'none', not '" + timing + "'");
}

namespace {

struct RankEvents {
  py::object trace_owner;  // keeps the Trace alive
  Cursor cursor;
};

py::dict fields_dict(const Event& e) {
  py::dict out;
  for (std::size_t f = 0; f < kFieldCount; ++f)
    out[py::str(std::string(field_name(static_cast<Field>(f))))] = e.fields[f];
  return out;
}

}  // namespace

void register_events(py::module_& m) {
  PYBIND11_NUMPY_DTYPE(RankTableRow, rank, op, peer, bytes, tag, comm, site, compute_ns, duration_ns);
  py::class_<Event>(m, "RecordedEvent", "One concrete MPI call of one rank.")
      .def_property_readonly("op", [](const Event& e) { return std::string(op_name(e.op)); })
      .def_property_readonly("op_code", [](const Event& e) { return static_cast<int>(e.op); })
      .def_readonly("site", &Event::site)
      .def_readonly("compute_ns", &Event::compute_ns)
      .def_readonly("duration_ns", &Event::duration_ns)
      .def_property_readonly("fields", &fields_dict)
      .def_property_readonly("arrays",
                             [](const Event& e) {
                               py::dict out;
                               for (std::size_t f = 0; f < kArrayFieldCount; ++f)
                                 out[py::str(std::string(array_field_name(static_cast<ArrayField>(f))))] = e.arrays[f];
                               return out;
                             })
      .def("__getitem__",
           [](const Event& e, const std::string& name) {
             for (std::size_t f = 0; f < kFieldCount; ++f)
               if (field_name(static_cast<Field>(f)) == name) return e.fields[f];
             throw_unknown_name("unknown field '" + name + "'");
           })
      .def("same_call", &Event::same_call)
      .def("__repr__", [](const Event& e) { return "<" + describe(e) + ">"; });

  py::class_<RankEvents>(m, "RankEvents", "Iterator over one rank's concrete events.")
      .def("__iter__", [](RankEvents& it) -> RankEvents& { return it; })
      .def("__next__", [](RankEvents& it) {
        auto e = it.cursor.next();
        if (!e) throw py::stop_iteration();
        return *e;
      });

  m.def(
      "rank_events",
      [](py::object trace, std::int64_t rank, const std::string& timing, std::uint64_t seed,
         std::optional<std::uint64_t> lossy_seed) {
        const TimingMode mode = parse_timing_mode(timing);
        const auto& t = trace.cast<const Trace&>();
        RankEvents events{trace, Cursor(t, rank, mode, seed)};
        if (lossy_seed) events.cursor.draw_lossy_values(*lossy_seed, std::make_shared<LossyOccurrences>(t));
        return events;
      },
      py::arg("trace"), py::arg("rank"), py::arg("timing") = "mean", py::arg("seed") = 0,
      py::arg("lossy_seed") = py::none());

  m.def(
      "rank_table",
      [](const Trace& t, std::int64_t rank) {
        RankTableBuilder b(rank, t.nranks, t.comms);
        {
          Cursor c(t, rank, TimingMode::Mean);
          while (auto e = c.next()) b.add(*e);
        }
        return b.finish();
      },
      py::arg("trace"), py::arg("rank"));
}
