// The .sct reader's value decoders: ranklists (descriptors and groups), value and array
// sequences, histograms, each checked as it is read (sct_codec.hpp; docs/format.md, "Payload:
// sections"). The sections and the tables that refer to these are read in sct_reader.cpp.
#include <algorithm>
#include <array>
#include <limits>
#include <span>

#include "format/scale_basis.hpp"
#include "format/sct_codec.hpp"
#include "model/value_arith.hpp"
#include "scalatrace/format/rank_periods.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace::sct {
namespace {

/// Lowest and highest rank of a descriptor.
std::pair<std::int64_t, std::int64_t> descriptor_range(const RankDescriptor& d) {
  std::int64_t lo = d.start, hi = d.start;
  for (auto [c, s] : d.dims) (s > 0 ? hi : lo) += (c - 1) * s;
  return {lo, hi};
}

/// A ranklist count: `uv` before version 5, then scaled against its dimension's extent.
std::int64_t get_count(SectionReader& r, std::int64_t stride, std::uint32_t version,
                       std::span<const std::int64_t> basis, const char* what) {
  if (version < 5) {
    const std::uint64_t c = r.uv();
    if (c > static_cast<std::uint64_t>(kMaxRanks)) r.fail(std::string(what) + " " + std::to_string(c));
    return static_cast<std::int64_t>(c);
  }
  std::array<std::int64_t, 2> extents{};
  const std::int64_t c = get_scaled(r, scale_basis::count_basis(stride, basis, extents));
  if (c < 0 || c > kMaxRanks) r.fail(std::string(what) + " " + std::to_string(c));
  return c;
}

/// The dimensions of one descriptor (after its start and dimension count), checked: counts
/// >= 2, non-zero strides, nested strides with two or more dims, bounded size and span. Each
/// dimension is `uv count, sv stride` before version 5, then a scaled stride and count.
RankDescriptor get_descriptor_dims(SectionReader& r, std::int64_t start, std::size_t nd, std::uint32_t version,
                                   std::span<const std::int64_t> basis) {
  if (nd > kMaxDims) r.fail("ranklist descriptor with " + std::to_string(nd) + " dimensions");
  RankDescriptor d;
  d.start = start;
  std::int64_t size = 1, lo = start, hi = start, span = 0;
  for (std::size_t k = 0; k < nd; ++k) {
    std::int64_t c = 0, s = 0;
    if (version < 5) {
      c = get_count(r, 0, version, basis, "ranklist dimension count");
      s = r.sv();
    } else {
      s = get_scaled(r, basis);
      c = get_count(r, s, version, basis, "ranklist dimension count");
    }
    if (c < 2) r.fail("ranklist dimension count " + std::to_string(c));
    if (s == 0 || s > kMaxRanks || s < -kMaxRanks) r.fail("ranklist stride " + std::to_string(s));
    if (nd > 1 && (s <= 0 || (k > 0 && s <= span)))
      r.fail("ranklist descriptor dimensions not nested (stride " + std::to_string(s) + ")");
    if (size > kMaxRanks / c) r.fail("ranklist descriptor too large");
    size *= c;
    span += (c - 1) * s;
    if (s > 0)
      hi += (c - 1) * s;
    else
      lo += (c - 1) * s;
    if (hi > kMaxRanks || lo < -kMaxRanks) r.fail("ranklist rank out of range");
    d.dims.emplace_back(c, s);
  }
  return d;
}

/// One array value: version 6 (put_array_values) or before (`uv nvalues`, the values). Values
/// written as progressions are charged to the expansion budget.
std::vector<std::int64_t> get_array_values(SectionReader& r, std::uint32_t version, std::uint64_t& budget) {
  std::vector<std::int64_t> values;
  if (version < 6) {
    std::size_t nv = r.count("array value");
    values.reserve(nv);
    for (std::size_t k = 0; k < nv; ++k) values.push_back(r.sv());
    return values;
  }
  const std::uint64_t code = r.uv();
  const std::uint64_t n = code / 2;
  if ((code & 1) == 0) {
    r.bound(n, "array value", 1);
    values.reserve(static_cast<std::size_t>(n));
    for (std::uint64_t k = 0; k < n; ++k) values.push_back(r.sv());
    return values;
  }
  if (n > budget) r.fail("implausible expansion of an array value (" + std::to_string(n) + " values)");
  budget -= n;
  values.reserve(static_cast<std::size_t>(n));
  const std::size_t parts = r.count("array progression", 3);
  for (std::size_t p = 0; p < parts; ++p) {
    const std::int64_t first = r.sv(), stride = r.sv();
    const std::uint64_t count = r.uv();
    if (count == 0 || count > n - values.size())
      r.fail("array progression of " + std::to_string(count) + " values in an array of " + std::to_string(n));
    for (std::uint64_t i = 0; i < count; ++i)
      values.push_back(value_arith::wrap_add(first, value_arith::wrap_mul(stride, i)));
  }
  if (values.size() != n)
    r.fail("array progressions hold " + std::to_string(values.size()) + " of " + std::to_string(n) + " values");
  return values;
}

}  // namespace

