// Simulator engine: its cache measures (prefetching ahead of resumptions, the outbox of eager
// messages, the direct delivery of collectives' messages) change the speed only. They switch on
// by themselves only at thousands of ranks; here they are forced on and off (sim::Prefetching)
// on small traces, randomized programs among them, and every field of every result must be the
// same bit for bit. The order-free shortcuts (sim::OrderFreeShortcuts: one pass over all members
// of a blocking collective, in lockstep or in rounds; woken ranks resumed first) change the
// processing order: every rank's times must stay the same bit for bit, the per-site sums (added
// in processing order) to rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "merged_recordings.hpp"
#include "random_exchange.hpp"
#include "scalatrace/model/recording.hpp"
#include "scalatrace/simulate/simulator.hpp"
#include "scalatrace/synthetic/synthetic.hpp"
#include "simulate/engine.hpp"

using namespace scalatrace;

namespace {

std::uint64_t bits(double x) { return std::bit_cast<std::uint64_t>(x); }

void expect_same_times(const SimTimes& a, const SimTimes& b, const std::string& what) {
  EXPECT_EQ(bits(a.compute), bits(b.compute)) << what;
  EXPECT_EQ(bits(a.comm), bits(b.comm)) << what;
  EXPECT_EQ(bits(a.wait), bits(b.wait)) << what;
  EXPECT_EQ(bits(a.late_sender), bits(b.late_sender)) << what;
  EXPECT_EQ(bits(a.late_receiver), bits(b.late_receiver)) << what;
  EXPECT_EQ(a.calls, b.calls) << what;
}

/// Every field of two results, bit for bit.
void expect_same(const SimResult& a, const SimResult& b, const std::string& what) {
  EXPECT_EQ(bits(a.total_ns), bits(b.total_ns)) << what;
  EXPECT_EQ(a.events, b.events) << what;
  EXPECT_EQ(a.messages, b.messages) << what;
  ASSERT_EQ(a.end_ns.size(), b.end_ns.size()) << what;
  for (std::size_t r = 0; r < a.end_ns.size(); ++r) {
    const std::string at = what + ", rank " + std::to_string(r);
    EXPECT_EQ(bits(a.end_ns[r]), bits(b.end_ns[r])) << at;
    expect_same_times(a.ranks[r], b.ranks[r], at);
    EXPECT_EQ(a.sent_messages[r], b.sent_messages[r]) << at;
    EXPECT_EQ(a.recv_messages[r], b.recv_messages[r]) << at;
    EXPECT_EQ(bits(a.sent_bytes[r]), bits(b.sent_bytes[r])) << at;
    EXPECT_EQ(bits(a.recv_bytes[r]), bits(b.recv_bytes[r])) << at;
  }
  ASSERT_EQ(a.sites.size(), b.sites.size()) << what;
  for (std::size_t i = 0; i < a.sites.size(); ++i) {
    const std::string at = what + ", site row " + std::to_string(i);
    EXPECT_EQ(a.sites[i].site, b.sites[i].site) << at;
    EXPECT_EQ(a.sites[i].op, b.sites[i].op) << at;
    expect_same_times(a.sites[i].times, b.sites[i].times, at);
  }
  ASSERT_EQ(a.pairs.size(), b.pairs.size()) << what;
  for (std::size_t i = 0; i < a.pairs.size(); ++i) {
    EXPECT_EQ(a.pairs[i].src, b.pairs[i].src) << what;
    EXPECT_EQ(a.pairs[i].dst, b.pairs[i].dst) << what;
    EXPECT_EQ(a.pairs[i].messages, b.pairs[i].messages) << what;
    EXPECT_EQ(bits(a.pairs[i].bytes), bits(b.pairs[i].bytes)) << what;
  }
  ASSERT_EQ(a.timeline.size(), b.timeline.size()) << what;
  for (std::size_t i = 0; i < a.timeline.size(); ++i) {
    const std::string at = what + ", timeline row " + std::to_string(i);
    EXPECT_EQ(a.timeline[i].rank, b.timeline[i].rank) << at;
    EXPECT_EQ(a.timeline[i].index, b.timeline[i].index) << at;
    EXPECT_EQ(a.timeline[i].op, b.timeline[i].op) << at;
    EXPECT_EQ(a.timeline[i].site, b.timeline[i].site) << at;
    EXPECT_EQ(bits(a.timeline[i].start), bits(b.timeline[i].start)) << at;
    EXPECT_EQ(bits(a.timeline[i].end), bits(b.timeline[i].end)) << at;
  }
}

/// Every field of two results bit for bit but the per-site sums, which may differ by rounding
/// (the same values added in another order).
void expect_same_but_site_rounding(const SimResult& a, const SimResult& b, const std::string& what) {
  SimResult a_sites_apart = a, b_sites_apart = b;
  a_sites_apart.sites.clear();
  b_sites_apart.sites.clear();
  expect_same(a_sites_apart, b_sites_apart, what);
  ASSERT_EQ(a.sites.size(), b.sites.size()) << what;
  const auto close = [](double x, double y) { return std::abs(x - y) <= 1e-12 * std::max(std::abs(x), std::abs(y)); };
  for (std::size_t i = 0; i < a.sites.size(); ++i) {
    const std::string at = what + ", site row " + std::to_string(i);
    const SimTimes &x = a.sites[i].times, &y = b.sites[i].times;
    EXPECT_EQ(a.sites[i].site, b.sites[i].site) << at;
    EXPECT_EQ(a.sites[i].op, b.sites[i].op) << at;
    EXPECT_TRUE(close(x.compute, y.compute)) << at << ": " << x.compute << " vs " << y.compute;
    EXPECT_TRUE(close(x.comm, y.comm)) << at << ": " << x.comm << " vs " << y.comm;
    EXPECT_TRUE(close(x.wait, y.wait)) << at << ": " << x.wait << " vs " << y.wait;
    EXPECT_TRUE(close(x.late_sender, y.late_sender)) << at;
    EXPECT_TRUE(close(x.late_receiver, y.late_receiver)) << at;
    EXPECT_EQ(x.calls, y.calls) << at;
  }
}

/// How many collectives an engine gathered, and how many of them went in lockstep.
struct GatheredCounts {
  std::uint64_t gathered = 0, lockstep = 0;
  GatheredCounts& operator+=(const GatheredCounts& o) {
    gathered += o.gathered;
    lockstep += o.lockstep;
    return *this;
  }
};

/// Simulated step by step in first-in first-out order and with the order-free shortcuts
/// (gathered collectives, woken ranks first) where the run allows them: the same times on every
/// rank.
GatheredCounts expect_gathering_free(const Trace& t, const SimOptions& opt, const std::string& what) {
  SimResult stepwise, gathered;
  try {
    stepwise = sim::simulate_prefetching(t, opt, sim::Prefetching::Off, sim::OrderFreeShortcuts::Off);
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
    return {};
  }
  sim::Engine engine(t, opt, sim::Prefetching::All);
  gathered = engine.run();
  EXPECT_GT(stepwise.events, 0u) << what;
  expect_same_but_site_rounding(stepwise, gathered, what);
  // The public entry point (prefetching by size): the same as the engine gathering.
  expect_same(gathered, simulate(t, opt), what + " (auto)");
  return {engine.gathered_collectives(), engine.lockstep_collectives()};
}

/// The trace simulated with the cache measures off and forced on: the same results.
void expect_layout_free(const Trace& t, const SimOptions& opt, const std::string& what) {
  SimResult off, on;
  ASSERT_NO_THROW(off = sim::simulate_prefetching(t, opt, sim::Prefetching::Off)) << what;
  ASSERT_NO_THROW(on = sim::simulate_prefetching(t, opt, sim::Prefetching::All)) << what;
  EXPECT_GT(off.events, 0u) << what;
  expect_same(off, on, what);
  // The public entry point decides by size (Off at these sizes): the same again.
  expect_same(off, simulate(t, opt), what + " (auto)");
}

/// Option sets that take every path of the network model and the accounting.
std::vector<std::pair<std::string, SimOptions>> option_sets() {
  std::vector<std::pair<std::string, SimOptions>> sets;
  SimOptions base;
  base.inter_node = LogGP{1000, 250, 300, 40, 0.5, 0.01};
  base.intra_node = LogGP{200, 100, 120, 10, 0.1, 0.01};
  base.ranks_per_node = 4;
  base.eager_threshold = 2048;
  base.timeline = true;
  base.pair_counts = true;
  sets.emplace_back("flat", base);
  SimOptions contended = base;
  contended.contention = true;
  sets.emplace_back("contention", contended);
  SimOptions sampled = base;
  sampled.timing = TimingMode::Sample;
  sampled.seed = 11;
  sampled.noise = OsNoise{5000, 300, false, 5};
  sets.emplace_back("sample timing, noise", sampled);
  SimOptions torus = base;
  torus.topology.kind = Topology::Kind::Torus;
  torus.topology.shape = {4, 4};
  torus.topology.hop_latency = 100;
  torus.topology.link_G = 0.5;
  torus.placement = Placement::RoundRobin;
  sets.emplace_back("torus with congestion", torus);
  return sets;
}

/// A randomized program that cannot deadlock: per step, all ranks agree (one seeded generator)
/// on a shift and a kind; each rank computes a random time, then exchanges with the ranks that
/// shift away in either direction (sizes on both sides of the eager threshold, sometimes a
/// wildcard receive, sometimes blocking calls), or runs a collective (some nonblocking,
/// completed after the next exchange's Waitall).
/// `order_free`: none of what makes a run depend on the engine's order (wildcards, Issend,
/// messages above the eager threshold of option_sets(), nonblocking collectives).
std::vector<RankRecording> random_program(std::int64_t nranks, int steps, std::uint64_t seed, bool order_free = false) {
  std::vector<RankRecording> recs = test_support::blank_recordings(nranks, "random_program", 12);
  std::mt19937_64 rng(seed);
  std::vector<std::int64_t> outstanding(static_cast<std::size_t>(nranks), 0);  // request slots
  std::vector<bool> pending_collective(static_cast<std::size_t>(nranks), false);
  auto add = [&](std::int64_t r, Op op, std::uint32_t site) -> Event& {
    Event e;
    e.op = op;
    e.site = site;
    e.compute_ns = 200 + static_cast<std::uint64_t>(rng() % 3000);
    e.duration_ns = 50 + static_cast<std::uint64_t>(rng() % 100);
    if (op_creates_request(op)) ++outstanding[static_cast<std::size_t>(r)];
    auto& events = recs[static_cast<std::size_t>(r)].events;
    events.push_back(e);
    return events.back();
  };
  for (int step = 0; step < steps; ++step) {
    const auto kind = rng() % 6;
    if (kind <= 3) {
      const std::int64_t shift = 1 + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(nranks - 1));
      const std::int64_t bytes = rng() % 3 == 0 && !order_free ? 4096 + static_cast<std::int64_t>(rng() % 4096)
                                                               : 8 * (1 + static_cast<std::int64_t>(rng() % 100));
      const bool wildcard = kind == 1 && !order_free;
      const bool blocking = kind == 2;
      for (std::int64_t r = 0; r < nranks; ++r) {
        const std::int64_t to = (r + shift) % nranks, from = (r - shift + nranks) % nranks;
        if (blocking) {
          // Sendrecv: both halves in one call.
          Event& e = add(r, Op::Sendrecv, 5);
          e[Field::Peer] = to - r;
          e[Field::Tag] = step;
          e[Field::Bytes] = bytes;
          e[Field::DtSize] = 1;
          e[Field::Peer2] = from - r;
          e[Field::Tag2] = step;
          e[Field::Bytes2] = bytes;
          e[Field::DtSize2] = 1;
          continue;
        }
        Event& recv = add(r, Op::Irecv, 0);
        recv[Field::Peer] = wildcard ? kAnySource : from - r;
        recv[Field::Tag] = step;
        recv[Field::Bytes] = bytes;
        recv[Field::DtSize] = 1;
        Event& send = add(r, rng() % 4 == 0 && !order_free ? Op::Issend : Op::Isend, 1);
        send[Field::Peer] = to - r;
        send[Field::Tag] = step;
        send[Field::Bytes] = bytes;
        send[Field::DtSize] = 1;
        Event& wait = add(r, Op::Waitall, 2);
        for (std::int64_t q = outstanding[static_cast<std::size_t>(r)]; q >= 1; --q)
          wait[ArrayField::Requests].push_back(q);
        outstanding[static_cast<std::size_t>(r)] = 0;
        pending_collective[static_cast<std::size_t>(r)] = false;
      }
    } else {
      static constexpr Op kCollectives[] = {Op::Allreduce, Op::Bcast, Op::Barrier, Op::Alltoall, Op::Reduce};
      const Op op = kCollectives[rng() % std::size(kCollectives)];
      const bool nonblocking = kind == 5 && op == Op::Allreduce && !order_free;
      const std::int64_t bytes = 8 * (1 + static_cast<std::int64_t>(rng() % 600));
      const std::int64_t root = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(nranks));
      for (std::int64_t r = 0; r < nranks; ++r) {
        if (nonblocking && pending_collective[static_cast<std::size_t>(r)]) continue;
        Event& e = add(r, nonblocking ? Op::Iallreduce : op, nonblocking ? 6 : 3);
        e[Field::Bytes] = bytes;
        e[Field::Bytes2] = bytes;
        e[Field::DtSize] = 8;
        e[Field::DtSize2] = 8;
        e[Field::Root] = root;
        e[Field::RedOp] = static_cast<std::int64_t>(RedOpCode::Sum);
        if (nonblocking) pending_collective[static_cast<std::size_t>(r)] = true;
      }
    }
  }
  for (std::int64_t r = 0; r < nranks; ++r) {
    if (outstanding[static_cast<std::size_t>(r)] > 0) {
      Event& wait = add(r, Op::Waitall, 2);
      for (std::int64_t q = outstanding[static_cast<std::size_t>(r)]; q >= 1; --q)
        wait[ArrayField::Requests].push_back(q);
    }
    add(r, Op::Finalize, 4);
  }
  return recs;
}

