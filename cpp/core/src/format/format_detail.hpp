#pragma once
// Internal to the core: pieces of the .sct format shared by format.cpp and format_segments.cpp.
#include <cstdint>
#include <string_view>

#include "scalatrace/model/trace.hpp"

namespace scalatrace::format_detail {

/// CRC-32 (IEEE 802.3) of `data`.
std::uint32_t crc32(std::string_view data);

/// Parses the rank segments after a payload (docs/format.md, "Rank segments"), checks each one
/// and puts their nodes before `trace`'s (prepend_rank_segments). Throws FormatError.
void read_rank_segments(Trace& trace, std::string_view trailer);

}  // namespace scalatrace::format_detail
