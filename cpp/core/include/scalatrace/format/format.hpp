#pragma once
// The single-file binary trace (.sct), specified in docs/format.md.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scalatrace/model/trace.hpp"

namespace scalatrace {

inline constexpr char kTraceMagic[8] = {'S', 'C', 'A', 'L', 'A', 'T', 'R', 'C'};
/// Version written. 3: ranklists may hold groups of descriptors (docs/format.md, "Ranklist");
/// 4: histogram bin counts have a fixed width (docs/format.md, "Histogram"), metadata keys are
/// front-coded; 5: rank numbers are written scaled against the trace's scale basis (its rank
/// count and grid strides), so a trace's size does not depend on its rank count
/// (docs/format.md, "Scaled numbers"); 6: elastic values may be stated over a neighbour grid
/// (docs/format.md, "Neighbour grid"), so a halo exchange's kinds of rank take no room of their own;
/// 7: an event's timing may hold each rank's first-occurrence compute time (docs/format.md, "Event node");
/// 8: call sites as a calling-context tree, event fields as a presence mask, timing values as
/// 13-bit codes, and the payload entropy-coded (docs/format.md, "Entropy coding");
/// 9: an event may keep point-to-point fields as value histograms (lossy traces, docs/lossy.md);
/// 10: the entropy coder's primer holds a typical metadata section (docs/format.md, "Primer");
/// 11: final files store the events' timing in columns after the nodes, bin indices implied by
/// their min values, call sites with shared symbols and offsets relative to the module's last
/// (docs/format.md, "Timing columns").
inline constexpr std::uint32_t kTraceFormatVersion = 11;
/// Oldest version read (2: bounded histograms and timing groups; its ranklists have no groups).
inline constexpr std::uint32_t kOldestReadableFormatVersion = 2;
/// Header flag: rank segments (encode_rank_segment) follow the payload. docs/format.md.
inline constexpr std::uint32_t kFlagRankSegments = 1;
/// Header flag: histogram bin counts are exact `uv` numbers, not two-byte codes (traces passed
/// between the collector's processes, so that counts are rounded once, in the file).
inline constexpr std::uint32_t kFlagExactCounts = 2;
/// Header flag (version 8): the payload is entropy-coded (support/entropy_coder.hpp); its
/// length and CRC in the header are those of the coded bytes. docs/format.md, "Entropy coding".
inline constexpr std::uint32_t kFlagEntropyCoded = 4;
/// Header flag (with kFlagExactCounts): histogram bins store their sums (as the excess over
/// min × count) instead of their means rounded to a nanosecond, so that a trace passed up the
/// merge tree loses nothing and times are rounded once, in the final file.
inline constexpr std::uint32_t kFlagExactSums = 8;

/// Bins each timing histogram keeps in a final file (format version 8): the rest are combined
/// with their neighbours, which keeps counts, sums (so means), minima and maxima. A trace whose
/// metadata holds `setting.SCALATRACE_TIMING_BINS` (1..8; the collector's setting) keeps that
/// many. Traces passed between processes keep every bin.
inline constexpr std::size_t kDefaultTimingBins = 2;
inline constexpr char kTimingBinsKey[] = "setting.SCALATRACE_TIMING_BINS";
/// How a file's payload is stored: entropy-coded where that is smaller (the default, header
/// flag kFlagEntropyCoded) or plain (rank segments, written while the program runs; tests and
/// tools that look at the format's bytes).
enum class PayloadCoding { Entropy, Plain };
/// The file's bytes. With `rank_segments_follow` the header says that rank segments are
/// appended after these bytes (the collector streams them from the ranks that spilled).
std::string encode_trace(const Trace& trace, bool rank_segments_follow = false,
                         PayloadCoding coding = PayloadCoding::Entropy);
/// The bytes of a trace passed between processes (the collector's radix-tree merge): as
/// encode_trace, but with header flag kFlagExactCounts, so bin counts are exact whatever their
/// size. decode_trace reads both.
std::string encode_trace_for_transfer(const Trace& trace);
/// Bytes of the trace encoded without its metadata and timing histograms: the part that
/// depends only on the communication structure (node tree, ranklists, parameter sequences),
/// comparable across runs and rank counts. Measured on the plain (not entropy-coded) bytes.
std::size_t structure_bytes(const Trace& trace);
/// One rank segment: a stretch of rank `rank`'s events (a one-rank trace whose nodes all
/// belong to `rank`, from make_rank_trace) framed with its rank, length and CRC-32. A reader
/// puts the segments, in file order, before the merged nodes (prepend_rank_segments), so the
/// rank's events are its segments' events followed by its events in the merged trace.
std::string encode_rank_segment(std::int64_t rank, const Trace& segment);
/// Throws FormatError with a message naming what is wrong (truncated, bad magic, version,
/// checksum, out-of-range ids, implausible sizes). Never allocates beyond the input's size.
Trace decode_trace(std::string_view bytes);
/// One part of a trace file in trace_byte_breakdown: its bytes in the payload's sections
/// (decoded, when the file is entropy-coded) and its share of the bytes the file stores.
struct ByteBreakdownPart {
  std::string part;  ///< "header", a section's name ("call-site table", ...), "node tree", "timing", "rank segments"
  std::uint64_t bytes = 0;
  double stored_bytes = 0;
};
/// Where a trace file's bytes go: the header, each section (with its id and length prefix),
/// the node tree split into its structure and the events' timing, rank segments. In an
/// entropy-coded file a part's stored bytes are what coding its bytes cost (the coder's
/// estimate, scaled to the file's coded payload), so the stored bytes of all parts add up to
/// the file's size. Throws FormatError as decode_trace.
std::vector<ByteBreakdownPart> trace_byte_breakdown(std::string_view bytes);
/// decode_trace, then validate_trace (trace_validation.hpp) within the default walk budget:
/// what read_trace_file does after reading the file. Throws FormatError.
Trace decode_trace_checked(std::string_view bytes);
/// Writes through a SafeFileWriter (safe_file.hpp): unique temporary file, fsync, rename;
/// refuses to replace anything that is not a regular file. Throws Error with the reason.
void write_trace_file(const Trace& trace, const std::string& path);
/// Reads, decodes and validates; FormatError messages start with the path (once).
Trace read_trace_file(const std::string& path);

}  // namespace scalatrace
