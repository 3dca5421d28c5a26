// Core exceptions -> scalatrace.errors classes (looked up when raised: no import cycle).
#include "bindings.hpp"
#include "scalatrace/support/errors.hpp"

namespace {

/// Sets the Python error `scalatrace.errors.<class_name>` with `message` (the pending exception).
void set_python_error(const char* class_name, const char* message) {
  auto cls = py::module_::import("scalatrace.errors").attr(class_name);
  PyErr_SetString(cls.ptr(), message);
}

[[noreturn]] void raise_python_error(const char* class_name, const std::string& message) {
  set_python_error(class_name, message.c_str());
  throw py::error_already_set();
}

}  // namespace

void throw_unknown_name(const std::string& message) { raise_python_error("UnknownNameError", message); }

void throw_out_of_range(const std::string& message) { raise_python_error("OutOfRangeError", message); }

void register_errors(py::module_&) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const scalatrace::LossyTraceError& e) {
      set_python_error("LossyTraceError", e.what());
    } catch (const scalatrace::FormatError& e) {
      set_python_error("TraceFormatError", e.what());
    } catch (const scalatrace::UsageError& e) {
      set_python_error("UsageError", e.what());
    } catch (const scalatrace::Error& e) {
      set_python_error("ScalatraceError", e.what());
    }
  });
}
