// The .sct writer: a trace as the bytes of docs/format.md (shared tables, scaled rank numbers,
// neighbour grids, histograms), framed by the header. The reader is sct_reader.cpp; what both
// use is in sct_codec.hpp. Keep all three in step with the specification.
#include "scalatrace/format/format.hpp"
#include "scalatrace/format/rank_periods.hpp"

#include "format/neighbour_grid.hpp"
#include "format/scale_basis.hpp"
#include "format/sct_codec.hpp"
#include "model/histogram_layout.hpp"
#include "model/value_arith.hpp"
#include "model/value_canonical.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "scalatrace/format/trace_validation.hpp"
#include "scalatrace/merge/timing_groups.hpp"
#include "scalatrace/support/entropy_coder.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/safe_file.hpp"
#include "scalatrace/support/wire.hpp"

namespace scalatrace {
namespace {

using namespace sct;

/// A ranklist count, scaled against its dimension's extent (scale_basis::count_basis).
void put_count(wire::Writer& w, std::int64_t count, std::int64_t stride, std::span<const std::int64_t> basis) {
  std::array<std::int64_t, 2> extents{};
  put_scaled(w, count, scale_basis::count_basis(stride, basis, extents));
}

void put_descriptor(wire::Writer& w, const RankDescriptor& d, std::span<const std::int64_t> basis) {
  put_scaled(w, d.start, basis);
  w.uv(2 * d.dims.size());  // even: a descriptor (odd: a group, below)
  for (auto [c, s] : d.dims) {
    put_scaled(w, s, basis);
    put_count(w, c, s, basis);
  }
}

/// A ranklist as items: descriptors, and groups of descriptors repeated at a constant stride
/// (rank_periods.hpp; docs/format.md, "Ranklist"); rank numbers scaled against `basis`.
void put_ranks(wire::Writer& w, const RankList& rl, std::span<const std::int64_t> basis) {
  const auto& ds = rl.descriptors();
  const std::vector<DescriptorPeriod> items = find_descriptor_periods(ds);
  w.uv(items.size());
  for (const DescriptorPeriod& p : items) {
    if (p.repeat == 1) {
      put_descriptor(w, ds[p.first], basis);
      continue;
    }
    put_scaled(w, p.stride, basis);
    w.uv(2 * p.period + 1);
    put_count(w, static_cast<std::int64_t>(p.repeat), p.stride, basis);
    for (std::size_t m = 0; m < p.period; ++m) put_descriptor(w, ds[p.first + m], basis);
  }
}

/// Whether every run of `seq` can be written scaled (its first value and stride in range).
bool fits_scaled(const ValueSeq& seq) {
  for (const auto& b : seq.blocks())
    for (const auto& r : b.runs)
      if (r.first >= kScaledLimit || r.first <= -kScaledLimit || r.stride >= kScaledLimit || r.stride <= -kScaledLimit)
        return false;
  return true;
}

/// A value sequence; with `rank_valued` (peers, roots, split colors and keys) its run values
/// and strides are scaled numbers where they fit (bit 0 of the block count says so).
void put_seq(wire::Writer& w, const ValueSeq& value_seq, bool rank_valued, std::span<const std::int64_t> basis) {
  // Stored sealed: a sequence's last period folds into its block (ValueSeq::seal).
  ValueSeq scratch;
  const ValueSeq& seq = value_seq.sealed_form(scratch);
  const bool scaled = rank_valued && fits_scaled(seq);
  w.uv(2 * seq.blocks().size() + (scaled ? 1 : 0));
  for (const auto& b : seq.blocks()) {
    w.uv(b.repeat);
    w.uv(b.runs.size());
    for (const auto& r : b.runs) {
      if (scaled) {
        put_scaled(w, r.first, basis);
        put_scaled(w, r.stride, basis);
      } else {
        w.sv(r.first);
        w.sv(r.stride);
      }
      w.uv(r.count);
    }
  }
}

/// One array value (version 6): `uv 2 * nvalues + progressions`, then either the values
/// (`sv` each) or, if that is shorter, their maximal arithmetic progressions (`uv nparts`,
/// nparts x (`sv first`, `sv stride`, `uv count`)): a request array 52, 51, ..., 1 is 4 bytes.
void put_array_values(wire::Writer& w, const std::vector<std::int64_t>& values) {
  wire::Writer plain, parts;
  for (const auto v : values) plain.sv(v);
  std::vector<std::array<std::int64_t, 3>> runs;  // first, stride, count
  for (std::size_t i = 0; i < values.size();) {
    std::size_t j = i + 1;
    const std::int64_t stride = j < values.size() ? value_arith::wrap_sub(values[j], values[i]) : 0;
    while (j < values.size() && value_arith::wrap_sub(values[j], values[j - 1]) == stride) ++j;
    runs.push_back({values[i], j - i > 1 ? stride : 0, static_cast<std::int64_t>(j - i)});
    i = j;
  }
  parts.uv(runs.size());
  for (const auto& [first, stride, count] : runs) {
    parts.sv(first);
    parts.sv(stride);
    parts.uv(static_cast<std::uint64_t>(count));
  }
  const bool progressions = parts.data().size() < plain.data().size();
  w.uv(2 * values.size() + (progressions ? 1 : 0));
  w.raw(progressions ? parts.data() : plain.data());
}

void put_array_seq(wire::Writer& w, const ArraySeq& seq) {
  w.uv(seq.runs().size());
  for (const auto& r : seq.runs()) {
    w.uv(r.count);
    put_array_values(w, r.values);
  }
}

/// A bin's mean rounded to a nanosecond, clamped to [min, max] as integers: near 2^64 a double
/// rounds up past the largest uint64_t, and converting it back would be undefined (a stored
/// mean outside its bin).
std::uint64_t bin_mean_ns(const HistogramBin& b) {
  const double mean = std::round(b.sum / static_cast<double>(b.count));
  if (mean <= static_cast<double>(b.min)) return b.min;
  if (mean < static_cast<double>(b.max)) return std::clamp(static_cast<std::uint64_t>(mean), b.min, b.max);
  return b.max;
}

/// A bin's sum rounded to a nanosecond, as its excess over `min × count`, within
/// [0, (max - min) × count] (header flag bit 3).
std::uint64_t bin_sum_excess_ns(const HistogramBin& b) {
  const double n = static_cast<double>(b.count);
  const double excess = std::round(b.sum - static_cast<double>(b.min) * n);
  const double most = static_cast<double>(b.max - b.min) * n;
  if (excess <= 0) return 0;
  return static_cast<std::uint64_t>(std::min(excess, most));
}

/// Histogram of a trace passed between processes (header flags 1 and 3): one layout number,
/// then the bins, each with its exact count (`uv`), min, max and sum (as its excess over
/// min × count), so that nothing is rounded before the final file.
void put_exact_hist(wire::Writer& w, const Histogram& h) {
  w.uv(static_cast<std::uint64_t>(std::countr_zero(h.sub_bins())) + 5u * h.coarsening());
  w.uv(h.bins().size());
  std::uint64_t next_index = 0, previous_max = 0;
  for (const auto& b : h.bins()) {
    w.uv(b.index - next_index);
    next_index = std::uint64_t{b.index} + 1;
    w.uv(b.count);
    w.uv(b.min - previous_max);
    w.uv(b.max - b.min);
    previous_max = b.max;
    w.uv(bin_sum_excess_ns(b));
  }
}

/// `h` with neighbouring bins combined (the layout coarsened, as Histogram does beyond
/// kMaxBins) until at most `max_bins` remain, or, with `to_shift`, until its coarsening is
/// `to_shift`: count, sum, min and max unchanged. A single bin is coarsened all the way (bin
/// index 0), so that its index and layout take the same bytes in every node.
Histogram coarsened(const Histogram& h, std::size_t max_bins, std::optional<std::uint32_t> to_shift = std::nullopt) {
  std::vector<HistogramBin> bins = h.bins();
  std::uint32_t shift = h.coarsening();
  auto more = [&] {
    if (shift >= Histogram::kMaxCoarsening) return false;
    if (to_shift) return shift < *to_shift;
    return bins.size() > max_bins || (bins.size() == 1 && max_bins == 1);
  };
  if (bins.empty() || !more()) return h;
  while (more()) {
    ++shift;
    bins = halve_bin_layout(bins);
  }
  return Histogram::from_parts(h.sub_bins(), h.count(), h.sum(), h.min(), h.max(), std::move(bins), shift);
}

/// Histogram (format version 8): the layout, the bins; per bin its index delta, its count (the
/// two-byte count code, as in version 7, so that its width depends neither on the rank count
/// nor on the run's length; exact `uv` with `exact`), then min, max and mean. Final files
/// write those three as time codes (sct_codec.hpp), each bin's min as the difference from the
/// previous bin's max code, max and mean as differences from its min code: one or two bytes
/// each whatever the durations, and never more than a constant per bin. With `exact` (traces
/// passed between processes) they are nanoseconds, each bin with its sum (put_exact_hist).
void put_hist_v8(wire::Writer& w, const Histogram& h, bool exact) {
  if (exact) {
    put_exact_hist(w, h);
    return;
  }
  w.uv(static_cast<std::uint64_t>(std::countr_zero(h.sub_bins())) + 5u * h.coarsening());
  w.uv(h.bins().size());
  std::uint64_t next_index = 0;
  std::uint32_t previous_max = 0;
  for (const auto& b : h.bins()) {
    w.uv(b.index - next_index);
    next_index = std::uint64_t{b.index} + 1;
    w.fixed(bin_count_code(b.count), 2);
    const std::uint64_t mean_ns = bin_mean_ns(b);
    // Bins are ordered, so codes never decrease (time_code is monotone); clamped anyway.
    const std::uint32_t lo = std::max(time_code(b.min), previous_max);
    const std::uint32_t hi = std::max(time_code(b.max), lo);
    const std::uint32_t mid = std::clamp(time_code(mean_ns), lo, hi);
    w.uv(lo - previous_max);
    w.uv(hi - lo);
    w.uv(mid - lo);
    previous_max = hi;
  }
}

/// A bin's min as a version 11 time code (nearest, as version 8), and whether the bin's index
/// is one below the bin that code's value falls into (a min just below a bin's upper boundary
/// rounds up to it: every boundary is a code's value, since boundaries are multiples of
/// 2^(e - log2 sub_bins) in octave e and codes of 2^(e - kTimeMantissaBits), with sub_bins <=
/// 16 <= 2^kTimeMantissaBits; so the code never falls below the bin, nor beyond the next).
std::pair<std::uint32_t, bool> bin_min_code(const HistogramBin& b, const Histogram& h) {
  const std::uint32_t code = time_code(b.min);
  const std::uint32_t index = Histogram::bin_index(time_from_code(code), h.sub_bins()) >> h.coarsening();
  if (index != b.index && index != b.index + 1) throw Error("encode_trace: histogram bin min outside its bin");
  return {code, index != b.index};
}

/// Histogram (format version 11, final files): into the timing columns (sct_codec.hpp
/// TimingColumn): the layout and bin count; per bin its count code (not the last bin's with
/// `implied_last_count`: the reader takes it from the histogram's known total), its min as a
/// time code in two bytes (octave and mantissa, with a bit for an index one below the bin of the
/// min's code; the bin's index follows from them), and, where the
/// bin holds more than one value, its max and mean as code differences from the min.
void put_hist_columns(std::span<wire::Writer> columns, const Histogram& h, bool implied_last_count) {
  columns[kColumnLayouts].uv(static_cast<std::uint64_t>(std::countr_zero(h.sub_bins())) + 5u * h.coarsening());
  columns[kColumnLayouts].uv(h.bins().size());
  for (std::size_t i = 0; i < h.bins().size(); ++i) {
    const HistogramBin& b = h.bins()[i];
    if (!(implied_last_count && i + 1 == h.bins().size())) columns[kColumnCounts].fixed(bin_count_code(b.count), 2);
    const auto [lo, index_below] = bin_min_code(b, h);
    columns[kColumnMinOctaves].u8(static_cast<std::uint8_t>(lo >> kTimeMantissaBits));
    columns[kColumnMinMantissas].u8(static_cast<std::uint8_t>((lo & ((1u << kTimeMantissaBits) - 1)) |
                                                              (index_below ? 1u << kTimeMantissaBits : 0u)));
    if (b.count == 1) continue;  // one value: max and mean are the min
    const std::uint32_t hi = std::max(time_code(b.max), lo);
    const std::uint32_t mid = std::clamp(time_code(bin_mean_ns(b)), lo, hi);
    columns[kColumnSpreads].uv(hi - lo);
    columns[kColumnMeans].uv(mid - lo);
  }
}

/// `h` as a final file gives it back (its counts as count codes, its bounds and means as time
/// codes): written into scratch timing columns and read from them.
Histogram as_read(const Histogram& h) {
  std::array<wire::Writer, kTimingColumnCount> scratch;
  put_hist_columns(scratch, h, false);
  std::vector<SectionReader> columns;
  columns.reserve(kTimingColumnCount);
  for (const auto& w : scratch) columns.emplace_back(w.data());
  return get_hist_columns(columns, 0);
}

/// The timing histograms of one group (or of a node without groups) as a final file stores
/// them: compute and duration with at most `bins` bins each, the first occurrences in the
/// compute histogram's layout (a subset of its values, so never more bins; and the cursor's
/// mean_excluding needs that layout). Every choice is made on the values as the file will
/// give them back (as_read: time codes, count codes), never on the exact ones, so that a
/// trace read from a file is written back to the same bytes: a choice made on exact values
/// can go the other way on their rounded copies (a first occurrence 2.1 % from the others kept,
/// 1.9 % after rounding dropped), and a saved copy of a loaded trace would then simulate
/// differently from the trace itself.
struct StoredTiming {
  Histogram compute, duration, first;
  StoredTiming(const Histogram& c, const Histogram& d, const Histogram& f, std::size_t bins)
      : compute(in_bins_that_differ(coarsened(c, bins), bins)),
        duration(in_bins_that_differ(coarsened(d, bins), bins)),
        first(f.count() ? coarsened(f, 0, compute.coarsening()) : f) {}

