#pragma once
// Internal to the core: what the .sct writer (sct_writer.cpp), reader (sct_reader.cpp,
// sct_reader_values.cpp) and rank segments (format_segments.cpp) share: the format's constants
// and section ids, the reader that names its section in errors, text and call-site tables (also
// in the raw stream, raw.cpp), scaled numbers and two-byte bin counts. Numbers go through the
// byte codec, support/wire.hpp. docs/format.md is the contract.
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "scalatrace/format/format.hpp"
#include "scalatrace/model/trace.hpp"
#include "scalatrace/support/wire.hpp"

namespace scalatrace::sct {

// ---------------------------------------------------------------- constants of the format
inline constexpr std::size_t kHeaderSize = 8 + 4 + 4 + 8 + 4;  // magic, version, flags, length, crc
inline constexpr std::uint32_t kKnownFlags =
    kFlagRankSegments | kFlagExactCounts | kFlagEntropyCoded | kFlagExactSums;  // docs/format.md
inline constexpr std::size_t kMaxDepth = 64;                                    // loop nesting
inline constexpr std::size_t kMaxFrames = 1024;
/// Event field mask (version 9): the event keeps some fields as value histograms (lossy traces).
inline constexpr std::uint64_t kLossyMaskBit = std::uint64_t{1} << 22;  // frames of a call site (version 8 tree)
inline constexpr std::size_t kMaxDims = 16;                             // ranklist descriptor dimensions
inline constexpr std::int64_t kMaxRanks = std::int64_t{1} << 40;
inline constexpr std::uint64_t kMaxSeqSize = std::uint64_t{1} << 62;
/// Scaled numbers (version 5) are written for magnitudes below this; a value sequence with a
/// larger run value is written plain.
inline constexpr std::int64_t kScaledLimit = std::int64_t{1} << 56;
/// Bytes of each scale-basis number (version 5, section 1): a fixed width, so that the basis
/// takes the same bytes at every rank count.
inline constexpr int kBasisNumberBytes = 4;

/// Payloads up to this size are entropy-coded in final files (coding runs at about 1 MB/s;
/// larger payloads, e.g. of traces with long rank segments, are stored plain).
inline constexpr std::size_t kMaxEntropyCodedPayload = std::size_t{4} << 20;
/// The most bytes a coded payload of `coded_bytes` may decode to (checked before decoding):
/// 256 times its size, plus 64 KiB.
constexpr std::size_t entropy_decoded_limit(std::size_t coded_bytes) {
  return 256 * coded_bytes + (std::size_t{1} << 16);
}

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

/// A section's name in error messages ("node tree").
const char* section_name(std::uint64_t id);

enum NodeFlags : std::uint8_t {
  kNodeLoop = 1,
  kNodeHasPresence = 2,
};

// ---------------------------------------------------------------- reading
/// The byte codec's reader, whose errors say "<what> in <section> at byte <offset>".
class SectionReader : public wire::Reader {
 public:
  using wire::Reader::Reader;
  void set_section(std::string name) { section_ = std::move(name); }

 protected:
  std::string describe(const std::string& what) const override;