/// A rank number: `sv` before version 5, then scaled against the basis.
std::int64_t get_rank_number(SectionReader& r, std::uint32_t version, std::span<const std::int64_t> basis) {
  return version < 5 ? r.sv() : get_scaled(r, basis);
}

/// A ranklist. Version 2 files hold descriptors only (`sv start, uv ndims, dims`); version 3
/// items are descriptors (`sv start, uv 2*ndims, dims`) or groups (`sv stride, uv 2*k+1, uv
/// repeat, k descriptors`), expanded here; version 5 writes the rank numbers and counts
/// scaled against `basis`. Every resulting descriptor lies in [0, nranks); descriptors made by
/// expanding groups are charged to `budget` (bounded by the file's size).
RankList get_ranks(SectionReader& r, std::int64_t nranks, std::uint32_t version, std::uint64_t& budget,
                   std::span<const std::int64_t> basis) {
  RankList rl;
  std::size_t n = r.count("ranklist descriptor", 2);
  if (n == 0) r.fail("empty ranklist in the ranklist table");
  auto& ds = rl.descriptors();
  ds.reserve(n);
  std::int64_t total = 0;
  auto add = [&](RankDescriptor d) {
    const auto [lo, hi] = descriptor_range(d);
    if (lo < 0 || (nranks > 0 && hi >= nranks))
      r.fail("ranklist rank out of range [0, " + std::to_string(nranks) + ")");
    total += d.size();
    if (total > kMaxRanks) r.fail("ranklist too large");
    ds.push_back(std::move(d));
  };
  auto plain = [&](std::int64_t start, std::uint64_t code) {
    if (version >= 3 && code % 2 != 0) r.fail("ranklist group inside a group");
    return get_descriptor_dims(r, start, static_cast<std::size_t>(version >= 3 ? code / 2 : code), version, basis);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t first = get_rank_number(r, version, basis);
    const std::uint64_t code = r.uv();
    if (version < 3 || code % 2 == 0) {
      add(plain(first, code));
      continue;
    }
    // A group: `first` is the stride between repetitions.
    const std::int64_t stride = first;
    const std::uint64_t period = (code - 1) / 2;
    if (period == 0 || period > kMaxDescriptorPeriod)
      r.fail("ranklist group of " + std::to_string(period) + " descriptors");
    if (stride == 0 || stride > kMaxRanks || stride < -kMaxRanks)
      r.fail("ranklist group stride " + std::to_string(stride));
    const auto repeat = static_cast<std::uint64_t>(get_count(r, stride, version, basis, "ranklist group repeat count"));
    if (repeat < 2) r.fail("ranklist group repeated " + std::to_string(repeat) + " times");
    if (repeat > budget / period) r.fail("implausible expansion of a ranklist group");
    budget -= (repeat - 1) * period;
    std::vector<RankDescriptor> once;
    for (std::uint64_t m = 0; m < period; ++m) {
      const std::int64_t start = get_rank_number(r, version, basis);
      once.push_back(plain(start, r.uv()));
    }
    std::vector<RankDescriptor> expanded;
    expand_descriptor_period(once, static_cast<std::size_t>(repeat), stride, expanded);
    for (auto& d : expanded) add(std::move(d));
  }
  return rl;
}