  /// Whether the first occurrences say something the compute times do not (similar_timing),
  /// as the file gives both back.
  bool first_differs() const { return first.count() != 0 && !similar_timing(as_read(first), as_read(compute)); }

  /// With at most 2 bins (the default), `h` in one bin when its two bins' means are within a
  /// factor of 2 of each other (format version 10): the second bin is kept only where it says
  /// something the first does not (a warm-up, a slow path, a second mode), which is what the
  /// cursor's median, sampling and the fastest bin use. Count, sum (so mean), min and max are
  /// kept either way. More bins, asked for with SCALATRACE_TIMING_BINS, are kept as they are.
  static Histogram in_bins_that_differ(Histogram h, std::size_t bins) {
    if (bins > 2 || h.bins().size() != 2) return h;
    const Histogram stored = as_read(h);
    const std::uint64_t a = bin_mean_ns(stored.bins()[0]), b = bin_mean_ns(stored.bins()[1]);
    if (std::max(a, b) > 2 * std::min(a, b)) return h;
    return coarsened(h, 1);
  }
};

/// Whether a duration histogram's last bin count can be left to the reader (version 11): it
/// holds as many values as its compute histogram (one of each per call), and the count the
/// reader derives from the stored codes is the one a stored code would give.
bool duration_count_implied(const Histogram& compute, const Histogram& duration) {
  if (duration.bins().empty() || compute.count() != duration.count()) return false;
  std::uint64_t compute_total = 0, others = 0;
  for (const auto& b : compute.bins()) compute_total += bin_count_from_code(bin_count_code(b.count));
  for (std::size_t i = 0; i + 1 < duration.bins().size(); ++i)
    others += bin_count_from_code(bin_count_code(duration.bins()[i].count));
  const std::uint64_t last = bin_count_from_code(bin_count_code(duration.bins().back().count));
  return compute_total > others && compute_total - others == last;
}

/// Interning table keyed by the encoded bytes of each entry; index 0 is reserved for "empty".
struct Table {
  std::unordered_map<std::string, std::uint64_t> index;
  wire::Writer out;
  std::uint64_t count = 0;
  std::uint64_t add(wire::Writer&& entry) {
    auto [it, inserted] = index.try_emplace(std::move(entry.data()), count + 1);
    if (inserted) {
      out.raw(it->first);
      ++count;
    }
    return it->second;
  }
};

/// Fields whose values are ranks (or derived from ranks): written as scaled numbers.
bool is_rank_valued(std::size_t field) {
  switch (static_cast<Field>(field)) {
    case Field::Peer:
    case Field::Peer2:
    case Field::Root:
    case Field::Color:
    case Field::Key:
      return true;
    default:
      return false;
  }
}

struct TraceWriter {
  bool exact_counts = false;  ///< bin counts as uv (header flag bit 1)
  /// Final files (version 11): the events' timing, in columns written after the nodes.
  std::array<wire::Writer, kTimingColumnCount> timing_columns;
  std::size_t timing_bins = kDefaultTimingBins;  ///< bins per timing histogram in final files
  std::vector<std::int64_t> basis;               ///< the scale basis (section 1)
  Table ranks, seqs, arrays, elastics, array_elastics;
  /// Neighbour grids and the elastic values written over them (final files only).
  neighbour_grid::TraceGrids grids;
  /// Plain encodings of the sequences that some rank-valued field holds: those are written
  /// scaled, wherever they are used (one table entry for equal values, whatever the field).
  std::unordered_set<std::string> rank_valued_seqs;

