#pragma once
// One step of a histogram's layout coarsening, shared by Histogram::coarsen (beyond kMaxBins)
// and the .sct writer's stored-timing coarsening (format/sct_writer.cpp).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "scalatrace/model/histogram.hpp"

namespace scalatrace {

/// `bins` in the layout one coarsening step coarser: neighbouring bins (index >> 1 equal)
/// combined; count, sum, min and max of the whole unchanged.
inline std::vector<HistogramBin> halve_bin_layout(const std::vector<HistogramBin>& bins) {
  std::vector<HistogramBin> out;
  out.reserve(bins.size());
  for (const auto& b : bins) {
    const std::uint32_t index = b.index >> 1;
    if (!out.empty() && out.back().index == index) {
      HistogramBin& m = out.back();
      m.count += b.count;
      m.min = std::min(m.min, b.min);
      m.max = std::max(m.max, b.max);
      m.sum += b.sum;
    } else {
      out.push_back(b);
      out.back().index = index;
    }
  }
  return out;
}

}  // namespace scalatrace
