#pragma once
// Internal to the core: normalisation of a rank's compressed queue at the end of compression.
#include <vector>

#include "scalatrace/model/trace.hpp"

namespace scalatrace::loop_flatten {

/// Rewrites every loop whose whole body is one inner loop running a constant number of trips
/// c (no presence) into one loop of the inner body: Loop(a){Loop(c){B}} == Loop(a*c){B}.
/// Per-rank queues only (single elastic alternatives). Lossless: B's nodes keep their value
/// sequences (occurrences are the same, in the same order).
void flatten_nested_loops(std::vector<Node>& nodes);

/// A first iteration that lacks the calls at the end of the body (X | X A | X A ...) is folded
/// by the online compressor into the first iteration of the loop, as L(n){I[2k, k, ..., k]{X}
/// A}: the inner loop I ran twice its usual trips in the first iteration. Rewritten as
/// L(n+1){I[k, ..., k]{X} A?[0 1 ... 1]} (the calls after I absent in the first iteration): the
/// same events in the same order, the main loop with all its iterations. Likewise m·k first
/// trips (m - 1 such iterations, m <= 4). Per-rank queues only.
void unpeel_leading_iterations(std::vector<Node>& nodes);
/// The same for one node (a loop and the loops below it; nothing for an event).
void unpeel_leading_iterations(Node& node);

/// Replaces every loop that runs one trip at each of its visits and has no presence vector by
/// its body's nodes (a pseudo-loop that never repeated, e.g. the inner loop left by unpeeling
/// X | X A | X A ...: L(n){I[1 x n]{X} A?} == L(n){X A?}). The body's nodes keep their value
/// and presence sequences: with one trip per visit the loop's iterations are its visits.
/// Per-rank queues only.
void inline_single_trip_loops(std::vector<Node>& nodes);

}  // namespace scalatrace::loop_flatten
