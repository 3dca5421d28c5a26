// The trace-driven simulator: _core.simulate(trace, ...) -> dict of NumPy arrays (times in ns).
#include <cstdint>
#include <string>
#include <vector>

#include "bindings.hpp"
#include "scalatrace/simulate/collective_schedule.hpp"
#include "scalatrace/simulate/simulator.hpp"

using namespace scalatrace;

namespace {

LogGP loggp_from(const py::sequence& p, const char* which) {
  const auto n = py::len(p);
  if (n < 5 || n > 7) throw py::value_error(std::string(which) + " must be (L, o_s, o_r, g, G[, O[, R]]) in ns");
  LogGP out{p[0].cast<double>(), p[1].cast<double>(), p[2].cast<double>(), p[3].cast<double>(), p[4].cast<double>()};
  if (n >= 6) out.O = p[5].cast<double>();
  if (n == 7) out.R = p[6].cast<double>();
  return out;
}

TimingMode timing_from(const std::string& name) {
  if (name == "mean") return TimingMode::Mean;
  if (name == "median") return TimingMode::Median;
  if (name == "sample") return TimingMode::Sample;
  if (name == "none") return TimingMode::None;
  throw py::value_error("timing must be 'mean', 'median', 'sample' or 'none', got '" + name + "'");
}

template <class Row, class F>
py::array_t<double> column(const std::vector<Row>& rows, F get) {
  std::vector<double> v(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) v[i] = get(rows[i]);
  return to_numpy(std::move(v));
}

template <class Row, class F>
py::array_t<std::int64_t> int_column(const std::vector<Row>& rows, F get) {
  std::vector<std::int64_t> v(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) v[i] = static_cast<std::int64_t>(get(rows[i]));
  return to_numpy(std::move(v));
}

py::dict times_columns(const std::vector<SimTimes>& rows) {
  py::dict d;
  d["compute"] = column(rows, [](const SimTimes& t) { return t.compute; });
  d["comm"] = column(rows, [](const SimTimes& t) { return t.comm; });
  d["wait"] = column(rows, [](const SimTimes& t) { return t.wait; });
  d["late_sender"] = column(rows, [](const SimTimes& t) { return t.late_sender; });
  d["late_receiver"] = column(rows, [](const SimTimes& t) { return t.late_receiver; });
  d["calls"] = int_column(rows, [](const SimTimes& t) { return t.calls; });
  return d;
}

py::dict result_to_dict(SimResult&& r) {
  py::dict out;
  out["total_ns"] = r.total_ns;
  out["events"] = r.events;
  out["messages"] = r.messages;
  out["fair_passes"] = r.fair_passes;
  out["fair_settled"] = r.fair_settled;
  out["end_ns"] = to_numpy(std::move(r.end_ns));
  out["ranks"] = times_columns(r.ranks);
  out["sent_messages"] = to_numpy(std::move(r.sent_messages));
  out["recv_messages"] = to_numpy(std::move(r.recv_messages));
  out["sent_bytes"] = to_numpy(std::move(r.sent_bytes));
  out["recv_bytes"] = to_numpy(std::move(r.recv_bytes));
  std::vector<SimTimes> site_times;
  for (const auto& s : r.sites) site_times.push_back(s.times);
  py::dict sites = times_columns(site_times);
  sites["site"] = int_column(r.sites, [](const SimSiteRow& s) { return s.site; });
  sites["op"] = int_column(r.sites, [](const SimSiteRow& s) { return static_cast<int>(s.op); });
  out["sites"] = sites;
  py::dict pairs;
  pairs["src"] = int_column(r.pairs, [](const SimPair& p) { return p.src; });
  pairs["dst"] = int_column(r.pairs, [](const SimPair& p) { return p.dst; });
  pairs["messages"] = int_column(r.pairs, [](const SimPair& p) { return p.messages; });
  pairs["bytes"] = column(r.pairs, [](const SimPair& p) { return p.bytes; });
  out["pairs"] = pairs;
  py::dict tl;
  tl["rank"] = int_column(r.timeline, [](const SimTimelineRow& t) { return t.rank; });
  tl["index"] = int_column(r.timeline, [](const SimTimelineRow& t) { return t.index; });
  tl["op"] = int_column(r.timeline, [](const SimTimelineRow& t) { return static_cast<int>(t.op); });
  tl["site"] = int_column(r.timeline, [](const SimTimelineRow& t) { return t.site; });
  tl["start"] = column(r.timeline, [](const SimTimelineRow& t) { return t.start; });
  tl["end"] = column(r.timeline, [](const SimTimelineRow& t) { return t.end; });
  out["timeline"] = tl;
  return out;
}

Topology::Kind topology_from(const std::string& name) {
  if (name == "flat") return Topology::Kind::Flat;
  if (name == "torus") return Topology::Kind::Torus;
  if (name == "fat_tree") return Topology::Kind::FatTree;
  if (name == "dragonfly") return Topology::Kind::Dragonfly;
  throw UsageError("topology must be 'flat', 'torus', 'fat_tree' or 'dragonfly', got '" + name + "'");
}

Placement placement_from(const std::string& name) {
  if (name == "block") return Placement::Block;
  if (name == "round_robin") return Placement::RoundRobin;
  if (name == "random") return Placement::Random;
  if (name == "explicit") return Placement::Explicit;
  throw UsageError("placement must be 'block', 'round_robin', 'random' or a list of nodes, got '" + name + "'");
}

}  // namespace

