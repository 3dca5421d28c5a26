#pragma once
// Internal to the coNCePTuaL back end: where a program whose only wait is "wait for all of the
// task's outstanding requests" (AWAIT COMPLETION) may wait without blocking where the traced
// run did not.
#include <map>

#include "scalatrace/model/trace.hpp"

namespace scalatrace::codegen_await {

/// Per completion node (Wait*, Test*) and MPI_Sendrecv node, per rank, per occurrence of the
/// node: 1 where the traced run had completed every request the rank had outstanding when the
/// call returned (for a completion call: and it had some before the call), 0 elsewhere.
///
/// Outstanding are the requests a generated program posts asynchronously: nonblocking sends
/// and receives and started persistent ones, except those to MPI_PROC_NULL or an unresolved
/// MPI_ANY_SOURCE (left out of the program); nonblocking collectives become blocking
/// collectives and are not counted. A request freed while active counts as completed.
/// Waiting for all at these points only waits for what the traced run had already completed
/// there, whatever order the requests complete in at run time.
std::map<const Node*, ElasticValue> await_points(const Trace& trace);

}  // namespace scalatrace::codegen_await