 private:
  std::string section_ = "header";
};

/// Text (`str`): stored as UTF-8, ill-formed bytes written as U+FFFD; a reader fails on text
/// that is not UTF-8 ("<what> is not valid UTF-8"). The raw stream stores its text the same way.
void put_text(wire::Writer& w, std::string_view s);
std::string get_text(wire::Reader& r, const char* what);
/// The call-site table of version 8 (section 2): `uv nmodules`, module paths, then the calling
/// context tree: `uv nnodes`, per node `uv back` (its index minus its parent's; a node whose
/// parent is the root has back = index + 1), `uv module`, `uv offset` (a frame, outermost
/// first); then `uv nsites`, per site `uv node` (its innermost frame), symbol and location.
/// Each frame shared by several call sites' paths is stored once.
void put_call_site_tree(wire::Writer& w, const CallSiteTable& sites);
/// A call-site table (version 7 and earlier, and the raw stream): `uv nmodules`, module paths (text), `uv nsites`, per
/// site `uv nframes`, frames (`uv module, uv offset`), symbol and location (text). The raw stream's trailer holds it
/// the same way.
void put_call_site_table(wire::Writer& w, const CallSiteTable& sites);
/// Section 1's body: the scale basis, then the metadata with front-coded keys (version 4).
void put_metadata_body(wire::Writer& w, const std::map<std::string, std::string>& metadata,
                       std::span<const std::int64_t> basis);

// ---------------------------------------------------------------- entropy coding (version 8)
/// The text the entropy coder's model reads before the payload of a file of `version`
/// (payload_primer.cpp; docs/format.md "Entropy coding"): version 10 and later, section 1 of a
/// typical collector trace and recurring texts; versions 8 and 9, their own shorter text.
std::string_view payload_primer(std::uint32_t version);

// ---------------------------------------------------------------- scaled numbers (version 5)
/// A scaled number (docs/format.md "Scaled numbers"): one `uv` whose bit 0 says whether the
/// number has basis coefficients. Without: the value's zigzag code above it. With: two bits per
/// basis number above it (coefficient 0, +1, -1, or 3: it follows as `sv`), the remainder's
/// zigzag code above those, then the coefficients that follow. Throws Error beyond kScaledLimit.
void put_scaled(wire::Writer& w, std::int64_t v, std::span<const std::int64_t> basis);
std::int64_t get_scaled(wire::Reader& r, std::span<const std::int64_t> basis);

// ---------------------------------------------------------------- histogram bin counts (version 4)
/// A bin count in two bytes, so that a histogram's size does not depend on how many values it
/// holds: below 2^15 the count itself; above, a float of 5 exponent and 10 mantissa bits,
/// (1024 + m) << (e + 5), rounded to nearest (relative error at most 2^-11). Counts beyond the
/// largest code (2047 << 36, about 1.4e14) are stored as that code.
std::uint16_t bin_count_code(std::uint64_t count);
std::uint64_t bin_count_from_code(std::uint16_t code);

// ---------------------------------------------------------------- timing values (version 8)
/// A nanosecond value as a time code: exact below 2^(M+1), above it the leading bit's position
/// and the next M bits, rounded to nearest (relative error at most 2^-(M+1)), with M =
/// kTimeMantissaBits. Monotone: a <= b implies code(a) <= code(b), so bins keep min <= mean <=
/// max. Final files store timing values this way (docs/format.md, "Histogram"); traces passed
/// between processes keep them exact.
inline constexpr std::uint32_t kTimeMantissaBits = 6;
std::uint32_t time_code(std::uint64_t ns);
std::uint64_t time_from_code(std::uint32_t code);
inline constexpr std::uint32_t kMaxTimeCode =
    (2u << kTimeMantissaBits) + (63 - kTimeMantissaBits) * (1u << kTimeMantissaBits) - 1;

// ---------------------------------------------------------------- node columns (version 11)
/// Final files of version 11 store the node tree's numbers in five columns, each `uv length`
/// then its bytes (docs/format.md, "Node columns"), then the timing columns.
enum NodeColumn : std::size_t {
  kColumnStructure,  ///< per node: `u8` flags, `uv` ranklist ref; per loop: `uv` body count
  kColumnOps,        ///< per event: `uv` op
  kColumnSites,      ///< per event: `uv` call-site id
  kColumnMasks,      ///< per event: `uv` field mask
  kColumnRefs,       ///< presence, trip counts, site ids, field refs, lossy fields, in node order
  kNodeColumnCount,
};

// ---------------------------------------------------------------- timing columns (version 11)
/// Final files of version 11 store the events' timing after the node tree's nodes, as streams
/// of like numbers (docs/format.md, "Timing columns"), each `uv length` then its bytes: the
/// entropy coder predicts a stream of time codes better than time codes between node records.
enum TimingColumn : std::size_t {
  kColumnGroups,        ///< per event: `uv 4 * ngroups + 2 * explicit_counts + firsts`, group ranklist refs
  kColumnLayouts,       ///< per histogram: `uv layout`, `uv nbins`
  kColumnCounts,        ///< per bin: `u16le` count code (not the implied last bin of a duration histogram)
  kColumnMinOctaves,    ///< per bin: `u8` the bin min's time code >> kTimeMantissaBits
  kColumnMinMantissas,  ///< per bin: `u8` the bin min's time code & (2^kTimeMantissaBits - 1)
  kColumnSpreads,       ///< per bin holding more than one value: `uv` max code - min code
  kColumnMeans,         ///< per bin holding more than one value: `uv` mean code - min code
  kTimingColumnCount,
};

// ---------------------------------------------------------------- values (sct_reader_values.cpp)
// Each checked as it is read; every problem is r.fail(...). The writer's counterparts are the
// put_* functions of sct_writer.cpp.
/// A rank number: `sv` before version 5, then scaled against the basis.
std::int64_t get_rank_number(SectionReader& r, std::uint32_t version, std::span<const std::int64_t> basis);
/// A ranklist whose ranks lie in [0, nranks); ranks made by expanding descriptor groups are
/// charged to `budget`.
RankList get_ranks(SectionReader& r, std::int64_t nranks, std::uint32_t version, std::uint64_t& budget,
                   std::span<const std::int64_t> basis);
ValueSeq get_seq(SectionReader& r, std::uint32_t version, std::span<const std::int64_t> basis);
/// An array sequence; values written as progressions are charged to `budget`.
ArraySeq get_array_seq(SectionReader& r, std::uint32_t version, std::uint64_t& budget);
/// A histogram; bin counts as two-byte codes with `fixed_width_counts`, else as `uv`.
Histogram get_hist(SectionReader& r, bool fixed_width_counts);
/// A version 8 histogram: bin counts as `uv` count codes, bin values as time codes (or exact,
/// with `exact`: traces passed between processes; with `exact_sums` too, header flag bit 3,
/// each bin's sum instead of its mean).
Histogram get_hist_v8(SectionReader& r, bool exact, bool exact_sums);
/// A version 11 histogram from the timing columns (`columns[kColumn...]`). `implied_count`: the
/// histogram's total count when its last bin's count is not stored (a duration histogram:
/// its compute histogram's count), else 0. The bins' indices follow from their min values.
Histogram get_hist_columns(std::span<SectionReader> columns, std::uint64_t implied_count);

// ---------------------------------------------------------------- rank segments
/// Parses the rank segments after a payload (docs/format.md, "Rank segments"), checks each one
/// and puts their nodes before `trace`'s (prepend_rank_segments). Throws FormatError.
void read_rank_segments(Trace& trace, std::string_view trailer);

}  // namespace scalatrace::sct
