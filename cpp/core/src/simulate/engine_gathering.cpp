// The simulator engine's gathered collectives (engine_gathering.hpp): a member entering notes its
// steps and waits; the last one runs all members' steps in rounds over dense arrays, each
// member going as far as its messages allow, with the operations of the step-by-step path
// (post_send_at's eager branch, match, complete_step) on the same values, so every rank's times
// come out the same. See docs/simulator.md ("Gathered collectives").
#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

#include "simulate/engine.hpp"

namespace scalatrace::sim {

namespace {

/// Calls f(member, step) for every step of `size` members with `count` steps each, 64 members
/// at a time: what converts steps by member into steps by step or back (Engine::
/// transpose_steps, Engine::keep_layout) then reads and writes a block's by-member lines once
/// and each step's entries of the block together.
template <class F>
void for_steps_in_member_blocks(std::size_t size, std::size_t count, F&& f) {
  constexpr std::size_t kBlock = 64;
  for (std::size_t lo = 0; lo < size; lo += kBlock) {
    const std::size_t hi = std::min(size, lo + kBlock);
    for (std::size_t s = 0; s < count; ++s)
      for (std::size_t i = lo; i < hi; ++i) f(i, s);
  }
}

}  // namespace

/// A blocking collective in an order-free run: false (run it step by step) unless all its
/// messages are eager; otherwise R enters its communicator's gathering and waits there, and the
/// last member to enter completes every member's call.
bool Engine::enter_gathering(RankSim& R, std::int64_t comm) {
  const std::size_t ci = comm_index(R, comm);
  CommInfo& c = R.comms[ci];
  if (c.size <= 1 || !order_.eager_collective(ev_.op, c.size)) return false;
  const std::uint64_t tag = c.collective_seq++;
  Gathering& g = open_gathering(c, tag);
  if (g.op != ev_.op)
    fail_event(R, std::string("collective mismatch: other members of the communicator call MPI_") +
                      std::string(op_name(g.op)) + " here");
  const std::optional<CollectiveInputs> inputs = collective_inputs(ev_);
  if (g.entered == 0)
    g.entered_inputs = inputs;
  else if (g.entered_inputs != inputs)
    g.entered_inputs.reset();
  // The same inputs as every member of the kept layout's pass: the same steps as its own there.
  const bool layout_steps_known = inputs && g.layout_size == g.size && g.layout_inputs == inputs;
  // Members mostly enter in order, far apart in time: the entry of one a few ahead, now.
  constexpr std::int64_t kMembersAhead = 4;
  if (c.me + kMembersAhead < g.size) {
    prefetch_line(&g.members[static_cast<std::size_t>(c.me + kMembersAhead)]);
    // Its steps in the kept layout: its first (GatheredMember::step), or all that it compares
    // its own with (steps_in_layout).
    if (g.reuses_layout && g.layout_steps > 0) {
      const GatheredStep* kept = &g.steps[static_cast<std::size_t>(c.me + kMembersAhead) * g.layout_steps];
      if (layout_steps_known) {
        prefetch_line(kept);
      } else {
        prefetch_range(kept, kept + g.layout_steps);
        prefetch_line(reinterpret_cast<const char*>(kept + g.layout_steps) - 1);
      }
    }
  }
  GatheredMember& m = g.members[static_cast<std::size_t>(c.me)];
  if (m.entered) fail_event(R, "rank entered the same collective twice");
  m = GatheredMember{};
  m.entered = true;
  m.clock = R.clock;
  m.idle = IdleTimes{R.times.wait, R.times.late_sender, R.times.late_receiver};
  if (layout_steps_known) {
    ++g.steps_not_computed;
    m.steps = g.layout_steps;
    m.first_step = static_cast<std::uint32_t>(c.me) * g.layout_steps;
  } else {
    sim::collective_steps(ev_, c.me, c.size, opt_.size_scale, gather_steps_);
    m.steps = static_cast<std::uint32_t>(gather_steps_.size());
    for (const CollStep& s : gather_steps_)
      if (s.send_to >= 0 && s.send_bytes > opt_.eager_threshold)
        throw std::logic_error("simulator: a gathered collective's step is not eager (OrderFreedom's bound)");
    if (steps_in_layout(g, c.me)) {
      m.first_step = static_cast<std::uint32_t>(c.me) * g.layout_steps;
    } else {
      g.reuses_layout = false;
      m.first_step = static_cast<std::uint32_t>(g.steps.size());
      for (const CollStep& s : gather_steps_)
        g.steps.push_back(
            GatheredStep{static_cast<std::int32_t>(s.recv_from), static_cast<std::int32_t>(s.send_to), s.send_bytes});
    }
  }
  if (m.steps > 0) m.step = g.steps[m.first_step];
  if (g.entered == 0) g.step_count = m.steps;
  g.uniform = g.uniform && m.steps == g.step_count;
  g.world[static_cast<std::size_t>(c.me)] = R.rank;
  R.stage = Stage::Gathered;
  if (++g.entered == g.size) complete_gathering(g);
  return true;
}

/// Whether the entering member `me`'s steps (gather_steps_) are its steps in the slot's kept
/// layout (Gathering::layout_size).
bool Engine::steps_in_layout(const Gathering& g, std::int64_t me) const {
  if (g.layout_size != g.size || gather_steps_.size() != g.layout_steps) return false;
  const GatheredStep* kept = &g.steps[static_cast<std::size_t>(me) * g.layout_steps];
  for (std::size_t s = 0; s < gather_steps_.size(); ++s) {
    const CollStep& now = gather_steps_[s];
    if (kept[s].recv_from != now.recv_from || kept[s].send_to != now.send_to || kept[s].send_bytes != now.send_bytes)
      return false;
  }
  return true;
}

/// The gathering of collective number `tag` on communicator c: the one a member opened, or a
/// new one (a free slot, or a new slot).
Gathering& Engine::open_gathering(CommInfo& c, std::uint64_t tag) {
  if (c.gathering >= 0) {
    Gathering& g = gatherings_[static_cast<std::size_t>(c.gathering)];
    if (g.open && g.key == c.key && g.tag == tag) return g;
  }
  const auto id = std::make_pair(c.key, tag);
  if (const auto it = open_gatherings_.find(id); it != open_gatherings_.end()) {
    c.gathering = it->second;
    return gatherings_[static_cast<std::size_t>(it->second)];
  }
  std::size_t slot = 0;
  while (slot < gatherings_.size() && gatherings_[slot].open) ++slot;
  if (slot == gatherings_.size()) gatherings_.emplace_back();
  Gathering& g = gatherings_[slot];
  g.open = true;
  g.key = c.key;
  g.tag = tag;
  g.op = ev_.op;
  g.size = c.size;
  g.entered = 0;
  g.world.assign(static_cast<std::size_t>(c.size), -1);
  g.members.resize(static_cast<std::size_t>(c.size));
  g.inboxes.assign(static_cast<std::size_t>(c.size), GatheredInbox{});
  // A kept layout of this size stays (what members enter with beyond it goes after it).
  if (g.layout_size == g.size)
    g.steps.resize(static_cast<std::size_t>(g.size) * g.layout_steps);
  else
    g.steps.clear();
  g.reuses_layout = g.layout_size == g.size;
  g.uniform = true;
  open_gatherings_.emplace(id, static_cast<std::int32_t>(slot));
  c.gathering = static_cast<std::int32_t>(slot);
  return g;
}

/// Every member's steps, by step (by_step[s * size + member]), from `steps`; every member has
/// step_count of them.
void Engine::transpose_steps(Gathering& g) {
  const auto size = static_cast<std::size_t>(g.size);
  g.by_step.resize(g.step_count * size);
  for_steps_in_member_blocks(size, g.step_count, [&g, size](std::size_t i, std::size_t s) {
    g.by_step[s * size + i] = g.steps[g.members[i].first_step + s];
  });
}

/// Keeps the lockstep layout just made (by_step, masks) for the slot's next gathering, and
/// the same steps by member at the start of `steps`, which the next one's members compare
/// theirs with (steps_in_layout).
void Engine::keep_layout(Gathering& g) {
  const auto size = static_cast<std::size_t>(g.size);
  const std::size_t count = g.step_count;
  g.steps.resize(size * count);
  for_steps_in_member_blocks(size, count, [&g, size, count](std::size_t i, std::size_t s) {
    g.steps[i * count + s] = g.by_step[s * size + i];
  });
  g.layout_size = g.size;
  g.layout_steps = g.step_count;
  g.layout_inputs = g.entered_inputs;
}

/// Member `from` sends its step's message as post_send_at's eager branch does (the overheads on
/// the member's clock, the transfer on its NIC); returns its arrival and the receive overhead
/// match() would give it.
GatheredArrival Engine::send_from_gathering(Gathering& g, std::int32_t from, const GatheredStep& step) {
  GatheredMember& m = g.members[static_cast<std::size_t>(from)];
  const std::int64_t src = g.world[static_cast<std::size_t>(from)];
  const std::int64_t dst = g.world[static_cast<std::size_t>(step.send_to)];
  const LogGP& p = net_.link(src, dst);
  m.clock += p.eager_send_cpu(step.send_bytes);
  const auto t = net_.transfer(src, dst, p, m.clock, step.send_bytes);
  m.send_done = t.start;
  ++seq_;
  ++res_.messages;
  return GatheredArrival{t.arrival, p.recv_cpu(step.send_bytes)};  // link(src, dst) is link(dst, src)
}

/// Member `from` posts the send of its current step (send_from_gathering), the message queued
/// for its receiver.
void Engine::send_in_gathering(Gathering& g, std::int32_t from, const GatheredStep& step) {
  const GatheredArrival sent = send_from_gathering(g, from, step);
  std::int32_t slot;
  if (!g.free_messages.empty()) {
    slot = g.free_messages.back();
    g.free_messages.pop_back();
  } else {
    slot = static_cast<std::int32_t>(g.messages.size());
    g.messages.emplace_back();
  }
  GatheredMessage& msg = g.messages[static_cast<std::size_t>(slot)];
  msg.from = from;
  msg.next = -1;
  msg.sent = sent;
  GatheredInbox& to = g.inboxes[static_cast<std::size_t>(step.send_to)];
  if (to.last >= 0)
    g.messages[static_cast<std::size_t>(to.last)].next = slot;
  else
    to.first = slot;
  to.last = slot;
}

/// Member m completes its step s, whose message is `in` (null: s receives nothing), as
/// complete_step does (finish_step: receive and send in order of completion).
void Engine::complete_gathered_step(GatheredMember& m, const GatheredStep& s, const GatheredArrival* in) {
  Request recv, send;
  if (in != nullptr) {
    recv.kind = Request::Kind::Recv;
    recv.done = in->arrival;
    recv.o_r = in->o_r;
  }
  send.kind = Request::Kind::Send;
  send.done = m.send_done;
  double t = m.clock;
  finish_step(m.idle, in != nullptr ? &recv : nullptr, s.send_to >= 0 ? &send : nullptr, t);
  m.clock = t;
}

/// One round over `members` (member indices, increasing): each posts and completes steps until
/// one waits for a message not sent yet; those done leave the list. False if none moved.
bool Engine::gathering_round(Gathering& g, std::vector<std::int32_t>& members) {
  // What a member reads beyond its own entry is fetched ahead: the lines of its next steps
  // kStepsAhead members ahead, the inbox of the member it sends to kInboxesAhead ahead (both
  // only matter once the members' data no longer stays in the cache between rounds).
  constexpr std::size_t kStepsAhead = 16, kInboxesAhead = 8;
  const std::size_t count = members.size();
  std::size_t kept = 0;
  bool moved = false;
  for (std::size_t a = 0; a < count; ++a) {
    if (a + kStepsAhead < count) {
      const GatheredMember& later = g.members[static_cast<std::size_t>(members[a + kStepsAhead])];
      // A member often completes several steps in one visit (its partners have posted): the
      // lines of its next four steps, not only the next one's.
      if (later.pos + 1 < later.steps) {
        prefetch_line(&g.steps[later.first_step + later.pos + 1]);
        prefetch_line(&g.steps[later.first_step + std::min(later.pos + 4, later.steps - 1)]);
      }
    }
    if (a + kInboxesAhead < count) {
      const GatheredMember& later = g.members[static_cast<std::size_t>(members[a + kInboxesAhead])];
      if (later.step.send_to >= 0) prefetch_line(&g.inboxes[static_cast<std::size_t>(later.step.send_to)]);
    }
    const std::int32_t i = members[a];
    GatheredMember& m = g.members[static_cast<std::size_t>(i)];
    GatheredInbox& inbox = g.inboxes[static_cast<std::size_t>(i)];
    while (m.pos < m.steps) {
      const GatheredStep s = m.step;
      if (!m.posted) {
        if (s.send_to >= 0) send_in_gathering(g, i, s);
        m.posted = true;
      }
      GatheredArrival in;
      if (s.recv_from >= 0) {
        // The first message from that member (first in, first out per sender).
        std::int32_t before = -1, at = inbox.first;
        while (at >= 0 && g.messages[static_cast<std::size_t>(at)].from != s.recv_from) {
          before = at;
          at = g.messages[static_cast<std::size_t>(at)].next;
        }
        if (at < 0) break;  // not sent yet: a later round
        const GatheredMessage& msg = g.messages[static_cast<std::size_t>(at)];
        in = msg.sent;
        if (before < 0)
          inbox.first = msg.next;
        else
          g.messages[static_cast<std::size_t>(before)].next = msg.next;
        if (inbox.last == at) inbox.last = before;
        g.free_messages.push_back(at);
      }
      complete_gathered_step(m, s, s.recv_from >= 0 ? &in : nullptr);
      m.posted = false;
      moved = true;
      if (++m.pos < m.steps) m.step = g.steps[m.first_step + m.pos];
    }
    if (m.pos < m.steps) members[kept++] = i;
  }
  members.resize(kept);
  return moved;
}

/// One pass over each step's entries: a partner's entry of the same step lies in the same
/// slice of by_step.
bool lockstep_masks(const Gathering& g, std::vector<std::uint32_t>& masks) {
  const auto size = static_cast<std::size_t>(g.size);
  masks.assign(g.step_count, 0);
  for (std::size_t s = 0; s < g.step_count; ++s) {
    const GatheredStep* step = &g.by_step[s * size];
    std::uint32_t differ = 0;  // the bits in which a member and its partners differ
    for (std::size_t i = 0; i < size; ++i) {
      const auto me = static_cast<std::int32_t>(i);
      const GatheredStep& st = step[i];
      if (st.recv_from >= 0) {
        if (st.recv_from >= g.size || step[st.recv_from].send_to != me) return false;
        differ |= static_cast<std::uint32_t>(me ^ st.recv_from);
      }
      if (st.send_to >= 0) {
        if (st.send_to >= g.size || step[st.send_to].recv_from != me) return false;
        differ |= static_cast<std::uint32_t>(me ^ st.send_to);
      }
    }
    masks[s] = differ;
  }
  return true;
}

/// The steps of a lockstep gathering (lockstep_masks), step by step: every member sends
/// (send_from_gathering), then every member completes the step with its partner's message
/// (complete_gathered_step, as gathering_round does). Consecutive steps run group by group over
/// blocks whose members' partners in those steps are all in the block: the members that agree
/// on every bit outside the steps' masks (2^kBlockBits members at most; the first steps of an
/// allreduce over aligned runs of 2^kBlockBits members, its later ones over members 2^kBlockBits
/// apart). A block's members, NICs and steps stay in the cache through its steps, where a pass
/// over all members per step would read them from memory at each. The same operations on the
/// same values as the general pass: a member's values depend only on its own steps and the
/// messages it receives.
void Engine::run_lockstep(Gathering& g, const std::vector<std::uint32_t>& masks) {
  constexpr int kBlockBits = 10;
  constexpr std::uint32_t kLowBlock = (1u << kBlockBits) - 1;
  const auto size = static_cast<std::uint64_t>(g.size);
  const auto steps = static_cast<std::uint32_t>(masks.size());
  g.sent.resize(size);
  for (std::uint32_t first = 0; first < steps;) {
    // The group's mask: its first step's (at least the low bits of an aligned run), with the
    // following steps' as long as their union leaves blocks of 2^kBlockBits members at most.
    std::uint64_t mask = std::bit_width(masks[first]) <= kBlockBits ? kLowBlock : masks[first];
    std::uint32_t end = first + 1;
    while (end < steps && std::popcount(mask | masks[end]) <= kBlockBits) mask |= masks[end++];
    if (std::bit_width(mask) >= std::bit_width(size)) mask = std::bit_ceil(size) - 1;  // one block: all members
    // Each block: the members `base | sub` for every sub-mask `sub` of `mask`, from each base
    // (a member with no bit of `mask`) in increasing order.
    for (std::uint64_t base = 0; base < size; base = ((base | mask) + 1) & ~mask) {
      for (std::uint32_t s = first; s < end; ++s) {
        const GatheredStep* step = &g.by_step[s * size];
        std::uint64_t sub = 0;
        do {
          const std::uint64_t i = base | sub;
          if (i < size && step[i].send_to >= 0)
            g.sent[i] = send_from_gathering(g, static_cast<std::int32_t>(i), step[i]);
          sub = (sub - mask) & mask;
        } while (sub != 0);
        do {
          const std::uint64_t i = base | sub;
          if (i < size) {
            const std::int32_t from = step[i].recv_from;
            complete_gathered_step(g.members[i], step[i],
                                   from >= 0 ? &g.sent[static_cast<std::size_t>(from)] : nullptr);
          }
          sub = (sub - mask) & mask;
        } while (sub != 0);
      }
    }
    first = end;
  }
  ++lockstep_;
}

/// The steps of a gathering that does not go in lockstep, in rounds (gathering_round): first
/// block by block of kFirstBlock members as far as each block goes on its own (an allreduce's
/// first steps pair members nearby: their data stays in the cache), then in blocks kBlockGrowth
/// times as large, and so on, then in rounds over all members until every step is done.
void Engine::run_in_rounds(Gathering& g) {
  constexpr std::int64_t kFirstBlock = 1024, kBlockGrowth = 16;
  g.messages.clear();
  g.free_messages.clear();
  std::vector<std::int32_t>& members = g.active;
  for (std::int64_t block = kFirstBlock; block < g.size; block *= kBlockGrowth) {
    for (std::int64_t lo = 0; lo < g.size; lo += block) {
      members.clear();
      for (std::int64_t i = lo; i < std::min(g.size, lo + block); ++i) {
        const GatheredMember& m = g.members[static_cast<std::size_t>(i)];
        if (m.pos < m.steps) members.push_back(static_cast<std::int32_t>(i));
      }
      while (!members.empty() && gathering_round(g, members)) {
      }
    }
  }
  members.clear();
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(g.size); ++i) {
    const GatheredMember& m = g.members[static_cast<std::size_t>(i)];
    if (m.pos < m.steps) members.push_back(i);
  }
  while (!members.empty())
    if (!gathering_round(g, members))
      throw std::logic_error("simulator: a gathered collective's members wait for each other");
}