/// The harness pattern on `nranks` ranks for `timesteps` steps, merged.
Trace synthetic_trace(SyntheticPattern pattern, std::int64_t nranks, std::int64_t timesteps, bool wrap = true) {
  SyntheticSpec spec;
  spec.pattern = pattern;
  spec.nranks = nranks;
  spec.timesteps = timesteps;
  spec.wrap = wrap;
  return synthetic_merged_trace(spec);
}

}  // namespace

TEST(SimulatorLayout, SyntheticPatternsGiveTheSameResultsWithAndWithoutPrefetching) {
  const SyntheticPattern patterns[] = {SyntheticPattern::Stencil1D, SyntheticPattern::Stencil2D,
                                       SyntheticPattern::Stencil3D, SyntheticPattern::Collectives,
                                       SyntheticPattern::RowColumn};
  for (SyntheticPattern pattern : patterns) {
    for (bool wrap : {true, false}) {
      const Trace t = synthetic_trace(pattern, pattern == SyntheticPattern::Stencil3D ? 27 : 16, 5, wrap);
      for (const auto& [name, opt] : option_sets())
        expect_layout_free(t, opt, std::string(synthetic_pattern_name(pattern)) + (wrap ? " wrap, " : ", ") + name);
    }
  }
}

TEST(SimulatorLayout, RandomizedProgramsGiveTheSameResultsWithAndWithoutPrefetching) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const std::int64_t nranks = 5 + static_cast<std::int64_t>(seed * 3);
    const Trace t = test_support::merged_trace(random_program(nranks, 40, seed));
    for (const auto& [name, opt] : option_sets())
      expect_layout_free(t, opt, "random program, seed " + std::to_string(seed) + ", " + name);
  }
  // The random graph exchange (data-dependent peers and sizes, Allreduce per iteration).
  const Trace exchange = test_support::merged_trace(test_support::random_exchange(24, 15, 3));
  for (const auto& [name, opt] : option_sets()) expect_layout_free(exchange, opt, "random exchange, " + name);
}

