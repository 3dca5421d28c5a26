// Probabilistic replay of lossy traces (docs/lossy.md): every drawn send has exactly one
// matching receive, the same seed gives the same program, and the simulator runs lossy traces
// (regular and data-dependent ones) to the end with the recorded message counts and bytes.
#include "scalatrace/read/probabilistic_walk.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "event_streams.hpp"
#include "random_exchange.hpp"
#include "scalatrace/compress/lossy.hpp"
#include "scalatrace/read/potential_senders.hpp"
#include "scalatrace/simulate/simulator.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

using namespace scalatrace;
using test_support::ev;
using test_support::merged_trace;
using test_support::random_exchange;

namespace {

using MessageKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;

/// (source, dest, comm, tag, bytes) -> count: what the walks send, and what they receive.
struct Matching {
  std::map<MessageKey, std::int64_t> sent, received;
  std::uint64_t calls = 0;
};

Matching walk_all(const Trace& t, std::uint64_t seed) {
  Matching m;
  for (std::int64_t r = 0; r < t.nranks; ++r) {
    ProbabilisticOptions o;
    o.seed = seed;
    ProbabilisticWalk walk(t, r, o);
    Event e;
    while (walk.next(e)) {
      ++m.calls;
      EXPECT_TRUE(e.op != Op::Recv && e.op != Op::Send && e.op != Op::Wait) << describe(e);
      if (e.op == Op::Isend)
        ++m.sent[{r, r + e[Field::Peer], e[Field::Comm], e[Field::Tag], e[Field::Bytes]}];
      else if (e.op == Op::Irecv)
        ++m.received[{r + e[Field::Peer], r, e[Field::Comm], e[Field::Tag], e[Field::Bytes]}];
    }
  }
  return m;
}

std::uint64_t sends_in(const std::vector<RankRecording>& recs) {
  std::uint64_t n = 0;
  for (const auto& rec : recs)
    for (const auto& e : rec.events) n += op_kind(e.op) == OpKind::NonblockingSend;
  return n;
}

double send_bytes_in(const std::vector<RankRecording>& recs) {
  double b = 0;
  for (const auto& rec : recs)
    for (const auto& e : rec.events)
      if (op_kind(e.op) == OpKind::NonblockingSend) b += static_cast<double>(e[Field::Bytes]);
  return b;
}

}  // namespace

TEST(ProbabilisticWalk, EveryDrawnSendHasExactlyOneReceive) {
  for (const std::int64_t n : {2, 3, 5, 9}) {
    const auto recs = random_exchange(n, 12, static_cast<std::uint64_t>(n));
    Trace t = merged_trace(recs);
    make_lossy(t, 1);
    const Matching m = walk_all(t, 42);
    EXPECT_EQ(m.sent, m.received) << n << " ranks";
    std::uint64_t sends = 0;
    for (const auto& [k, c] : m.sent) sends += static_cast<std::uint64_t>(c);
    EXPECT_EQ(sends, sends_in(recs)) << n << " ranks";
    const Matching again = walk_all(t, 42), other = walk_all(t, 43);
    EXPECT_EQ(again.sent, m.sent);
    EXPECT_NE(other.sent, m.sent);  // another seed, other draws
  }
}

