#pragma once
// Elastic data elements (thesis §5.2.1): a parameter's values as (value vector, ranklist)
// pairs. Within one rank the value vector is indexed by occurrence of the owning node; across
// ranks, the pair whose ranklist contains the rank applies.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "scalatrace/model/rank_list.hpp"
#include "scalatrace/model/value_seq.hpp"

namespace scalatrace {

/// Sequence of integer vectors (array parameters), run-length compressed over occurrences.
class ArraySeq {
 public:
  struct Run {
    std::vector<std::int64_t> values;
    std::uint64_t count = 0;
    bool operator==(const Run&) const = default;
  };
  void append(const std::vector<std::int64_t>& values);
  void append(const ArraySeq& other);
  std::uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::vector<std::int64_t>& at(std::uint64_t i) const;
  const std::vector<Run>& runs() const { return runs_; }
  static ArraySeq from_runs(std::vector<Run> runs);
  /// `n` occurrences without an array (empty if n is 0).
  static ArraySeq empties(std::uint64_t n);
  bool operator==(const ArraySeq& o) const { return runs_ == o.runs_; }

 private:
  std::vector<Run> runs_;
  std::uint64_t size_ = 0;
};

template <class Seq>
struct Elastic {
  std::vector<std::pair<Seq, RankList>> alternatives;

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  /// The index of the alternative that applies to `rank` (per-rank traces: the only one), or
  /// npos.
  std::size_t index_for_rank(std::int64_t rank) const {
    if (alternatives.size() == 1 && alternatives[0].second.empty()) return 0;
    for (std::size_t i = 0; i < alternatives.size(); ++i)
      if (alternatives[i].second.contains(rank)) return i;
    return npos;
  }
  /// The value vector that applies to `rank`, or nullptr.
  const Seq* for_rank(std::int64_t rank) const {
    const std::size_t i = index_for_rank(rank);
    return i == npos ? nullptr : &alternatives[i].first;
  }
  /// Whether `other`'s alternatives are for the same ranklists, in the same order (the same
  /// alternative applies to every rank in both).
  template <class Other>
  bool same_ranklists(const Elastic<Other>& other) const {
    if (alternatives.size() != other.alternatives.size()) return false;
    for (std::size_t i = 0; i < alternatives.size(); ++i)
      if (!(alternatives[i].second == other.alternatives[i].second)) return false;
    return true;
  }
  bool empty() const { return alternatives.empty(); }
  bool operator==(const Elastic&) const = default;
};

using ElasticValue = Elastic<ValueSeq>;
using ElasticArray = Elastic<ArraySeq>;

}  // namespace scalatrace
