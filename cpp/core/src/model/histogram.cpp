// Timing histograms (thesis §2.3). Bin scheme (docs/algorithms.md, "Histograms"):
// with s = sub_bins (a power of two, 1..16) and b = log2(s):
//   values v < s get their own bin, index v;
//   a value v >= s with e = floor(log2 v) falls into one of s equal-width sub-bins of the
//   octave [2^e, 2^(e+1)): index = s + (e - b) * s + ((v >> (e - b)) - s).
// So bins are exact for small values and have a relative width of at most 1/s above; the
// index is monotone in v and at most s + (63 - b) * s + s - 1 (< 1024).
// Bounded size: a histogram keeps at most kMaxBins non-empty bins. When one more would appear,
// the layout coarsens: bin k becomes bin k >> 1 (two neighbours combine), repeatedly. The
// coarsening of a histogram is the smallest that fits all its values in kMaxBins bins, so
// adding values one by one and merging histograms give the same result in any order.
#include "scalatrace/model/histogram.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

#include "model/histogram_layout.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {

namespace {
inline std::uint32_t bin_of(std::uint64_t value, std::uint32_t sub_bins) {
  if (value < sub_bins) return static_cast<std::uint32_t>(value);
  const unsigned b = static_cast<unsigned>(std::countr_zero(sub_bins));
  const unsigned e = static_cast<unsigned>(std::bit_width(value) - 1);
  const std::uint64_t sub = (value >> (e - b)) - sub_bins;
  return static_cast<std::uint32_t>(sub_bins + (e - b) * sub_bins + sub);
}
void check_sub_bins(std::uint32_t sub_bins) {
  if (sub_bins == 0 || sub_bins > 16 || !std::has_single_bit(sub_bins))
    throw UsageError("histogram sub_bins must be 1, 2, 4, 8 or 16 (got " + std::to_string(sub_bins) + ")");
}
}  // namespace

std::uint32_t Histogram::bin_index(std::uint64_t value, std::uint32_t sub_bins) {
  check_sub_bins(sub_bins);
  return bin_of(value, sub_bins);
}

void Histogram::coarsen(std::uint32_t at_least) {
  while (shift_ < kMaxCoarsening && (shift_ < at_least || bins_.size() > kMaxBins)) {
    ++shift_;
    bins_ = halve_bin_layout(bins_);
  }
}

double Histogram::variance() const {
  if (count_ == 0) return 0.0;
  const double m = mean();
  double squares = 0;
  for (const auto& b : bins_) {
    const auto n = static_cast<double>(b.count);
    const double width = static_cast<double>(b.max - b.min);
    const double off = b.sum / n - m;
    squares += n * (width * width / 12.0 + off * off);
  }
  return squares / static_cast<double>(count_);
}

double Histogram::typical() const {
  if (count_ == 0) return 0.0;
  std::uint64_t seen = 0;
  for (const auto& b : bins_) {
    seen += b.count;
    if (2 * seen >= count_) return b.sum / static_cast<double>(b.count);
  }
  return mean();
}

void Histogram::add(std::uint64_t value) {
  if (count_ == 0) check_sub_bins(sub_bins_);
  const std::uint32_t idx = bin_of(value, sub_bins_) >> shift_;
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  ++count_;
  sum_ += static_cast<double>(value);
  // Bins are sorted by index and usually contiguous (one call site's timings cover a range):
  // try the position the index would have in a contiguous run first.
  auto it = bins_.end();
  if (!bins_.empty() && bins_.front().index <= idx) {
    const std::size_t guess = idx - bins_.front().index;
    if (guess < bins_.size() && bins_[guess].index == idx)
      it = bins_.begin() + static_cast<std::ptrdiff_t>(guess);
    else if (bins_.back().index < idx)
      it = bins_.end();
    else
      it = std::lower_bound(bins_.begin(), bins_.end(), idx,
                            [](const HistogramBin& b, std::uint32_t i) { return b.index < i; });
  } else {
    it = bins_.begin();
  }
  if (it != bins_.end() && it->index == idx) {
    it->count += 1;
    it->min = std::min(it->min, value);
    it->max = std::max(it->max, value);
    it->sum += static_cast<double>(value);
    return;
  }
  bins_.insert(it, HistogramBin{idx, 1, value, value, static_cast<double>(value)});
  if (bins_.size() > kMaxBins) coarsen();
}

