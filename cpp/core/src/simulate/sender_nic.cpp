// A sender's NIC: the gaps before its horizon (simulate/sender_nic.hpp).
#include "simulate/sender_nic.hpp"

#include <algorithm>

namespace scalatrace::sim {

double SenderNic::start_in_gap(double ready, double busy) const {
  for (int i = 0; i < gaps_; ++i) {
    const Gap& g = gap_[i];
    const double t = std::max(ready, g.start);
    // Strictly inside for a message of no length: at a gap's end the next reservation starts.
    if (t < g.end && t + busy <= g.end) return t;
  }
  return horizon_;
}

void SenderNic::reserve_before_horizon(double start, double busy) {
  const double end = start + busy;
  // Each gap minus [start, end): none, one or (split) two pieces; the latest kGaps are kept.
  Gap kept[2 * kGaps];
  int n = 0;
  for (int i = 0; i < gaps_; ++i) {
    const Gap& g = gap_[i];
    if (g.end <= start || g.start >= end) {
      kept[n++] = g;
      continue;
    }
    if (g.start < start) kept[n++] = Gap{g.start, start};
    if (end < g.end) kept[n++] = Gap{end, g.end};
  }
  const int first = std::max(0, n - kGaps);
  gaps_ = n - first;
  std::copy(kept + first, kept + n, gap_);
  horizon_ = std::max(horizon_, end);
}

}  // namespace scalatrace::sim
