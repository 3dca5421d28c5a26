#pragma once
// Benchmark generation from a compressed trace (thesis ch. 4): a traversal that keeps the
// trace's loops as loops and its ranklists as task sets (§4.4.1) and hands every node to a
// pluggable back end; wildcard-receive resolution with deadlock detection (§4.4.4, Alg. 3);
// collective alignment (§4.4.3, Alg. 2); back ends for coNCePTuaL and for plain C+MPI.
// See docs/codegen.md.
#include <cstdint>
#include <string>
#include <vector>

#include "scalatrace/model/trace.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {

/// Wildcard receives that cannot be matched without a deadlock (or a trace whose point-to-point
/// events do not pair up). The message names each stuck event: rank, op, peer, tag,
/// communicator and its position in the rank's event sequence.
struct DeadlockError : Error {
  using Error::Error;
};

struct CodegenOptions {
  /// Replace MPI_ANY_SOURCE receives/probes by the sender Algorithm 3 matches them with.
  /// coNCePTuaL always resolves (the language has no wildcard receive); for C the default
  /// keeps the recorded wildcards so the program reproduces the trace exactly.
  bool resolve_wildcards = false;
  /// Emit computation (spin loops / COMPUTE FOR) from the compute-time histograms.
  bool computation = true;
  /// Computation shorter than this (mean, ns) is left out.
  std::uint64_t min_compute_ns = 500;
};

/// The interface a back end implements (thesis §4.4.1: "a pluggable function that conforms to
/// a predefined interface"). `ranks` is the set of world ranks executing the node (the
/// enclosing loops' ranks included); `depth` the loop nesting depth.
class CodegenBackend {
 public:
  virtual ~CodegenBackend() = default;
  virtual void begin(const Trace& trace) = 0;
  virtual void enter_loop(const Node& node, const LoopNode& loop, int depth) = 0;
  virtual void leave_loop(const Node& node, const LoopNode& loop, int depth) = 0;
  virtual void event(const Node& node, const EventNode& event, int depth) = 0;
  /// The generated source text.
  virtual std::string finish() = 0;
};

/// Walks the node tree in order, loops as loops, calling the back end (§4.4.1).
void traverse(const Trace& trace, CodegenBackend& backend);

/// True if some receive or probe of the trace has an MPI_ANY_SOURCE source (O(nodes)).
bool has_wildcards(const Trace& trace);

/// True if some receive or probe of the trace has an MPI_ANY_TAG tag (O(nodes)).
bool has_wildcard_tags(const Trace& trace);

/// Where one wildcard was resolved to (for reports and tests).
struct WildcardResolution {
  std::int64_t rank = 0;       ///< receiving world rank
  std::uint64_t position = 0;  ///< index of the event in the rank's event sequence
  Op op = Op::Other;
  std::int64_t source = 0;  ///< world rank of the matched sender
};

/// Algorithm 3: simulates every rank's event sequence (message matching in MPI order,
/// collectives waiting for all members, standard sends buffered, Ssend/Issend synchronous) and
/// returns a copy of `trace` whose wildcard sources are the matched senders, still compressed.
/// Throws DeadlockError naming the blocked events if the simulation cannot finish.
/// `any_tags`: also replace MPI_ANY_TAG receive and probe tags by the tags of the messages
/// they match (coNCePTuaL has no wildcard tag).
Trace resolve_wildcards(const Trace& trace, std::vector<WildcardResolution>* resolved = nullptr, bool any_tags = false);

/// Algorithm 2's check: collective event nodes whose ranks are not all members of their
/// communicator (several call sites sharing one collective). Returns one description per node.
std::vector<std::string> unaligned_collectives(const Trace& trace);

/// A readable, standalone C+MPI program that issues every rank's recorded MPI calls in order
/// (loops kept as `for` loops, task sets as rank guards, computation as calibrated spin loops).
std::string generate_c(const Trace& trace, const CodegenOptions& options = {});

/// A coNCePTuaL program (thesis ch. 4) for the trace. Wildcards are always resolved.
std::string generate_conceptual(const Trace& trace, const CodegenOptions& options = {});

}  // namespace scalatrace
