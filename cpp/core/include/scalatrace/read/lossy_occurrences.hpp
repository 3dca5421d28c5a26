#pragma once
// LossyOccurrences: how many occurrences of each lossy event node the ranks before a rank have
// (docs/lossy.md, "Draws"). With it, a cursor numbers a node's occurrences over all ranks
// contiguously, so that the draws of all ranks together are exactly the node's recorded values.
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "scalatrace/model/trace.hpp"

namespace scalatrace {

class LossyOccurrences {
 public:
  /// Walks every rank's events once (cost: the trace's events; memory: two numbers per rank
  /// that has occurrences of a lossy node, per such node).
  explicit LossyOccurrences(const Trace& trace);
  /// Occurrences of `node` on the ranks below `rank`, or nullopt for a node that is not lossy.
  std::optional<std::uint64_t> before(const EventNode* node, std::int64_t rank) const;

 private:
  /// Per lossy node, for each rank with occurrences of it in ascending order: the rank, then the
  /// occurrences on the ranks below it (pairs laid out flat).
  std::unordered_map<const EventNode*, std::vector<std::uint64_t>> offsets_;
};

}  // namespace scalatrace