TEST(SimulatorLayout, GatheredCollectivesGiveEveryRankTheSameTimes) {
  // Synthetic patterns: stencils with an Allreduce per step, the collectives pattern (every
  // blocking collective) and row and column communicators; 48 and 64 ranks so that no
  // allreduce member count is a power of two in some (MPICH's fold of the extra ranks); at most
  // 64, the torus' 16 nodes of 4 ranks.
  GatheredCounts gathered;
  const SyntheticPattern patterns[] = {SyntheticPattern::Stencil2D, SyntheticPattern::Stencil3D,
                                       SyntheticPattern::Collectives, SyntheticPattern::RowColumn};
  for (SyntheticPattern pattern : patterns) {
    for (std::int64_t nranks : {std::int64_t{48}, std::int64_t{64}}) {
      const Trace t = synthetic_trace(pattern, nranks, 4);
      for (const auto& [name, opt] : option_sets()) {
        const std::string what =
            std::string(synthetic_pattern_name(pattern)) + ", " + std::to_string(nranks) + " ranks, " + name;
        const GatheredCounts count = expect_gathering_free(t, opt, what);
        // Shared links make the order part of the result: nothing is gathered there.
        if (opt.contention || opt.topology.kind != Topology::Kind::Flat) {
          EXPECT_EQ(count.gathered, 0u) << what;
        }
        gathered += count;
      }
    }
  }
  // Both passes: in lockstep (a power-of-two Allreduce, rings, dissemination) and in rounds
  // (the fold of 48 ranks' Allreduce, trees).
  EXPECT_GT(gathered.lockstep, 0u);
  EXPECT_GT(gathered.gathered, gathered.lockstep);
}

