// Value histograms: the lossy form of elastic values (docs/lossy.md).
#include "scalatrace/model/value_histogram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "scalatrace/model/event.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

/// Sentinels (MPI_PROC_NULL, MPI_ANY_SOURCE, MPI_ANY_TAG, ...) lie far below every real value:
/// a bin holding one never joins its neighbours, so a draw never lands between them.
bool is_sentinel(std::int64_t v) { return v <= kAnySource; }

/// Runs of at most this many values are added value by value; longer ones as one range bin.
constexpr std::uint64_t kExpandedRun = 256;

bool before(const ValueBin& a, const ValueBin& b) { return a.lo != b.lo ? a.lo < b.lo : a.hi < b.hi; }

/// The distance between two neighbouring bins (what joining them widens), saturated.
std::uint64_t gap(const ValueBin& a, const ValueBin& b) {
  if (b.lo <= a.hi) return 0;
  return static_cast<std::uint64_t>(b.lo) - static_cast<std::uint64_t>(a.hi);
}

}  // namespace

void ValueHistogram::add(std::int64_t value, std::uint64_t count) { add_bin(ValueBin{value, value, count}); }

void ValueHistogram::add(const ValueSeq& seq) {
  for (const auto& block : seq.blocks())
    for (const auto& run : block.runs) {
      const std::uint64_t n = run.count * block.repeat;
      if (n == 0) continue;
      if (run.count == 1 || run.stride == 0) {
        add(run.first, n);
        continue;
      }
      if (run.count <= kExpandedRun) {  // a short run (often chance, in random values): its values
        for (std::uint64_t i = 0; i < run.count; ++i)
          add(static_cast<std::int64_t>(static_cast<std::uint64_t>(run.first) +
                                        i * static_cast<std::uint64_t>(run.stride)),
              block.repeat);
        continue;
      }
      const auto last = static_cast<std::int64_t>(static_cast<std::uint64_t>(run.first) +
                                                  (run.count - 1) * static_cast<std::uint64_t>(run.stride));
      add_bin(ValueBin{std::min(run.first, last), std::max(run.first, last), n});
    }
}

void ValueHistogram::merge(const ValueHistogram& other) {
  for (const auto& b : other.bins_) add_bin(b);
}

void ValueHistogram::add_bin(const ValueBin& bin) {
  if (bin.count == 0) return;
  count_ += bin.count;
  const auto it = std::lower_bound(bins_.begin(), bins_.end(), bin, before);
  if (it != bins_.end() && it->lo == bin.lo && it->hi == bin.hi) {
    it->count += bin.count;
    return;
  }
  bins_.insert(it, bin);
  if (bins_.size() > kMaxBins) bound();
}

void ValueHistogram::bound() {
  while (bins_.size() > kMaxBins) {
    std::size_t best = bins_.size();
    std::uint64_t best_gap = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t i = 0; i + 1 < bins_.size(); ++i) {
      if (is_sentinel(bins_[i].hi) || is_sentinel(bins_[i + 1].lo)) continue;
      const std::uint64_t g = gap(bins_[i], bins_[i + 1]);
      if (g < best_gap) {
        best_gap = g;
        best = i;
      }
    }
    if (best == bins_.size()) return;  // only sentinels left to join (at most a handful)
    ValueBin& a = bins_[best];
    const ValueBin& b = bins_[best + 1];
    a.hi = std::max(a.hi, b.hi);
    a.count += b.count;
    bins_.erase(bins_.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

std::int64_t ValueHistogram::value_at(double u) const {
  if (bins_.empty()) throw UsageError("ValueHistogram::value_at: the histogram holds no values");
  u = std::clamp(u, 0.0, std::nextafter(1.0, 0.0));
  const double position = u * static_cast<double>(count_);
  double before_bin = 0;
  for (const auto& b : bins_) {
    const double c = static_cast<double>(b.count);
    if (position < before_bin + c || &b == &bins_.back()) {
      if (b.lo == b.hi) return b.lo;
      const double within = std::clamp((position - before_bin) / c, 0.0, 1.0);
      const double width =
          static_cast<double>(static_cast<std::uint64_t>(b.hi) - static_cast<std::uint64_t>(b.lo)) + 1.0;
      const auto offset = static_cast<std::uint64_t>(std::min(within * width, width - 1.0));
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(b.lo) + offset);
    }
    before_bin += c;
  }
  return bins_.back().hi;
}

std::int64_t ValueHistogram::value_at_position(std::uint64_t position) const {
  if (bins_.empty()) throw UsageError("ValueHistogram::value_at_position: the histogram holds no values");
  position %= count_;
  for (const auto& b : bins_) {
    if (position >= b.count) {
      position -= b.count;
      continue;
    }
    if (b.lo == b.hi) return b.lo;
    // The position-th of `count` values spread evenly over the range's width.
    const auto width =
        static_cast<unsigned __int128>(static_cast<std::uint64_t>(b.hi) - static_cast<std::uint64_t>(b.lo)) + 1;
    const auto offset = static_cast<std::uint64_t>((width * position + width / 2) / b.count);
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(b.lo) +
                                     std::min<std::uint64_t>(offset, static_cast<std::uint64_t>(width - 1)));
  }
  return bins_.back().hi;
}

double ValueHistogram::mean() const {
  if (count_ == 0) return 0.0;
  double sum = 0;
  for (const auto& b : bins_)
    sum += (static_cast<double>(b.lo) + static_cast<double>(b.hi)) / 2.0 * static_cast<double>(b.count);
  return sum / static_cast<double>(count_);
}

ValueHistogram ValueHistogram::from_bins(std::vector<ValueBin> bins) {
  if (bins.empty()) throw FormatError("value histogram without bins");
  if (bins.size() > kMaxBins)
    throw FormatError("value histogram with " + std::to_string(bins.size()) + " bins (at most " +
                      std::to_string(kMaxBins) + ")");
  ValueHistogram h;
  for (std::size_t i = 0; i < bins.size(); ++i) {
    const ValueBin& b = bins[i];
    if (b.lo > b.hi) throw FormatError("value histogram bin with lo > hi");
    if (b.count == 0) throw FormatError("value histogram bin with count 0");
    if (i > 0 && !before(bins[i - 1], b)) throw FormatError("value histogram bins out of order");
    if (h.count_ > std::numeric_limits<std::uint64_t>::max() - b.count)
      throw FormatError("value histogram count overflows");
    h.count_ += b.count;
  }
  h.bins_ = std::move(bins);
  return h;
}

}  // namespace scalatrace