void Histogram::merge(const Histogram& other) {
  if (other.count_ == 0) return;
  if (count_ == 0) {
    *this = other;
    return;
  }
  if (other.sub_bins_ != sub_bins_)
    throw UsageError("cannot merge histograms with " + std::to_string(sub_bins_) + " and " +
                     std::to_string(other.sub_bins_) + " bins per octave");
  if (other.shift_ > shift_) coarsen(other.shift_);
  if (other.shift_ < shift_) {
    Histogram coarser = other;
    coarser.coarsen(shift_);
    merge(coarser);
    return;
  }
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  std::vector<HistogramBin> out;
  out.reserve(bins_.size() + other.bins_.size());
  auto a = bins_.begin();
  auto b = other.bins_.begin();
  while (a != bins_.end() || b != other.bins_.end()) {
    if (b == other.bins_.end() || (a != bins_.end() && a->index < b->index)) {
      out.push_back(*a++);
    } else if (a == bins_.end() || b->index < a->index) {
      out.push_back(*b++);
    } else {
      HistogramBin m = *a;
      m.count += b->count;
      m.min = std::min(m.min, b->min);
      m.max = std::max(m.max, b->max);
      m.sum += b->sum;
      out.push_back(m);
      ++a;
      ++b;
    }
  }
  bins_ = std::move(out);
  if (bins_.size() > kMaxBins) coarsen();
}

