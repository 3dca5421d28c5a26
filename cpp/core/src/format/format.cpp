// The .sct single-file trace: writer and defensive reader. docs/format.md is the specification;
// keep the two in step.
#include "scalatrace/format/format.hpp"
#include "scalatrace/format/rank_periods.hpp"

#include "format/format_detail.hpp"
#include "format/neighbour_grid.hpp"
#include "format/scale_basis.hpp"
#include "model/value_arith.hpp"
#include "model/value_canonical.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/safe_file.hpp"
#include "scalatrace/merge/timing_groups.hpp"
#include "scalatrace/format/trace_validation.hpp"

namespace scalatrace {

// ---------------------------------------------------------------- CRC-32 (IEEE 802.3)
namespace {
std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
}  // namespace

std::uint32_t format_detail::crc32(std::string_view data) {
  static const auto table = make_crc_table();
  std::uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

namespace {
using format_detail::crc32;

// ---------------------------------------------------------------- constants of the format
constexpr std::size_t kHeaderSize = 8 + 4 + 4 + 8 + 4;  // magic, version, flags, length, crc
constexpr std::uint32_t kKnownFlags = kFlagRankSegments | kFlagExactCounts;  // docs/format.md
constexpr std::size_t kMaxDepth = 64;                    // loop nesting
constexpr std::size_t kMaxDims = 16;                     // ranklist descriptor dimensions
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 40;
constexpr std::uint64_t kMaxSeqSize = std::uint64_t{1} << 62;
/// Scaled numbers (version 5) are written for magnitudes below this; a value sequence with a
/// larger run value is written plain.
constexpr std::int64_t kScaledLimit = std::int64_t{1} << 56;
/// Bytes of each scale-basis number (version 5, section 1): a fixed width, so that the basis
/// takes the same bytes at every rank count.
constexpr int kBasisNumberBytes = 4;

enum Section : std::uint64_t {
  kMetadata = 1,
  kCallSites = 2,
  kNames = 3,
  kRankLists = 4,
  kValueSeqs = 5,
  kArraySeqs = 6,
  kValueElastics = 7,
  kArrayElastics = 8,
  kComms = 9,
  kNodes = 10,
  kLastKnownSection = kNodes,
  kRankClusters = 11,  ///< optional (clustered traces only; readers before it skip it)
};

const char* section_name(std::uint64_t id) {
  switch (id) {
    case kMetadata: return "metadata";
    case kCallSites: return "call-site table";
    case kNames: return "names table";
    case kRankLists: return "ranklist table";
    case kValueSeqs: return "value-sequence table";
    case kArraySeqs: return "array-sequence table";
    case kValueElastics: return "elastic-value table";
    case kArrayElastics: return "elastic-array table";
    case kComms: return "communicator table";
    case kNodes: return "node tree";
    case kRankClusters: return "rank clusters";
    default: return "unknown section";
  }
}

enum NodeFlags : std::uint8_t {
  kNodeLoop = 1,
  kNodeHasPresence = 2,
};

// ---------------------------------------------------------------- writer
class Writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void uv(std::uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void sv(std::int64_t v) {
    uv((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  void f64(double d) {
    std::uint64_t bits;
    std::memcpy(&bits, &d, 8);
    fixed(bits, 8);
  }
  void fixed(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  void str(const std::string& s) {  // text is stored as UTF-8 (ill-formed bytes -> U+FFFD)
    const std::string text = to_valid_utf8(s);
    uv(text.size());
    out_ += text;
  }
  void raw(std::string_view s) { out_ += s; }
  std::string& data() { return out_; }

 private:
  std::string out_;
};

/// A scaled number (version 5, docs/format.md "Scaled numbers"): one `uv` whose bit 0 says
/// whether the number has basis coefficients. Without: the value's zigzag code above it. With:
/// two bits per basis number above it (coefficient 0, +1, -1, or 3: it follows as `sv`), the
/// remainder's zigzag code above those, then the coefficients that follow.
void put_scaled(Writer& w, std::int64_t v, std::span<const std::int64_t> basis) {
  if (v >= kScaledLimit || v <= -kScaledLimit)
    throw Error("encode_trace: rank number " + std::to_string(v) + " out of range");
  std::array<std::int64_t, scale_basis::kMaxBasis> coeffs{};
  const std::int64_t rest = scale_basis::decompose(v, basis, coeffs);
  std::uint64_t codes = 0;
  for (std::size_t i = 0; i < basis.size(); ++i) {
    const std::uint64_t code = coeffs[i] == 0 ? 0 : coeffs[i] == 1 ? 1 : coeffs[i] == -1 ? 2 : 3;
    codes |= code << (2 * i);
  }
  const auto zigzag = (static_cast<std::uint64_t>(rest) << 1) ^ static_cast<std::uint64_t>(rest >> 63);
  if (codes == 0) {
    w.uv(zigzag << 1);
    return;
  }
  // With a coefficient, the remainder is at most half a basis number (below 2^31), so the
  // shifts stay far inside 64 bits.
  w.uv((((zigzag << (2 * basis.size())) | codes) << 1) | 1);
  for (std::size_t i = 0; i < basis.size(); ++i)
    if (((codes >> (2 * i)) & 3) == 3) w.sv(coeffs[i]);
}

/// A ranklist count, scaled against its dimension's extent (scale_basis::count_basis).
void put_count(Writer& w, std::int64_t count, std::int64_t stride, std::span<const std::int64_t> basis) {
  std::array<std::int64_t, 2> extents{};
  put_scaled(w, count, scale_basis::count_basis(stride, basis, extents));
}

void put_descriptor(Writer& w, const RankDescriptor& d, std::span<const std::int64_t> basis) {
  put_scaled(w, d.start, basis);
  w.uv(2 * d.dims.size());  // even: a descriptor (odd: a group, below)
  for (auto [c, s] : d.dims) {
    put_scaled(w, s, basis);
    put_count(w, c, s, basis);
  }
}

/// A ranklist as items: descriptors, and groups of descriptors repeated at a constant stride
/// (rank_periods.hpp; docs/format.md, "Ranklist"); rank numbers scaled against `basis`.
void put_ranks(Writer& w, const RankList& rl, std::span<const std::int64_t> basis) {
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
      if (r.first >= kScaledLimit || r.first <= -kScaledLimit || r.stride >= kScaledLimit ||
          r.stride <= -kScaledLimit)
        return false;
  return true;
}

/// A value sequence; with `rank_valued` (peers, roots, split colors and keys) its run values
/// and strides are scaled numbers where they fit (bit 0 of the block count says so).
void put_seq(Writer& w, const ValueSeq& value_seq, bool rank_valued, std::span<const std::int64_t> basis) {
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
void put_array_values(Writer& w, const std::vector<std::int64_t>& values) {
  Writer plain, parts;
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

void put_array_seq(Writer& w, const ArraySeq& seq) {
  w.uv(seq.runs().size());
  for (const auto& r : seq.runs()) {
    w.uv(r.count);
    put_array_values(w, r.values);
  }
}

/// A bin count in two bytes (format version 4), so that a histogram's size does not depend on
/// how many values it holds: below 2^15 the count itself; above, a float of 5 exponent and 10
/// mantissa bits, (1024 + m) << (e + 5), rounded to nearest (relative error at most 2^-11).
/// Counts beyond the largest code (2047 << 36, about 1.4e14) are stored as that code.
std::uint16_t bin_count_code(std::uint64_t count) {
  if (count < 0x8000) return static_cast<std::uint16_t>(count);
  std::uint32_t e = 0;
  while (e < 32 && (count >> (e + 5)) >= 2048) ++e;
  // Round the mantissa to nearest (half up, without an addition that could overflow); a carry
  // to 2048 moves to the next exponent.
  std::uint64_t m = (count >> (e + 5)) + ((count >> (e + 4)) & 1);
  if (m == 2048) {
    m = 1024;
    ++e;
  }
  if (e > 31) return 0xFFFF;
  return static_cast<std::uint16_t>(0x8000 | (e << 10) | (m - 1024));
}

std::uint64_t bin_count_from_code(std::uint16_t code) {
  if (code < 0x8000) return code;
  const std::uint32_t e = (code >> 10) & 0x1F;
  return (std::uint64_t{1024} + (code & 0x3FF)) << (e + 5);
}

/// Histogram (format version 2): one layout number, then the bins; count, min, max and sum
/// are derived from the bins, and each bin stores its mean (rounded to a nanosecond) instead of
/// its sum. From version 4 a bin's count has a fixed width (bin_count_code), so the encoded size
/// does not grow with the number of recorded values at all. With `exact_counts` (header flag
/// bit 1, for traces passed between processes) counts are written as `uv`, as in version 3.
void put_hist(Writer& w, const Histogram& h, bool exact_counts) {
  w.uv(static_cast<std::uint64_t>(std::countr_zero(h.sub_bins())) + 5u * h.coarsening());
  w.uv(h.bins().size());
  std::uint64_t next_index = 0, previous_max = 0;
  for (const auto& b : h.bins()) {
    w.uv(b.index - next_index);
    next_index = std::uint64_t{b.index} + 1;
    if (exact_counts)
      w.uv(b.count);
    else
      w.fixed(bin_count_code(b.count), 2);
    w.uv(b.min - previous_max);
    w.uv(b.max - b.min);
    previous_max = b.max;
    const double mean = std::round(b.sum / static_cast<double>(b.count));
    const auto mean_ns = static_cast<std::uint64_t>(
        std::clamp(mean, static_cast<double>(b.min), static_cast<double>(b.max)));
    w.uv(mean_ns - b.min);
  }
}

/// Interning table keyed by the encoded bytes of each entry; index 0 is reserved for "empty".
struct Table {
  std::unordered_map<std::string, std::uint64_t> index;
  Writer out;
  std::uint64_t count = 0;
  std::uint64_t add(Writer&& entry) {
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
  std::vector<std::int64_t> basis;  ///< the scale basis (section 1)
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
          Writer plain;
          put_seq(plain, grid_template(it->second), false, basis);
          rank_valued_seqs.insert(std::move(plain.data()));
        }
        for (const auto& alternative : n.event->fields[f].alternatives) {
          Writer plain;
          put_seq(plain, alternative.first, false, basis);
          rank_valued_seqs.insert(std::move(plain.data()));
        }
      }
    }
  }

  std::uint64_t rank_id(const RankList& rl) {
    if (rl.empty()) return 0;
    Writer w;
    put_ranks(w, rl, basis);
    return ranks.add(std::move(w));
  }
  /// A value sequence's table index, written scaled if a rank-valued field holds its values.
  std::uint64_t seq_id(const ValueSeq& seq) {
    Writer sw;
    put_seq(sw, seq, false, basis);
    if (rank_valued_seqs.contains(sw.data())) {
      sw = Writer{};
      put_seq(sw, seq, true, basis);
    }
    return seqs.add(std::move(sw)) - 1;
  }
  static ValueSeq grid_template(const neighbour_grid::GridValue& v) {
    return canonical_repeated(v.values, 1);
  }
  std::uint64_t elastic_id(const ElasticValue& e) {
    if (e.empty()) return 0;
    Writer w;
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
  void put_grids(Writer& w) const {
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
    Writer w;
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
      Writer sw;
      put_array_seq(sw, seq);
      w.uv(arrays.add(std::move(sw)) - 1);
      w.uv(rank_id(rl));
    }
    return array_elastics.add(std::move(w));
  }

  void node(Writer& w, const Node& n) {
    if (!n.is_loop() && !n.event) throw Error("encode_trace: node has neither event nor loop");
    std::uint8_t flags = 0;
    if (n.is_loop()) flags |= kNodeLoop;
    if (!n.presence.empty()) flags |= kNodeHasPresence;
    w.u8(flags);
    w.uv(rank_id(n.ranks));
    if (flags & kNodeHasPresence) w.uv(elastic_id(n.presence));
    if (n.is_loop()) {
      w.uv(elastic_id(n.loop->trips));
      w.uv(n.loop->body.size());
      for (const auto& c : n.loop->body) node(w, c);
      return;
    }
    const EventNode& e = *n.event;
    w.uv(static_cast<std::uint64_t>(e.op));
    w.uv(e.site);
    w.uv(elastic_id(e.site_ids));
    w.uv(kFieldCount);
    for (std::size_t f = 0; f < kFieldCount; ++f) w.uv(elastic_id(e.fields[f]));
    w.uv(kArrayFieldCount);
    for (std::size_t f = 0; f < kArrayFieldCount; ++f) w.uv(array_elastic_id(e.arrays[f]));
    // Timing: 0 groups = the node-wide histograms for every rank; otherwise the groups
    // (the node-wide histograms are their merge). Bit 0 of the count (version 7): each
    // histogram pair is followed by its first-occurrence histogram.
    const bool firsts = keeps_first_compute(e);
    w.uv(2 * e.timing_groups.size() + (firsts ? 1 : 0));
    if (e.timing_groups.empty()) {
      put_hist(w, e.compute, exact_counts);
      put_hist(w, e.duration, exact_counts);
      if (firsts) put_hist(w, e.first_compute, exact_counts);
    }
    for (const auto& g : e.timing_groups) {
      w.uv(rank_id(g.ranks));
      put_hist(w, g.compute, exact_counts);
      put_hist(w, g.duration, exact_counts);
      if (firsts) put_hist(w, g.first_compute, exact_counts);
    }
  }

  /// Whether a node's first-occurrence compute times are written: always in traces passed
  /// between processes (exact counts, nothing dropped); in final files only where they differ
  /// from the node's compute times (similar_timing), since a first occurrence like the others
  /// tells a replay or simulation nothing new.
  bool keeps_first_compute(const EventNode& e) const {
    if (e.first_compute.count() == 0) return false;
    if (exact_counts) return true;
    if (!similar_timing(e.first_compute, e.compute)) return true;
    return std::any_of(e.timing_groups.begin(), e.timing_groups.end(), [](const TimingGroup& g) {
      return !similar_timing(g.first_compute, g.compute);
    });
  }
};

void put_section(Writer& out, std::uint64_t id, Writer&& body) {
  out.uv(id);
  out.uv(body.data().size());
  out.raw(body.data());
}

void put_table(Writer& out, std::uint64_t id, Table& t) {
  Writer s;
  s.uv(t.count);
  s.raw(t.out.data());
  put_section(out, id, std::move(s));
}

// ---------------------------------------------------------------- reader
class Reader {
 public:
  Reader(std::string_view data, std::size_t base) : data_(data), base_(base) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw FormatError(what + " in " + section_ + " at byte " + std::to_string(base_ + pos_));
  }
  void set_section(std::string name) { section_ = std::move(name); }
  std::size_t remaining() const { return data_.size() - pos_; }
  bool done() const { return pos_ >= data_.size(); }
  std::size_t pos() const { return pos_; }

  std::uint8_t u8() {
    if (remaining() < 1) fail("truncated");
    return static_cast<std::uint8_t>(data_[pos_++]);
  }
  std::uint64_t uv() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (remaining() < 1) fail("truncated");
      auto b = static_cast<std::uint8_t>(data_[pos_++]);
      if (shift == 63 && b > 1) fail("variable-length integer overflows 64 bits");
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("variable-length integer longer than 10 bytes");
  }
  std::int64_t sv() {
    std::uint64_t u = uv();
    return static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  /// `bytes` bytes, little-endian unsigned.
  std::uint64_t fixed(int bytes) {
    if (remaining() < static_cast<std::size_t>(bytes)) fail("truncated");
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(data_[pos_ + i])) << (8 * i);
    pos_ += static_cast<std::size_t>(bytes);
    return v;
  }
  double f64() {
    const std::uint64_t bits = fixed(8);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  /// A count of items that each take at least min_bytes: bounded by the remaining input.
  std::size_t count(const char* what, std::size_t min_bytes = 1) { return bounded_count(uv(), what, min_bytes); }
  /// `n` items that each take at least min_bytes, checked against the remaining input.
  std::size_t bounded_count(std::uint64_t n, const char* what, std::size_t min_bytes) {
    if (n > remaining() / min_bytes)
      fail(std::string("implausible ") + what + " count " + std::to_string(n) + " (only " +
           std::to_string(remaining()) + " bytes left)");
    return static_cast<std::size_t>(n);
  }
  std::string str(const char* what) {
    std::size_t n = count(what);
    std::string s(data_.substr(pos_, n));
    if (!is_valid_utf8(s)) fail(std::string(what) + " is not valid UTF-8");
    pos_ += n;
    return s;
  }
  std::string_view bytes(std::size_t n) {
    if (remaining() < n) fail("truncated");
    auto s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  std::string_view data_;
  std::size_t base_;
  std::size_t pos_ = 0;
  std::string section_ = "header";
};

/// Lowest and highest rank of a descriptor.
std::pair<std::int64_t, std::int64_t> descriptor_range(const RankDescriptor& d) {
  std::int64_t lo = d.start, hi = d.start;
  for (auto [c, s] : d.dims) (s > 0 ? hi : lo) += (c - 1) * s;
  return {lo, hi};
}

/// A scaled number (version 5; put_scaled).
std::int64_t get_scaled(Reader& r, std::span<const std::int64_t> basis) {
  const std::uint64_t header = r.uv();
  auto unzigzag = [](std::uint64_t z) { return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1)); };
  if ((header & 1) == 0) return unzigzag(header >> 1);
  const std::size_t k = basis.size();
  const std::uint64_t codes = (header >> 1) & ((std::uint64_t{1} << (2 * k)) - 1);
  if (codes == 0) r.fail("malformed scaled number (flagged, without coefficients)");
  __int128 v = unzigzag(header >> (1 + 2 * k));
  for (std::size_t i = 0; i < k; ++i) {
    const std::uint64_t code = (codes >> (2 * i)) & 3;
    if (code == 0) continue;
    std::int64_t c = code == 1 ? 1 : -1;
    if (code == 3) {
      c = r.sv();
      if (c >= -1 && c <= 1) r.fail("malformed scaled number (coefficient " + std::to_string(c) + " written out)");
    }
    if (basis[i] < 2) r.fail("malformed scaled number (a multiple of basis number " + std::to_string(basis[i]) + ")");
    v += static_cast<__int128>(c) * basis[i];
  }
  if (v > std::numeric_limits<std::int64_t>::max() || v < std::numeric_limits<std::int64_t>::min())
    r.fail("scaled number out of range");
  return static_cast<std::int64_t>(v);
}

/// A ranklist count: `uv` before version 5, then scaled against its dimension's extent.
std::int64_t get_count(Reader& r, std::int64_t stride, std::uint32_t version,
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

/// A rank number: `sv` before version 5, then scaled against the basis.
std::int64_t get_rank_number(Reader& r, std::uint32_t version, std::span<const std::int64_t> basis) {
  return version < 5 ? r.sv() : get_scaled(r, basis);
}

/// The dimensions of one descriptor (after its start and dimension count), checked: counts
/// >= 2, non-zero strides, nested strides with two or more dims, bounded size and span. Each
/// dimension is `uv count, sv stride` before version 5, then a scaled stride and count.
RankDescriptor get_descriptor_dims(Reader& r, std::int64_t start, std::size_t nd, std::uint32_t version,
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
    if (s > 0) hi += (c - 1) * s;
    else lo += (c - 1) * s;
    if (hi > kMaxRanks || lo < -kMaxRanks) r.fail("ranklist rank out of range");
    d.dims.emplace_back(c, s);
  }
  return d;
}

/// A ranklist. Version 2 files hold descriptors only (`sv start, uv ndims, dims`); version 3
/// items are descriptors (`sv start, uv 2*ndims, dims`) or groups (`sv stride, uv 2*k+1, uv
/// repeat, k descriptors`), expanded here; version 5 writes the rank numbers and counts
/// scaled against `basis`. Every resulting descriptor lies in [0, nranks); descriptors made by
/// expanding groups are charged to `budget` (bounded by the file's size).
RankList get_ranks(Reader& r, std::int64_t nranks, std::uint32_t version, std::uint64_t& budget,
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
    return get_descriptor_dims(r, start, static_cast<std::size_t>(version >= 3 ? code / 2 : code),
                               version, basis);
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
    const auto repeat =
        static_cast<std::uint64_t>(get_count(r, stride, version, basis, "ranklist group repeat count"));
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
ValueSeq get_seq(Reader& r, std::uint32_t version, std::span<const std::int64_t> basis) {
  bool scaled = false;
  std::size_t nb = 0;
  if (version >= 5) {
    const std::uint64_t code = r.uv();
    scaled = (code & 1) != 0;
    nb = r.bounded_count(code / 2, "value block", 2);
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

/// One array value: version 6 (put_array_values) or before (`uv nvalues`, the values). Values
/// written as progressions are charged to the expansion budget.
std::vector<std::int64_t> get_array_values(Reader& r, std::uint32_t version, std::uint64_t& budget) {
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
    r.bounded_count(n, "array value", 1);
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
  if (values.size() != n) r.fail("array progressions hold " + std::to_string(values.size()) + " of " + std::to_string(n) + " values");
  return values;
}

ArraySeq get_array_seq(Reader& r, std::uint32_t version, std::uint64_t& budget) {
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

Histogram get_hist(Reader& r, bool fixed_width_counts) {
  const std::uint64_t layout = r.uv();
  const std::uint64_t log_sub = layout % 5, coarsening = layout / 5;
  if (coarsening > Histogram::kMaxCoarsening)
    r.fail("histogram layout " + std::to_string(layout) + ": coarsening above " +
           std::to_string(Histogram::kMaxCoarsening));
  const auto sub = static_cast<std::uint32_t>(1u << log_sub);
  const auto shift = static_cast<std::uint32_t>(coarsening);
  std::size_t nb = r.count("histogram bin", 5);
  if (nb > Histogram::kMaxBins)
    r.fail("histogram with " + std::to_string(nb) + " bins (at most " +
           std::to_string(Histogram::kMaxBins) + ")");
  if (nb == 0) return Histogram::from_parts(sub, 0, 0, 0, 0, {}, shift);
  std::vector<HistogramBin> bins;
  bins.reserve(nb);
  std::uint64_t count = 0, next_index = 0, previous_max = 0;
  double sum = 0;
  const std::uint64_t max_index = (std::uint64_t{1024} >> shift);
  for (std::size_t i = 0; i < nb; ++i) {
    HistogramBin b;
    std::uint64_t idx = r.uv();
    if (idx >= max_index || next_index + idx >= max_index) r.fail("histogram bin index out of range");
    b.index = static_cast<std::uint32_t>(next_index + idx);
    next_index = std::uint64_t{b.index} + 1;
    b.count = fixed_width_counts ? bin_count_from_code(static_cast<std::uint16_t>(r.fixed(2))) : r.uv();
    if (b.count == 0) r.fail("empty histogram bin");
    if (b.count > ~std::uint64_t{0} - count) r.fail("histogram bin counts overflow");
    std::uint64_t gap = r.uv();
    if (gap > ~std::uint64_t{0} - previous_max) r.fail("histogram bin min overflows");
    b.min = previous_max + gap;
    std::uint64_t range = r.uv();
    if (range > ~std::uint64_t{0} - b.min) r.fail("histogram bin max overflows");
    b.max = b.min + range;
    previous_max = b.max;
    std::uint64_t mean_offset = r.uv();
    if (mean_offset > range) r.fail("histogram bin mean outside the bin");
    b.sum = static_cast<double>(b.min + mean_offset) * static_cast<double>(b.count);
    sum += b.sum;
    count += b.count;
    bins.push_back(b);
  }
  const std::uint64_t mn = bins.front().min, mx = bins.back().max;
  return Histogram::from_parts(sub, count, sum, mn, mx, std::move(bins), shift);
}

/// Everything decoded so far that later sections refer to, plus the expansion budget: tables
/// let one byte refer to a large entry, so copies are charged against a budget proportional
/// to the input size ("never allocates beyond the input's size" up to a constant factor).
struct TraceReader {
  /// Bin counts as two-byte codes: version 4 and later, unless header flag bit 1 (exact `uv`).
  bool fixed_width_counts = true;
  std::uint32_t version = kTraceFormatVersion;  ///< of the file being read
  /// The scale basis (version 5, section 1): what scaled numbers are multiples of.
  std::vector<std::int64_t> basis;
  std::int64_t nranks = 0;
  std::size_t nsites = 0;
  std::size_t nnames = 0;
  std::vector<RankList> ranks;
  std::vector<ValueSeq> seqs;
  std::vector<ArraySeq> arrays;
  std::vector<ElasticValue> elastics;
  std::vector<std::uint64_t> elastic_cost;
  /// Neighbour grids (version 6, section 7), each with its ranks' classes.
  std::vector<neighbour_grid::GridClasses> grids;
  std::vector<ElasticArray> array_elastics;
  std::vector<std::uint64_t> array_elastic_cost;
  std::uint64_t budget = 0;

  void charge(Reader& r, std::uint64_t units) {
    if (units > budget) r.fail("implausible expansion of shared table entries");
    budget -= units;
  }
  std::uint64_t index(Reader& r, std::size_t table_size, const char* what) {
    std::uint64_t i = r.uv();
    if (i > table_size)
      r.fail(std::string(what) + " index " + std::to_string(i) + " out of range (table has " +
             std::to_string(table_size) + ")");
    return i;
  }
  RankList rank_ref(Reader& r) {
    std::uint64_t i = index(r, ranks.size(), "ranklist");
    if (i == 0) return {};
    charge(r, ranks[i - 1].descriptors().size() + 1);
    return ranks[i - 1];
  }
  /// The neighbour grids before the elastic values (version 6; TraceWriter::put_grids).
  void read_grids(Reader& r, std::int64_t nranks) {
    namespace ng = neighbour_grid;
    const std::size_t n = r.count("neighbour grid", 4);
    if (n > ng::kMaxGrids) r.fail("more than " + std::to_string(ng::kMaxGrids) + " neighbour grids");
    for (std::size_t i = 0; i < n; ++i) {
      if (nranks < 2 || nranks > ng::kMaxRanks)
        r.fail("neighbour grid over " + std::to_string(nranks) + " ranks (2 to " + std::to_string(ng::kMaxRanks) +
               " allowed)");
      const std::uint64_t ndims = r.uv();
      if (ndims < 1 || ndims > ng::kMaxDims) r.fail("neighbour grid with " + std::to_string(ndims) + " dimensions");
      ng::Grid g;
      std::int64_t outer = nranks;
      for (std::uint64_t k = 0; k + 1 < ndims; ++k) {
        const std::int64_t stride = get_scaled(r, basis);
        if (stride < 1 || stride >= outer || outer % stride != 0 || outer / stride < 2)
          r.fail("neighbour grid stride " + std::to_string(stride) + " does not divide " + std::to_string(outer));
        g.dims.push_back(outer / stride);
        outer = stride;
      }
      if (outer < 2) r.fail("neighbour grid with an innermost dimension below 2");
      g.dims.push_back(outer);
      const std::uint64_t reach = r.uv();
      if (reach < 1 || reach > static_cast<std::uint64_t>(ng::kMaxReach))
        r.fail("neighbour grid reach " + std::to_string(reach) + " (1 to " + std::to_string(ng::kMaxReach) + ")");
      const std::uint64_t ndirs = r.uv();
      if (ndirs < 1 || ndirs > ng::kMaxDirections)
        r.fail("neighbour grid with " + std::to_string(ndirs) + " directions (1 to " +
               std::to_string(ng::kMaxDirections) + ")");
      std::uint64_t codes = 1;
      for (std::uint64_t k = 0; k < ndims; ++k) codes *= 2 * reach + 1;
      for (std::uint64_t k = 0; k < ndirs; ++k) {
        const std::uint64_t code = r.uv();
        if (code >= codes) r.fail("neighbour grid direction code " + std::to_string(code) + " out of range");
        const ng::Direction d = ng::direction_from_code(code, g.dims.size(), static_cast<int>(reach));
        if (std::find(g.directions.begin(), g.directions.end(), d) != g.directions.end())
          r.fail("neighbour grid direction repeated");
        g.directions.push_back(d);
      }
      grids.emplace_back(std::move(g));
    }
  }
  /// An elastic value stated over a neighbour grid (after its 0 alternatives; version 6).
  ElasticValue read_grid_value(Reader& r, std::uint64_t& cost) {
    namespace ng = neighbour_grid;
    ng::GridValue v;
    v.grid = static_cast<std::size_t>(r.uv());
    if (v.grid >= grids.size()) r.fail("neighbour grid index " + std::to_string(v.grid) + " out of range");
    const ng::GridClasses& classes = grids[v.grid];
    const std::uint64_t form = r.uv();
    if (form >= ng::kFormCount) r.fail("unknown neighbour grid form " + std::to_string(form));
    v.form = static_cast<ng::Form>(form);
    const std::size_t ndirs = classes.grid().directions.size();
    if (v.form == ng::Form::Filtered) {
      const std::uint64_t s = r.uv();
      if (s >= seqs.size())
        r.fail("sequence index " + std::to_string(s) + " out of range (table has " + std::to_string(seqs.size()) + ")");
      if (seqs[s].size() != ndirs)
        r.fail("neighbour grid template of " + std::to_string(seqs[s].size()) + " values for " +
               std::to_string(ndirs) + " directions");
      v.values = seqs[s].to_vector();
    }
    v.repeat = r.uv();
    if (v.repeat < 1 || v.repeat > (std::uint64_t{1} << 56))
      r.fail("neighbour grid repeat count " + std::to_string(v.repeat) + " out of range");
    ElasticValue e = ng::expand(v, classes);
    for (const auto& [seq, rl] : e.alternatives) {
      if (seq.empty()) r.fail("neighbour grid value gives rank " + std::to_string(rl.at(0)) + " no values");
      const std::uint64_t c = seq_cost(seq) + rl.descriptors().size() + 1;
      charge(r, c);
      cost += c;
    }
    return e;
  }
  /// An elastic array stated over a neighbour grid (after its 0 alternatives; version 6).
  ElasticArray read_grid_array(Reader& r, std::uint64_t& cost) {
    namespace ng = neighbour_grid;
    ng::GridArray v;
    v.grid = static_cast<std::size_t>(r.uv());
    if (v.grid >= grids.size()) r.fail("neighbour grid index " + std::to_string(v.grid) + " out of range");
    v.first_per_direction = r.sv();
    v.first_base = r.sv();
    v.stride = r.sv();
    v.length_per_direction = r.sv();
    v.length_base = r.sv();
    v.repeat_per_direction = r.sv();
    v.repeat_base = r.sv();
    const auto max_length = static_cast<std::int64_t>(std::min<std::uint64_t>(budget, std::uint64_t{1} << 24));
    auto e = ng::expand_array(v, grids[v.grid], max_length);
    if (!e)
      r.fail("neighbour grid array: a rank's length below 0 or above " + std::to_string(max_length) +
             ", or its repeat count below 1");
    for (const auto& [seq, rl] : e->alternatives) {
      const std::uint64_t c = seq_cost(seq) + rl.descriptors().size() + 1;
      charge(r, c);
      cost += c;
    }
    return std::move(*e);
  }
  template <class Seq>
  void read_elastic_table(Reader& r, const std::vector<Seq>& pool, std::vector<Elastic<Seq>>& out,
                          std::vector<std::uint64_t>& costs, const char* what, bool grid_forms) {
    std::size_t n = r.count(what, 3);
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      Elastic<Seq> e;
      std::size_t na = r.count("elastic alternative", 2);
      std::uint64_t cost = 1;
      if (na == 0 && grid_forms) {
        if constexpr (std::is_same_v<Seq, ValueSeq>) e = read_grid_value(r, cost);
        else e = read_grid_array(r, cost);
        out.push_back(std::move(e));
        costs.push_back(cost);
        continue;
      }
      if (na == 0) r.fail("elastic value without alternatives");
      for (std::size_t k = 0; k < na; ++k) {
        std::uint64_t s = r.uv();
        if (s >= pool.size())
          r.fail("sequence index " + std::to_string(s) + " out of range (table has " +
                 std::to_string(pool.size()) + ")");
        RankList rl = rank_ref(r);
        std::uint64_t c = seq_cost(pool[s]) + rl.descriptors().size() + 1;
        charge(r, c);
        cost += c;
        e.alternatives.emplace_back(pool[s], std::move(rl));
      }
      out.push_back(std::move(e));
      costs.push_back(cost);
    }
  }
  static std::uint64_t seq_cost(const ValueSeq& s) {
    std::uint64_t c = 1;
    for (const auto& b : s.blocks()) c += 1 + b.runs.size();
    return c;
  }
  static std::uint64_t seq_cost(const ArraySeq& s) {
    std::uint64_t c = 1;
    for (const auto& run : s.runs()) c += 1 + run.values.size();
    return c;
  }
  ElasticValue elastic_ref(Reader& r) {
    std::uint64_t i = index(r, elastics.size(), "elastic value");
    if (i == 0) return {};
    charge(r, elastic_cost[i - 1]);
    return elastics[i - 1];
  }
  ElasticArray array_elastic_ref(Reader& r) {
    std::uint64_t i = index(r, array_elastics.size(), "elastic array");
    if (i == 0) return {};
    charge(r, array_elastic_cost[i - 1]);
    return array_elastics[i - 1];
  }

  void check_ids(Reader& r, const ElasticValue& v, std::size_t limit, const char* what) {
    for (const auto& [seq, rl] : v.alternatives)
      for (const auto& b : seq.blocks())
        for (const auto& run : b.runs) {
          // A run's values are first, first+stride, ..., first+(count-1)*stride.
          __int128 last = static_cast<__int128>(run.first) +
                          static_cast<__int128>(run.stride) * static_cast<__int128>(run.count - 1);
          __int128 lo = std::min<__int128>(run.first, last), hi = std::max<__int128>(run.first, last);
          if (lo < 0 || hi >= static_cast<__int128>(limit))
            r.fail(std::string(what) + " out of range (table has " + std::to_string(limit) + ")");
        }
  }

  Node node(Reader& r, std::size_t depth) {
    if (depth > kMaxDepth) r.fail("loops nested deeper than " + std::to_string(kMaxDepth));
    charge(r, 4);
    Node n;
    std::uint8_t flags = r.u8();
    if (flags & ~(kNodeLoop | kNodeHasPresence)) r.fail("unknown node flags " + std::to_string(flags));
    n.ranks = rank_ref(r);
    if (flags & kNodeHasPresence) {
      n.presence = elastic_ref(r);
      if (n.presence.empty()) r.fail("presence flag without a presence sequence");
    }
    if (flags & kNodeLoop) {
      n.loop = std::make_unique<LoopNode>();
      n.loop->trips = elastic_ref(r);
      if (n.loop->trips.empty()) r.fail("loop without trip counts");
      std::size_t nb = r.count("loop body node", 2);
      n.loop->body.reserve(nb);
      for (std::size_t i = 0; i < nb; ++i) n.loop->body.push_back(node(r, depth + 1));
      return n;
    }
    n.event = std::make_unique<EventNode>();
    EventNode& e = *n.event;
    std::uint64_t op = r.uv();
    if (op >= kOpCount) r.fail("unknown operation " + std::to_string(op));
    e.op = static_cast<Op>(op);
    std::uint64_t site = r.uv();
    if (site >= nsites)
      r.fail("call-site id " + std::to_string(site) + " out of range (table has " +
             std::to_string(nsites) + ")");
    e.site = static_cast<std::uint32_t>(site);
    e.site_ids = elastic_ref(r);
    check_ids(r, e.site_ids, nsites, "call-site id");
    std::uint64_t nf = r.uv();
    if (nf > kFieldCount)
      r.fail("event with " + std::to_string(nf) + " fields (this reader knows " +
             std::to_string(kFieldCount) + ")");
    for (std::size_t f = 0; f < nf; ++f) e.fields[f] = elastic_ref(r);
    if (e.op == Op::Other)
      check_ids(r, e.fields[static_cast<std::size_t>(Field::NameId)], nnames, "function-name id");
    std::uint64_t na = r.uv();
    if (na > kArrayFieldCount)
      r.fail("event with " + std::to_string(na) + " array fields (this reader knows " +
             std::to_string(kArrayFieldCount) + ")");
    for (std::size_t f = 0; f < na; ++f) e.arrays[f] = array_elastic_ref(r);
    std::uint64_t ngroups = r.uv();
    bool firsts = false;
    if (version >= 7) {
      firsts = (ngroups & 1) != 0;
      ngroups >>= 1;
    }
    if (ngroups > EventNode::kMaxTimingGroups || ngroups == 1)
      r.fail("event with " + std::to_string(ngroups) + " timing groups (0 or 2.." +
             std::to_string(EventNode::kMaxTimingGroups) + ")");
    if (ngroups == 0) {
      e.compute = get_hist(r, fixed_width_counts);
      e.duration = get_hist(r, fixed_width_counts);
      e.first_compute = firsts ? get_first_compute(r, e.compute) : Histogram(e.compute.sub_bins());
      return n;
    }
    for (std::uint64_t g = 0; g < ngroups; ++g) {
      TimingGroup group;
      group.ranks = rank_ref(r);
      if (group.ranks.empty()) r.fail("timing group without ranks");
      group.compute = get_hist(r, fixed_width_counts);
      group.duration = get_hist(r, fixed_width_counts);
      group.first_compute = firsts ? get_first_compute(r, group.compute) : Histogram(group.compute.sub_bins());
      if (g == 0) {
        e.compute = group.compute;
        e.duration = group.duration;
        e.first_compute = group.first_compute;
      } else {
        if (group.compute.sub_bins() != e.compute.sub_bins() ||
            group.duration.sub_bins() != e.duration.sub_bins())
          r.fail("timing groups with different bins per octave");
        e.compute.merge(group.compute);
        e.duration.merge(group.duration);
        e.first_compute.merge(group.first_compute);
      }
      e.timing_groups.push_back(std::move(group));
    }
    return n;
  }

  /// A first-occurrence histogram (version 7): one value per rank, so never more values than
  /// the compute histogram it belongs to (up to the rounding of two-byte bin counts, at most
  /// 2^-11 of each), and in the same layout.
  Histogram get_first_compute(Reader& r, const Histogram& compute) {
    Histogram first = get_hist(r, fixed_width_counts);
    if (first.sub_bins() != compute.sub_bins())
      r.fail("first-occurrence compute histogram with other bins per octave than its compute times");
    if (first.count() > compute.count() + compute.count() / 1024)
      r.fail("first-occurrence compute histogram with more values (" + std::to_string(first.count()) +
             ") than its compute times (" + std::to_string(compute.count()) + ")");
    return first;
  }
};

}  // namespace

namespace {

std::string encode(const Trace& trace, std::uint32_t flags) {
  TraceWriter tw;
  tw.exact_counts = (flags & kFlagExactCounts) != 0;
  if (trace.nranks < 0 || trace.nranks >= std::int64_t{1} << (8 * kBasisNumberBytes))
    throw Error("encode_trace: rank count " + std::to_string(trace.nranks) +
                " out of range (a trace holds fewer than 2^32 ranks)");
  tw.basis = scale_basis::find_basis(trace);
  // Traces passed between the collector's processes hold some of the ranks only: no grids.
  if ((flags & kFlagExactCounts) == 0) tw.grids = neighbour_grid::find_trace_grids(trace.nodes, trace.nranks);
  tw.note_rank_valued(trace.nodes);
  // Encode the parts that fill the shared tables first; the tables precede them in the file.
  Writer comms;
  comms.uv(trace.comms.entries.size());
  for (const auto& e : trace.comms.entries) {
    comms.sv(e.id);
    comms.uv(tw.rank_id(e.members));
    comms.uv(tw.rank_id(e.holders));
  }
  Writer nodes;
  nodes.uv(trace.nodes.size());
  for (const auto& n : trace.nodes) tw.node(nodes, n);

  Writer payload;
  {
    Writer s;
    // The scale basis, its first number the rank count, each in a fixed width.
    s.u8(static_cast<std::uint8_t>(tw.basis.size()));
    for (const std::int64_t b : tw.basis) s.fixed(static_cast<std::uint64_t>(b), kBasisNumberBytes);
    // Keys front-coded (version 4): the bytes shared with the previous key, then the rest.
    // Keys come sorted, so the settings' common "setting.SCALATRACE_" is written once.
    s.uv(trace.metadata.size());
    std::string previous;
    for (const auto& [k, v] : trace.metadata) {
      std::string key = to_valid_utf8(k);
      std::size_t shared = 0;
      while (shared < key.size() && shared < previous.size() && key[shared] == previous[shared])
        ++shared;
      // Never split a character: the rest must be well-formed UTF-8 on its own.
      while (shared > 0 && shared < key.size() &&
             (static_cast<unsigned char>(key[shared]) & 0xC0) == 0x80)
        --shared;
      s.uv(shared);
      s.str(key.substr(shared));
      s.str(v);
      previous = std::move(key);
    }
    put_section(payload, kMetadata, std::move(s));
  }
  {
    Writer s;
    s.uv(trace.sites.modules.size());
    for (const auto& m : trace.sites.modules) s.str(m);
    s.uv(trace.sites.sites.size());
    for (const auto& site : trace.sites.sites) {
      s.uv(site.frames.size());
      for (const auto& f : site.frames) {
        s.uv(f.module);
        s.uv(f.offset);
      }
      s.str(site.symbol);
      s.str(site.location);
    }
    put_section(payload, kCallSites, std::move(s));
  }
  {
    Writer s;
    s.uv(trace.names.size());
    for (const auto& n : trace.names) s.str(n);
    put_section(payload, kNames, std::move(s));
  }
  put_table(payload, kRankLists, tw.ranks);
  put_table(payload, kValueSeqs, tw.seqs);
  put_table(payload, kArraySeqs, tw.arrays);
  {
    Writer s;
    tw.put_grids(s);
    s.uv(tw.elastics.count);
    s.raw(tw.elastics.out.data());
    put_section(payload, kValueElastics, std::move(s));
  }
  put_table(payload, kArrayElastics, tw.array_elastics);
  put_section(payload, kComms, std::move(comms));
  put_section(payload, kNodes, std::move(nodes));
  if (!trace.clusters.empty()) {
    Writer s;
    s.uv(trace.clusters.size());
    for (const auto& c : trace.clusters) {
      put_scaled(s, c.representative, tw.basis);
      put_ranks(s, c.members, tw.basis);
    }
    put_section(payload, kRankClusters, std::move(s));
  }

  Writer out;
  out.raw(std::string_view(kTraceMagic, 8));
  out.fixed(kTraceFormatVersion, 4);
  out.fixed(flags, 4);
  out.fixed(payload.data().size(), 8);
  out.fixed(crc32(payload.data()), 4);
  out.raw(payload.data());
  return std::move(out.data());
}

}  // namespace

std::string encode_trace(const Trace& trace, bool rank_segments_follow) {
  return encode(trace, rank_segments_follow ? kFlagRankSegments : 0);
}

std::string encode_trace_for_transfer(const Trace& trace) {
  return encode(trace, kFlagExactCounts);
}

std::size_t structure_bytes(const Trace& trace) {
  Trace copy = trace.clone();
  copy.metadata.clear();
  copy.clear_timing();
  return encode_trace(copy).size();
}

Trace decode_trace(std::string_view bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kTraceMagic, 8) != 0)
    throw FormatError("bad magic: not a scalatrace trace (.sct)");
  Reader h(bytes, 0);
  h.bytes(8);
  auto fixed = [&](int n) {
    std::string_view b = h.bytes(static_cast<std::size_t>(n));
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(b[static_cast<std::size_t>(i)]))
           << (8 * i);
    return v;
  };
  std::uint64_t version = fixed(4);
  if (version < kOldestReadableFormatVersion || version > kTraceFormatVersion)
    throw FormatError("unsupported format version " + std::to_string(version) +
                      " (this reader supports " + std::to_string(kOldestReadableFormatVersion) +
                      " to " + std::to_string(kTraceFormatVersion) + ")");
  const auto version32 = static_cast<std::uint32_t>(version);
  std::uint64_t flags = fixed(4);
  if (flags & ~std::uint64_t{kKnownFlags})
    throw FormatError("unknown header flags " + std::to_string(flags));
  std::uint64_t length = fixed(8);
  auto crc = static_cast<std::uint32_t>(fixed(4));
  std::size_t have = bytes.size() - kHeaderSize;
  if (length > have)
    throw FormatError("truncated: header announces " + std::to_string(length) +
                      " payload bytes, the file has " + std::to_string(have));
  const bool has_segments = (flags & kFlagRankSegments) != 0;
  if ((flags & kFlagExactCounts) && version32 < 4)
    throw FormatError("header flag 2 (exact bin counts) in a version " + std::to_string(version32) +
                      " file");
  if (length < have && !has_segments)
    throw FormatError("trailing bytes: header announces " + std::to_string(length) +
                      " payload bytes, the file has " + std::to_string(have));
  std::string_view payload = bytes.substr(kHeaderSize, length);
  if (crc32(payload) != crc) throw FormatError("checksum mismatch: the trace file is corrupt");

  Trace t;
  TraceReader tr;
  tr.fixed_width_counts = version32 >= 4 && (flags & kFlagExactCounts) == 0;
  tr.version = version32;
  tr.budget = 64 * static_cast<std::uint64_t>(bytes.size()) + (std::uint64_t{1} << 20);
  Reader outer(payload, kHeaderSize);
  outer.set_section("section list");
  std::uint64_t last_id = 0;
  bool seen[kLastKnownSection + 1] = {};
  while (!outer.done()) {
    std::uint64_t id = outer.uv();
    std::size_t len = outer.count("section byte");
    std::size_t base = kHeaderSize + outer.pos();
    std::string_view body = outer.bytes(len);
    if (id <= last_id) outer.fail("section " + std::to_string(id) + " out of order");
    last_id = id;
    if (id == kRankClusters) {
      for (std::uint64_t before = kMetadata; before <= kLastKnownSection; ++before)
        if (!seen[before]) outer.fail(std::string("missing section: ") + section_name(before));
      Reader r(body, base);
      r.set_section(section_name(id));
      std::size_t n = r.count("rank cluster", 2);
      if (n == 0) r.fail("empty rank-cluster list");
      for (std::size_t i = 0; i < n; ++i) {
        RankCluster c;
        c.representative = get_rank_number(r, version32, tr.basis);
        c.members = get_ranks(r, t.nranks, version32, tr.budget, tr.basis);
        t.clusters.push_back(std::move(c));
      }
      if (!r.done()) r.fail("unexpected bytes at the end of the section");
      validate_rank_clusters(t.clusters, t.nranks);
      continue;
    }
    if (id > kLastKnownSection) continue;  // later optional sections are skipped
    for (std::uint64_t before = kMetadata; before < id; ++before)
      if (!seen[before]) outer.fail(std::string("missing section: ") + section_name(before));
    seen[id] = true;
    Reader r(body, base);
    r.set_section(section_name(id));
    switch (id) {
      case kMetadata: {
        std::uint64_t n = 0;
        if (version32 >= 5) {
          // The scale basis: the rank count, then up to three grid strides, decreasing.
          const std::size_t k = r.u8();
          if (k == 0 || k > scale_basis::kMaxBasis) r.fail("scale basis of " + std::to_string(k) + " numbers");
          for (std::size_t i = 0; i < k; ++i) {
            const auto b = static_cast<std::int64_t>(r.fixed(kBasisNumberBytes));
            if (i > 0 && (b < 2 || b >= tr.basis.back()))
              r.fail("scale basis number " + std::to_string(b) + " (must decrease, from the rank count, and be at least 2)");
            tr.basis.push_back(b);
          }
          n = static_cast<std::uint64_t>(tr.basis.front());
        } else {
          n = r.uv();
        }
        if (n > static_cast<std::uint64_t>(kMaxRanks)) r.fail("rank count " + std::to_string(n));
        t.nranks = static_cast<std::int64_t>(n);
        tr.nranks = t.nranks;
        std::size_t m = r.count("metadata entry", 2);
        std::string previous;
        for (std::size_t i = 0; i < m; ++i) {
          std::string k;
          if (version32 >= 4) {
            const std::uint64_t shared = r.uv();
            if (shared > previous.size())
              r.fail("metadata key shares " + std::to_string(shared) +
                     " bytes with a previous key of " + std::to_string(previous.size()));
            tr.charge(r, shared);  // a shared prefix is a copy: bounded like table entries
            k = previous.substr(0, static_cast<std::size_t>(shared)) + r.str("metadata key");
            if (!is_valid_utf8(k)) r.fail("metadata key is not valid UTF-8");
          } else {
            k = r.str("metadata key");
          }
          t.metadata[k] = r.str("metadata value");
          previous = std::move(k);
        }
        break;
      }
      case kCallSites: {
        std::size_t nm = r.count("module");
        for (std::size_t i = 0; i < nm; ++i) {
          std::string path = r.str("module path");
          if (t.sites.intern_module(path) != i) r.fail("duplicate module \"" + path + "\"");
        }
        std::size_t ns = r.count("call site", 3);
        for (std::size_t i = 0; i < ns; ++i) {
          std::size_t nf = r.count("frame", 2);
          std::vector<Frame> frames;
          frames.reserve(nf);
          for (std::size_t k = 0; k < nf; ++k) {
            Frame f;
            std::uint64_t mod = r.uv();
            if (mod >= nm) r.fail("module id " + std::to_string(mod) + " out of range");
            f.module = static_cast<std::uint32_t>(mod);
            f.offset = r.uv();
            frames.push_back(f);
          }
          if (t.sites.intern(frames) != i) r.fail("duplicate call site " + std::to_string(i));
          t.sites.sites[i].symbol = r.str("symbol");
          t.sites.sites[i].location = r.str("location");
        }
        tr.nsites = t.sites.sites.size();
        break;
      }
      case kNames: {
        std::size_t n = r.count("name");
        t.names.reserve(n);
        for (std::size_t i = 0; i < n; ++i) t.names.push_back(r.str("name"));
        tr.nnames = t.names.size();
        break;
      }
      case kRankLists: {
        std::size_t n = r.count("ranklist", 3);
        tr.ranks.reserve(n);
        for (std::size_t i = 0; i < n; ++i) tr.ranks.push_back(get_ranks(r, t.nranks, version32, tr.budget, tr.basis));
        break;
      }
      case kValueSeqs: {
        std::size_t n = r.count("value sequence");
        tr.seqs.reserve(n);
        for (std::size_t i = 0; i < n; ++i) tr.seqs.push_back(get_seq(r, version32, tr.basis));
        break;
      }
      case kArraySeqs: {
        std::size_t n = r.count("array sequence");
        tr.arrays.reserve(n);
        for (std::size_t i = 0; i < n; ++i) tr.arrays.push_back(get_array_seq(r, version32, tr.budget));
        break;
      }
      case kValueElastics:
        if (version32 >= 6) tr.read_grids(r, t.nranks);
        tr.read_elastic_table(r, tr.seqs, tr.elastics, tr.elastic_cost, "elastic value", version32 >= 6);
        break;
      case kArrayElastics:
        tr.read_elastic_table(r, tr.arrays, tr.array_elastics, tr.array_elastic_cost, "elastic array", version32 >= 6);
        break;
      case kComms: {
        std::size_t n = r.count("communicator", 3);
        t.comms.entries.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
          CommEntry e;
          e.id = r.sv();
          e.members = tr.rank_ref(r);
          e.holders = tr.rank_ref(r);
          t.comms.entries.push_back(std::move(e));
        }
        break;
      }
      case kNodes: {
        std::size_t n = r.count("node", 2);
        t.nodes.reserve(n);
        for (std::size_t i = 0; i < n; ++i) t.nodes.push_back(tr.node(r, 0));
        break;
      }
    }
    if (!r.done()) r.fail("unexpected bytes at the end of the section");
  }
  for (std::uint64_t id = kMetadata; id <= kLastKnownSection; ++id)
    if (!seen[id]) throw FormatError(std::string("missing section: ") + section_name(id));
  if (has_segments) format_detail::read_rank_segments(t, bytes.substr(kHeaderSize + length));
  return t;
}

void write_trace_file(const Trace& trace, const std::string& path) {
  write_file_safely(path, encode_trace(trace));
}

Trace decode_trace_checked(std::string_view bytes) {
  Trace trace = decode_trace(bytes);
  validate_trace(trace, default_walk_budget(bytes.size()));
  return trace;
}

Trace read_trace_file(const std::string& path) {
  const std::string bytes = read_regular_file(path, "trace file");
  try {
    return decode_trace_checked(bytes);
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  }
}

}  // namespace scalatrace
