#pragma once
// Checks a trace or raw stream as a whole, beyond what the decoders see byte by byte, so that
// a file that loads can also be analysed: text is valid UTF-8, byte counts and sizes are not
// negative, loop trip counts and presence values are in range, and (within a work budget) every
// rank's event sequence can be walked to its end. Every failure is a FormatError.
#include <cstdint>
#include <string>
#include <string_view>

#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// True if `s` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view s);
/// `s` with every ill-formed byte replaced by U+FFFD (writers: what they store is readable).
std::string to_valid_utf8(std::string_view s);
/// Throws FormatError("<what> is not valid UTF-8 (byte k)") unless is_valid_utf8(s).
void require_utf8(std::string_view s, const char* what);

/// Largest rank a ranklist names (-1 if empty).
std::int64_t max_rank(const RankList& rl);

/// Throws FormatError if one of the event's fields is out of range (negative byte counts or
/// datatype sizes, negative per-peer counts of v-collectives).
void validate_event_values(const Event& e);

/// Value-range checks over every node of the trace (cost: proportional to the trace's size),
/// then a walk of every rank's events until `walk_budget` events were produced in total
/// (0: no walk). Throws FormatError naming the problem (and the rank, for the walk).
void validate_trace(const Trace& trace, std::uint64_t walk_budget);

/// The walk budget read_trace_file uses for a file of `file_bytes` bytes: a walk costs about
/// as much as decoding that many bytes again, and at most a few million events.
std::uint64_t default_walk_budget(std::uint64_t file_bytes);

}  // namespace scalatrace
