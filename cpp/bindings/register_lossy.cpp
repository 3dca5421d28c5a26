// Lossy traces (docs/lossy.md): making one, naming its histogram fields, and the drawn program
// a probabilistic replay or simulation of it runs.
#include "bindings.hpp"
#include "scalatrace/compress/lossy.hpp"
#include "scalatrace/read/probabilistic_walk.hpp"
#include "scalatrace/support/errors.hpp"

void register_lossy(py::module_& m) {
  using namespace scalatrace;
  m.def(
      "make_lossy",
      [](const Trace& t, std::uint64_t threshold) {
        Trace copy = t.clone();
        make_lossy(copy, threshold);
        return copy;
      },
      py::arg("trace"), py::arg("threshold"),
      "A copy of the trace whose point-to-point peers, tags and sizes with a lossless form of at "
      "least `threshold` value runs are value histograms (what SCALATRACE_LOSSY writes).");
  m.def(
      "lossy_fields",
      [](const Trace& t) {
        py::list out;
        for (const auto& f : lossy_fields(t))
          out.append(
              py::make_tuple(std::string(op_name(f.op)), f.site, std::string(field_name(f.field)), f.values, f.bins));
        return out;
      },
      py::arg("trace"), "(op, site, field, values, bins) of every field kept as a histogram, depth first.");
  m.def(
      "probabilistic_events",
      [](const Trace& t, std::int64_t rank, std::uint64_t seed, std::uint64_t max_events) {
        if (rank < 0 || rank >= t.nranks)
          throw UsageError("rank " + std::to_string(rank) + " is out of range: the trace has " +
                           std::to_string(t.nranks) + " ranks");
        ProbabilisticOptions o;
        o.seed = seed;
        ProbabilisticWalk walk(t, rank, o);
        std::vector<Event> out;
        Event e;
        while (walk.next(e)) {
          if (out.size() >= max_events)
            throw UsageError("rank " + std::to_string(rank) + " has more than max_events=" +
                             std::to_string(max_events) + " calls in its probabilistic program");
          out.push_back(e);
        }
        return out;
      },
      py::arg("trace"), py::arg("rank"), py::arg("seed") = 0, py::arg("max_events") = 10'000'000,
      "The calls a probabilistic replay of `rank` issues (docs/lossy.md): drawn Isends, the Irecvs "
      "of what the other ranks draw to it, a Waitall before each synchronisation point.");
}
