#pragma once
// Value histograms: the lossy form of an elastic value (ScalaTrace 2, thesis §5.2.1 and §5.2.6).
// Where a point-to-point parameter (peer, tag, byte count) does not compress losslessly, a
// lossy trace (SCALATRACE_LOSSY) keeps only how often each value occurred: a bounded list of
// bins, each a value range [lo, hi] with the number of occurrences in it (lo == hi: one exact
// value). Replay and simulation draw from it (docs/lossy.md).
#include <cstdint>
#include <vector>

#include "scalatrace/model/value_seq.hpp"

namespace scalatrace {

struct ValueBin {
  std::int64_t lo = 0, hi = 0;  ///< lo <= hi
  std::uint64_t count = 0;      ///< occurrences in [lo, hi], >= 1
  bool operator==(const ValueBin&) const = default;
};

class ValueHistogram {
 public:
  /// Most bins a histogram keeps: beyond, the two neighbouring bins closest in value are joined
  /// (sentinels such as MPI_PROC_NULL and MPI_ANY_SOURCE never join another bin).
  static constexpr std::size_t kMaxBins = 32;

  /// Adds `count` occurrences of `value`.
  void add(std::int64_t value, std::uint64_t count = 1);
  /// Adds every value of a sequence: a run of up to 256 values value by value, a longer run as
  /// one range bin (the cost depends on the sequence's stored form, not on its length).
  void add(const ValueSeq& seq);
  void merge(const ValueHistogram& other);
  std::uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  const std::vector<ValueBin>& bins() const { return bins_; }  ///< sorted by (lo, hi)
  /// The value at quantile position `u` in [0, 1): the bin that holds occurrence u * count()
  /// (in bin order), then the same relative position inside the bin's range. Uniform u gives
  /// draws that follow the histogram; evenly spread u (a low-discrepancy sequence) reproduce
  /// its counts closely.
  std::int64_t value_at(double u) const;
  /// The mean of the values (a range bin counts its midpoint); 0 when empty.
  double mean() const;
  /// The value of occurrence `position` (0 <= position < count()) when the occurrences are
  /// laid out in value order: the bin that holds it, then the same relative place inside the
  /// bin's range. Precondition: !empty().
  std::int64_t value_at_position(std::uint64_t position) const;
  /// The largest value (precondition: !empty()).
  std::int64_t max() const { return bins_.back().hi; }
  /// Reader support: validates (bins sorted, lo <= hi, counts >= 1, at most kMaxBins); throws
  /// FormatError naming the problem.
  static ValueHistogram from_bins(std::vector<ValueBin> bins);
  bool operator==(const ValueHistogram&) const = default;

 private:
  void add_bin(const ValueBin& bin);
  void bound();  ///< joins bins until at most kMaxBins remain
  std::vector<ValueBin> bins_;
  std::uint64_t count_ = 0;
};

}  // namespace scalatrace