void register_simulator(py::module_& m) {
  m.def(
      "simulate",
      [](const Trace& trace, const py::sequence& inter, const py::sequence& intra, std::int64_t ranks_per_node,
         double eager_threshold, bool contention, const std::string& timing, std::uint64_t seed, double compute_scale,
         const std::unordered_map<std::uint32_t, double>& site_compute_scale, double size_scale, bool timeline,
         std::uint64_t timeline_limit, bool pair_counts, bool recorded_local_calls, const std::string& topology,
         const std::vector<std::int64_t>& shape, double hop_latency, double link_G, bool congestion,
         const std::string& sharing, const std::string& placement, std::uint64_t placement_seed,
         const std::vector<std::int64_t>& node_of_rank, double noise_period, double noise_duration,
         bool noise_coscheduled, std::uint64_t noise_seed) {
        SimOptions o;
        o.topology.kind = topology_from(topology);
        o.topology.shape = shape;
        o.topology.hop_latency = hop_latency;
        o.topology.link_G = link_G;
        o.topology.congestion = congestion;
        if (sharing == "fair")
          o.topology.sharing = Topology::Sharing::Fair;
        else if (sharing == "latency_weighted")
          o.topology.sharing = Topology::Sharing::LatencyWeighted;
        else if (sharing != "first_come")
          throw UsageError("sharing must be 'first_come', 'fair' or 'latency_weighted', got '" + sharing + "'");
        o.placement = placement_from(placement);
        o.placement_seed = placement_seed;
        o.node_of_rank = node_of_rank;
        o.noise = OsNoise{noise_period, noise_duration, noise_coscheduled, noise_seed};
        o.inter_node = loggp_from(inter, "network");
        o.intra_node = loggp_from(intra, "intra_node");
        o.ranks_per_node = ranks_per_node;
        o.eager_threshold = eager_threshold;
        o.contention = contention;
        o.timing = timing_from(timing);
        o.seed = seed;
        o.compute_scale = compute_scale;
        o.site_compute_scale = site_compute_scale;
        o.size_scale = size_scale;
        o.timeline = timeline;
        o.timeline_limit = timeline_limit;
        o.pair_counts = pair_counts;
        o.recorded_local_calls = recorded_local_calls;
        SimResult r;
        {
          py::gil_scoped_release release;
          r = simulate(trace, o);
        }
        return result_to_dict(std::move(r));
      },
      py::arg("trace"), py::arg("network"), py::arg("intra_node"), py::arg("ranks_per_node") = 1,
      py::arg("eager_threshold") = 65536.0, py::arg("contention") = false, py::arg("timing") = "mean",
      py::arg("seed") = 0, py::arg("compute_scale") = 1.0,
      py::arg("site_compute_scale") = std::unordered_map<std::uint32_t, double>{}, py::arg("size_scale") = 1.0,
      py::arg("timeline") = false, py::arg("timeline_limit") = 10'000'000, py::arg("pair_counts") = false,
      py::arg("recorded_local_calls") = true, py::arg("topology") = "flat",
      py::arg("shape") = std::vector<std::int64_t>{}, py::arg("hop_latency") = 0.0, py::arg("link_G") = 0.0,
      py::arg("congestion") = true, py::arg("sharing") = "first_come", py::arg("placement") = "block",
      py::arg("placement_seed") = 0, py::arg("node_of_rank") = std::vector<std::int64_t>{},
      py::arg("noise_period") = 0.0, py::arg("noise_duration") = 0.0, py::arg("noise_coscheduled") = false,
      py::arg("noise_seed") = 0, "Simulates the trace on a LogGP network; times in ns (see scalatrace.simulate).");
  m.def(
      "collective_schedule",
      [](const Event& e, std::int64_t me, std::int64_t size) {
        py::list steps;
        for (const CollectiveStep& s : collective_schedule(e, me, size))
          steps.append(py::make_tuple(s.recv_from, s.send_to, s.send_bytes, s.recv_bytes));
        return steps;
      },
      py::arg("event"), py::arg("me"), py::arg("size"),
      "Communicator rank `me`'s point-to-point steps in collective `event` on `size` ranks, as the "
      "simulator runs them: (recv_from, send_to, send_bytes, recv_bytes) tuples, -1 for a missing half.");
}
