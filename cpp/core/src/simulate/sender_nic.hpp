#pragma once
// A sender's NIC in the simulator's LogGP network (not a public header): when it may start a
// message. See docs/simulator.md ("Network model").
#include <cstdint>

namespace scalatrace::sim {

/// When one rank's NIC is busy: its horizon (the end of its latest reservation; free from then
/// on) and the free gaps before the horizon, the latest kGaps of them (older free time counts as
/// busy). The engine processes senders in no global time order: a message it handles after a
/// later one of the same sender takes the earliest gap long enough for it at or after its ready
/// time, where a single horizon would hold it back until the later message's end. In time order
/// every gap ends no later than the next message is ready, so no gap is ever taken and a message
/// starts at max(ready, horizon), as with the horizon alone. One cache line per rank.
class alignas(64) SenderNic {
 public:
  static constexpr int kGaps = 3;

  /// The earliest start at or after `ready` at which the NIC is free for `busy` ns: a gap
  /// (for `busy` = 0, a time inside one), else the later of `ready` and the horizon.
  double earliest_start(double ready, double busy) const {
    if (ready >= horizon_ || gaps_ == 0) [[likely]]
      return ready < horizon_ ? horizon_ : ready;
    return start_in_gap(ready, busy);
  }

  /// The NIC is busy from `start` for `busy` ns (nothing for `busy` = 0: a message that takes
  /// no NIC time holds back no other). `start` may lie in a gap or overlap reservations (a
  /// route's link may delay a message past the gap its NIC offered); what it covers is busy.
  void reserve(double start, double busy) {
    if (busy <= 0.0) return;
    if (start >= horizon_) [[likely]] {
      if (start > horizon_) add_gap(horizon_, start);
      horizon_ = start + busy;
      return;
    }
    reserve_before_horizon(start, busy);
  }

  double horizon() const { return horizon_; }
  int gaps() const { return gaps_; }

 private:
  struct Gap {
    double start, end;  ///< free in [start, end)
  };
  /// earliest_start() when `ready` is before the horizon and gaps are kept.
  double start_in_gap(double ready, double busy) const;
  /// reserve() of time that starts before the horizon.
  void reserve_before_horizon(double start, double busy);
  /// Appends a gap after the others, dropping the oldest when kGaps are kept.
  void add_gap(double start, double end) {
    if (gaps_ == kGaps) {
      for (int i = 1; i < kGaps; ++i) gap_[i - 1] = gap_[i];
      --gaps_;
    }
    gap_[gaps_++] = Gap{start, end};
  }

  double horizon_ = 0;
  std::int32_t gaps_ = 0;
  Gap gap_[kGaps];  ///< disjoint, sorted by start, all ending at or before the horizon
};

}  // namespace scalatrace::sim