/// A value sequence. From version 5, bit 0 of the block count says whether its run values and
/// strides are scaled numbers.
ValueSeq get_seq(SectionReader& r, std::uint32_t version, std::span<const std::int64_t> basis) {
  bool scaled = false;
  std::size_t nb = 0;
  if (version >= 5) {
    const std::uint64_t code = r.uv();
    scaled = (code & 1) != 0;
    nb = r.bound(code / 2, "value block", 2);
  } else {
    nb = r.count("value block", 2);
  }
  std::vector<ValueBlock> blocks;
  blocks.reserve(nb);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < nb; ++i) {
    ValueBlock b;
    b.repeat = r.uv();
    if (b.repeat == 0) r.fail("value block repeated 0 times");
    std::size_t nr = r.count("value run", 3);
    if (nr == 0) r.fail("empty value block");
    b.runs.reserve(nr);
    std::uint64_t block_size = 0;
    for (std::size_t k = 0; k < nr; ++k) {
      ValueRun run;
      run.first = scaled ? get_scaled(r, basis) : r.sv();
      run.stride = scaled ? get_scaled(r, basis) : r.sv();
      run.count = r.uv();
      if (run.count == 0) r.fail("value run of 0 values");
      if (run.count > kMaxSeqSize - block_size) r.fail("value sequence too long");
      block_size += run.count;
      b.runs.push_back(run);
    }
    if (block_size > (kMaxSeqSize - total) / b.repeat) r.fail("value sequence too long");
    total += block_size * b.repeat;
    blocks.push_back(std::move(b));
  }
  try {
    return ValueSeq::from_blocks(std::move(blocks));
  } catch (const std::exception& e) {
    r.fail(std::string("invalid value sequence (") + e.what() + ")");
  }
}

ArraySeq get_array_seq(SectionReader& r, std::uint32_t version, std::uint64_t& budget) {
  std::size_t n = r.count("array run", 2);
  std::vector<ArraySeq::Run> runs;
  runs.reserve(n);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ArraySeq::Run run;
    run.count = r.uv();
    if (run.count == 0 || run.count > kMaxSeqSize - total)
      r.fail("array run of " + std::to_string(run.count) + " values");
    total += run.count;
    run.values = get_array_values(r, version, budget);
    runs.push_back(std::move(run));
  }
  try {
    return ArraySeq::from_runs(std::move(runs));
  } catch (const std::exception& e) {
    r.fail(std::string("invalid array sequence (") + e.what() + ")");
  }
}

