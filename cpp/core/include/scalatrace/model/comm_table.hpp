#pragma once
// Communicators as recorded: a stable id per communicator (creation order on each rank) and
// its members as world ranks.
#include <cstdint>
#include <vector>

#include "scalatrace/model/rank_list.hpp"

namespace scalatrace {

struct CommEntry {
  std::int64_t id = 0;  ///< the value stored in Field::Comm / Field::NewComm
  RankList members;     ///< world ranks, in communicator rank order
  RankList holders;     ///< world ranks that hold this (id, members) communicator
};

/// Per rank: one entry per communicator id. Merged trace: several entries may share an id
/// (e.g. row communicators from Comm_split), told apart by holders.
struct CommTable {
  std::vector<CommEntry> entries;
  /// The entry with this id held by `rank`, or nullptr.
  const CommEntry* find(std::int64_t id, std::int64_t rank) const;
  /// Merges another table into this one (entries with equal id and members unite holders).
  void merge(const CommTable& other);
};

}  // namespace scalatrace
