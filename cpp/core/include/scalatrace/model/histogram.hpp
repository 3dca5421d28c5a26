#pragma once
// Timing histograms (thesis §2.3): count, sum, min, max, plus fixed logarithmic bins with
// per-bin count / min / max / sum. Bin scheme: see docs/algorithms.md ("Histograms").
// The number of non-empty bins is bounded (kMaxBins): when a value would create one more,
// neighbouring bins are combined (the layout coarsens by a factor of two, `coarsening()`),
// so outliers and long runs never make a histogram grow beyond a fixed size.
#include <cstdint>
#include <random>
#include <vector>

namespace scalatrace {

struct HistogramBin {
  std::uint32_t index = 0;  ///< bin number: bin_index(value) >> coarsening()
  std::uint64_t count = 0;
  std::uint64_t min = 0, max = 0;
  double sum = 0;
  bool operator==(const HistogramBin&) const = default;
};

class Histogram {
 public:
  /// sub_bins: bins per power of two (1, 2, 4, 8 or 16). Values are nanoseconds.
  explicit Histogram(std::uint32_t sub_bins = 4) : sub_bins_(sub_bins) {}
  /// Most non-empty bins a histogram keeps (beyond: the layout coarsens).
  static constexpr std::size_t kMaxBins = 8;
  /// Largest coarsening: every value in one bin (bin indices are < 1024).
  static constexpr std::uint32_t kMaxCoarsening = 10;
  /// Bin of `value` in the finest layout (coarsening 0).
  static std::uint32_t bin_index(std::uint64_t value, std::uint32_t sub_bins);

  void add(std::uint64_t value);
  void merge(const Histogram& other);
  std::uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  std::uint64_t min() const { return min_; }
  std::uint64_t max() const { return max_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }
  /// Estimated variance of the values: each bin's values spread uniformly over its [min, max]
  /// around the bin's mean, plus the spread of the bins' means; 0 when empty.
  double variance() const;
  /// Draws a value: a bin by its count, then uniformly within the bin's [min, max].
  std::uint64_t sample(std::mt19937_64& rng) const;
  /// The mean and a draw of the values left when `part`'s values are taken out of this
  /// histogram's (`part` must hold a subset of them, e.g. each rank's first occurrence: see
  /// EventNode::first_compute). Bin by bin, `part`'s counts and sums are subtracted; the bins'
  /// [min, max] stay as bounds. Falls back to mean() / sample() when nothing would be left or
  /// `part` does not fit this histogram's layout (other bins per octave, or finer bins).
  double mean_excluding(const Histogram& part) const;
  std::uint64_t sample_excluding(const Histogram& part, std::mt19937_64& rng) const;
  /// The value at fraction `u` (in [0, 1)) of the recorded values laid out bin by bin: the bin
  /// holding that fraction of the count, then a place inside it as sample() draws, around the
  /// bin's mean (u evenly spread over [0, 1) thus keeps every bin's mean). A draw that is a
  /// function of `u`: TimingMode::Spread feeds it stratified fractions.
  std::uint64_t at_fraction(double u) const;
  /// at_fraction() over the values left when `part`'s are taken out (as sample_excluding()).
  std::uint64_t at_fraction_excluding(const Histogram& part, double u) const;
  std::uint32_t sub_bins() const { return sub_bins_; }
  /// Each bin covers 2^coarsening() bins of the finest layout.
  std::uint32_t coarsening() const { return shift_; }
  const std::vector<HistogramBin>& bins() const { return bins_; }  ///< sorted by index, non-empty
  /// Value that half the recorded values are at most (estimated: the mean of the bin that
  /// holds the median); 0 when empty. Robust to a few outliers, unlike mean().
  double typical() const;
  /// Reader support: rebuilds from stored parts (validated by the caller).
  static Histogram from_parts(std::uint32_t sub_bins, std::uint64_t count, double sum, std::uint64_t min,
                              std::uint64_t max, std::vector<HistogramBin> bins, std::uint32_t coarsening = 0);
  bool operator==(const Histogram&) const = default;

 private:
  /// Combines neighbouring bins until at most kMaxBins remain (or up to `at_least`).
  void coarsen(std::uint32_t at_least = 0);

  std::uint32_t sub_bins_;
  std::uint32_t shift_ = 0;
  std::uint64_t count_ = 0;
  double sum_ = 0;
  std::uint64_t min_ = 0, max_ = 0;
  std::vector<HistogramBin> bins_;
};

}  // namespace scalatrace