TEST(ProbabilisticWalk, SimulationIsDeadlockFreeAndReproducible) {
  for (const std::int64_t n : {2, 4, 7, 9}) {
    const auto recs = random_exchange(n, 12, 100 + static_cast<std::uint64_t>(n));
    const Trace exact = merged_trace(recs);
    for (const std::uint64_t threshold : {1, 32}) {
      Trace t = exact.clone();
      make_lossy(t, threshold);
      if (threshold == 1) {
        ASSERT_TRUE(is_lossy(t));
      }
      SimOptions o;
      o.seed = 5;
      const SimResult a = simulate(t, o), b = simulate(t, o);
      EXPECT_EQ(a.total_ns, b.total_ns);
      std::uint64_t sent = 0, received = 0;
      double bytes = 0;
      for (std::int64_t r = 0; r < n; ++r) {
        sent += a.sent_messages[static_cast<std::size_t>(r)];
        received += a.recv_messages[static_cast<std::size_t>(r)];
        bytes += a.sent_bytes[static_cast<std::size_t>(r)];
      }
      EXPECT_EQ(sent, received);
      // Self-messages are not counted: a drawn peer may wrap onto the sender.
      EXPECT_LE(sent, sends_in(recs));
      EXPECT_GE(static_cast<double>(sent), 0.9 * static_cast<double>(sends_in(recs)));
      const double want = send_bytes_in(recs);
      EXPECT_LT(std::abs(bytes - want) / want, 0.05) << n << " ranks, threshold " << threshold;
      const SimResult lossless = simulate(exact, o);
      EXPECT_GT(a.total_ns, 0.5 * lossless.total_ns);
      EXPECT_LT(a.total_ns, 2.0 * lossless.total_ns);
    }
  }
}

TEST(ProbabilisticWalk, RegularProgramsSimulateLossy) {
  for (const auto pattern : {SyntheticPattern::Stencil1D, SyntheticPattern::Stencil2D, SyntheticPattern::Stencil3D,
                             SyntheticPattern::Collectives, SyntheticPattern::RowColumn}) {
    SyntheticSpec spec;
    spec.pattern = pattern;
    spec.nranks = pattern == SyntheticPattern::Stencil3D ? 8 : 9;
    spec.timesteps = 6;
    std::vector<RankRecording> recs;
    for (std::int64_t r = 0; r < spec.nranks; ++r) recs.push_back(record_synthetic(spec, r));
    Trace t = merged_trace(recs);
    const SimResult exact = simulate(t, SimOptions{});
    make_lossy(t, 1);
    const SimResult lossy = simulate(t, SimOptions{});
    std::uint64_t exact_sent = 0, lossy_sent = 0;
    for (std::size_t r = 0; r < exact.sent_messages.size(); ++r) {
      exact_sent += exact.sent_messages[r];
      lossy_sent += lossy.sent_messages[r];
    }
    EXPECT_LE(lossy_sent, exact_sent) << synthetic_pattern_name(pattern);
    EXPECT_GE(static_cast<double>(lossy_sent), 0.8 * static_cast<double>(exact_sent))
        << synthetic_pattern_name(pattern);
  }
}

TEST(ProbabilisticWalk, EachRankWalksOnlyTheContextsOfItsPotentialSenders) {
  // 9 ranks exchanging random sizes with random neighbours at most 2 ranks away: each rank can
  // hear from 4 ranks (its send histograms hold relative peers -2, -1, 1, 2) and walks 4
  // secondary contexts, not 9. The program is the one a walk of every context gives, and every
  // drawn send still has its one receive.
  const std::int64_t n = 9;
  const auto recs = random_exchange(n, 12, 5, 2);
  Trace t = merged_trace(recs);
  make_lossy(t, 1);
  ASSERT_TRUE(is_lossy(t));
  std::vector<std::int64_t> everyone;
  for (std::int64_t r = 0; r < n; ++r) everyone.push_back(r);
  for (std::int64_t r = 0; r < n; ++r) {
    std::vector<std::int64_t> want{(r + n - 2) % n, (r + n - 1) % n, (r + 1) % n, (r + 2) % n};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(potential_senders(t, r), want) << "rank " << r;
    EXPECT_EQ(potential_destinations(t, r), want) << "rank " << r;  // symmetric shifts
    ProbabilisticOptions bounded, full;
    bounded.seed = full.seed = 8;
    full.senders = everyone;
    ProbabilisticWalk a(t, r, bounded), b(t, r, full);
    Event x, y;
    std::uint64_t calls = 0;
    while (a.next(x)) {
      ASSERT_TRUE(b.next(y)) << "rank " << r;
      EXPECT_EQ(describe(x), describe(y)) << "rank " << r << ", call " << calls;
      ++calls;
    }
    EXPECT_FALSE(b.next(y));
    EXPECT_EQ(a.contexts(), 4u) << "rank " << r;
    EXPECT_EQ(b.contexts(), static_cast<std::size_t>(n)) << "rank " << r;
  }
  const Matching m = walk_all(t, 8);
  EXPECT_EQ(m.sent, m.received);
  // Any shift: every rank can hear from the 8 others.
  Trace any = merged_trace(random_exchange(n, 12, 5));
  make_lossy(any, 1);
  EXPECT_EQ(potential_senders(any, 0).size(), static_cast<std::size_t>(n - 1));
}

