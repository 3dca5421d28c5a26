// Benchmark generation (coNCePTuaL and C+MPI back ends, wildcard resolution, Alg. 2 check).
#include "bindings.hpp"
#include "scalatrace/codegen/codegen.hpp"

using namespace scalatrace;

namespace {

CodegenOptions options_from(bool resolve_wildcards, bool computation, std::uint64_t min_compute_ns) {
  CodegenOptions o;
  o.resolve_wildcards = resolve_wildcards;
  o.computation = computation;
  o.min_compute_ns = min_compute_ns;
  return o;
}

}  // namespace

void register_codegen(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DeadlockError& e) {
      auto cls = py::module_::import("scalatrace.errors").attr("DeadlockError");
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
  m.def(
      "generate_c",
      [](const Trace& t, bool resolve_wildcards, bool computation, std::uint64_t min_compute_ns) {
        py::gil_scoped_release release;
        return generate_c(t, options_from(resolve_wildcards, computation, min_compute_ns));
      },
      py::arg("trace"), py::arg("resolve_wildcards") = false, py::arg("computation") = true,
      py::arg("min_compute_ns") = 500);
  m.def(
      "generate_conceptual",
      [](const Trace& t, bool computation, std::uint64_t min_compute_ns) {
        py::gil_scoped_release release;
        return generate_conceptual(t, options_from(true, computation, min_compute_ns));
      },
      py::arg("trace"), py::arg("computation") = true, py::arg("min_compute_ns") = 500);
  m.def("has_wildcards", &has_wildcards, py::arg("trace"));
  m.def(
      "resolve_wildcards",
      [](const Trace& t) {
        std::vector<WildcardResolution> resolved;
        Trace out;
        {
          py::gil_scoped_release release;
          out = resolve_wildcards(t, &resolved);
        }
        py::list rows;
        for (const auto& r : resolved)
          rows.append(py::make_tuple(r.rank, r.position, std::string(op_name(r.op)), r.source));
        return py::make_tuple(std::move(out), rows);
      },
      py::arg("trace"));
  m.def("unaligned_collectives", &unaligned_collectives, py::arg("trace"));
}
