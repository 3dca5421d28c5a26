#pragma once
// RankList: a compressed sequence of ranks (ScalaTrace paper §3, thesis §2.2), a union of
// multi-dimensional strided descriptors <dim start (count stride)...>. Used as a set (node
// participants, elastic-value owners: kept sorted) and as an ordered sequence (communicator
// members in communicator-rank order: kept in insertion order).
#include <cstdint>
#include <string>
#include <vector>

namespace scalatrace {

struct RankDescriptor {
  std::int64_t start = 0;
  /// (count, stride) per dimension, innermost first. Empty = the single rank `start`.
  std::vector<std::pair<std::int64_t, std::int64_t>> dims;
  std::int64_t size() const;
  bool operator==(const RankDescriptor&) const = default;
};

class RankList {
 public:
  RankList() = default;
  static RankList single(std::int64_t rank);
  static RankList range(std::int64_t first, std::int64_t count, std::int64_t stride = 1);
  static RankList from_sequence(const std::vector<std::int64_t>& ranks);

  /// Appends ranks in order (extends the last descriptor where the stride continues).
  void push_back(std::int64_t rank);
  /// Set union; both must be sets (sorted). Result is sorted and as compressed as the
  /// descriptors allow (adjacent equal-shaped descriptors fold into one more dimension).
  RankList unite(const RankList& other) const;
  bool contains(std::int64_t rank) const;
  std::int64_t size() const;
  bool empty() const { return descriptors_.empty(); }
  /// The i-th rank of the sequence (0 <= i < size()).
  std::int64_t at(std::int64_t i) const;
  /// Position of rank in the sequence, or -1.
  std::int64_t index_of(std::int64_t rank) const;
  std::vector<std::int64_t> to_vector() const;
  const std::vector<RankDescriptor>& descriptors() const { return descriptors_; }
  std::vector<RankDescriptor>& descriptors() { return descriptors_; }
  /// "<1 0 4 1>" style, one descriptor per <>; see docs/algorithms.md.
  std::string to_string() const;
  bool operator==(const RankList&) const = default;

 private:
  std::vector<RankDescriptor> descriptors_;
};

}  // namespace scalatrace