TEST(ProbabilisticWalk, ReceivesArePostedNearTheSendersEstimatedSendTimes) {
  // Rank 0 sends at 100 us and 200 us (its recorded compute times); rank 1 sends at 1 us,
  // 150 us and 300 us. In one epoch (up to the Barrier), each rank posts the receive of a
  // message just before its own first call after the message's estimated send time, not all
  // at the start: rank 1's calls are Isend (1 us), Irecv (100 us), Isend (150 us), Irecv
  // (200 us), Isend (300 us), then the Waitall and the Barrier.
  std::vector<RankRecording> recs(2);
  const std::vector<std::vector<std::uint64_t>> computes{{100'000, 100'000}, {1'000, 149'000, 150'000}};
  for (std::int64_t r = 0; r < 2; ++r) {
    auto& rec = recs[static_cast<std::size_t>(r)];
    rec.rank = r;
    rec.nranks = 2;
    const auto mod = rec.sites.intern_module("near_send_times");
    for (std::uint32_t s = 0; s < 8; ++s) rec.sites.intern({Frame{mod, 0x100 + s}});
    Event init = ev(Op::Init, 0);
    init.compute_ns = init.duration_ns = 0;
    rec.events.push_back(init);
    std::uint32_t site = r == 0 ? 1 : 3;  // each rank's sends are nodes of their own
    for (const std::uint64_t c : computes[static_cast<std::size_t>(r)]) {
      Event e = ev(Op::Isend, site++, 1 - 2 * r, 64);
      e[Field::DtSize] = 1;
      e.compute_ns = c;
      e.duration_ns = 0;
      rec.events.push_back(e);
    }
    Event w = ev(Op::Waitall, 6);
    for (std::int64_t q = static_cast<std::int64_t>(computes[static_cast<std::size_t>(r)].size()); q >= 1; --q)
      w[ArrayField::Requests].push_back(q);
    rec.events.push_back(w);
    rec.events.push_back(ev(Op::Barrier, 7));
    rec.events.push_back(ev(Op::Finalize, 0));
  }
  Trace t = merged_trace(recs);
  make_lossy(t, 1);
  ASSERT_TRUE(is_lossy(t));
  auto calls = [&](std::int64_t rank) {
    std::vector<Op> ops;
    ProbabilisticWalk walk(t, rank, ProbabilisticOptions{});
    Event e;
    while (walk.next(e)) ops.push_back(e.op);
    return ops;
  };
  EXPECT_EQ(calls(1), (std::vector<Op>{Op::Init, Op::Isend, Op::Irecv, Op::Isend, Op::Irecv, Op::Isend, Op::Waitall,
                                       Op::Barrier, Op::Finalize}));
  // Rank 0: its first call is at 100 us (rank 1's 1 us message before it), its second at 200 us
  // (the 150 us message before it); the 300 us message is posted before the epoch's Waitall.
  EXPECT_EQ(calls(0), (std::vector<Op>{Op::Init, Op::Irecv, Op::Isend, Op::Irecv, Op::Isend, Op::Irecv, Op::Waitall,
                                       Op::Barrier, Op::Finalize}));
}
