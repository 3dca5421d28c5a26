#pragma once
// The single-file binary trace (.sct), specified in docs/format.md.
#include <string>
#include <string_view>

#include "scalatrace/trace.hpp"

namespace scalatrace {

inline constexpr char kTraceMagic[8] = {'S', 'C', 'A', 'L', 'A', 'T', 'R', 'C'};
inline constexpr std::uint32_t kTraceFormatVersion = 2;

std::string encode_trace(const Trace& trace);
/// Throws FormatError with a message naming what is wrong (truncated, bad magic, version,
/// checksum, out-of-range ids, implausible sizes). Never allocates beyond the input's size.
Trace decode_trace(std::string_view bytes);
void write_trace_file(const Trace& trace, const std::string& path);
Trace read_trace_file(const std::string& path);

}  // namespace scalatrace
