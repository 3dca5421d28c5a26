// RankList: behaves like a read-only Python collection of ranks.
#include <sstream>

#include "bindings.hpp"
#include "readable_text.hpp"
#include "scalatrace/model/rank_list.hpp"

using scalatrace::RankDescriptor;
using scalatrace::RankList;

namespace {

struct RankListIterator {
  const RankList* list;
  py::object owner;
  std::int64_t index = 0, size = 0;
};

std::string html(const RankList& r) {
  std::ostringstream s;
  s << "<code>RankList</code> of " << r.size() << " rank" << (r.size() == 1 ? "" : "s") << ": <code>"
    << readable_ranks(r, 24) << "</code>";
  return s.str();
}

}  // namespace

void register_ranklist(py::module_& m) {
  py::class_<RankListIterator>(m, "_RankListIterator")
      .def("__iter__", [](RankListIterator& it) -> RankListIterator& { return it; })
      .def("__next__", [](RankListIterator& it) {
        if (it.index >= it.size) throw py::stop_iteration();
        return it.list->at(it.index++);
      });

  py::class_<RankList>(m, "RankList", "A compressed set/sequence of ranks: a union of strided descriptors.")
      .def(py::init<>())
      .def(py::init([](const std::vector<std::int64_t>& ranks) { return RankList::from_sequence(ranks); }),
           py::arg("ranks"), "Builds a ranklist from ranks in sequence order.")
      .def_static("range", &RankList::range, py::arg("first"), py::arg("count"), py::arg("stride") = 1)
      .def("__len__", [](const RankList& r) { return r.size(); })
      .def("__contains__", [](const RankList& r, std::int64_t rank) { return r.contains(rank); })
      .def("__contains__", [](const RankList&, const py::object&) { return false; })
      .def("__iter__",
           [](py::object self) {
             const auto& r = self.cast<const RankList&>();
             return RankListIterator{&r, self, 0, r.size()};
           })
      .def("__getitem__",
           [](const RankList& r, std::int64_t i) {
             const auto n = r.size();
             if (i < 0) i += n;
             if (i < 0 || i >= n) throw py::index_error("rank index out of range");
             return r.at(i);
           })
      .def("index",
           [](const RankList& r, std::int64_t rank) {
             const auto i = r.index_of(rank);
             if (i < 0) throw py::value_error(std::to_string(rank) + " is not in the ranklist");
             return i;
           })
      .def(
          "to_numpy", [](const RankList& r) { return to_numpy(r.to_vector()); },
          "All ranks as an int64 array, in sequence order.")
      .def("union", &RankList::unite, py::arg("other"))
      .def_property_readonly(
          "descriptors",
          [](const RankList& r) {
            py::list out;
            for (const RankDescriptor& d : r.descriptors()) out.append(py::make_tuple(d.start, d.dims));
            return out;
          },
          "List of (start, [(count, stride), ...]) descriptors, innermost dimension first.")
      .def("__eq__", [](const RankList& a, const RankList& b) { return a == b; })
      .def("__eq__", [](const RankList&, const py::object&) { return false; })
      .def("__hash__", [](const RankList& r) { return py::hash(py::str(r.to_string())); })
      .def("__str__", [](const RankList& r) { return readable_ranks(r); })
      .def("__repr__",
           [](const RankList& r) {
             return "RankList(" + readable_ranks(r) + "; " + std::to_string(r.size()) + " ranks)";
           })
      .def_property_readonly("notation", &RankList::to_string,
                             "The thesis notation of dumps: <dims start (count stride)...> per descriptor.")
      .def("_repr_html_", &html);
}