  void note_rank_valued(const std::vector<Node>& nodes) {
    for (const Node& n : nodes) {
      if (n.loop) note_rank_valued(n.loop->body);
      if (!n.event) continue;
      for (std::size_t f = 0; f < kFieldCount; ++f) {
        if (!is_rank_valued(f)) continue;
        if (const auto it = grids.values.find(&n.event->fields[f]);
            it != grids.values.end() && it->second.form == neighbour_grid::Form::Filtered) {
          wire::Writer plain;
          put_seq(plain, grid_template(it->second), false, basis);
          rank_valued_seqs.insert(std::move(plain.data()));
        }
        for (const auto& alternative : n.event->fields[f].alternatives) {
          wire::Writer plain;
          put_seq(plain, alternative.first, false, basis);
          rank_valued_seqs.insert(std::move(plain.data()));
        }
      }
    }
  }

  std::uint64_t rank_id(const RankList& rl) {
    if (rl.empty()) return 0;
    wire::Writer w;
    put_ranks(w, rl, basis);
    return ranks.add(std::move(w));
  }
  /// A value sequence's table index, written scaled if a rank-valued field holds its values.
  std::uint64_t seq_id(const ValueSeq& seq) {
    wire::Writer sw;
    put_seq(sw, seq, false, basis);
    if (rank_valued_seqs.contains(sw.data())) {
      sw = wire::Writer{};
      put_seq(sw, seq, true, basis);
    }
    return seqs.add(std::move(sw)) - 1;
  }
  static ValueSeq grid_template(const neighbour_grid::GridValue& v) { return canonical_repeated(v.values, 1); }
  /// Version 11, final files: an elastic value giving each rank of a strictly increasing list
  /// its own alternative, the value slope * rank + intercept repeated alike (a Comm_split's key
  /// or color that is the rank): `uv 0` alternatives, the grid index one past the last grid,
  /// `sv slope`, `sv intercept`, `uv repeat`, the ranklist. False if `e` is not of that form.
  bool put_rank_affine(wire::Writer& w, const ElasticValue& e) {
    if (exact_counts || e.alternatives.size() < 3) return false;
    RankList ranks;
    std::vector<std::int64_t> values;
    const std::uint64_t repeat = e.alternatives[0].first.size();
    for (const auto& [seq, rl] : e.alternatives) {
      if (rl.size() != 1 || seq.size() != repeat || repeat < 1 || repeat > (std::uint64_t{1} << 56)) return false;
      const std::int64_t rank = rl.at(0);
      if (!values.empty() && rank <= ranks.at(ranks.size() - 1)) return false;
      ranks.push_back(rank);
      values.push_back(ValueSeq::Reader(&seq).next());
    }
    const std::int64_t r0 = ranks.at(0), dr = ranks.at(1) - r0;
    const __int128 dv = static_cast<__int128>(values[1]) - values[0];
    if (dv % dr != 0 || dv / dr > kScaledLimit || dv / dr < -kScaledLimit) return false;
    const auto slope = static_cast<std::int64_t>(dv / dr);
    const __int128 intercept = static_cast<__int128>(values[0]) - static_cast<__int128>(slope) * r0;
    if (intercept > kScaledLimit || intercept < -kScaledLimit) return false;
    for (std::size_t i = 0; i < e.alternatives.size(); ++i) {
      if (static_cast<__int128>(slope) * ranks.at(static_cast<std::int64_t>(i)) + intercept != values[i]) return false;
      if (!(e.alternatives[i].first == ValueSeq::constant(values[i], repeat))) return false;
    }
    w.uv(0);
    w.uv(grids.grids.size());
    w.sv(slope);
    w.sv(static_cast<std::int64_t>(intercept));
    w.uv(repeat);
    w.uv(rank_id(ranks));
    return true;
  }

