#include "scalatrace/model/comm_table.hpp"

#include <map>
#include <string>
#include <utility>

namespace scalatrace {

const CommEntry* CommTable::find(std::int64_t id, std::int64_t rank) const {
  const CommEntry* fallback = nullptr;
  for (const auto& e : entries) {
    if (e.id != id) continue;
    if (e.holders.empty()) {
      fallback = &e;  // per-rank table: the recording rank holds every entry
      continue;
    }
    if (e.holders.contains(rank)) return &e;
  }
  return fallback;
}

void CommTable::merge(const CommTable& other) {
  // Entries are keyed by (id, members); members compare by their descriptor form, which is
  // canonical for a given member sequence built by RankList::from_sequence / push_back.
  std::map<std::pair<std::int64_t, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < entries.size(); ++i)
    index.emplace(std::make_pair(entries[i].id, entries[i].members.to_string()), i);
  for (const auto& e : other.entries) {
    auto key = std::make_pair(e.id, e.members.to_string());
    auto it = index.find(key);
    if (it != index.end() && entries[it->second].members == e.members) {
      auto& mine = entries[it->second];
      mine.holders = mine.holders.unite(e.holders);
    } else {
      index.emplace(std::move(key), entries.size());
      entries.push_back(e);
    }
  }
}

}  // namespace scalatrace
