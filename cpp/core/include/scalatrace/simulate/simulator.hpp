#pragma once
// Trace-driven discrete-event simulator (PHANTOM's SIM-MPI in spirit): predicts the run time of
// a traced program on a LogGP network without running MPI. Every rank walks its own Cursor over
// the compressed trace (the trace is never expanded); point-to-point messages are matched by
// communicator, source and tag; collectives are decomposed into the point-to-point algorithms
// MPICH uses. Model and algorithms: docs/simulator.md.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "scalatrace/model/trace.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {

/// The time the bytes after a message's first take at `per_byte` each: (k-1) * per_byte (the
/// first byte's time is in L or o). The simulator's one formula for it.
inline double byte_time(double bytes, double per_byte) { return bytes > 1 ? (bytes - 1) * per_byte : 0.0; }

/// LogGP parameters of one kind of link, with LogGOPS's CPU overhead per byte O. Times in
/// nanoseconds, G and O in nanoseconds per byte. A k-byte message costs the sender
/// o_s + (k-1)*O (eager: the copy out of the user buffer; rendezvous: o_s), travels L + (k-1)*G,
/// costs the receiver o_r + (k-1)*O; a sender starts consecutive messages at least
/// max(g, (k-1)*G) apart.
struct LogGP {
  double L = 1000.0;   ///< latency
  double o_s = 500.0;  ///< send overhead (CPU busy)
  double o_r = 500.0;  ///< receive overhead (CPU busy)
  double g = 0.0;      ///< gap between consecutive message starts of one sender
  double G = 0.1;      ///< gap per byte (inverse bandwidth)
  double O = 0.0;      ///< CPU overhead per byte (copies), on the sender (eager) and the receiver
  /// Extra cost of a rendezvous handshake: the data of a rendezvous message leaves L + R after
  /// its receive matched the request-to-send (MPI's protocol switch costs microseconds at once).
  double R = 0.0;

  /// The CPU time a k-byte message adds to an overhead: (k-1)*O.
  double copy_time(double bytes) const { return byte_time(bytes, O); }
  /// The sender's CPU time for an eager k-byte message: o_s + (k-1)*O (the simulator's one
  /// formula for it: the step-by-step and the gathered paths must give the same bits).
  double eager_send_cpu(double bytes) const { return o_s + copy_time(bytes); }
  /// The receiver's CPU time for a k-byte message: o_r + (k-1)*O.
  double recv_cpu(double bytes) const { return o_r + copy_time(bytes); }
};

/// Links between nodes (docs/simulator.md, "Topology and placement"). Flat: every pair of nodes
/// one LogGP link (inter_node), the default. Otherwise an inter-node message crosses the links
/// of its route; it takes inter_node.L + hops * hop_latency plus (k-1) * max(inter_node.G,
/// link_G) for its bytes, and with `congestion` the links of its route carry one message at a
/// time (each busy from the message's start to its last byte, in processing order).
struct Topology {
  enum class Kind : std::uint8_t { Flat, Torus, FatTree, Dragonfly };
  Kind kind = Kind::Flat;
  /// Torus: nodes per dimension (wrap-around links, dimension-order routing on the shorter
  /// way). FatTree: {k} (three-level k-ary fat tree of k^3/4 nodes, k even; up-down routing,
  /// the up port chosen by the destination). Dragonfly: {groups, routers per group, nodes per
  /// router} (all-to-all local links in a group, one global link between every two groups;
  /// minimal routing).
  std::vector<std::int64_t> shape;
  double hop_latency = 0;  ///< ns per link crossed
  double link_G = 0;       ///< ns per byte on a link (inverse link bandwidth); 0: unlimited
  bool congestion = true;  ///< messages sharing a link share its bandwidth (see `sharing`)
  /// How messages share a congested link. FirstCome: each takes the link's free time, first
  /// come, first served (reservations). Fair: the link's bandwidth is shared max-min fairly
  /// among the messages crossing it at each instant (SimGrid's CM02 fluid model); the run is
  /// then repeated, each pass timing the messages by the previous pass's flows, until the
  /// messages' start times repeat (docs/simulator.md, "Fair sharing"). LatencyWeighted: as
  /// Fair, each message's share weighted by the inverse of its route's latency (what SimGrid's
  /// CM02 model does: TCP's bias against long round trips).
  enum class Sharing : std::uint8_t { FirstCome, Fair, LatencyWeighted };
  Sharing sharing = Sharing::FirstCome;

  /// Nodes of the topology (0 for Flat: unbounded). Throws UsageError for a bad shape.
  std::int64_t nodes() const;
};

/// How ranks are placed on nodes of `ranks_per_node` slots.
enum class Placement : std::uint8_t {
  Block,       ///< rank r on node r / ranks_per_node (the default)
  RoundRobin,  ///< rank r on node r % N, N = ceil(ranks / ranks_per_node)
  Random,      ///< N nodes drawn among the topology's (placement_seed), ranks shuffled over their slots
  Explicit,    ///< node_of_rank[r]
};