  std::uint64_t elastic_id(const ElasticValue& e) {
    if (e.empty()) return 0;
    wire::Writer w;
    if (put_rank_affine(w, e)) return elastics.add(std::move(w));
    if (const auto it = grids.values.find(&e); it != grids.values.end()) {
      // Stated over a neighbour grid (version 6): 0 alternatives, then the grid form.
      const neighbour_grid::GridValue& v = it->second;
      w.uv(0);
      w.uv(v.grid);
      w.uv(static_cast<std::uint64_t>(v.form));
      if (v.form == neighbour_grid::Form::Filtered) w.uv(seq_id(grid_template(v)));
      w.uv(v.repeat);
      return elastics.add(std::move(w));
    }
    w.uv(e.alternatives.size());
    for (const auto& [seq, rl] : e.alternatives) {
      w.uv(seq_id(seq));
      w.uv(rank_id(rl));
    }
    return elastics.add(std::move(w));
  }
  /// The neighbour grids (section 7, before the elastic values): `uv ndims`, the strides of
  /// all dimensions but the innermost (scaled, outermost first), `uv reach`, `uv ndirections`,
  /// each direction's code.
  void put_grids(wire::Writer& w) const {
    w.uv(grids.grids.size());
    for (const auto& g : grids.grids) {
      w.uv(g.dims.size());
      const auto strides = g.strides();
      for (std::size_t k = 0; k + 1 < strides.size(); ++k) put_scaled(w, strides[k], basis);
      const int reach = g.reach();
      w.uv(static_cast<std::uint64_t>(reach));
      w.uv(g.directions.size());
      for (const auto& d : g.directions) w.uv(neighbour_grid::direction_code(d, g.dims.size(), reach));
    }
  }
  std::uint64_t array_elastic_id(const ElasticArray& e) {
    if (e.empty()) return 0;
    wire::Writer w;
    if (const auto it = grids.arrays.find(&e); it != grids.arrays.end()) {
      // Stated over a neighbour grid (version 6): 0 alternatives, then the progression.
      const neighbour_grid::GridArray& v = it->second;
      w.uv(0);
      w.uv(v.grid);
      w.sv(v.first_per_direction);
      w.sv(v.first_base);
      w.sv(v.stride);
      w.sv(v.length_per_direction);
      w.sv(v.length_base);
      w.sv(v.repeat_per_direction);
      w.sv(v.repeat_base);
      return array_elastics.add(std::move(w));
    }
    w.uv(e.alternatives.size());
    for (const auto& [seq, rl] : e.alternatives) {
      wire::Writer sw;
      put_array_seq(sw, seq);
      w.uv(arrays.add(std::move(sw)) - 1);
      w.uv(rank_id(rl));
    }
    return array_elastics.add(std::move(w));
  }

