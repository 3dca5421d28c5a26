// Clustering ranks by behaviour: signatures (ACURDION), computation vectors (PHANTOM),
// K-farthest clustering, exact rank groups, and a clustered trace's rank clusters.
#include "bindings.hpp"

#include <optional>

#include "scalatrace/cluster/clustering.hpp"
#include "scalatrace/cluster/signature.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

namespace {

/// The signatures of every rank of a trace, computed once and reused by several analyses.
struct RankSignatures {
  std::vector<RankSignature> items;
};

FeatureMask parse_features(const std::vector<std::string>& names) {
  FeatureMask mask = 0;
  try {
    for (const auto& n : names) mask |= feature_bit(signature_feature_from_name(n));
  } catch (const UsageError& e) {
    throw py::value_error(e.what());
  }
  if (names.empty()) throw py::value_error("features: give at least one signature feature");
  return mask;
}

std::vector<std::string> feature_names(FeatureMask mask) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < kSignatureFeatureCount; ++i)
    if (mask & (FeatureMask{1} << i)) out.emplace_back(signature_feature_name(static_cast<SignatureFeature>(i)));
  return out;
}

py::dict signatures_to_dict(const RankSignatures& s) {
  const std::size_t n = s.items.size();
  std::vector<std::int64_t> rank(n);
  std::vector<std::uint64_t> events(n), call_path(n), types(n), loop(n), peers(n);
  std::vector<std::vector<double>> means(8, std::vector<double>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const auto& g = s.items[i];
    rank[i] = g.rank;
    events[i] = g.events;
    call_path[i] = g.call_path;
    types[i] = g.types;
    loop[i] = g.loop;
    peers[i] = g.peers;
    for (std::size_t m = 0; m < 8; ++m) means[m][i] = g.means[m];
  }
  py::dict d;
  d["rank"] = to_numpy(std::move(rank));
  d["events"] = to_numpy(std::move(events));
  d["call_path"] = to_numpy(std::move(call_path));
  d["types"] = to_numpy(std::move(types));
  d["loop"] = to_numpy(std::move(loop));
  d["peers"] = to_numpy(std::move(peers));
  const char* names[8] = {"count", "src", "dest", "tag", "key", "color", "comp", "comm"};
  for (std::size_t m = 0; m < 8; ++m) d[names[m]] = to_numpy(std::move(means[m]));
  return d;
}

}  // namespace

void register_clustering(py::module_& m) {
  py::class_<RankSignatures>(m, "RankSignatures")
      .def("__len__", [](const RankSignatures& s) { return s.items.size(); })
      .def("to_dict", &signatures_to_dict,
           "Column arrays: rank, events, call_path, types, loop (uint64 bit patterns) and the "
           "averaged features count, src, dest, tag, key, color, comp, comm (float64).");
  m.def(
      "signatures",
      [](const Trace& t) {
        RankSignatures s;
        py::gil_scoped_release release;
        s.items = trace_signatures(t);
        return s;
      },
      py::arg("trace"), "ACURDION signatures of every rank (one Cursor at a time).");
  m.def("signature_feature_names", []() { return feature_names(kAllFeatures); });
  m.def(
      "kfarthest_clusters",
      [](const RankSignatures& s, std::size_t k, const std::vector<std::string>& features, bool grow) {
        const FeatureMask mask = parse_features(features);
        if (k == 0) throw py::value_error("k must be at least 1");
        if (s.items.empty()) throw py::value_error("the trace has no ranks to cluster");
        ClusterAssignment a;
        {
          py::gil_scoped_release release;
          a = kfarthest_clusters(s.items, k, mask, grow);
        }
        return py::make_tuple(to_numpy(std::move(a.labels)), to_numpy(std::move(a.representatives)),
                              feature_names(a.format));
      },
      py::arg("signatures"), py::arg("k"), py::arg("features"), py::arg("grow") = true);
  m.def(
      "signature_distances",
      [](const RankSignatures& s, const std::vector<std::string>& features,
         std::optional<std::vector<std::int64_t>> positions) {
        const FeatureMask mask = parse_features(features);
        std::vector<const RankSignature*> chosen;
        if (positions) {
          for (std::int64_t p : *positions) {
            if (p < 0 || static_cast<std::size_t>(p) >= s.items.size())
              throw py::index_error("signature position " + std::to_string(p) + " outside 0.." +
                                    std::to_string(s.items.size()));
            chosen.push_back(&s.items[static_cast<std::size_t>(p)]);
          }
        } else {
          for (const auto& item : s.items) chosen.push_back(&item);
        }
        const std::size_t n = chosen.size();
        std::vector<double> condensed;
        {
          py::gil_scoped_release release;
          condensed.reserve(n * (n - (n > 0)) / 2);
          for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = i + 1; j < n; ++j)
              condensed.push_back(signature_distance(*chosen[i], *chosen[j], mask));
        }
        return to_numpy(std::move(condensed));
      },
      py::arg("signatures"), py::arg("features"), py::arg("positions") = py::none(),
      "Condensed (SciPy pdist order) matrix of ACURDION signature distances (of the signatures at "
      "`positions` only, when given).");
  m.def(
      "computation_vector",
      [](const Trace& t, std::int64_t rank) {
        std::vector<double> v;
        {
          py::gil_scoped_release release;
          v = computation_vector(t, rank);
        }
        return to_numpy(std::move(v));
      },
      py::arg("trace"), py::arg("rank"));
  m.def(
      "rank_groups",
      [](const Trace& t, bool with_values) {
        std::vector<std::int64_t> labels;
        {
          py::gil_scoped_release release;
          labels = rank_groups(t, with_values);
        }
        return to_numpy(std::move(labels));
      },
      py::arg("trace"), py::arg("with_values") = false);
  m.def(
      "rank_clusters",
      [](const Trace& t) {
        py::list out;
        for (const auto& c : t.clusters) out.append(py::make_tuple(c.representative, c.members));
        return out;
      },
      py::arg("trace"), "A clustered trace's (representative, members) pairs; [] if not clustered.");
}
