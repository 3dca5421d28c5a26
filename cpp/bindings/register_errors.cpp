// Core exceptions -> scalatrace.errors classes (looked up when raised: no import cycle).
#include "bindings.hpp"
#include "scalatrace/support/errors.hpp"

void throw_unknown_name(const std::string& message) {
  auto cls = py::module_::import("scalatrace.errors").attr("UnknownNameError");
  PyErr_SetString(cls.ptr(), message.c_str());
  throw py::error_already_set();
}

void register_errors(py::module_&) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const scalatrace::FormatError& e) {
      auto cls = py::module_::import("scalatrace.errors").attr("TraceFormatError");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const scalatrace::UsageError& e) {
      auto cls = py::module_::import("scalatrace.errors").attr("UsageError");
      PyErr_SetString(cls.ptr(), e.what());
    } catch (const scalatrace::Error& e) {
      auto cls = py::module_::import("scalatrace.errors").attr("ScalatraceError");
      PyErr_SetString(cls.ptr(), e.what());
    }
  });
}
