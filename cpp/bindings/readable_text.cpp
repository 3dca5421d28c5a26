// Readable text of value sequences and rank lists (readable_text.hpp).
#include "readable_text.hpp"

#include <cstdint>
#include <vector>

using scalatrace::RankList;
using scalatrace::ValueSeq;

namespace {

/// first + stride * (count - 1), wrapping as the core's runs do.
std::int64_t last_of(std::int64_t first, std::int64_t stride, std::uint64_t count) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(first) +
                                   static_cast<std::uint64_t>(stride) * (count - 1));
}

std::string run_text(std::int64_t first, std::int64_t stride, std::uint64_t count) {
  if (count <= 1) return std::to_string(first);
  if (stride == 0) return std::to_string(first) + " (" + std::to_string(count) + " times)";
  const std::int64_t last = last_of(first, stride, count);
  if (count == 2) return std::to_string(first) + ", " + std::to_string(last);
  return std::to_string(first) + " to " + std::to_string(last) + " step " + std::to_string(stride);
}

/// Items joined by ", ", cut after `max_items` with "... (total unit)".
std::string joined(const std::vector<std::string>& items, std::size_t max_items, std::uint64_t total,
                   const char* unit) {
  std::string s;
  for (std::size_t i = 0; i < items.size() && i < max_items; ++i) {
    if (i) s += ", ";
    s += items[i];
  }
  if (items.size() > max_items) s += ", ... (" + std::to_string(total) + " " + unit + ")";
  return s;
}

}  // namespace

std::string readable_values(const ValueSeq& seq, std::size_t max_items) {
  if (seq.size() == 0) return "no values";
  std::vector<std::string> items;
  for (const auto& block : seq.blocks()) {
    if (items.size() > max_items) break;
    std::vector<std::string> runs;
    for (const auto& r : block.runs) runs.push_back(run_text(r.first, r.stride, r.count));
    if (block.repeat > 1) {
      items.push_back("(" + joined(runs, max_items, 0, "") + ") " + std::to_string(block.repeat) + " times");
    } else {
      items.insert(items.end(), runs.begin(), runs.end());
    }
  }
  return joined(items, max_items, seq.size(), "values");
}

std::string readable_ranks(const RankList& ranks, std::size_t max_items) {
  if (ranks.empty()) return "no ranks";
  std::vector<std::string> items;
  if (ranks.size() > 65536) {
    for (const auto& d : ranks.descriptors()) {
      if (d.dims.size() == 1) {
        items.push_back(d.dims[0].second == 1
                            ? std::to_string(d.start) + "-" + std::to_string(last_of(d.start, 1, d.dims[0].first))
                            : run_text(d.start, d.dims[0].second, static_cast<std::uint64_t>(d.dims[0].first)));
      } else {
        std::string grid = "grid from " + std::to_string(d.start) + ":";
        for (auto it = d.dims.rbegin(); it != d.dims.rend(); ++it)
          grid += (it == d.dims.rbegin() ? " " : ", ") + std::to_string(it->first) + " x stride " +
                  std::to_string(it->second);
        items.push_back(grid);
      }
    }
    return joined(items, max_items, static_cast<std::uint64_t>(ranks.size()), "ranks");
  }
  const std::vector<std::int64_t> v = ranks.to_vector();  // in the list's order (communicators')
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    items.push_back(j == i ? std::to_string(v[i])
                           : std::to_string(v[i]) + (j == i + 1 ? ", " : "-") + std::to_string(v[j]));
    i = j + 1;
  }
  return joined(items, max_items, v.size(), "ranks");
}
