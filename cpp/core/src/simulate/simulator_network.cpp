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
  if (contention_) {
    const auto nodes = static_cast<std::size_t>((nranks + ranks_per_node_ - 1) / ranks_per_node_);
    node_tx_free_.assign(nodes, 0.0);
    node_rx_free_.assign(nodes, 0.0);
  }
}

double Network::min_latency() const { return std::min(inter_.L, intra_.L); }

}  // namespace sim
}  // namespace scalatrace