  /// Where a node's numbers go: version 11 final files, the five node columns (NodeColumn);
  /// traces passed between processes, all into the node tree in file order (as version 10).
  struct NodeWriters {
    wire::Writer& structure;
    wire::Writer& op;
    wire::Writer& site;
    wire::Writer& mask;
    wire::Writer& refs;
  };

  void node(NodeWriters& c, const Node& n) {
    if (!n.is_loop() && !n.event) throw Error("encode_trace: node has neither event nor loop");
    std::uint8_t flags = 0;
    if (n.is_loop()) flags |= kNodeLoop;
    if (!n.presence.empty()) flags |= kNodeHasPresence;
    c.structure.u8(flags);
    c.structure.uv(rank_id(n.ranks));
    if (flags & kNodeHasPresence) c.refs.uv(elastic_id(n.presence));
    if (n.is_loop()) {
      c.refs.uv(elastic_id(n.loop->trips));
      c.structure.uv(n.loop->body.size());
      for (const auto& b : n.loop->body) node(c, b);
      return;
    }
    const EventNode& e = *n.event;
    c.op.uv(static_cast<std::uint64_t>(e.op));
    c.site.uv(e.site);
    c.refs.uv(elastic_id(e.site_ids));
    // Version 8: which fields and arrays are stored, as one mask (fields in bits 0..17,
    // arrays above), then the stored ones' references.
    std::uint64_t mask = 0;
    std::array<std::uint64_t, kFieldCount + kArrayFieldCount> refs{};
    for (std::size_t f = 0; f < kFieldCount; ++f) refs[f] = elastic_id(e.fields[f]);
    for (std::size_t f = 0; f < kArrayFieldCount; ++f) refs[kFieldCount + f] = array_elastic_id(e.arrays[f]);
    for (std::size_t f = 0; f < refs.size(); ++f)
      if (refs[f] != 0) mask |= std::uint64_t{1} << f;
    if (!e.lossy.empty()) mask |= kLossyMaskBit;
    c.mask.uv(mask);
    for (const auto ref : refs)
      if (ref != 0) c.refs.uv(ref);
    if (!e.lossy.empty()) put_lossy(c.refs, e);
    wire::Writer& w = c.structure;  // inline timing (traces passed between processes)
    if (exact_counts) {             // passed between processes: everything, exact, in the node
      const bool firsts = e.first_compute.count() != 0;
      w.uv(2 * e.timing_groups.size() + (firsts ? 1 : 0));
      auto put_exact = [&](const Histogram& compute, const Histogram& duration, const Histogram& first) {
        put_hist_v8(w, compute, true);
        put_hist_v8(w, duration, true);
        if (firsts) put_hist_v8(w, first, true);
      };
      if (e.timing_groups.empty()) put_exact(e.compute, e.duration, e.first_compute);
      for (const auto& g : e.timing_groups) {
        w.uv(rank_id(g.ranks));
        put_exact(g.compute, g.duration, g.first_compute);
      }
      return;
    }
    // Final files (version 11): into the timing columns. 0 groups = the node-wide histograms
    // for every rank; otherwise the groups (the node-wide histograms are their merge).
    std::vector<StoredTiming> stored;
    if (e.timing_groups.empty()) stored.emplace_back(e.compute, e.duration, e.first_compute, timing_bins);
    for (const auto& g : e.timing_groups) stored.emplace_back(g.compute, g.duration, g.first_compute, timing_bins);
    const bool implied = std::all_of(stored.begin(), stored.end(), [](const StoredTiming& t) {
      return duration_count_implied(t.compute, t.duration);
    });
    // First occurrences are written only where they differ from the compute times: one like
    // the others tells a replay or simulation nothing new.
    const bool firsts =
        std::any_of(stored.begin(), stored.end(), [](const StoredTiming& t) { return t.first_differs(); });
    wire::Writer& groups = timing_columns[kColumnGroups];
    groups.uv(4 * e.timing_groups.size() + (implied ? 0 : 2) + (firsts ? 1 : 0));
    for (std::size_t i = 0; i < stored.size(); ++i) {
      if (!e.timing_groups.empty()) groups.uv(rank_id(e.timing_groups[i].ranks));
      put_hist_columns(timing_columns, stored[i].compute, false);
      put_hist_columns(timing_columns, stored[i].duration, implied);
      if (firsts) put_hist_columns(timing_columns, stored[i].first, false);
    }
  }

