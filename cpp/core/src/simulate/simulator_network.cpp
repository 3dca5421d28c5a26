// LogGP network model of the simulator: transfer timing, sender gap, optional link contention;
// and validation of the simulator's options. See docs/simulator.md ("Network model").
#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "simulate/simulator_network.hpp"

namespace scalatrace {

namespace {

void check_value(double v, const std::string& name, bool positive = false) {
  if (!std::isfinite(v) || v < 0 || (positive && v == 0))
    throw UsageError("simulator parameter " + name + " must be " + (positive ? "positive" : "non-negative") +
                     " and finite, got " + std::to_string(v));
}

void check_loggp(const LogGP& p, const std::string& which) {
  check_value(p.L, which + ".L");
  check_value(p.o_s, which + ".o_s");
  check_value(p.o_r, which + ".o_r");
  check_value(p.g, which + ".g");
  check_value(p.G, which + ".G");
  check_value(p.O, which + ".O");
}

}  // namespace

void SimOptions::validate() const {
  check_loggp(inter_node, "inter_node");
  check_loggp(intra_node, "intra_node");
  if (ranks_per_node < 1)
    throw UsageError("simulator parameter ranks_per_node must be at least 1, got " + std::to_string(ranks_per_node));
  check_value(eager_threshold, "eager_threshold");
  topology.nodes();  // throws for a bad shape
  check_value(topology.hop_latency, "topology.hop_latency");
  check_value(topology.link_G, "topology.link_G");
  check_value(noise.period, "noise.period");
  check_value(noise.duration, "noise.duration");
  if (noise.period > 0 && noise.duration >= noise.period)
    throw UsageError("noise.duration must be shorter than noise.period (got " + std::to_string(noise.duration) +
                     " ns every " + std::to_string(noise.period) + " ns)");
  if (placement != Placement::Explicit && !node_of_rank.empty())
    throw UsageError("node_of_rank is for the explicit placement only");
  check_value(compute_scale, "compute_scale");
  check_value(size_scale, "size_scale");
  for (const auto& [site, scale] : site_compute_scale)
    check_value(scale, "site_compute_scale[" + std::to_string(site) + "]");
}

namespace sim {

Network::Network(const SimOptions& options, std::int64_t nranks)
    : inter_(options.inter_node),
      intra_(options.intra_node),
      ranks_per_node_(options.ranks_per_node),
      contention_(options.contention),
      nic_free_(static_cast<std::size_t>(nranks), 0.0) {
  if (ranks_per_node_ > 0 && (ranks_per_node_ & (ranks_per_node_ - 1)) == 0)
    node_shift_ = std::countr_zero(static_cast<std::uint64_t>(ranks_per_node_));
  node_of_ = place_ranks(options, nranks);
  if (options.topology.kind != Topology::Kind::Flat) {
    routes_ = std::make_unique<Routes>(options.topology);
    hop_latency_ = options.topology.hop_latency;
    link_G_ = options.topology.link_G;
    congestion_ = options.topology.congestion;
    if (congestion_) {
      link_busy_.resize(static_cast<std::size_t>(routes_->links()));
      horizon_every_ = std::max<std::int64_t>(nranks, 64);
      horizon_due_ = horizon_every_;
    }
  }
  if (contention_) {
    std::int64_t nodes = (nranks + ranks_per_node_ - 1) / ranks_per_node_;
    for (std::int64_t n : node_of_) nodes = std::max(nodes, n + 1);
    node_tx_free_.assign(static_cast<std::size_t>(nodes), 0.0);
    node_rx_free_.assign(static_cast<std::size_t>(nodes), 0.0);
  }
}

Network::Transfer Network::routed_transfer(std::int64_t src, std::int64_t dst, const LogGP& p, double ready,
                                           double bytes) {
  double& nic = nic_free_[static_cast<std::size_t>(src)];
  Transfer t;
  t.start = std::max(ready, nic);
  if (same_node(src, dst)) {
    const double body = bytes > 1 ? (bytes - 1) * p.G : 0.0;
    t.end = t.start + body;
    t.arrival = t.end + p.L;
    nic = std::max(nic, t.start + std::max(p.g, body));
    return t;
  }
  routes_->route(node(src), node(dst), path_);
  const double body = bytes > 1 ? (bytes - 1) * std::max(p.G, link_G_) : 0.0;
  if (congestion_ && body > 0) {
    // The earliest start from which every link of the route is free for `body`: move past
    // each link's reservation that overlaps, until none does (reservations made for later
    // messages leave the gaps before them usable, so the order in which the engine processes
    // senders does not hold an earlier message behind a later one).
    --horizon_due_;
    for (bool moved = true; moved;) {
      moved = false;
      for (std::uint32_t l : path_) {
        const std::vector<Busy>& busy = link_busy_[l];
        // The first reservation ending after the candidate start (ends are sorted too).
        const auto it =
            std::upper_bound(busy.begin(), busy.end(), t.start, [](double v, const Busy& b) { return v < b.end; });
        if (it != busy.end() && it->start < t.start + body) {
          t.start = it->end;
          moved = true;
        }
      }
    }
    for (std::uint32_t l : path_) {
      std::vector<Busy>& busy = link_busy_[l];
      if (!busy.empty() && busy.front().end <= horizon_) {  // drop what no transfer can meet
        const auto keep =
            std::upper_bound(busy.begin(), busy.end(), horizon_, [](double v, const Busy& b) { return v < b.end; });
        busy.erase(busy.begin(), keep);
      }
      const auto at =
          std::upper_bound(busy.begin(), busy.end(), t.start, [](double v, const Busy& b) { return v < b.start; });
      busy.insert(at, Busy{t.start, t.start + body});
    }
  }
  t.end = t.start + body;
  t.arrival = t.end + p.L + static_cast<double>(path_.size()) * hop_latency_;
  nic = std::max(nic, t.start + std::max(p.g, body));
  return t;
}

void Network::forget_before(double t) {
  horizon_ = std::max(horizon_, t);
  horizon_due_ = horizon_every_;
}

double Network::min_latency() const { return std::min(inter_.L, intra_.L); }

}  // namespace sim
}  // namespace scalatrace
