// Extrapolation (scalatrace.extrapolate): the core's extrapolate() with a Python timing model.
#include <pybind11/functional.h>

#include "bindings.hpp"
#include "scalatrace/extrapolate/extrapolate.hpp"

using namespace scalatrace;

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
         std::int64_t max_ranks, bool drop_local) {
        ExtrapolationOptions opt;
        opt.max_ranks = max_ranks;
        opt.drop_local = drop_local;
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
      "Extrapolated trace at the target size (see scalatrace.extrapolate).");
}
