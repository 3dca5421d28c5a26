// Periodic groups of ranklist descriptors (see rank_periods.hpp).
#include "scalatrace/format/rank_periods.hpp"

namespace scalatrace {
namespace {

/// How many times the `period` descriptors at `first` repeat with a constant shift (>= 1).
std::size_t repeats_at(const std::vector<RankDescriptor>& ds, std::size_t first, std::size_t period,
                       std::int64_t stride) {
  std::size_t repeat = 1;
  while (first + (repeat + 1) * period <= ds.size()) {
    const std::int64_t shift = stride * static_cast<std::int64_t>(repeat);
    for (std::size_t m = 0; m < period; ++m) {
      const RankDescriptor& base = ds[first + m];
      const RankDescriptor& next = ds[first + repeat * period + m];
      if (next.dims != base.dims || next.start != base.start + shift) return repeat;
    }
    ++repeat;
  }
  return repeat;
}

}  // namespace

std::vector<DescriptorPeriod> find_descriptor_periods(const std::vector<RankDescriptor>& ds) {
  std::vector<DescriptorPeriod> out;
  std::size_t i = 0;
  while (i < ds.size()) {
    DescriptorPeriod best{i, 1, 1, 0};
    std::size_t best_saved = 0;
    for (std::size_t k = 1; k <= kMaxDescriptorPeriod && i + 2 * k <= ds.size(); ++k) {
      const std::int64_t stride = ds[i + k].start - ds[i].start;
      if (stride == 0) continue;
      const std::size_t repeat = repeats_at(ds, i, k, stride);
      const std::size_t saved = k * (repeat - 1);
      if (saved > best_saved) {
        best = DescriptorPeriod{i, k, repeat, stride};
        best_saved = saved;
      }
    }
    // A group's header (kind, repeat, stride) costs about as much as one small descriptor.
    if (best_saved < 2) best = DescriptorPeriod{i, 1, 1, 0};
    out.push_back(best);
    i += best.period * best.repeat;
  }
  return out;
}

void expand_descriptor_period(const std::vector<RankDescriptor>& first, std::size_t repeat, std::int64_t stride,
                              std::vector<RankDescriptor>& out) {
  for (std::size_t j = 0; j < repeat; ++j) {
    for (const RankDescriptor& d : first) {
      RankDescriptor shifted = d;
      shifted.start += stride * static_cast<std::int64_t>(j);
      out.push_back(std::move(shifted));
    }
  }
}

}  // namespace scalatrace
