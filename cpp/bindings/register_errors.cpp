// Core exceptions -> scalatrace.errors classes (looked up when raised: no import cycle).
#include "bindings.hpp"
#include "scalatrace/support/errors.hpp"

namespace {

[[noreturn]] void raise_python_error(const char* class_name, const std::string& message) {
  auto cls = py::module_::import("scalatrace.errors").attr(class_name);
  PyErr_SetString(cls.ptr(), message.c_str());
  throw py::error_already_set();
}

}  // namespace

void throw_unknown_name(const std::string& message) { raise_python_error("UnknownNameError", message); }

void throw_out_of_range(const std::string& message) { raise_python_error("OutOfRangeError", message); }

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
