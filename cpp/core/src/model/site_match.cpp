#include "scalatrace/model/site_match.hpp"

#include <algorithm>

namespace scalatrace {

namespace {

/// The innermost `n` frames of `frames` (all of them if there are fewer).
std::vector<Frame> innermost(const std::vector<Frame>& frames, std::size_t n) {
  return {frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(std::min(n, frames.size()))};
}

bool same_innermost(const std::vector<Frame>& a, const std::vector<Frame>& b, std::size_t n) {
  const std::size_t la = std::min(n, a.size()), lb = std::min(n, b.size());
  return la == lb && std::equal(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(la), b.begin());
}

}  // namespace

std::uint32_t SiteClasses::of(std::uint32_t id) {
  if (frames_ == 0 || id >= table_->sites.size()) return id;
  while (class_of_.size() <= id) {
    const auto next = static_cast<std::uint32_t>(class_of_.size());
    const std::vector<Frame>& frames = table_->sites[next].frames;
    const std::uint64_t h = signature_hash(innermost(frames, frames_));
    std::uint32_t cls = next;
    auto [lo, hi] = classes_.equal_range(h);
    for (auto it = lo; it != hi; ++it)
      if (same_innermost(table_->sites[it->second].frames, frames, frames_)) {
        cls = it->second;
        break;
      }
    if (cls == next) classes_.emplace(h, next);
    class_of_.push_back(cls);
  }
  return class_of_[id];
}

std::vector<std::uint32_t> distinct_sites(const ValueSeq& seq, std::size_t nsites) {
  std::vector<std::uint32_t> out;
  for (const auto& block : seq.blocks())
    for (const auto& run : block.runs) {
      const std::uint64_t n =
          run.stride == 0 ? std::min<std::uint64_t>(run.count, 1) : std::min<std::uint64_t>(run.count, nsites + 1);
      auto v = static_cast<std::uint64_t>(run.first);
      for (std::uint64_t i = 0; i < n; ++i, v += static_cast<std::uint64_t>(run.stride)) {
        const auto id = static_cast<std::uint32_t>(v);
        if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
      }
    }
  return out;
}

std::vector<std::uint32_t> occurrence_sites(const EventNode& e, std::size_t nsites) {
  if (e.site_ids.empty()) return {e.site};
  std::vector<std::uint32_t> out;
  for (const auto& [seq, ranks] : e.site_ids.alternatives)
    for (std::uint32_t site : distinct_sites(seq, nsites))
      if (std::find(out.begin(), out.end(), site) == out.end()) out.push_back(site);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace scalatrace
