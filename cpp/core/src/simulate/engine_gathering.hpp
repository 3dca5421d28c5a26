#pragma once
// Gathered collectives (not a public header): in an order-free run (order_free.hpp) a blocking
// collective whose messages are all eager is not run step by step, one resumption of one rank
// per step, but gathered: each member that enters notes its steps here and waits; the last one
// to enter runs every member's steps in one pass over these dense arrays (Engine::
// complete_gathering), with the same operations on the same values as the step-by-step path.
// See docs/simulator.md ("Gathered collectives").
#include <cstdint>
#include <vector>

#include "scalatrace/model/op.hpp"
#include "simulate/simulator_collectives.hpp"
#include "support/huge_pages.hpp"

namespace scalatrace::sim {

/// Idle time a member accumulates in its steps (the fields of SimTimes a wait writes).
struct IdleTimes {
  double wait = 0;
  double late_sender = 0;
  double late_receiver = 0;
};

/// One step of a member (CollStep in 16 bytes: member indices fit 32 bits).
struct GatheredStep {
  std::int32_t recv_from = -1;  ///< communicator rank, -1: no receive
  std::int32_t send_to = -1;    ///< communicator rank, -1: no send
  double send_bytes = 0;
};

/// A member's progress through its steps in the pass.
struct GatheredMember {
  double clock = 0;      ///< the rank's clock
  double send_done = 0;  ///< the current step's send: its transfer's start (an eager send's completion)
  IdleTimes idle;        ///< the rank's wait, late-sender and late-receiver totals
  /// Its current step, copied from Gathering::steps when the one before ends (that line is in
  /// the cache then; in the next round it is not).
  GatheredStep step;
  std::uint32_t first_step = 0, steps = 0, pos = 0;  ///< its steps in Gathering::steps; the current one
  bool posted = false;                               ///< the current step's send is posted
  bool entered = false;
};

/// The messages arrived for a member, first in first out (apart from GatheredMember: senders
/// write it, and 8 bytes per member stay in the cache where the members do not).
struct GatheredInbox {
  std::int32_t first = -1, last = -1;
};

/// When a message of the pass arrives, and the receive overhead it costs.
struct GatheredArrival {
  double arrival = 0;
  double o_r = 0;
};

/// A message of the pass waiting for its receive.
struct GatheredMessage {
  std::int32_t from = 0;   ///< the sender's communicator rank
  std::int32_t next = -1;  ///< the next message of the receiver's inbox
  GatheredArrival sent;
};

/// One blocking collective of one communicator, its members entering.
struct Gathering {
  std::int64_t key = 0;   ///< the communicator's key (CommInfo::key)
  std::uint64_t tag = 0;  ///< the collective's sequence number on it
  Op op = Op::Other;
  std::int64_t size = 0;               ///< members
  std::int64_t entered = 0;            ///< members that have entered
  bool open = false;                   ///< members are entering (false: the slot is free)
  HugePageVector<std::int64_t> world;  ///< member -> world rank
  HugePageVector<GatheredMember> members;
  HugePageVector<GatheredInbox> inboxes;  ///< per member
  HugePageVector<GatheredStep> steps;     ///< every member's, each member's contiguous
  /// Whether every member entered so far has the first one's number of steps, step_count; if
  /// all do, the steps by step (by_step[s * size + member]) for a lockstep pass.
  bool uniform = true;
  std::uint32_t step_count = 0;
  HugePageVector<GatheredStep> by_step;
  std::vector<GatheredMessage> messages;
  std::vector<std::int32_t> free_messages;  ///< received messages' slots, reused
  std::vector<std::int32_t> active;         ///< members with steps left (the pass)
  /// Lockstep passes: each step's partner bits (lockstep_masks), and each member's message of the step.
  std::vector<std::uint32_t> masks;
  HugePageVector<GatheredArrival> sent;  ///< per member: its message of the current step
  /// The slot keeps its last lockstep pass's layout: layout_size members (-1: none) with
  /// layout_steps steps each, by member at the start of `steps` (member i's at
  /// i * layout_steps) and by step in by_step, with their masks. The next gathering of that
  /// size in the slot writes only the steps that differ from it (after the layout); if every
  /// member's are the same (the same collective again: an allreduce per timestep), it runs on
  /// the layout as it is, not laid out and checked again.
  std::int64_t layout_size = -1;
  std::uint32_t layout_steps = 0;
  bool reuses_layout = false;  ///< every member entered so far has its layout's steps
  /// The inputs (collective_inputs) every member of the pass that made the kept layout entered
  /// with, if they all had the same: a member entering with them has its layout's steps, not
  /// computed again.
  std::optional<CollectiveInputs> layout_inputs;
  /// The inputs every member entered so far has, if they all have the same.
  std::optional<CollectiveInputs> entered_inputs;
  std::uint64_t steps_not_computed = 0;  ///< members that entered with their layout's steps so far
};

/// Whether the gathering's steps (by_step, every member's step_count of them) go in lockstep:
/// at every step a member receives from j exactly when j sends to it at the same step
/// (recursive doubling, rings, dissemination, pairwise exchange). Then each message is received
/// in the step it is sent, and the members can run step by step (Engine::run_lockstep).
/// masks[s]: the bits in which members and their partners at step s differ (member i's
/// partners at s agree with i on every other bit).
bool lockstep_masks(const Gathering& g, std::vector<std::uint32_t>& masks);

}  // namespace scalatrace::sim
