// LossyOccurrences: the ranks' occurrence counts of lossy event nodes (docs/lossy.md).
#include "scalatrace/read/lossy_occurrences.hpp"

#include "scalatrace/read/cursor.hpp"

namespace scalatrace {

LossyOccurrences::LossyOccurrences(const Trace& trace) {
  for (std::int64_t r = 0; r < trace.nranks; ++r) {
    Cursor cursor(trace, r, TimingMode::None);
    cursor.draw_lossy_values(0);  // the values do not matter here, only the occurrences
    EventView e;
    while (cursor.next(e)) {
      const Node* n = cursor.last_node();
      if (n == nullptr || !n->event || n->event->lossy.empty()) continue;
      auto& pairs = offsets_[n->event.get()];
      if (pairs.empty() || pairs[pairs.size() - 2] != static_cast<std::uint64_t>(r)) {
        pairs.push_back(static_cast<std::uint64_t>(r));
        pairs.push_back(0);
      }
      ++pairs.back();  // the rank's count for now, turned into the ranks-below sum at the end
    }
  }
  for (auto& [node, pairs] : offsets_) {
    std::uint64_t below = 0;
    for (std::size_t i = 1; i < pairs.size(); i += 2) {
      const std::uint64_t count = pairs[i];
      pairs[i] = below;
      below += count;
    }
  }
}

std::optional<std::uint64_t> LossyOccurrences::before(const EventNode* node, std::int64_t rank) const {
  const auto it = offsets_.find(node);
  if (it == offsets_.end() || rank < 0) return std::nullopt;
  const auto& pairs = it->second;
  // Binary search over the ranks (even positions).
  std::size_t lo = 0, hi = pairs.size() / 2;
  while (lo < hi) {
    const std::size_t mid = (lo + hi) / 2;
    if (pairs[2 * mid] < static_cast<std::uint64_t>(rank))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == pairs.size() / 2 || pairs[2 * lo] != static_cast<std::uint64_t>(rank)) return std::nullopt;
  return pairs[2 * lo + 1];
}

}  // namespace scalatrace