namespace {
/// A draw from one bin: uniform around the bin's mean, as wide as [min, max] allows on both
/// sides. Draws keep the bin's mean (a bin of values near its min and one outlier near its max
/// has a mean near the min, and so do its draws) and stay inside the range seen in the bin.
/// `offset` in [-1, 1] places the value between the widest symmetric bounds.
std::uint64_t value_in_bin(std::uint64_t count, double sum, std::uint64_t min, std::uint64_t max, double offset) {
  if (max <= min || count == 0) return min;
  const double mean = std::clamp(sum / static_cast<double>(count), static_cast<double>(min), static_cast<double>(max));
  const double half = std::min(mean - static_cast<double>(min), static_cast<double>(max) - mean);
  const double v = mean + half * std::clamp(offset, -1.0, 1.0);
  return std::clamp(static_cast<std::uint64_t>(std::llround(v)), min, max);
}

std::uint64_t draw_in_bin(std::uint64_t count, double sum, std::uint64_t min, std::uint64_t max, std::mt19937_64& rng) {
  if (max <= min || count == 0) return min;
  return value_in_bin(count, sum, min, max, std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
}

/// The value at fraction `u` of `total` values whose bin i holds counts(i) of them summing to
/// sums(i) (the bins' [min, max] from `bins`); `fallback` if the counts do not add up.
template <class Counts, class Sums>
std::uint64_t value_at_fraction(const std::vector<HistogramBin>& bins, std::uint64_t total, Counts counts, Sums sums,
                                double u, std::uint64_t fallback) {
  const double at = std::clamp(u, 0.0, 1.0) * static_cast<double>(total);
  double before = 0;
  for (std::size_t i = 0; i < bins.size(); ++i) {
    const auto c = static_cast<double>(counts(i));
    if (c > 0 && at < before + c)
      return value_in_bin(counts(i), sums(i), bins[i].min, bins[i].max, 2.0 * (at - before) / c - 1.0);
    before += c;
  }
  return fallback;
}

/// Counts and sums per bin of `all` once `part`'s values are taken out (no allocation: a
/// histogram has at most kMaxBins bins). `valid` is false when `part` does not fit `all`'s
/// layout or nothing would be left.
struct RemainingBins {
  bool valid = false;
  std::uint64_t count = 0;
  double sum = 0;
  std::array<std::uint64_t, Histogram::kMaxBins> counts{};
  std::array<double, Histogram::kMaxBins> sums{};
};

RemainingBins remaining_bins(const Histogram& all, const Histogram& part) {
  RemainingBins r;
  const auto& bins = all.bins();
  if (part.count() == 0 || part.count() >= all.count() || part.sub_bins() != all.sub_bins() ||
      part.coarsening() > all.coarsening() || bins.size() > Histogram::kMaxBins)
    return r;
  for (std::size_t i = 0; i < bins.size(); ++i) {
    r.counts[i] = bins[i].count;
    r.sums[i] = bins[i].sum;
  }
  const std::uint32_t shift = all.coarsening() - part.coarsening();
  for (const auto& p : part.bins()) {
    const std::uint32_t index = p.index >> shift;
    auto it = std::lower_bound(bins.begin(), bins.end(), index,
                               [](const HistogramBin& b, std::uint32_t i) { return b.index < i; });
    if (it == bins.end() || it->index != index) return r;  // `part` is no subset of `all`
    const auto i = static_cast<std::size_t>(it - bins.begin());
    const std::uint64_t taken = std::min(p.count, r.counts[i]);
    r.counts[i] -= taken;
    r.sums[i] = r.counts[i] == 0 ? 0.0 : std::max(0.0, r.sums[i] - p.sum);
  }
  for (std::size_t i = 0; i < bins.size(); ++i) {
    r.count += r.counts[i];
    r.sum += r.sums[i];
  }
  r.valid = r.count > 0;
  return r;
}
}  // namespace

std::uint64_t Histogram::sample(std::mt19937_64& rng) const {
  if (count_ == 0) return 0;
  std::uint64_t k = std::uniform_int_distribution<std::uint64_t>(0, count_ - 1)(rng);
  for (const auto& b : bins_) {
    if (k < b.count) return draw_in_bin(b.count, b.sum, b.min, b.max, rng);
    k -= b.count;
  }
  return max_;  // bins inconsistent with count_: fall back to a plausible value
}

double Histogram::mean_excluding(const Histogram& part) const {
  const RemainingBins left = remaining_bins(*this, part);
  return left.valid ? left.sum / static_cast<double>(left.count) : mean();
}

std::uint64_t Histogram::sample_excluding(const Histogram& part, std::mt19937_64& rng) const {
  const RemainingBins left = remaining_bins(*this, part);
  if (!left.valid) return sample(rng);
  std::uint64_t k = std::uniform_int_distribution<std::uint64_t>(0, left.count - 1)(rng);
  for (std::size_t i = 0; i < bins_.size(); ++i) {
    if (k < left.counts[i]) return draw_in_bin(left.counts[i], left.sums[i], bins_[i].min, bins_[i].max, rng);
    k -= left.counts[i];
  }
  return max_;
}

std::uint64_t Histogram::at_fraction(double u) const {
  if (count_ == 0) return 0;
  return value_at_fraction(
      bins_, count_, [this](std::size_t i) { return bins_[i].count; }, [this](std::size_t i) { return bins_[i].sum; },
      u, max_);
}

std::uint64_t Histogram::at_fraction_excluding(const Histogram& part, double u) const {
  const RemainingBins left = remaining_bins(*this, part);
  if (!left.valid) return at_fraction(u);
  return value_at_fraction(
      bins_, left.count, [&left](std::size_t i) { return left.counts[i]; },
      [&left](std::size_t i) { return left.sums[i]; }, u, max_);
}

Histogram Histogram::from_parts(std::uint32_t sub_bins, std::uint64_t count, double sum, std::uint64_t min,
                                std::uint64_t max, std::vector<HistogramBin> bins, std::uint32_t coarsening) {
  Histogram h(sub_bins);
  h.shift_ = coarsening;
  h.count_ = count;
  h.sum_ = sum;
  h.min_ = min;
  h.max_ = max;
  h.bins_ = std::move(bins);
  return h;
}

}  // namespace scalatrace
