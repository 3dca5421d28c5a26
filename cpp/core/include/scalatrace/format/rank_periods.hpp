#pragma once
// Periodic groups of ranklist descriptors, the form in which the .sct format (version 3) stores
// ranklists (docs/format.md, "Ranklist"). A set that unites several boundary classes of a 3D
// grid (e.g. every rank on a face) is, in ascending order, the same few descriptors once per
// plane: written as one group (the descriptors of the first plane, a repeat count and the
// stride between planes), its size no longer depends on the grid's side. In memory the
// ranklist keeps its descriptors; groups exist only in the file.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "scalatrace/model/rank_list.hpp"

namespace scalatrace {

/// `period` descriptors starting at `first`, repeated `repeat` times, each repetition's
/// starts shifted by `stride` from the previous one's (same dimensions). repeat == 1: the
/// descriptors as they are (period 1).
struct DescriptorPeriod {
  std::size_t first = 0;
  std::size_t period = 1;
  std::size_t repeat = 1;
  std::int64_t stride = 0;
  bool operator==(const DescriptorPeriod&) const = default;
};

/// Longest period searched for.
inline constexpr std::size_t kMaxDescriptorPeriod = 8;

/// Covers `descriptors` in order with periods, greedily from the front: at each position the
/// period that saves the most descriptors (repeat >= 2), else one plain descriptor.
std::vector<DescriptorPeriod> find_descriptor_periods(const std::vector<RankDescriptor>& descriptors);

/// The descriptors a group stands for: `first` (one period's descriptors) repeated `repeat`
/// times with starts shifted by `stride` each time, appended to `out` in order.
void expand_descriptor_period(const std::vector<RankDescriptor>& first, std::size_t repeat, std::int64_t stride,
                              std::vector<RankDescriptor>& out);

}  // namespace scalatrace
