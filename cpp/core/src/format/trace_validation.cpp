// Whole-structure checks of decoded traces and raw streams (see trace_validation.hpp).
#include "scalatrace/format/trace_validation.hpp"

#include <algorithm>

#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {

std::int64_t max_rank(const RankList& rl) {
  std::int64_t hi = -1;
  for (const auto& d : rl.descriptors()) {
    std::int64_t top = d.start;
    for (const auto& [count, stride] : d.dims)
      if (stride > 0) top += (count - 1) * stride;
    hi = std::max(hi, top);
  }
  return hi;
}
namespace {

/// Length of the well-formed UTF-8 sequence starting at s[i], or 0 if it is ill-formed.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  if (b1 < lo || b1 > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < 0x80 || b > 0xBF) return 0;
  }
  return n;
}

/// Smallest and largest value of a run (first + k * stride, k < count), without overflow.
std::pair<__int128, __int128> run_range(const ValueRun& run) {
  const __int128 last =
      static_cast<__int128>(run.first) + static_cast<__int128>(run.stride) * static_cast<__int128>(run.count - 1);
  return {std::min<__int128>(run.first, last), std::max<__int128>(run.first, last)};
}

bool all_at_least(const ElasticValue& v, std::int64_t lo, std::int64_t hi = INT64_MAX) {
  for (const auto& [seq, ranks] : v.alternatives)
    for (const auto& block : seq.blocks())
      for (const auto& run : block.runs) {
        const auto [mn, mx] = run_range(run);
        if (mn < lo || mx > hi) return false;
      }
  return true;
}

bool all_at_least(const ElasticArray& v, std::int64_t lo) {
  for (const auto& [seq, ranks] : v.alternatives)
    for (const auto& run : seq.runs())
      for (std::int64_t x : run.values)
        if (x < lo) return false;
  return true;
}

constexpr Field kNonNegativeFields[] = {Field::Bytes, Field::DtSize, Field::Bytes2, Field::DtSize2};
constexpr ArrayField kNonNegativeArrays[] = {ArrayField::SendCounts, ArrayField::RecvCounts};

void check_node(const Node& n, std::size_t path_index) {
  const auto where = [&] { return "node " + std::to_string(path_index) + ": "; };
  if (!n.presence.empty() && !all_at_least(n.presence, 0, 1))
    throw FormatError(where() + "presence value other than 0 or 1");
  if (n.loop) {
    if (!all_at_least(n.loop->trips, 0)) throw FormatError(where() + "negative loop trip count");
    for (std::size_t i = 0; i < n.loop->body.size(); ++i) check_node(n.loop->body[i], i);
    return;
  }
  if (!n.event) throw FormatError(where() + "node with neither event nor loop");
  const EventNode& e = *n.event;
  for (Field f : kNonNegativeFields)
    if (!all_at_least(e.fields[static_cast<std::size_t>(f)], 0))
      throw FormatError(where() + "negative " + std::string(field_name(f)) + " in a " + std::string(op_name(e.op)));
  for (ArrayField f : kNonNegativeArrays)
    if (!all_at_least(e.arrays[static_cast<std::size_t>(f)], 0))
      throw FormatError(where() + "negative value in " + std::string(array_field_name(f)) + " of a " +
                        std::string(op_name(e.op)));
}

std::int64_t max_rank(const std::vector<Node>& nodes) {
  std::int64_t hi = -1;
  for (const auto& n : nodes) {
    hi = std::max(hi, max_rank(n.ranks));
    if (n.loop) hi = std::max(hi, max_rank(n.loop->body));
  }
  return hi;
}

/// A merged trace (its nodes carry ranklists) must mention its last rank somewhere: a rank
/// count larger than that is not justified by the file (a crafted header would make analyses
/// allocate for ranks that do not exist).
void check_rank_count(const Trace& trace) {
  const bool merged =
      std::any_of(trace.nodes.begin(), trace.nodes.end(), [](const Node& n) { return !n.ranks.empty(); });
  if (!merged) return;
  std::int64_t hi = max_rank(trace.nodes);
  for (const auto& c : trace.comms.entries) hi = std::max({hi, max_rank(c.members), max_rank(c.holders)});
  if (hi + 1 < trace.nranks)
    throw FormatError("the trace declares " + std::to_string(trace.nranks) +
                      " ranks, but no event or communicator mentions a rank above " + std::to_string(hi) +
                      ": the rank count is not justified by the file");
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_valid_utf8(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

void require_utf8(std::string_view s, const char* what) {
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0)
      throw FormatError(std::string(what) + " is not valid UTF-8 (byte " + std::to_string(i) + " of " +
                        std::to_string(s.size()) + ")");
    i += n;
  }
}

void validate_event_values(const Event& e) {
  for (Field f : kNonNegativeFields)
    if (e[f] < 0)
      throw FormatError("negative " + std::string(field_name(f)) + " " + std::to_string(e[f]) + " in a " +
                        std::string(op_name(e.op)));
  for (ArrayField f : kNonNegativeArrays)
    for (std::int64_t v : e[f])
      if (v < 0)
        throw FormatError("negative value " + std::to_string(v) + " in " + std::string(array_field_name(f)) + " of a " +
                          std::string(op_name(e.op)));
}

void validate_trace(const Trace& trace, std::uint64_t walk_budget) {
  check_rank_count(trace);
  for (std::size_t i = 0; i < trace.nodes.size(); ++i) check_node(trace.nodes[i], i);
  std::uint64_t walked = 0;
  for (std::int64_t rank = 0; rank < trace.nranks && walked < walk_budget; ++rank) {
    ++walked;  // a rank without events costs a walk of the tree too
    Cursor cursor(trace, rank, TimingMode::None);
    cursor.draw_lossy_values(0);  // a lossy trace's histogram fields: draws within their recorded range
    while (walked < walk_budget && cursor.next()) ++walked;
  }
}

std::uint64_t default_walk_budget(std::uint64_t file_bytes) {
  constexpr std::uint64_t kMinimum = 100'000, kMaximum = 1'000'000;
  return std::clamp<std::uint64_t>(4 * file_bytes, kMinimum, kMaximum);
}

}  // namespace scalatrace
