#pragma once
// A lossless byte compressor for the .sct payload (format version 8, docs/format.md "Entropy
// coding"): context mixing of order-0 to order-6 byte contexts, a sparse context and a match
// model, with a binary arithmetic coder. Integer arithmetic only, so that every platform decodes
// the same bytes. Small inputs (a few KB, typical of merged traces) compress well because
// every model adapts from the first byte: there is no dictionary or table to ship.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace scalatrace::entropy {

/// The coded form of `data`: `uv size`, then the arithmetic-coded bytes. The model first reads
/// `primer` (text like the data's, which both sides must pass alike: the .sct format names one
/// per version), so that the data's first bytes are already predicted. With `bits_per_byte`,
/// also how many bits each input byte cost (for the byte breakdown of `scalatrace stats
/// --bytes`; not needed to decode).
std::string encode(std::string_view data, std::string_view primer = {}, std::vector<double>* bits_per_byte = nullptr);

/// The bytes `encode` was given (with the same `primer`). Throws FormatError on a malformed stream: a declared size
/// above `max_size` (checked before anything is allocated), a stream that ends early or has bytes left over. A
/// corrupted stream that is still well formed decodes to other bytes: callers check a CRC first.
std::string decode(std::string_view coded, std::size_t max_size, std::string_view primer = {});

}  // namespace scalatrace::entropy
