#pragma once
// The simulator's LogGP network model (not a public header): transfer timing, each sender's
// gap and optional link contention; defined in simulator_network.cpp. See docs/simulator.md
// ("Network model").
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "scalatrace/simulate/simulator.hpp"
#include "simulate/flow_sharing.hpp"
#include "simulate/sender_nic.hpp"
#include "simulate/simulator_topology.hpp"
#include "support/prefetch.hpp"

namespace scalatrace::sim {

/// Fair sharing's state across the passes of one simulation (Sharing::Fair, LatencyWeighted): this
/// pass's flows, and the previous pass's flows of every sender in the order it sent them, whose
/// durations time this pass's messages.
struct FairPasses {
  explicit FairPasses(std::int64_t nranks) : sent(static_cast<std::size_t>(nranks)), before(sent.size()) {}
  struct Sent {
    std::int64_t dst;
    double start, work, duration;  ///< the flow's start, bytes (as link time) and fair duration
  };
  FairSharing flows;                             ///< this pass's flows
  std::vector<std::int64_t> destination;         ///< per flow of this pass: its receiver
  std::vector<std::vector<std::uint32_t>> sent;  ///< per sender: its flows this pass, in order
  std::vector<std::vector<Sent>> before;         ///< per sender: the previous pass's, solved
  int pass = 0;
  /// Passes at most (a run whose flows keep moving ends with the last pass's timing).
  static constexpr int kMaxPasses = 10;
  /// Flows whose start moved by at most this many ns since the previous pass count as settled.
  static constexpr double kSettled = 1e-3;
  /// Solves this pass's flows; true when every sender started the same flows at the same times
  /// (within kSettled) as in the previous pass (the durations used were then this pass's own:
  /// a fixed point).
  /// Then makes them the previous pass's for the next one.
  bool finish_pass();
};

/// LogGP timing of data transfers, with each sender's gap and (optionally) per-node link
/// contention, or routes over a topology's links. State: when each rank's NIC is busy (and when
/// each node's links, or each topology link, may carry the next message).
class Network {
 public:
  /// `fair`: the passes' state under fair sharing (null otherwise).
  Network(const SimOptions& options, std::int64_t nranks, FairPasses* fair = nullptr);

  /// The node of a rank (its placement; rank / ranks_per_node by default).
  std::int64_t node(std::int64_t r) const {
    return node_of_.empty() ? r / ranks_per_node_ : node_of_[static_cast<std::size_t>(r)];
  }
  bool same_node(std::int64_t a, std::int64_t b) const {
    if (!node_of_.empty()) return node_of_[static_cast<std::size_t>(a)] == node_of_[static_cast<std::size_t>(b)];
    // Ranks are non-negative: a shift is the division by a power of two, without its latency.
    if (node_shift_ >= 0) return (a >> node_shift_) == (b >> node_shift_);
    return a / ranks_per_node_ == b / ranks_per_node_;
  }
  const LogGP& link(std::int64_t a, std::int64_t b) const { return same_node(a, b) ? intra_ : inter_; }
  /// Topology congestion: true every so many routed messages, when the engine should call
  /// forget_before() with a lower bound of every future transfer's start.
  bool wants_horizon() const { return horizon_due_ <= 0 && reserving_; }
  /// No transfer will start before `t`: link reservations ending by then are dropped.
  void forget_before(double t);
  /// The smallest latency of any link (lower bound of any future arrival).
  double min_latency() const;
  /// Starts loading the sender state of `rank`'s NIC (what its next message reads first).
  void prefetch_sender(std::int64_t rank) const { prefetch_line(&nics_[static_cast<std::size_t>(rank)]); }