/// OS noise (LogGOPSim's noise injection, as a periodic detour): every `period` ns each rank's
/// CPU is taken away for `duration` ns; compute between calls stretches over the detours it
/// meets. Each rank's first detour starts at a phase drawn from `seed` (the same phase on every
/// rank when `coscheduled`). period 0: no noise.
struct OsNoise {
  double period = 0;
  double duration = 0;
  bool coscheduled = false;
  std::uint64_t seed = 0;
};

struct SimOptions {
  LogGP inter_node;  ///< between ranks on different nodes
  LogGP intra_node;  ///< between ranks on one node (node = rank / ranks_per_node)
  std::int64_t ranks_per_node = 1;
  Topology topology;                       ///< links between nodes (Flat: inter_node only)
  Placement placement = Placement::Block;  ///< ranks onto nodes
  std::uint64_t placement_seed = 0;        ///< Placement::Random
  std::vector<std::int64_t> node_of_rank;  ///< Placement::Explicit: one node per rank
  OsNoise noise;                           ///< period 0: none
  /// Messages of more bytes than this use the rendezvous protocol (RTS, CTS, data); others are
  /// sent eagerly. Ssend is always rendezvous, Bsend always eager.
  double eager_threshold = 65536;
  /// Link contention: inter-node messages share their node's injection and ejection link
  /// (one message at a time per direction). Off: only each sender's own gap applies.
  bool contention = false;
  TimingMode timing = TimingMode::Mean;                          ///< compute time between calls from the histograms
  std::uint64_t seed = 0;                                        ///< TimingMode::Sample: seed (rank r uses seed + r)
  double compute_scale = 1.0;                                    ///< multiplies every compute time
  std::unordered_map<std::uint32_t, double> site_compute_scale;  ///< per call site, on top
  double size_scale = 1.0;                                       ///< multiplies every message size
  bool timeline = false;                      ///< record start/end of every event (SimResult::timeline)
  std::uint64_t timeline_limit = 10'000'000;  ///< more timeline rows than this: UsageError
  bool pair_counts = false;                   ///< fill SimResult::pairs (user point-to-point only)
  /// Calls that never wait for another rank (op_never_waits: initiations, Start, the Test
  /// family, Request_free, unmodelled functions) take at least their recorded duration (the
  /// median of their duration histogram; none with TimingMode::None): the MPI library's own
  /// time per call, which the LogGP overheads leave out. Not scaled by any what-if knob.
  /// False: only the model's time.
  bool recorded_local_calls = true;

  /// Throws UsageError naming the first negative / non-finite / out-of-range parameter.
  void validate() const;
};

/// Time accounts of one rank or one call site (nanoseconds).
struct SimTimes {
  double compute = 0;        ///< compute between calls (scaled)
  double comm = 0;           ///< CPU busy inside MPI calls (overheads)
  double wait = 0;           ///< idle inside MPI calls (waiting for messages or partners)
  double late_sender = 0;    ///< part of wait spent in receives whose message was late
  double late_receiver = 0;  ///< part of wait spent in sends whose receiver was late (rendezvous)
  std::uint64_t calls = 0;   ///< MPI calls (events) counted
};

struct SimSiteRow {
  std::uint32_t site = 0;
  Op op = Op::Other;
  SimTimes times;
};

struct SimTimelineRow {
  std::int64_t rank = 0;
  std::uint64_t index = 0;  ///< event index within the rank
  Op op = Op::Other;
  std::uint32_t site = 0;
  double start = 0;  ///< after the compute before the call
  double end = 0;
};

/// Matched user point-to-point traffic between one (sender, receiver) pair.
struct SimPair {
  std::int64_t src = 0, dst = 0;
  std::uint64_t messages = 0;
  double bytes = 0;
};

struct SimResult {
  double total_ns = 0;         ///< max over ranks of the end time
  std::vector<double> end_ns;  ///< per rank: time of its last event
  std::vector<SimTimes> ranks;
  std::vector<SimSiteRow> sites;  ///< per (call site, op), sorted
  /// Per rank: user point-to-point messages sent / received and bytes (after size_scale),
  /// self-messages and MPI_PROC_NULL excluded (the comm_matrix model).
  std::vector<std::uint64_t> sent_messages, recv_messages;
  std::vector<double> sent_bytes, recv_bytes;
  std::vector<SimPair> pairs;            ///< SimOptions::pair_counts only, sorted
  std::vector<SimTimelineRow> timeline;  ///< SimOptions::timeline only, by rank then index
  std::uint64_t events = 0;              ///< trace events simulated (all ranks)
  std::uint64_t messages = 0;            ///< point-to-point messages incl. collectives' own
  /// Topology sharing "fair": the passes run (0: first come, first served, one pass) and
  /// whether the last two agreed on every flow's start (false: the pass limit ended the
  /// iteration and the times are the last pass's, an approximation).
  int fair_passes = 0;
  bool fair_settled = true;
};

/// The trace is inconsistent as a program: it deadlocks in simulation, or sends messages that
/// are never received. The message names ranks and events.
struct SimulationError : Error {
  using Error::Error;
};

/// Simulates the whole trace. Throws UsageError for bad options, SimulationError for a
/// deadlock or unmatched messages, FormatError for a trace the cursor cannot walk.
SimResult simulate(const Trace& trace, const SimOptions& options);

}  // namespace scalatrace