  /// Section 9: the communicator table. Version 11: a run of at least 3 entries of one id whose
  /// members and holders are each one rank, increasing (a split with the rank as color: one
  /// communicator per rank), is one item: the id, empty members and holders, then the ranks; an
  /// entry with empty members and holders is followed by 0.
  void put_comms(wire::Writer& w, const std::vector<CommEntry>& entries) {
    auto single = [](const CommEntry& e) { return e.members.size() == 1 && e.members == e.holders; };
    wire::Writer items;
    std::uint64_t count = 0;
    for (std::size_t i = 0; i < entries.size(); ++count) {
      const CommEntry& e = entries[i];
      std::size_t end = i;
      RankList ranks;
      while (end < entries.size() && entries[end].id == e.id && single(entries[end]) &&
             (ranks.empty() || entries[end].members.at(0) > ranks.at(ranks.size() - 1))) {
        ranks.push_back(entries[end].members.at(0));
        ++end;
      }
      items.sv(e.id);
      if (end - i >= 3) {
        items.uv(0);
        items.uv(0);
        items.uv(rank_id(ranks));
        i = end;
        continue;
      }
      items.uv(rank_id(e.members));
      items.uv(rank_id(e.holders));
      if (e.members.empty() && e.holders.empty()) items.uv(0);
      ++i;
    }
    w.uv(count);
    w.raw(items.data());
  }

