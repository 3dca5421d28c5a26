// LossyOccurrences: the ranks' occurrence counts of lossy event nodes (docs/lossy.md).
#include "scalatrace/read/lossy_occurrences.hpp"

#include "scalatrace/read/cursor.hpp"

namespace scalatrace {

LossyOccurrences::LossyOccurrences(const Trace& trace) {
  const auto ranks = static_cast<std::size_t>(trace.nranks);
  for (std::int64_t r = 0; r < trace.nranks; ++r) {
    Cursor cursor(trace, r, TimingMode::None);
    cursor.draw_lossy_values(0);  // the values do not matter here, only the occurrences
    EventView e;
    while (cursor.next(e)) {
      const Node* n = cursor.last_node();
      if (n == nullptr || !n->event || n->event->lossy.empty()) continue;
      auto& counts = offsets_[n->event.get()];
      if (counts.empty()) counts.assign(ranks + 1, 0);
      ++counts[static_cast<std::size_t>(r) + 1];
    }
  }
  for (auto& [node, counts] : offsets_)
    for (std::size_t i = 1; i < counts.size(); ++i) counts[i] += counts[i - 1];
}

std::optional<std::uint64_t> LossyOccurrences::before(const EventNode* node, std::int64_t rank) const {
  const auto it = offsets_.find(node);
  if (it == offsets_.end() || rank < 0 || static_cast<std::size_t>(rank) >= it->second.size()) return std::nullopt;
  return it->second[static_cast<std::size_t>(rank)];
}

}  // namespace scalatrace