TEST(SimulatorLayout, LockstepIsTheStepsPairingWithinEachStep) {
  // Steps by step (by_step[s * size + member]) as a gathering holds them.
  const auto gathering = [](std::int32_t size, std::vector<std::vector<sim::GatheredStep>> steps) {
    sim::Gathering g;
    g.size = size;
    g.step_count = static_cast<std::uint32_t>(steps.size());
    for (const auto& step : steps) g.by_step.insert(g.by_step.end(), step.begin(), step.end());
    return g;
  };
  std::vector<std::uint32_t> masks;
  // Recursive doubling over 8 members: partners 1, 2 and 4 apart.
  std::vector<std::vector<sim::GatheredStep>> doubling(3);
  for (std::int32_t s = 0; s < 3; ++s)
    for (std::int32_t i = 0; i < 8; ++i) doubling[s].push_back({i ^ (1 << s), i ^ (1 << s), 8});
  EXPECT_TRUE(sim::lockstep_masks(gathering(8, doubling), masks));
  EXPECT_EQ(masks, (std::vector<std::uint32_t>{1, 2, 4}));
  // A ring of 5: receive from the left, send to the right, every step.
  std::vector<std::vector<sim::GatheredStep>> ring(4);
  for (auto& step : ring)
    for (std::int32_t i = 0; i < 5; ++i) step.push_back({(i + 4) % 5, (i + 1) % 5, 8});
  EXPECT_TRUE(sim::lockstep_masks(gathering(5, ring), masks));
  EXPECT_EQ(masks, (std::vector<std::uint32_t>{7, 7, 7, 7}));
  // As many steps each, but member 1 sends at its second step what member 0 receives at its
  // first: not in lockstep (the pass in rounds runs it).
  EXPECT_FALSE(sim::lockstep_masks(gathering(2, {{{1, -1, 0}, {-1, -1, 0}}, {{-1, -1, 0}, {-1, 0, 8}}}), masks));
  // A send whose receiver does not receive at that step, and a partner outside the members.
  EXPECT_FALSE(sim::lockstep_masks(gathering(2, {{{-1, 1, 8}, {-1, -1, 0}}}), masks));
  EXPECT_FALSE(sim::lockstep_masks(gathering(2, {{{2, -1, 0}, {-1, -1, 0}}}), masks));
}

