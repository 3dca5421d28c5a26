#pragma once
// Which ranks can send to which in a probabilistic replay of a lossy trace (docs/lossy.md,
// "Bounded traversal contexts"): every send's peer support (its exact values, or its lossy
// histogram's bins) on every communicator it uses, resolved as SendProtocol resolves a drawn
// peer (relative to the sender, wrapped into the communicator). A receiver needs secondary
// traversal contexts only for the ranks that can send to it.
#include <cstdint>
#include <vector>

#include "scalatrace/model/trace.hpp"

namespace scalatrace {

/// The world ranks `rank` can send to, sorted and distinct: every destination any seed can
/// draw (a superset of what one seed draws). Cost: the rank's send nodes times their peer
/// support (at most 32 bins of a lossy field, cut at the communicator size).
std::vector<std::int64_t> potential_destinations(const Trace& trace, std::int64_t rank);

/// The world ranks that can send to `receiver`, sorted (potential_destinations of every rank,
/// inverted; what a replay process learns by exchanging its own destinations instead).
std::vector<std::int64_t> potential_senders(const Trace& trace, std::int64_t receiver);

}  // namespace scalatrace
