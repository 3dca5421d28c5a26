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
  check_value(p.R, which + ".R");
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

Network::Network(const SimOptions& options, std::int64_t nranks, FairPasses* fair)
    : inter_(options.inter_node),
      intra_(options.intra_node),
      ranks_per_node_(options.ranks_per_node),
      contention_(options.contention),
      nics_(static_cast<std::size_t>(nranks)) {
  if (ranks_per_node_ > 0 && (ranks_per_node_ & (ranks_per_node_ - 1)) == 0)
    node_shift_ = std::countr_zero(static_cast<std::uint64_t>(ranks_per_node_));
  node_of_ = place_ranks(options, nranks);
  if (options.topology.kind != Topology::Kind::Flat) {
    routes_ = std::make_unique<Routes>(options.topology);
    hop_latency_ = options.topology.hop_latency;
    link_G_ = options.topology.link_G;
    congestion_ = options.topology.congestion;
    per_link_ports_ = options.topology.kind == Topology::Kind::Torus;
    if (congestion_ && options.topology.sharing != Topology::Sharing::FirstCome) fair_ = fair;
    latency_weighted_ = options.topology.sharing == Topology::Sharing::LatencyWeighted;
    // Fair sharing's first pass times messages first come, first served; the later ones by the
    // flows of the pass before.
    reserving_ = (congestion_ || per_link_ports_) && (fair_ == nullptr || fair_->pass == 0);
    if (reserving_) {
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
  SenderNic& nic = nics_[static_cast<std::size_t>(src)];
  const double own_body = byte_time(bytes, p.G);  // the endpoint's byte time
  Transfer t;
  if (same_node(src, dst)) {
    const double busy = std::max(p.g, own_body);
    t.start = nic.earliest_start(ready, busy);
    t.end = t.start + own_body;
    t.arrival = t.end + p.L;
    nic.reserve(t.start, busy);
    return t;
  }
  if (fair_ != nullptr && fair_->pass > 0) return fair_transfer(src, dst, p, ready, bytes);
  routes_->route(node(src), node(dst), path_);
  const double body = byte_time(bytes, std::max(p.G, link_G_));
  // The injection port: a torus node injects on each of its links at once (one port per link,
  // as SimGrid's torus hosts and machines with a DMA engine per link), so its NIC is busy only
  // for the endpoint's own byte time and the port (the route's first link) for the message's; a
  // fat-tree or dragonfly node has one link, its NIC one port busy for the whole message.
  const double nic_busy = std::max(p.g, per_link_ports_ ? own_body : body);
  t.start = nic.earliest_start(ready, nic_busy);
  const double handed = t.start;
  // Links reserved: the whole route (congestion), or a torus node's port alone (no congestion).
  const std::size_t reserved = congestion_ ? path_.size() : per_link_ports_ ? 1 : 0;
  const auto hops = static_cast<double>(path_.size());
  t.end = t.start + body;
  t.arrival = t.end + p.L + hops * hop_latency_;
  if (reserved > 0 && body > 0) {
    // As a flow crosses its links at once, the message takes on each link of its route the free
    // time from when it was handed to the port (plus the hops' latencies) until the link has
    // carried all of it, in pieces if the link's free time is in pieces; its last byte leaves a
    // link no earlier than it left the one before plus a hop. A busy link thus leaves the
    // route's other links free meanwhile, and reservations made for later messages leave the
    // gaps before them usable (the engine processes senders in no global time order).
    --horizon_due_;
    double head = handed, done = 0;
    for (std::size_t i = 0; i < reserved; ++i) {
      std::vector<Busy>& busy = link_busy_[path_[i]];
      if (!busy.empty() && busy.front().end <= horizon_) {  // drop what no transfer can meet
        const auto keep =
            std::upper_bound(busy.begin(), busy.end(), horizon_, [](double v, const Busy& b) { return v < b.end; });
        busy.erase(busy.begin(), keep);
      }
      const double first = fill_gaps(busy, head, body);
      if (i == 0) {
        t.start = first;
        t.end = done = fill_end_;
      } else {
        done = std::max(fill_end_, done + hop_latency_);
      }
      head += hop_latency_;
    }
    // `done` counts the latencies of the first reserved - 1 hops.
    t.arrival = done + p.L + (hops - static_cast<double>(reserved - 1)) * hop_latency_;
  }
  // With a port per link the NIC hands the message to its port and is free again after its own
  // gap, however long the port makes the message wait.
  nic.reserve(per_link_ports_ ? handed : t.start, nic_busy);
  if (fair_ != nullptr) record_flow(src, dst, p, handed, bytes);
  return t;
}

// Under fair sharing a message is a flow: after the route's latency (L and the hops' latencies,
// as SimGrid's CM02 model), it crosses all its links at once at the rate max-min fair sharing
// gives it among the flows on them. The rates depend on messages the engine has not processed
// yet (it runs ranks in no global time order), so the run is repeated: each pass records its
// flows, which are then solved in time order (FairSharing), and the next pass gives each message
// the duration of the same message (the same sender's same send) in the pass before.
void Network::record_flow(std::int64_t src, std::int64_t dst, const LogGP& p, double handed, double bytes) {
  const double work = byte_time(bytes, link_G_);
  const double cap = p.G > link_G_ ? link_G_ / p.G : 1.0;
  const double latency = p.L + static_cast<double>(path_.size()) * hop_latency_;
  // Latency-weighted sharing (SimGrid's CM02): a flow's share is proportional to the inverse of
  // its route's latency; with no latency at all every route weighs the same.
  const double weight = latency_weighted_ && latency > 0 ? 1.0 / latency : 1.0;
  fair_->sent[static_cast<std::size_t>(src)].push_back(
      fair_->flows.add(handed + latency, work, cap, path_.data(), path_.size(), weight));
  fair_->destination.push_back(dst);
}

Network::Transfer Network::fair_transfer(std::int64_t src, std::int64_t dst, const LogGP& p, double ready,
                                         double bytes) {
  // The NIC is busy for its own byte time only: the node's link is shared like any other.
  SenderNic& nic = nics_[static_cast<std::size_t>(src)];
  const double nic_busy = std::max(p.g, byte_time(bytes, p.G));
  ready = nic.earliest_start(ready, nic_busy);
  routes_->route(node(src), node(dst), path_);
  const double alone = byte_time(bytes, std::max(p.G, link_G_));
  const double work = byte_time(bytes, link_G_);
  const double latency = p.L + static_cast<double>(path_.size()) * hop_latency_;
  double duration = alone;
  const auto& before = fair_->before[static_cast<std::size_t>(src)];
  const std::size_t k = fair_->sent[static_cast<std::size_t>(src)].size();
  if (k < before.size() && before[k].dst == dst && before[k].work == work)
    duration = std::max(alone, before[k].duration);
  record_flow(src, dst, p, ready, bytes);
  Transfer t;
  t.start = ready;
  t.end = ready + duration;
  t.arrival = t.end + latency;
  nic.reserve(ready, nic_busy);
  return t;
}

bool FairPasses::finish_pass() {
  flows.solve();
  bool same = true;
  for (std::size_t s = 0; s < sent.size(); ++s) {
    auto& mine = sent[s];
    auto& old = before[s];
    if (mine.size() != old.size()) same = false;
    old.resize(mine.size());
    for (std::size_t k = 0; k < mine.size(); ++k) {
      const std::uint32_t f = mine[k];
      const double start = flows.start(f);
      const std::int64_t dst = destination[f];
      if (same && (old[k].dst != dst || std::abs(old[k].start - start) > kSettled || old[k].work != flows.work(f)))
        same = false;
      old[k] = Sent{dst, start, flows.work(f), flows.end(f) - start};
    }
    mine.clear();
  }
  flows.clear();
  destination.clear();
  ++pass;
  return same && pass > 1;
}

double Network::fill_gaps(std::vector<Busy>& busy, double from, double need) {
  // From the first reservation ending after `from` (ends are sorted too), take every gap until
  // `need` is covered, merging what is taken with the reservations it touches.
  auto it = std::upper_bound(busy.begin(), busy.end(), from, [](double v, const Busy& b) { return v < b.end; });
  double cur = from, first = -1;
  while (need > 0) {
    if (it != busy.end() && it->start <= cur) {
      cur = std::max(cur, it->end);
      ++it;
      continue;
    }
    const double take = it == busy.end() ? need : std::min(need, it->start - cur);
    const double stop = cur + take;
    if (first < 0) first = cur;
    need -= take;
    const bool joins_before = it != busy.begin() && std::prev(it)->end == cur;
    const bool joins_after = it != busy.end() && it->start == stop;
    if (joins_before && joins_after) {  // the gap is filled: one reservation from both
      std::prev(it)->end = it->end;
      it = busy.erase(it);
      cur = std::prev(it)->end;
      continue;
    }
    if (joins_before) {
      std::prev(it)->end = stop;
    } else if (joins_after) {
      it->start = cur;
    } else {
      it = std::next(busy.insert(it, Busy{cur, stop}));
    }
    cur = stop;
  }
  fill_end_ = cur;
  return first;
}

void Network::forget_before(double t) {
  horizon_ = std::max(horizon_, t);
  horizon_due_ = horizon_every_;
}

double Network::min_latency() const { return std::min(inter_.L, intra_.L); }

}  // namespace sim
}  // namespace scalatrace