TEST(SimulatorLayout, LockstepCollectivesOverBlocksOfMembersGiveEveryRankTheSameTimes) {
  // Beyond 1,024 members a lockstep pass runs its first steps block by block (partners within
  // aligned blocks of 1,024), the later ones over all members: 2,048 and 4,096 ranks.
  GatheredCounts gathered;
  for (const auto& [pattern, nranks] : {std::pair{SyntheticPattern::Stencil2D, std::int64_t{4096}},
                                        std::pair{SyntheticPattern::Collectives, std::int64_t{2048}}}) {
    const Trace t = synthetic_trace(pattern, nranks, 2);
    for (const auto& [name, opt] : option_sets()) {
      if (opt.contention || opt.topology.kind != Topology::Kind::Flat) continue;  // nothing gathered
      gathered += expect_gathering_free(
          t, opt, std::string(synthetic_pattern_name(pattern)) + ", " + std::to_string(nranks) + " ranks, " + name);
    }
  }
  EXPECT_GT(gathered.lockstep, 0u);
  // The stencil's 4 KiB messages eager (default options): its Allreduce in lockstep, the steps
  // beyond the first 2^10 members' (partners 1,024 and 2,048 apart) over blocks of members
  // 1,024 apart.
  const Trace stencil = synthetic_trace(SyntheticPattern::Stencil2D, 4096, 2);
  EXPECT_EQ(expect_gathering_free(stencil, SimOptions{}, "2D stencil, 4096 ranks, default options").lockstep, 2u);
}