namespace {

/// A histogram: the layout, the bins (index delta, count, then min/max/mean either as
/// nanoseconds or, with `time_codes`, as version 8 time codes), each checked as it is read.
/// A histogram's layout (`uv`: log2(sub_bins) + 5 * coarsening): its bins per octave and
/// coarsening, checked.
std::pair<std::uint32_t, std::uint32_t> read_layout(SectionReader& r) {
  const std::uint64_t layout = r.uv();
  const std::uint64_t log_sub = layout % 5, coarsening = layout / 5;
  if (coarsening > Histogram::kMaxCoarsening)
    r.fail("histogram layout " + std::to_string(layout) + ": coarsening above " +
           std::to_string(Histogram::kMaxCoarsening));
  return {1u << log_sub, static_cast<std::uint32_t>(coarsening)};
}

/// Appends bin `b` (its sum set) to the histogram's bins, count and sum.
void append_bin(std::vector<HistogramBin>& bins, const HistogramBin& b, std::uint64_t& count, double& sum) {
  sum += b.sum;
  count += b.count;
  bins.push_back(b);
}

/// Appends bin `b` whose values' mean is `mean` (its sum is the mean times its count).
void add_bin(std::vector<HistogramBin>& bins, HistogramBin b, std::uint64_t mean, std::uint64_t& count, double& sum) {
  b.sum = static_cast<double>(mean) * static_cast<double>(b.count);
  append_bin(bins, b, count, sum);
}

/// The histogram of the bins read (at least one): its min and max those of its first and last.
Histogram assembled(std::uint32_t sub, std::uint32_t shift, std::uint64_t count, double sum,
                    std::vector<HistogramBin> bins) {
  const std::uint64_t mn = bins.front().min, mx = bins.back().max;
  return Histogram::from_parts(sub, count, sum, mn, mx, std::move(bins), shift);
}

/// The sum of bin `b`'s values stored as its excess over `b.min × b.count` (header flag bit 3),
/// checked to lie within count × [min, max].
double bin_sum_from_excess(SectionReader& r, const HistogramBin& b, std::uint64_t excess) {
  const double n = static_cast<double>(b.count);
  if (static_cast<double>(excess) > static_cast<double>(b.max - b.min) * n * (1 + 1e-12))
    r.fail("histogram bin sum outside the bin");
  return static_cast<double>(b.min) * n + static_cast<double>(excess);
}

Histogram read_histogram(SectionReader& r, bool fixed_width_counts, bool time_codes, bool exact_sums) {
  const auto [sub, shift] = read_layout(r);
  std::size_t nb = r.count("histogram bin", 5);
  if (nb > Histogram::kMaxBins)
    r.fail("histogram with " + std::to_string(nb) + " bins (at most " + std::to_string(Histogram::kMaxBins) + ")");
  if (nb == 0) return Histogram::from_parts(sub, 0, 0, 0, 0, {}, shift);
  std::vector<HistogramBin> bins;
  bins.reserve(nb);
  std::uint64_t count = 0, next_index = 0, previous_max = 0;
  double sum = 0;
  const std::uint64_t max_index = (std::uint64_t{1024} >> shift);
  // A time code `delta` above `base` (version 8).
  auto code = [&](std::uint64_t base, const char* what) {
    const std::uint64_t delta = r.uv();
    if (delta > kMaxTimeCode || base + delta > kMaxTimeCode)
      r.fail(std::string("histogram bin ") + what + " out of range");
    return base + delta;
  };
  for (std::size_t i = 0; i < nb; ++i) {
    HistogramBin b;
    std::uint64_t idx = r.uv();
    if (idx >= max_index || next_index + idx >= max_index) r.fail("histogram bin index out of range");
    b.index = static_cast<std::uint32_t>(next_index + idx);
    next_index = std::uint64_t{b.index} + 1;
    b.count = fixed_width_counts ? bin_count_from_code(static_cast<std::uint16_t>(r.fixed(2))) : r.uv();
    if (b.count == 0) r.fail("empty histogram bin");
    if (b.count > ~std::uint64_t{0} - count) r.fail("histogram bin counts overflow");
    std::uint64_t mean = 0;
    if (time_codes) {
      const std::uint64_t lo = code(previous_max, "min");
      const std::uint64_t hi = code(lo, "max");
      const std::uint64_t mid = code(lo, "mean");
      if (mid > hi) r.fail("histogram bin mean outside the bin");
      previous_max = hi;
      b.min = time_from_code(static_cast<std::uint32_t>(lo));
      b.max = time_from_code(static_cast<std::uint32_t>(hi));
      mean = time_from_code(static_cast<std::uint32_t>(mid));
    } else {
      std::uint64_t gap = r.uv();
      if (gap > ~std::uint64_t{0} - previous_max) r.fail("histogram bin min overflows");
      b.min = previous_max + gap;
      std::uint64_t range = r.uv();
      if (range > ~std::uint64_t{0} - b.min) r.fail("histogram bin max overflows");
      b.max = b.min + range;
      previous_max = b.max;
      if (exact_sums) {
        b.sum = bin_sum_from_excess(r, b, r.uv());
        append_bin(bins, b, count, sum);
        continue;
      }
      std::uint64_t mean_offset = r.uv();
      if (mean_offset > range) r.fail("histogram bin mean outside the bin");
      mean = b.min + mean_offset;
    }
    add_bin(bins, b, mean, count, sum);
  }
  return assembled(sub, shift, count, sum, std::move(bins));
}

}  // namespace

