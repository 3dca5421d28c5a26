// Rank segments of the .sct format: stretches of one rank's events that the collector moved
// out of memory under SCALATRACE_MEMORY and rank 0 appended after the merged trace.
// docs/format.md, "Rank segments".
#include <cstring>
#include <string>
#include <vector>

#include "format/sct_codec.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/support/wire.hpp"

namespace scalatrace {
namespace {

constexpr char kSegmentMagic[8] = {'S', 'C', 'T', 'S', 'E', 'G', 'M', 'T'};
constexpr std::size_t kSegmentHeaderSize = 8 + 8 + 8 + 4;  // magic, rank, length, crc
constexpr std::size_t kTraceFlagsOffset = 8 + 4;           // magic, version

/// True if every node (and every node in its loops) belongs to `rank` only.
bool belongs_to(const std::vector<Node>& nodes, const RankList& rank) {
  for (const Node& n : nodes) {
    if (n.ranks != rank) return false;
    if (n.is_loop() && !belongs_to(n.loop->body, rank)) return false;
  }
  return true;
}

}  // namespace

std::string encode_rank_segment(std::int64_t rank, const Trace& segment) {
  if (rank < 0 || rank >= segment.nranks)
    throw Error("encode_rank_segment: rank " + std::to_string(rank) + " outside the trace's " +
                std::to_string(segment.nranks) + " ranks");
  // Plain: a rank writes its segments while its program runs, where coding would cost it time.
  const std::string body = encode_trace(segment, false, PayloadCoding::Plain);
  wire::Writer out;
  out.data().reserve(kSegmentHeaderSize + body.size());
  out.raw(std::string_view(kSegmentMagic, sizeof kSegmentMagic));
  out.fixed(static_cast<std::uint64_t>(rank), 8);
  out.fixed(body.size(), 8);
  out.fixed(wire::crc32(body), 4);
  out.raw(body);
  return out.take();
}

void sct::read_rank_segments(Trace& trace, std::string_view trailer) {
  std::vector<Trace> segments;
  std::size_t pos = 0;
  while (pos < trailer.size()) {
    const std::string which = "rank segment " + std::to_string(segments.size());
    const std::string_view rest = trailer.substr(pos);
    if (rest.size() < kSegmentHeaderSize)
      throw FormatError("truncated: " + which + " has " + std::to_string(rest.size()) + " bytes, less than its " +
                        std::to_string(kSegmentHeaderSize) + "-byte header");
    if (std::memcmp(rest.data(), kSegmentMagic, sizeof kSegmentMagic) != 0)
      throw FormatError("bad magic at " + which + " (bytes after the payload are not a rank segment)");
    wire::Reader header(rest.substr(sizeof kSegmentMagic, kSegmentHeaderSize - sizeof kSegmentMagic));
    const std::uint64_t rank = header.fixed(8);
    const std::uint64_t length = header.fixed(8);
    const auto crc = static_cast<std::uint32_t>(header.fixed(4));
    if (rank >= static_cast<std::uint64_t>(trace.nranks))
      throw FormatError(which + ": rank " + std::to_string(rank) + " outside the trace's " +
                        std::to_string(trace.nranks) + " ranks");
    if (length > rest.size() - kSegmentHeaderSize)
      throw FormatError("truncated: " + which + " announces " + std::to_string(length) + " bytes, the file has " +
                        std::to_string(rest.size() - kSegmentHeaderSize));
    const std::string_view body = rest.substr(kSegmentHeaderSize, length);
    if (wire::crc32(body) != crc) throw FormatError("checksum mismatch in " + which + ": the trace file is corrupt");
    if (body.size() >= kTraceFlagsOffset + 4 && wire::Reader(body.substr(kTraceFlagsOffset, 4)).fixed(4) != 0)
      throw FormatError(which + " has header flags of its own (segments do not nest)");
    Trace segment;
    try {
      segment = decode_trace(body);
    } catch (const FormatError& e) {
      throw FormatError(which + " (rank " + std::to_string(rank) + "): " + e.what());
    }
    if (segment.nranks != trace.nranks)
      throw FormatError(which + " says " + std::to_string(segment.nranks) + " ranks, the trace " +
                        std::to_string(trace.nranks));
    if (!belongs_to(segment.nodes, RankList::single(static_cast<std::int64_t>(rank))))
      throw FormatError(which + " holds nodes of ranks other than its rank " + std::to_string(rank));
    segments.push_back(std::move(segment));
    pos += kSegmentHeaderSize + length;
  }
  prepend_rank_segments(trace, std::move(segments));
}

}  // namespace scalatrace
