#pragma once
// Internal to the core: canonical value sequences at the end of a rank's compression.
#include <vector>

#include "scalatrace/trace.hpp"

namespace scalatrace {

/// Replaces every value sequence of these nodes (fields, call-site ids, trip counts, presence)
/// by its canonical form (ValueSeq::canonical): the same values, in a form that depends on the
/// values only.
void canonicalize_values(std::vector<Node>& nodes);

}  // namespace scalatrace
