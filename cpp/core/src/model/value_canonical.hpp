#pragma once
// Internal to the core: canonical value sequences at the end of a rank's compression.
#include <cstdint>
#include <span>
#include <vector>

#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// Replaces every value sequence of these nodes (fields, call-site ids, trip counts, presence)
/// by its canonical form (ValueSeq::canonical): the same values, in a form that depends on the
/// values only.
void canonicalize_values(std::vector<Node>& nodes);

/// The canonical form (ValueSeq::canonical) of `block` repeated `repeat` times, built in the
/// block's length, not the sequence's (block.size() * repeat must stay below 2^62).
ValueSeq canonical_repeated(std::span<const std::int64_t> block, std::uint64_t repeat);

}  // namespace scalatrace
