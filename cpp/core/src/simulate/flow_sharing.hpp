#pragma once
// Max-min fair sharing of links among flows (the fluid model of SimGrid's CM02 network model):
// every link's bandwidth is shared among the flows crossing it by progressive filling (each in
// proportion to its weight: CM02 weighs a flow by the inverse of its route's latency), and the
// rates are recomputed when a flow starts or ends, over the flows and links connected to it
// only. Defined in flow_sharing.cpp. See docs/simulator.md ("Fair sharing").
#include <cstdint>
#include <vector>

namespace scalatrace::sim {

/// A set of flows over links of equal capacity (one link's bandwidth = rate 1), each needing
/// `work` ns of one link alone, at a rate of at most `cap` (its endpoint's own byte time can be
/// slower than the link's), from its start time on. solve() gives every flow's finishing time.
/// Weighted max-min: on a link the flows not limited elsewhere get rates in proportion to their
/// weights (all 1: equal shares).
class FairSharing {
 public:
  /// Adds a flow; returns its index. `links` are link ids (any order, no repetition);
  /// `work` >= 0 ns, 0 < `cap` <= 1, `weight` > 0.
  std::uint32_t add(double start, double work, double cap, const std::uint32_t* links, std::size_t nlinks,
                    double weight = 1.0);
  std::size_t size() const { return flows_.size(); }
  void clear();

  /// Simulates the flows in time order (events: flow starts and ends); each flow's end is then
  /// end(i). Deterministic: ties are broken by flow index.
  void solve();
  double end(std::uint32_t flow) const { return flows_[flow].end; }
  double start(std::uint32_t flow) const { return flows_[flow].start; }
  double work(std::uint32_t flow) const { return flows_[flow].work; }

 private:
  struct Flow {
    double start, work, cap, weight;
    std::uint32_t first_link, nlinks;
    double remaining = 0, rate = 0, updated = 0, end = 0;
    std::uint32_t version = 0;
    bool active = false;
  };
  /// Recomputes the max-min rates of the flows connected (through shared links) to the links
  /// whose flow set changed, at time `now`, and queues their new finishing times.
  void reshare(double now);

  std::vector<Flow> flows_;
  std::vector<std::uint32_t> link_ids_;  ///< flows' links, flows_[i].first_link .. + nlinks
  // solve() state
  std::vector<std::vector<std::uint32_t>> on_link_;  ///< active flows per link
  std::vector<std::uint32_t> dirty_links_;           ///< links whose flow set changed
  std::vector<std::uint32_t> link_mark_, flow_mark_;
  std::uint32_t mark_ = 0;
  struct Finish {
    double time;
    std::uint32_t flow, version;
  };
  std::vector<Finish> heap_;
  // reshare() scratch
  std::vector<std::uint32_t> comp_flows_, comp_links_;
  std::vector<double> link_left_;
  std::vector<std::uint32_t> link_unfrozen_;
  std::vector<double> link_weight_;  ///< sum of the weights of the link's unfrozen flows
  struct Share {
    double share;
    std::uint32_t link;
  };
  std::vector<Share> link_heap_;
  std::vector<std::uint32_t> capped_;
  std::vector<double> old_rate_;
};

}  // namespace scalatrace::sim
