// Rank segments of the .sct format: stretches of one rank's events that the collector moved
// out of memory under SCALATRACE_MEMORY and rank 0 appended after the merged trace.
// docs/format.md, "Rank segments".
#include <cstring>
#include <string>
#include <vector>

#include "format/format_detail.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/merge/merge.hpp"

namespace scalatrace {
namespace {

constexpr char kSegmentMagic[8] = {'S', 'C', 'T', 'S', 'E', 'G', 'M', 'T'};
constexpr std::size_t kSegmentHeaderSize = 8 + 8 + 8 + 4;  // magic, rank, length, crc
constexpr std::size_t kTraceFlagsOffset = 8 + 4;           // magic, version

void put_fixed(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::uint64_t get_fixed(std::string_view b) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < b.size(); ++i)
    v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(b[i])) << (8 * i);
  return v;
}

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
  const std::string body = encode_trace(segment);
  std::string out(kSegmentMagic, sizeof kSegmentMagic);
  out.reserve(kSegmentHeaderSize + body.size());
  put_fixed(out, static_cast<std::uint64_t>(rank), 8);
  put_fixed(out, body.size(), 8);
  put_fixed(out, format_detail::crc32(body), 4);
  out += body;
  return out;
}

void format_detail::read_rank_segments(Trace& trace, std::string_view trailer) {
  std::vector<Trace> segments;
  std::size_t pos = 0;
  while (pos < trailer.size()) {
    const std::string which = "rank segment " + std::to_string(segments.size());
    const std::string_view rest = trailer.substr(pos);
    if (rest.size() < kSegmentHeaderSize)
      throw FormatError("truncated: " + which + " has " + std::to_string(rest.size()) +
                        " bytes, less than its " + std::to_string(kSegmentHeaderSize) + "-byte header");
    if (std::memcmp(rest.data(), kSegmentMagic, sizeof kSegmentMagic) != 0)
      throw FormatError("bad magic at " + which + " (bytes after the payload are not a rank segment)");
    const std::uint64_t rank = get_fixed(rest.substr(8, 8));
    const std::uint64_t length = get_fixed(rest.substr(16, 8));
    const auto crc = static_cast<std::uint32_t>(get_fixed(rest.substr(24, 4)));
    if (rank >= static_cast<std::uint64_t>(trace.nranks))
      throw FormatError(which + ": rank " + std::to_string(rank) + " outside the trace's " +
                        std::to_string(trace.nranks) + " ranks");
    if (length > rest.size() - kSegmentHeaderSize)
      throw FormatError("truncated: " + which + " announces " + std::to_string(length) +
                        " bytes, the file has " + std::to_string(rest.size() - kSegmentHeaderSize));
    const std::string_view body = rest.substr(kSegmentHeaderSize, length);
    if (format_detail::crc32(body) != crc)
      throw FormatError("checksum mismatch in " + which + ": the trace file is corrupt");
    if (body.size() >= kTraceFlagsOffset + 4 && get_fixed(body.substr(kTraceFlagsOffset, 4)) != 0)
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
