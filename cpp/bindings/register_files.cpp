// The core's safe file writer, for every file the Python package writes (scalatrace._files).
#include "bindings.hpp"
#include "scalatrace/support/path_exchange.hpp"
#include "scalatrace/support/safe_file.hpp"

void register_files(py::module_& m) {
  m.def(
      "write_file_safely",
      [](const std::string& path, py::bytes data) {
        const std::string_view bytes = data;  // a view: no copy of the payload
        py::gil_scoped_release release;
        scalatrace::write_file_safely(path, bytes);
      },
      py::arg("path"), py::arg("data"),
      "Writes data to path through a unique temporary file (checked writes, fsync, rename); a "
      "non-regular file at path is refused, a replaced file keeps its permission bits. Raises "
      "ScalatraceError with the reason.");
  m.def(
      "require_replaceable", [](const std::string& path) { scalatrace::require_replaceable(path); }, py::arg("path"),
      "Raises ScalatraceError unless path is absent or a regular file (never follows a symlink).");
  m.def(
      "exchange_paths", [](const std::string& a, const std::string& b) { return scalatrace::exchange_paths(a, b); },
      py::arg("a"), py::arg("b"),
      "Swaps the paths a and b atomically (renameat2 RENAME_EXCHANGE); False, changing nothing, if "
      "the file system cannot; raises ScalatraceError with the reason on other failures.");
}
