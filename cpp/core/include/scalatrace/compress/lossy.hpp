#pragma once
// Lossy traces (ScalaTrace 2, thesis §5.2.1; SCALATRACE_LOSSY): point-to-point parameters whose
// lossless form is long become value histograms. See docs/lossy.md.
#include <cstdint>
#include <string>
#include <vector>

#include "scalatrace/model/elastic.hpp"
#include "scalatrace/model/event.hpp"
#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// Metadata keys of a lossy trace: the threshold it was made with, and its lossy fields (one
/// line per field, `Isend@site 3<TAB>Peer<TAB>bins`).
inline constexpr const char* kLossyThresholdKey = "lossy.threshold";
inline constexpr const char* kLossyFieldsKey = "lossy.fields";

/// True for the fields that may become histograms: Peer, Tag, Bytes of point-to-point operations
/// (sends, receives, Sendrecv, persistent initiations), Peer2, Tag2, Bytes2 of Sendrecv. Replay and
/// simulation derive every receive from a drawn send (docs/lossy.md), so a drawn tag still
/// matches exactly one receive: tags carry no matching meaning there.
bool lossy_field_allowed(Op op, Field field);

/// The length of an elastic value's lossless form: the value runs stored over all its
/// alternatives (a constant is 1; a value that never repeats, one run per occurrence).
std::uint64_t lossless_length(const ElasticValue& value);

/// Turns every allowed field whose lossless length is at least `threshold` (>= 1; 1: every
/// stored allowed field) into a value histogram of all its occurrences on every rank (peers stay
/// relative to the rank), and records the metadata keys above. Other fields, loop trip counts,
/// presence, ranklists and timing stay exact. Returns the number of fields made lossy. Throws
/// UsageError for threshold 0.
std::size_t make_lossy(Trace& trace, std::uint64_t threshold);

/// Where the intra-rank compressor applies SCALATRACE_LOSSY (docs/lossy.md, "Per-rank memory").
enum class RankLossyStage : std::uint8_t {
  /// During compression, at each memory check: a field becomes lossy once its canonical form
  /// holds at least 2 x threshold value runs (a prefix of a sequence that ends up below the
  /// threshold, a periodic one cut in mid-period, stays below twice it); a long field that
  /// stays exact is replaced by its canonical form (the same values) so that it is not measured
  /// again from scratch.
  Checkpoint,
  /// On the finished (canonical) nodes of a rank or of a spilled chunk: the threshold itself,
  /// as make_lossy.
  Final,
};

/// SCALATRACE_LOSSY inside the intra-rank compressor, on one rank's nodes (per-rank: one value
/// sequence per field). Fields already lossy fold the exact values appended since (their
/// "tail") into their histogram; other allowed fields become lossy past the stage's bound.
/// Keeps every node's occurrence count (its Comm field stays exact). Returns the number of
/// fields made lossy. Throws UsageError for threshold 0.
std::size_t make_rank_lossy(std::vector<Node>& nodes, std::uint64_t threshold, RankLossyStage stage);
/// The same for one node (an event node, or a loop and everything in it).
std::size_t make_rank_lossy(Node& node, std::uint64_t threshold, RankLossyStage stage);

/// Merges the lossy fields of two nodes of one call (within a rank: two iterations; across
/// ranks: two rank groups) into `a`: a field lossy on either side becomes one histogram of
/// both sides' occurrences (histogram + histogram, histogram + exact values); `b`'s copy of it
/// is emptied. A side that stores such a field nowhere had the value 0 in each of its
/// `occurrences_a` / `occurrences_b` occurrences (an unused field). Fields lossy on neither
/// side are left to the caller. No-op when neither node has a lossy field.
void merge_lossy_fields(EventNode& a, EventNode& b, std::uint64_t occurrences_a, std::uint64_t occurrences_b);

/// One lossy field of a trace (for `scalatrace stats`, Python `Trace.lossy_fields`).
struct LossyFieldInfo {
  Op op = Op::Other;
  std::uint32_t site = 0;
  Field field = Field::Peer;
  std::uint64_t values = 0;  ///< occurrences the histogram holds
  std::size_t bins = 0;
};
/// Every lossy field, in depth-first node order.
std::vector<LossyFieldInfo> lossy_fields(const Trace& trace);
bool is_lossy(const Trace& trace);
/// "Isend@site 3 Peer" (what error messages and stats name).
std::string describe_lossy_field(const LossyFieldInfo& info);

}  // namespace scalatrace