  /// Version 9, lossy traces: the mask of the fields kept as histograms, then each histogram.
  static void put_lossy(wire::Writer& w, const EventNode& e) {
    std::uint64_t lossy_mask = 0;
    for (const auto& l : e.lossy) lossy_mask |= std::uint64_t{1} << static_cast<unsigned>(l.field);
    w.uv(lossy_mask);
    for (std::size_t f = 0; f < kFieldCount; ++f) {
      const ValueHistogram* h = e.lossy_values(static_cast<Field>(f));
      if (h == nullptr) continue;
      w.uv(h->bins().size());
      std::int64_t previous_lo = 0;
      for (std::size_t i = 0; i < h->bins().size(); ++i) {
        const ValueBin& b = h->bins()[i];
        if (i == 0)
          w.sv(b.lo);
        else
          w.uv(static_cast<std::uint64_t>(b.lo) - static_cast<std::uint64_t>(previous_lo));
        w.uv(static_cast<std::uint64_t>(b.hi) - static_cast<std::uint64_t>(b.lo));
        w.uv(b.count);
        previous_lo = b.lo;
      }
    }
  }
};

/// The bins per timing histogram a final file keeps: the trace's own setting
/// (metadata `setting.SCALATRACE_TIMING_BINS`, 1..8, from the collector), else the default.
std::size_t timing_bins_of(const Trace& trace) {
  const auto it = trace.metadata.find(kTimingBinsKey);
  if (it == trace.metadata.end()) return kDefaultTimingBins;
  const std::string& v = it->second;
  if (v.size() == 1 && v[0] >= '1' && v[0] <= '8') return static_cast<std::size_t>(v[0] - '0');
  return kDefaultTimingBins;
}

/// Columns of the node tree (version 11): each `uv length`, then its bytes.
void put_columns(wire::Writer& w, std::span<const wire::Writer> columns) {
  for (const auto& c : columns) {
    w.uv(c.data().size());
    w.raw(c.data());
  }
}

void put_section(wire::Writer& out, std::uint64_t id, wire::Writer&& body) {
  out.uv(id);
  out.uv(body.data().size());
  out.raw(body.data());
}

void put_table(wire::Writer& out, std::uint64_t id, Table& t) {
  wire::Writer s;
  s.uv(t.count);
  s.raw(t.out.data());
  put_section(out, id, std::move(s));
}

}  // namespace

void sct::put_metadata_body(wire::Writer& s, const std::map<std::string, std::string>& metadata,
                            std::span<const std::int64_t> basis) {
  // The scale basis, its first number the rank count, each in a fixed width.
  s.u8(static_cast<std::uint8_t>(basis.size()));
  for (const std::int64_t b : basis) s.fixed(static_cast<std::uint64_t>(b), kBasisNumberBytes);
  // Keys front-coded (version 4): the bytes shared with the previous key, then the rest.
  // Keys come sorted, so the settings' common "setting.SCALATRACE_" is written once.
  s.uv(metadata.size());
  std::string previous;
  for (const auto& [k, v] : metadata) {
    std::string key = to_valid_utf8(k);
    std::size_t shared = 0;
    while (shared < key.size() && shared < previous.size() && key[shared] == previous[shared]) ++shared;
    // Never split a character: the rest must be well-formed UTF-8 on its own.
    while (shared > 0 && shared < key.size() && (static_cast<unsigned char>(key[shared]) & 0xC0) == 0x80) --shared;
    s.uv(shared);
    put_text(s, key.substr(shared));
    put_text(s, v);
    previous = std::move(key);
  }
}

namespace {

/// Section 1: the scale basis, then the metadata.
void put_metadata(wire::Writer& payload, const Trace& trace, std::span<const std::int64_t> basis) {
  wire::Writer s;
  put_metadata_body(s, trace.metadata, basis);
  put_section(payload, kMetadata, std::move(s));
}

/// Section 2: the call-site table.
void put_call_sites(wire::Writer& payload, const CallSiteTable& sites) {
  wire::Writer s;
  put_call_site_tree(s, sites);
  put_section(payload, kCallSites, std::move(s));
}

/// Section 3: the names of functions recorded as Op::Other.
void put_names(wire::Writer& payload, const std::vector<std::string>& names) {
  wire::Writer s;
  s.uv(names.size());
  for (const auto& n : names) put_text(s, n);
  put_section(payload, kNames, std::move(s));
}

std::string encode(const Trace& trace, std::uint32_t flags, bool entropy_code = true) {
  TraceWriter tw;
  tw.exact_counts = (flags & kFlagExactCounts) != 0;
  tw.timing_bins = timing_bins_of(trace);
  if (trace.nranks < 0 || trace.nranks >= std::int64_t{1} << (8 * kBasisNumberBytes))
    throw Error("encode_trace: rank count " + std::to_string(trace.nranks) +
                " out of range (a trace holds fewer than 2^32 ranks)");
  tw.basis = scale_basis::find_basis(trace);
  // Traces passed between the collector's processes hold some of the ranks only: no grids.
  if ((flags & kFlagExactCounts) == 0) tw.grids = neighbour_grid::find_trace_grids(trace.nodes, trace.nranks);
  tw.note_rank_valued(trace.nodes);
  // Encode the parts that fill the shared tables first; the tables precede them in the file.
  wire::Writer comms;
  tw.put_comms(comms, trace.comms.entries);
  wire::Writer nodes;
  nodes.uv(trace.nodes.size());
  if (tw.exact_counts) {
    TraceWriter::NodeWriters inline_nodes{nodes, nodes, nodes, nodes, nodes};
    for (const auto& n : trace.nodes) tw.node(inline_nodes, n);
  } else {
    // Final files (version 11): the node columns, then the timing columns.
    std::array<wire::Writer, kNodeColumnCount> columns;
    TraceWriter::NodeWriters by_column{columns[kColumnStructure], columns[kColumnOps], columns[kColumnSites],
                                       columns[kColumnMasks], columns[kColumnRefs]};
    for (const auto& n : trace.nodes) tw.node(by_column, n);
    put_columns(nodes, columns);
    put_columns(nodes, tw.timing_columns);
  }

  wire::Writer payload;
  put_metadata(payload, trace, tw.basis);
  put_call_sites(payload, trace.sites);
  put_names(payload, trace.names);
  put_table(payload, kRankLists, tw.ranks);
  put_table(payload, kValueSeqs, tw.seqs);
  put_table(payload, kArraySeqs, tw.arrays);
  {
    wire::Writer s;
    tw.put_grids(s);
    s.uv(tw.elastics.count);
    s.raw(tw.elastics.out.data());
    put_section(payload, kValueElastics, std::move(s));
  }
  put_table(payload, kArrayElastics, tw.array_elastics);
  put_section(payload, kComms, std::move(comms));
  put_section(payload, kNodes, std::move(nodes));
  if (!trace.clusters.empty()) {
    wire::Writer s;
    s.uv(trace.clusters.size());
    for (const auto& c : trace.clusters) {
      put_scaled(s, c.representative, tw.basis);
      put_ranks(s, c.members, tw.basis);
    }
    put_section(payload, kRankClusters, std::move(s));
  }

  // Final files are entropy-coded where that is smaller (docs/format.md, "Entropy coding");
  // traces passed between processes are not (they are read once, at once).
  std::string stored = std::move(payload.data());
  if (entropy_code && (flags & kFlagExactCounts) == 0 && stored.size() <= kMaxEntropyCodedPayload) {
    std::string coded = entropy::encode(stored, payload_primer(kTraceFormatVersion));
    if (coded.size() < stored.size() && stored.size() <= entropy_decoded_limit(coded.size())) {
      stored = std::move(coded);
      flags |= kFlagEntropyCoded;
    }
  }
  wire::Writer out;
  out.raw(std::string_view(kTraceMagic, 8));
  out.fixed(kTraceFormatVersion, 4);
  out.fixed(flags, 4);
  out.fixed(stored.size(), 8);
  out.fixed(wire::crc32(stored), 4);
  out.raw(stored);
  return std::move(out.data());
}

}  // namespace

std::string encode_trace(const Trace& trace, bool rank_segments_follow, PayloadCoding coding) {
  return encode(trace, rank_segments_follow ? kFlagRankSegments : 0, coding == PayloadCoding::Entropy);
}

std::string encode_trace_for_transfer(const Trace& trace) { return encode(trace, kFlagExactCounts | kFlagExactSums); }

std::size_t structure_bytes(const Trace& trace) {
  Trace copy = trace.clone();
  copy.metadata.clear();
  copy.clear_timing();
  // Plain: the structure's own bytes, comparable across traces (entropy coding would make
  // them depend on the rest of the file's contents).
  return encode_trace(copy, false, PayloadCoding::Plain).size();
}

void write_trace_file(const Trace& trace, const std::string& path) { write_file_safely(path, encode_trace(trace)); }

}  // namespace scalatrace
