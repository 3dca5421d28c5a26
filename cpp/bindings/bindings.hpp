#pragma once
// Shared declarations of the _core bindings (one register_* function per concept).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

namespace py = pybind11;

void register_errors(py::module_& m);
void register_ranklist(py::module_& m);
void register_values(py::module_& m);
void register_trace(py::module_& m);
void register_events(py::module_& m);
void register_analysis(py::module_& m);
void register_raw(py::module_& m);
void register_frames(py::module_& m);
void register_files(py::module_& m);

/// Raises scalatrace.errors.UnknownNameError (a UsageError and a KeyError) with `message`.
[[noreturn]] void throw_unknown_name(const std::string& message);
/// Raises scalatrace.errors.OutOfRangeError (a UsageError and an IndexError) with `message`.
[[noreturn]] void throw_out_of_range(const std::string& message);
void register_simulator(py::module_& m);
void register_extrapolate(py::module_& m);
void register_codegen(py::module_& m);
void register_clustering(py::module_& m);
void register_lossy(py::module_& m);

/// A Python list of references to the elements of `items`, kept alive by `parent`.
template <class T>
py::list list_of_refs(const std::vector<T>& items, py::handle parent) {
  py::list out;
  for (const auto& item : items) out.append(py::cast(&item, py::return_value_policy::reference_internal, parent));
  return out;
}

/// Moves a vector into a NumPy array without copying.
template <class T>
py::array_t<T> to_numpy(std::vector<T>&& v) {
  auto* heap = new std::vector<T>(std::move(v));
  py::capsule owner(heap, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>({static_cast<py::ssize_t>(heap->size())}, {sizeof(T)}, heap->data(), owner);
}

#include "scalatrace/model/comm_table.hpp"
#include "scalatrace/model/event.hpp"

/// One row of a rank table (NumPy structured array built in C++).
struct RankTableRow {
  std::int64_t rank;  ///< world rank whose event this is
  std::uint16_t op;
  std::int64_t peer;  ///< absolute world rank; -1 none / wildcard, -2 MPI_PROC_NULL
  std::int64_t bytes;
  std::int64_t tag;
  std::int64_t comm;
  std::uint32_t site;
  std::uint64_t compute_ns;
  std::uint64_t duration_ns;
};

/// Builds rank-table rows from a rank's events one at a time.
class RankTableBuilder {
 public:
  RankTableBuilder(std::int64_t rank, std::int64_t nranks, const scalatrace::CommTable& comms)
      : rank_(rank), nranks_(nranks), comms_(&comms) {}
  /// Following rows belong to `rank` (one builder can collect several ranks' events).
  void set_rank(std::int64_t rank) { rank_ = rank; }
  /// Following rows resolve communicators in `comms` (raw recordings: the rank's own table).
  void set_comms(const scalatrace::CommTable& comms) { comms_ = &comms; }
  std::size_t size() const { return rows_.size(); }
  void add(const scalatrace::Event& e);
  py::array finish();

 private:
  std::int64_t rank_, nranks_;
  const scalatrace::CommTable* comms_;
  std::vector<RankTableRow> rows_;
};

#include "scalatrace/model/trace.hpp"
#include "scalatrace/read/cursor.hpp"

/// "mean" / "sample" / "none" -> TimingMode (UsageError otherwise).
scalatrace::TimingMode parse_timing_mode(const std::string& timing);

// LoopNode holds std::vector<Node> (move-only elements) but looks copyable to type traits.
namespace pybind11::detail {
template <>
struct is_copy_constructible<scalatrace::LoopNode> : std::false_type {};
template <>
struct is_copy_assignable<scalatrace::LoopNode> : std::false_type {};
}  // namespace pybind11::detail
