// scalatrace._core: the compiled part of the Python package.
#include "bindings.hpp"

PYBIND11_MODULE(_core, m) {
  m.doc() = "scalatrace compiled core (use the scalatrace package, not this module directly)";
  register_errors(m);
  register_ranklist(m);
  register_values(m);
  register_trace(m);
  register_events(m);
  register_analysis(m);
  register_raw(m);
  register_frames(m);
  register_files(m);
  register_simulator(m);
  register_extrapolate(m);
  register_codegen(m);
  register_clustering(m);
  register_lossy(m);
}