TEST(SimulatorLayout, GatheredCollectivesInRandomizedOrderFreePrograms) {
  // Random shifts, Sendrecv, blocking collectives with random roots and sizes (some above the
  // eager threshold: those run step by step, beside the gathered ones).
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const std::int64_t nranks = 3 + static_cast<std::int64_t>(seed * 5);
    const Trace t = test_support::merged_trace(random_program(nranks, 60, seed, true));
    GatheredCounts gathered;
    for (const auto& [name, opt] : option_sets())
      gathered +=
          expect_gathering_free(t, opt, "order-free random program, seed " + std::to_string(seed) + ", " + name);
    EXPECT_GT(gathered.gathered, 0u) << "seed " << seed;
  }
  // With wildcards, Issend and nonblocking collectives the run is not order-free: nothing is
  // gathered, and the results are those of the step-by-step engine bit for bit.
  const Trace t = test_support::merged_trace(random_program(17, 40, 5));
  for (const auto& [name, opt] : option_sets()) {
    sim::Engine engine(t, opt);
    const SimResult r = engine.run();
    EXPECT_EQ(engine.gathered_collectives(), 0u) << name;
    expect_same(r, sim::simulate_prefetching(t, opt, sim::Prefetching::Off, sim::OrderFreeShortcuts::Off), name);
  }
}

TEST(SimulatorLayout, ARepeatedCollectiveReusesItsLayoutOnlyWhenEveryMemberHasTheSameSteps) {
  // 16 ranks, eight blocking collectives on the world: Allreduce (recursive doubling: in
  // lockstep) of 8 bytes three times, then once with rank 5 alone sending 16 (its steps differ
  // from the kept layout's: after members that reused theirs), 8 bytes again (rank 5 differs
  // from that), a Bcast (other steps for every member), and 8 bytes twice more. Only the
  // second, third and last Allreduce run on the kept layout; every rank's times are those of
  // the step-by-step engine.
  constexpr std::int64_t kRanks = 16;
  std::vector<RankRecording> recs = test_support::blank_recordings(kRanks, "repeated_allreduce", 3);
  const auto add = [&](std::int64_t r, Op op, std::int64_t bytes) {
    Event e;
    e.op = op;
    e.site = op == Op::Bcast ? 2 : 1;
    e.compute_ns = 100 + static_cast<std::uint64_t>((r * 37) % 200);
    e.duration_ns = 50;
    e[Field::Bytes] = bytes;
    e[Field::Bytes2] = bytes;
    e[Field::DtSize] = 8;
    e[Field::DtSize2] = 8;
    e[Field::RedOp] = static_cast<std::int64_t>(RedOpCode::Sum);
    recs[static_cast<std::size_t>(r)].events.push_back(e);
  };
  for (int call = 0; call < 8; ++call)
    for (std::int64_t r = 0; r < kRanks; ++r)
      add(r, call == 5 ? Op::Bcast : Op::Allreduce, call == 3 && r == 5 ? 16 : 8);
  for (std::int64_t r = 0; r < kRanks; ++r) {
    Event fin;
    fin.op = Op::Finalize;
    recs[static_cast<std::size_t>(r)].events.push_back(fin);
  }
  const Trace t = test_support::merged_trace(recs);
  const SimOptions opt = option_sets().front().second;  // flat: every collective gathered
  expect_gathering_free(t, opt, "repeated Allreduce");
  sim::Engine engine(t, opt);
  engine.run();
  EXPECT_EQ(engine.gathered_collectives(), 8u);
  EXPECT_EQ(engine.reused_layouts(), 3u);
  // Members whose steps were not computed again (the inputs of the layout's pass): all 16 in
  // the second and third, 15 in the fourth (rank 5's 16 bytes are not), none in the fifth (its
  // layout was made from two sizes) nor in the Bcast or the Allreduce after it, 16 in the last.
  EXPECT_EQ(engine.steps_not_computed(), 16u + 16u + 15u + 16u);
  // The stencil's Allreduce per step: every one after the first reuses the layout (default
  // options: its 4 KiB messages eager, the run order-free).
  const Trace stencil = synthetic_trace(SyntheticPattern::Stencil2D, 64, 5);
  const SimOptions defaults;  // the engine keeps a reference: it must outlive the run
  expect_gathering_free(stencil, defaults, "2D stencil");
  sim::Engine stencil_engine(stencil, defaults);
  stencil_engine.run();
  EXPECT_EQ(stencil_engine.lockstep_collectives(), 5u);
  EXPECT_EQ(stencil_engine.reused_layouts(), 4u);
  EXPECT_EQ(stencil_engine.steps_not_computed(), 4u * 64u);
}