Histogram get_hist(SectionReader& r, bool fixed_width_counts) {
  return read_histogram(r, fixed_width_counts, false, false);
}

Histogram get_hist_v8(SectionReader& r, bool exact, bool exact_sums) {
  // Exact (traces passed between processes): counts as `uv` and nanoseconds, as version 7.
  return exact ? read_histogram(r, false, false, exact_sums) : read_histogram(r, true, true, false);
}

Histogram get_hist_columns(std::span<SectionReader> columns, std::uint64_t implied_count) {
  SectionReader& layouts = columns[kColumnLayouts];
  const auto [sub, shift] = read_layout(layouts);
  const std::uint64_t nb = layouts.uv();
  if (nb > Histogram::kMaxBins)
    layouts.fail("histogram with " + std::to_string(nb) + " bins (at most " + std::to_string(Histogram::kMaxBins) +
                 ")");
  if (nb == 0) {
    if (implied_count != 0) layouts.fail("empty duration histogram of an event with compute times");
    return Histogram::from_parts(sub, 0, 0, 0, 0, {}, shift);
  }
  std::vector<HistogramBin> bins;
  bins.reserve(nb);
  std::uint64_t count = 0;
  double sum = 0;
  constexpr std::uint32_t mantissa_mask = (1u << kTimeMantissaBits) - 1;
  for (std::size_t i = 0; i < nb; ++i) {
    HistogramBin b;
    if (implied_count != 0 && i + 1 == nb) {
      if (implied_count <= count) columns[kColumnCounts].fail("duration histogram with more values than its event");
      b.count = implied_count - count;
    } else {
      b.count = bin_count_from_code(static_cast<std::uint16_t>(columns[kColumnCounts].fixed(2)));
      if (b.count == 0) columns[kColumnCounts].fail("empty histogram bin");
      if (b.count > ~std::uint64_t{0} - count) columns[kColumnCounts].fail("histogram bin counts overflow");
    }
    const std::uint64_t octave = columns[kColumnMinOctaves].u8();
    const std::uint64_t mantissa = columns[kColumnMinMantissas].u8();
    if (mantissa > 2 * mantissa_mask + 1) columns[kColumnMinMantissas].fail("histogram bin min out of range");
    const bool index_below = mantissa > mantissa_mask;  // the bin below the min code's bin
    const std::uint64_t lo = (octave << kTimeMantissaBits) | (mantissa & mantissa_mask);
    if (lo > kMaxTimeCode) columns[kColumnMinOctaves].fail("histogram bin min out of range");
    std::uint64_t hi = lo, mid = lo;
    if (b.count > 1) {
      const std::uint64_t spread = columns[kColumnSpreads].uv();
      if (spread > kMaxTimeCode - lo) columns[kColumnSpreads].fail("histogram bin max out of range");
      hi = lo + spread;
      const std::uint64_t offset = columns[kColumnMeans].uv();
      if (offset > spread) columns[kColumnMeans].fail("histogram bin mean outside the bin");
      mid = lo + offset;
    }
    b.min = time_from_code(static_cast<std::uint32_t>(lo));
    b.max = time_from_code(static_cast<std::uint32_t>(hi));
    // The bin is the one its min's code falls into, or the one below (a min rounded up to
    // the next bin's first value).
    b.index = Histogram::bin_index(b.min, sub) >> shift;
    if (index_below) {
      if (b.index == 0) columns[kColumnMinMantissas].fail("histogram bin index below 0");
      --b.index;
    }
    if (!bins.empty() && b.index <= bins.back().index) columns[kColumnMinOctaves].fail("histogram bins out of order");
    const std::uint64_t mean = time_from_code(static_cast<std::uint32_t>(mid));
    add_bin(bins, b, mean, count, sum);
  }
  return assembled(sub, shift, count, sum, std::move(bins));
}

}  // namespace scalatrace::sct