  struct Transfer {
    double start = 0;    ///< first byte leaves the sender
    double end = 0;      ///< last byte has left the sender (start + (k-1)G)
    double arrival = 0;  ///< last byte has arrived (end + L, later under contention)
  };
  /// Moves `bytes` from src to dst over their link `p` (= link(src, dst)), starting no earlier
  /// than `ready` (inline: once per message).
  /// Inlined (also with the topology branch, which made GCC call it instead: 4 % of a
  /// 65,536-rank simulation's time).
  [[gnu::always_inline]] Transfer transfer(std::int64_t src, std::int64_t dst, const LogGP& p, double ready,
                                           double bytes) {
    if (routes_) [[unlikely]]
      return routed_transfer(src, dst, p, ready, bytes);
    const double body = byte_time(bytes, p.G);
    const double busy = std::max(p.g, body);
    SenderNic& nic = nics_[static_cast<std::size_t>(src)];
    const bool shared = contention_ && !same_node(src, dst);
    if (shared) ready = std::max(ready, node_tx_free_[static_cast<std::size_t>(node(src))]);
    Transfer t;
    t.start = nic.earliest_start(ready, busy);
    t.end = t.start + body;
    t.arrival = t.end + p.L;
    nic.reserve(t.start, busy);
    if (shared) {
      node_tx_free_[static_cast<std::size_t>(node(src))] = t.end;
      double& rx = node_rx_free_[static_cast<std::size_t>(node(dst))];
      t.arrival = std::max(t.arrival, rx + body);
      rx = t.arrival;
    }
    return t;
  }

 private:
  /// transfer() over a topology: the route's latency and slowest byte time, a torus node's port
  /// per link, and (congestion) the route's links one message at a time.
  Transfer routed_transfer(std::int64_t src, std::int64_t dst, const LogGP& p, double ready, double bytes);
  /// routed_transfer() under fair sharing after the first pass: the message is a flow that
  /// takes the duration its flow had in the previous pass (docs/simulator.md, "Fair sharing").
  Transfer fair_transfer(std::int64_t src, std::int64_t dst, const LogGP& p, double ready, double bytes);
  /// Records the message handed to the network at `handed` as a flow of this pass.
  void record_flow(std::int64_t src, std::int64_t dst, const LogGP& p, double handed, double bytes);

  LogGP inter_, intra_;
  std::int64_t ranks_per_node_;
  int node_shift_ = -1;  ///< log2(ranks_per_node) when that is a power of two (1 included)
  bool contention_;
  /// Per rank: its NIC's busy time; a message holds it for its gap or its bytes, the longer.
  std::vector<SenderNic> nics_;
  std::vector<double> node_tx_free_, node_rx_free_;  ///< per node (contention only)
  std::vector<std::int64_t> node_of_;                ///< per rank (empty: rank / ranks_per_node)
  std::unique_ptr<Routes> routes_;                   ///< topology routes (null: flat)
  double hop_latency_ = 0, link_G_ = 0;
  bool congestion_ = false;
  /// Torus: a node injects on each of its links at once (the route's first link is the port).
  bool per_link_ports_ = false;
  bool reserving_ = false;  ///< links keep reservations (congestion, or a torus node's ports)
  /// A link's reservations: disjoint busy intervals sorted by start (congestion, or a torus
  /// node's ports), those ending at or before `horizon_` not yet dropped.
  struct Busy {
    double start, end;
  };
  std::vector<std::vector<Busy>> link_busy_;
  /// Reserves `need` ns of `busy`'s free time from `from` on, in the earliest gaps; returns the
  /// first gap's start and sets fill_end_ to where the last one ends.
  double fill_gaps(std::vector<Busy>& busy, double from, double need);
  double fill_end_ = 0;
  double horizon_ = 0;
  std::int64_t horizon_due_ = 0, horizon_every_ = 1;  ///< routed messages until the next horizon
  std::vector<std::uint32_t> path_;                   ///< the current message's route
  FairPasses* fair_ = nullptr;                        ///< fair sharing (null: first come)
  bool latency_weighted_ = false;                     ///< fair shares weighted by 1 / route latency
};

}  // namespace scalatrace::sim