/// Every member has entered: runs their steps, in lockstep where they pair within each step
/// (run_lockstep), otherwise in rounds (run_in_rounds); then ends every member's call and lets it
/// go on. Any order that waits for each message gives the same times: a member's values depend
/// only on its own steps and the messages it receives.
void Engine::complete_gathering(Gathering& g) {
  bool lockstep = false;
  if (g.reuses_layout) {
    lockstep = true;  // every member's steps are the kept layout's: by_step and masks hold
    ++reused_layouts_;
  } else if (g.uniform) {
    transpose_steps(g);
    lockstep = lockstep_masks(g, g.masks);
    if (lockstep) keep_layout(g);
  }
  if (!lockstep) g.layout_size = -1;
  if (lockstep)
    run_lockstep(g, g.masks);
  else
    run_in_rounds(g);
  // Every member's call ends, in member order; the ranks go on in that order.
  constexpr std::size_t kAhead = 8;
  const auto size = static_cast<std::size_t>(g.size);
  for (std::size_t i = 0; i < size; ++i) {
    if (prefetch_states_ && i + kAhead < size) {
      const RankSim& later = rank(g.world[i + kAhead]);
      prefetch_line(&later);
      prefetch_line(&later.event_start);
      prefetch_line(&later.times);
    }
    GatheredMember& m = g.members[i];
    RankSim& R = rank(g.world[i]);
    R.clock = m.clock;
    R.times.wait = m.idle.wait;
    R.times.late_sender = m.idle.late_sender;
    R.times.late_receiver = m.idle.late_receiver;
    m.entered = false;
    end_event(R);
    queue_unblocked(g.world[i], false);
  }
  ++gathered_;
  g.open = false;
  open_gatherings_.erase(std::make_pair(g.key, g.tag));
}

}  // namespace scalatrace::sim