TEST(SimulatorLayout, CollectivesWithEqualInputsHaveEqualSteps) {
  // What the gathered collectives rely on to take a member's steps from a kept layout: two
  // events with equal collective_inputs give every member the same steps, whatever their
  // other fields and arrays; the collectives without inputs are those whose steps an array
  // changes.
  std::mt19937_64 rng(20261130);
  const auto draw = [&rng](std::int64_t hi) {
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi));
  };
  for (std::size_t o = 0; o < kOpCount; ++o) {
    const auto op = static_cast<Op>(o);
    if (!op_is_collective(op)) continue;
    bool an_array_changed_steps = false;
    for (const std::int64_t n : {2, 3, 5, 8, 16}) {
      for (int trial = 0; trial < 20; ++trial) {
        Event a, b;
        a.op = b.op = op;
        a[Field::Bytes] = b[Field::Bytes] = trial % 2 == 0 ? draw(4096) : draw(1 << 22);
        a[Field::Bytes2] = b[Field::Bytes2] = draw(1 << 20);
        a[Field::Root] = b[Field::Root] = draw(n + 1);
        for (Event* e : {&a, &b}) {
          (*e)[Field::Tag] = draw(100);
          (*e)[Field::DtSize] = 1 + draw(16);
          (*e)[Field::DtSize2] = 1 + draw(16);
          (*e)[Field::RedOp] = draw(8);
          for (std::size_t f = 0; f < kArrayFieldCount; ++f) {
            std::vector<std::int64_t> values(static_cast<std::size_t>(n));
            for (std::int64_t& v : values) v = draw(1 << 16);
            e->arrays[f] = values;
          }
        }
        const std::optional<sim::CollectiveInputs> inputs = sim::collective_inputs(EventView::of(a));
        if (inputs) {
          ASSERT_EQ(inputs, sim::collective_inputs(EventView::of(b))) << op_name(op);
        }
        for (std::int64_t me = 0; me < n; ++me) {
          sim::CollSteps steps_a, steps_b;
          sim::collective_steps(EventView::of(a), me, n, 1.0, steps_a);
          sim::collective_steps(EventView::of(b), me, n, 1.0, steps_b);
          const bool same =
              std::equal(steps_a.begin(), steps_a.end(), steps_b.begin(), steps_b.end(),
                         [](const sim::CollStep& x, const sim::CollStep& y) {
                           return x.recv_from == y.recv_from && x.send_to == y.send_to && x.send_bytes == y.send_bytes;
                         });
          if (inputs) {
            ASSERT_TRUE(same) << op_name(op) << " n=" << n << " me=" << me;
          }
          an_array_changed_steps = an_array_changed_steps || !same;
        }
      }
    }
    Event bare;
    bare.op = op;
    if (!sim::collective_inputs(EventView::of(bare))) {
      EXPECT_TRUE(an_array_changed_steps) << op_name(op) << " has no inputs, but no array changed its steps";
    }
  }
}

TEST(SimulatorLayout, AGatheredCollectiveThatAMemberNeverEntersIsADeadlock) {
  // Rank 2 leaves out the last Allreduce: the others wait in it for ever, gathered or not.
  std::vector<RankRecording> recs = random_program(6, 10, 3, true);
  auto& events = recs[2].events;
  for (auto it = events.rbegin(); it != events.rend(); ++it)
    if (it->op == Op::Allreduce || it->op == Op::Barrier || it->op == Op::Bcast || it->op == Op::Reduce ||
        it->op == Op::Alltoall) {
      events.erase(std::next(it).base());
      break;
    }
  const Trace t = test_support::merged_trace(recs);
  const SimOptions opt = option_sets().front().second;
  for (const auto shortcuts : {sim::OrderFreeShortcuts::Off, sim::OrderFreeShortcuts::Auto}) {
    try {
      sim::simulate_prefetching(t, opt, sim::Prefetching::Off, shortcuts);
      ADD_FAILURE() << "no error";
    } catch (const SimulationError& e) {
      EXPECT_NE(std::string(e.what()).find("simulated deadlock"), std::string::npos) << e.what();
    }
  }
}
