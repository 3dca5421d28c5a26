// Cursor (read stage): one rank's concrete events walked from a compressed trace. Timing
// modes, first occurrences, errors on inconsistent traces, merged traces with alternatives,
// and the three forms of next() against every rank's generated stream. See docs/algorithms.md
// ("Cursor").
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "event_streams.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

using namespace scalatrace;
using namespace scalatrace::test_support;

TEST(Cursor, TimingModesAndErrors) {
  std::vector<Event> s;
  for (int i = 0; i < 10; ++i) {
    Event e = ev(Op::Barrier, 1);
    e.compute_ns = 1000 + 10 * i;
    e.duration_ns = 5;
    s.push_back(e);
  }
  auto t = compress(s);
  Cursor mean(t, 0, TimingMode::Mean);
  auto e = mean.next();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->compute_ns, 1045u);
  EXPECT_EQ(e->duration_ns, 5u);
  Cursor none(t, 0, TimingMode::None);
  EXPECT_EQ(none.next()->compute_ns, 0u);
  Cursor sample(t, 0, TimingMode::Sample, 7);
  for (int i = 0; i < 10; ++i) {
    auto x = sample.next();
    ASSERT_TRUE(x);
    EXPECT_GE(x->compute_ns, 1000u);
    EXPECT_LE(x->compute_ns, 1090u);
  }
  EXPECT_FALSE(sample.next());
  EXPECT_THROW(Cursor(t, 1), UsageError);
  EXPECT_THROW(Cursor(t, -1), UsageError);
  // A value sequence shorter than the trip count says so.
  auto broken = t.clone();
  broken.nodes[0].loop->trips.alternatives[0].first = ValueSeq::constant(11);
  Cursor c(broken, 0);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(c.next());
  try {
    c.next();
    FAIL() << "expected FormatError";
  } catch (const FormatError& err) {
    EXPECT_NE(std::string(err.what()).find("ran out"), std::string::npos) << err.what();
  }
}

/// A time read back from a cursor: exact in memory, within 2^-7 after a file (format version 8
/// stores times as time codes), and within a nanosecond of a mean.
#define expect_time(got, want) \
  EXPECT_NEAR(static_cast<double>(got), static_cast<double>(want), static_cast<double>(want) / 128 + 1.0)

TEST(Cursor, FirstOccurrenceKeepsItsWarmUp) {
  // A timestep loop around an inner loop: each node's first occurrence (timestep 0, inner
  // iteration 0) took 50 us of warm-up, every later one about 1 us. The node keeps the first
  // apart, and every timing mode gives it to occurrence 0 only, also after a file.
  std::vector<Event> s;
  for (int step = 0; step < 6; ++step) {
    for (int i = 0; i < 4; ++i) {
      Event e = ev(Op::Send, 1, 1, 64);
      e.compute_ns = step == 0 && i == 0 ? 50'000 : 1'000 + 10 * static_cast<std::uint64_t>(i);
      s.push_back(e);
    }
    Event b = ev(Op::Barrier, 2);
    b.compute_ns = step == 0 ? 80'000 : 2'000;
    s.push_back(b);
  }
  const Trace t = compress_with_sites(s);
  const Trace read = decode_trace(encode_trace(t));
  for (const Trace* trace : {&t, &read}) {
    Cursor mean(*trace, 0, TimingMode::Mean);
    for (std::size_t i = 0; i < s.size(); ++i) {
      auto e = mean.next();
      ASSERT_TRUE(e);
      if (i == 0)
        expect_time(e->compute_ns, 50'000u);
      else if (i == 4)
        expect_time(e->compute_ns, 80'000u);
      else if (s[i].op == Op::Barrier)
        expect_time(e->compute_ns, 2'000u);
      else
        expect_time(e->compute_ns, 23'360.0 / 23) << i;  // the 23 later sends
    }
    Cursor sample(*trace, 0, TimingMode::Sample, 11);
    for (std::size_t i = 0; i < s.size(); ++i) {
      auto e = sample.next();
      ASSERT_TRUE(e);
      if (i == 0 || i == 4)
        expect_time(e->compute_ns, s[i].compute_ns);
      else
        EXPECT_LE(e->compute_ns, 2'120u) << i;  // never the warm-up again
    }
    Cursor median(*trace, 0, TimingMode::Median);
    expect_time(median.next()->compute_ns, 50'000u);
    EXPECT_LE(median.next()->compute_ns, 1'110u);
  }
  // Totals are kept: the first occurrences are also in `compute`.
  const Node* send = &t.nodes.front();
  while (send->loop) send = &send->loop->body.front();
  EXPECT_EQ(send->event->compute.count(), 24u);
  EXPECT_EQ(send->event->first_compute.count(), 1u);
  EXPECT_EQ(send->event->first_compute.min(), 50'000u);
}

TEST(Cursor, FirstOccurrenceLikeTheOthersIsNotStored) {
  // Every occurrence alike: the first adds nothing, the file does not hold it, and the cursor
  // gives every occurrence the mean in memory as after the file.
  std::vector<Event> s;
  for (int i = 0; i < 20; ++i) {
    Event e = ev(Op::Barrier, 1);
    e.compute_ns = 1'000 + static_cast<std::uint64_t>(i);
    s.push_back(e);
  }
  const Trace t = compress_with_sites(s);
  const Trace read = decode_trace(encode_trace(t));
  EXPECT_EQ(t.nodes.front().loop->body.front().event->first_compute.count(), 1u);
  EXPECT_EQ(read.nodes.front().loop->body.front().event->first_compute.count(), 0u);
  Trace without = t.clone();
  without.nodes.front().loop->body.front().event->first_compute = Histogram(4);
  EXPECT_EQ(encode_trace(t).size(), encode_trace(without).size());
  for (const Trace* trace : {&t, &read}) expect_time(Cursor(*trace, 0).next()->compute_ns, 1'010u);
}

TEST(Cursor, ArraysEmptyAtEveryOccurrenceStillBoundTheWalk) {
  std::vector<Event> s;
  for (int i = 0; i < 10; ++i) s.push_back(ev(Op::Isend, 1, 1, 64));
  const Trace t = compress(s);
  ASSERT_TRUE(t.nodes[0].loop);
  auto with_empty_requests = [&](std::uint64_t occurrences) {
    Trace u = t.clone();
    ArraySeq empty;
    for (std::uint64_t i = 0; i < occurrences; ++i) empty.append(std::vector<std::int64_t>{});
    auto& requests = u.nodes[0].loop->body[0].event->arrays[static_cast<std::size_t>(ArrayField::Requests)];
    requests.alternatives.clear();
    requests.alternatives.emplace_back(std::move(empty), RankList{});
    return u;
  };
  // Long enough: read like no array at all, by copies and by views.
  const Trace enough = with_empty_requests(10);
  Cursor copies(enough, 0), views(enough, 0);
  Event e;
  EventView v;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(copies.next(e));
    ASSERT_TRUE(views.next(v));
    EXPECT_TRUE(e[ArrayField::Requests].empty());
    EXPECT_TRUE(v[ArrayField::Requests].empty());
    EXPECT_TRUE(v.to_event().same_call(e));
  }
  EXPECT_FALSE(views.next(v));
  // Too short: the walk stops at the sixth occurrence and names the array.
  const Trace short_one = with_empty_requests(5);
  Cursor c(short_one, 0);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c.next(v));
  try {
    c.next(v);
    FAIL() << "expected FormatError";
  } catch (const FormatError& err) {
    EXPECT_NE(std::string(err.what()).find("array Requests of a Isend ran out of values at occurrence 5"),
              std::string::npos)
        << err.what();
  }
}

TEST(Cursor, MergedTraceRanksAndAlternatives) {
  // Hand-built merged trace: a loop for ranks {0,1}, an event only rank 1 runs.
  Trace t;
  t.nranks = 2;
  Node loop;
  loop.ranks = RankList::range(0, 2);
  loop.loop = std::make_unique<LoopNode>();
  loop.loop->trips.alternatives = {{ValueSeq::constant(2), RankList::range(0, 1)},
                                   {ValueSeq::constant(3), RankList::range(1, 1)}};
  Node send;
  send.event = std::make_unique<EventNode>();
  send.event->op = Op::Send;
  ValueSeq peers0, peers1;
  for (int i = 0; i < 2; ++i) peers0.append(i + 1);
  for (int i = 0; i < 3; ++i) peers1.append(-i);
  send.event->fields[static_cast<std::size_t>(Field::Peer)].alternatives = {{peers0, RankList::range(0, 1)},
                                                                            {peers1, RankList::range(1, 1)}};
  loop.loop->body.push_back(std::move(send));
  t.nodes.push_back(std::move(loop));
  Node only1;
  only1.ranks = RankList::range(1, 1);
  only1.event = std::make_unique<EventNode>();
  only1.event->op = Op::Barrier;
  t.nodes.push_back(std::move(only1));
  auto r0 = expand(t, 0);
  auto r1 = expand(t, 1);
  ASSERT_EQ(r0.size(), 2u);
  ASSERT_EQ(r1.size(), 4u);
  EXPECT_EQ(r0[1][Field::Peer], 2);
  EXPECT_EQ(r1[2][Field::Peer], -2);
  EXPECT_EQ(r1[3].op, Op::Barrier);
}

namespace {

/// Every event of `rank` read with next(Event&), next(EventView&) and next(): the three forms
/// must give the same calls and timings.
std::vector<Event> walk_three_ways(const Trace& t, std::int64_t rank) {
  Cursor by_ref(t, rank), by_view(t, rank), by_value(t, rank);
  std::vector<Event> out;
  Event e;
  EventView v;
  while (by_ref.next(e)) {
    EXPECT_TRUE(by_view.next(v)) << "view walk ended early at event " << out.size();
    const auto copy = by_value.next();
    EXPECT_TRUE(copy.has_value()) << "value walk ended early at event " << out.size();
    const Event from_view = v.to_event();
    EXPECT_TRUE(from_view.same_call(e)) << describe(from_view) << " vs " << describe(e);
    EXPECT_EQ(from_view.compute_ns, e.compute_ns);
    EXPECT_EQ(from_view.duration_ns, e.duration_ns);
    if (copy) {
      EXPECT_TRUE(copy->same_call(e));
      EXPECT_EQ(copy->compute_ns, e.compute_ns);
    }
    out.push_back(e);
  }
  EXPECT_FALSE(by_view.next(v));
  EXPECT_FALSE(by_value.next());
  EXPECT_FALSE(by_ref.next(e)) << "a finished cursor stays finished";
  return out;
}

}  // namespace

TEST(Cursor, EveryRankOfMergedSyntheticRunsIsItsGeneratedStream) {
  // Boundary ranks without wrap-around have fewer neighbours (other trip counts, other
  // alternatives), RowColumn has communicators, Irregular has data-dependent branches.
  for (auto pattern : {SyntheticPattern::Stencil2D, SyntheticPattern::Stencil3D, SyntheticPattern::RowColumn,
                       SyntheticPattern::Irregular}) {
    SyntheticSpec spec;
    spec.pattern = pattern;
    spec.nranks = pattern == SyntheticPattern::Stencil3D ? 27 : 12;
    spec.timesteps = 7;
    spec.wrap = false;
    const Trace merged = synthetic_merged_trace(spec);
    for (std::int64_t rank = 0; rank < spec.nranks; ++rank) {
      const auto recorded = record_synthetic(spec, rank).events;
      const auto walked = walk_three_ways(merged, rank);
      ASSERT_EQ(walked.size(), recorded.size()) << synthetic_pattern_name(pattern) << " rank " << rank;
      for (std::size_t i = 0; i < walked.size(); ++i)
        ASSERT_TRUE(walked[i].same_call(recorded[i]))
            << synthetic_pattern_name(pattern) << " rank " << rank << " event " << i << ": " << describe(walked[i])
            << " vs " << describe(recorded[i]);
    }
  }
}

TEST(Cursor, CursorsSharingConstantFieldsWalkTheSameEvents) {
  // The simulator's cursors, one per rank, keep their constant field values in one
  // SharedConstants and their states in one CursorBlock: every rank walks the events of a
  // cursor of its own, and values equal on several ranks are kept once.
  for (auto pattern : {SyntheticPattern::Stencil2D, SyntheticPattern::RowColumn, SyntheticPattern::Irregular}) {
    SyntheticSpec spec;
    spec.pattern = pattern;
    spec.nranks = 16;
    spec.timesteps = 5;
    const Trace merged = synthetic_merged_trace(spec);
    SharedConstants shared;
    CursorBlock block(static_cast<std::size_t>(spec.nranks));
    std::vector<Cursor> sharing;  // all alive and walked in turn, as the simulator does
    std::vector<Cursor> alone;
    for (std::int64_t rank = 0; rank < spec.nranks; ++rank) {
      sharing.emplace_back(merged, rank, TimingMode::Mean, 0, std::nullopt, &block).share_constants(shared);
      alone.emplace_back(merged, rank);
    }
    std::vector<std::size_t> events(static_cast<std::size_t>(spec.nranks), 0);
    for (bool more = true; more;) {
      more = false;
      for (std::size_t rank = 0; rank < sharing.size(); ++rank) {
        EventView a, b;
        const bool got = sharing[rank].next(a);
        ASSERT_EQ(got, alone[rank].next(b)) << synthetic_pattern_name(pattern) << " rank " << rank;
        if (!got) continue;
        more = true;
        ASSERT_TRUE(a.to_event().same_call(b.to_event()))
            << synthetic_pattern_name(pattern) << " rank " << rank << " event " << events[rank] << ": " << describe(a)
            << " vs " << describe(b);
        EXPECT_EQ(a.compute_ns, b.compute_ns);
        EXPECT_EQ(a.duration_ns, b.duration_ns);
        ++events[rank];
      }
    }
    EXPECT_GT(shared.size(), 0u);
    if (pattern == SyntheticPattern::Stencil2D) {  // the same sizes on every rank: a few sets in all
      EXPECT_LT(shared.size(), static_cast<std::size_t>(spec.nranks));
    }
  }
}

TEST(Cursor, ABlockHoldsAsManyCursorsAsItWasMadeFor) {
  SyntheticSpec spec;
  spec.pattern = SyntheticPattern::Stencil2D;
  spec.nranks = 4;
  spec.timesteps = 3;
  const Trace merged = synthetic_merged_trace(spec);
  CursorBlock block(2);
  Cursor first(merged, 0, TimingMode::Mean, 0, std::nullopt, &block);
  std::optional<Cursor> second(std::in_place, merged, 1, TimingMode::Mean, 0, std::nullopt, &block);
  EXPECT_THROW(Cursor(merged, 2, TimingMode::Mean, 0, std::nullopt, &block), std::logic_error);
  // A rank out of range is refused before a slot is taken.
  EXPECT_THROW(Cursor(merged, 9, TimingMode::Mean, 0, std::nullopt, &block), UsageError);
  // A cursor in the block moves like any other; its state stays in its slot until destroyed.
  Cursor moved(std::move(*second));
  second.reset();
  const auto recorded = record_synthetic(spec, 1).events;
  std::size_t i = 0;
  for (Event e; moved.next(e); ++i) {
    ASSERT_LT(i, recorded.size());
    EXPECT_TRUE(e.same_call(recorded[i])) << "event " << i;
  }
  EXPECT_EQ(i, recorded.size());
  EXPECT_TRUE(first.next().has_value());
}

TEST(Cursor, LastNodeIsTheNodeOfTheLastEvent) {
  std::vector<Event> s;
  for (int i = 0; i < 5; ++i) {
    s.push_back(ev(Op::Send, 1, 1, 64));
    s.push_back(ev(Op::Recv, 2, -1, 64));
  }
  const Trace t = compress(s);
  Cursor c(t, 0);
  EXPECT_EQ(c.last_node(), nullptr);
  std::size_t n = 0;
  while (auto e = c.next()) {
    const Node* node = c.last_node();
    ASSERT_NE(node, nullptr);
    ASSERT_TRUE(node->event);
    EXPECT_EQ(node->event->op, e->op);
    ++n;
  }
  EXPECT_EQ(n, s.size());
}

namespace {
/// Rank 0's compute times, event by event, as a cursor in `mode` with `seed` gives them.
std::vector<std::uint64_t> compute_times(const Trace& t, TimingMode mode, std::uint64_t seed) {
  std::vector<std::uint64_t> out;
  Cursor c(t, 0, mode, seed);
  while (auto e = c.next()) out.push_back(e->compute_ns);
  return out;
}
}  // namespace

TEST(Cursor, SampledTimesAreReproducibleAndInsideTheHistogram) {
  std::vector<Event> s;
  for (int i = 0; i < 200; ++i) {
    Event e = ev(Op::Barrier, 1);
    e.compute_ns = 1'000 + 37 * static_cast<std::uint64_t>(i % 50);
    e.duration_ns = 10 + static_cast<std::uint64_t>(i % 7);
    s.push_back(e);
  }
  const Trace t = compress(s);
  auto draws = [&](std::uint64_t seed) { return compute_times(t, TimingMode::Sample, seed); };
  const auto a = draws(5), b = draws(5), other = draws(6);
  EXPECT_EQ(a.size(), s.size());
  EXPECT_EQ(a, b) << "the same seed draws the same times";
  EXPECT_NE(a, other) << "another seed draws other times";
  for (auto x : a) {
    EXPECT_GE(x, 1'000u);
    EXPECT_LE(x, 1'000u + 37u * 49u);
  }
  // Compute sampled, durations not timed: the two histograms read in their own modes.
  Cursor mixed(t, 0, TimingMode::Sample, 5, TimingMode::None);
  while (auto e = mixed.next()) EXPECT_EQ(e->duration_ns, 0u);
}

TEST(Cursor, SpreadTimesVaryPerOccurrenceAndKeepTheRanksTotal) {
  // A node whose compute time alternates between 1 us and 5 us (data-dependent work): the mean
  // gives every occurrence 3 us; Spread gives each occurrence a value from the recorded ones,
  // in a seeded order, and every block of 16 occurrences covers the distribution evenly, so the
  // rank's total stays the recorded total while the occurrences vary.
  std::vector<Event> s;
  double total = 0;
  for (int i = 0; i < 160; ++i) {
    Event e = ev(Op::Barrier, 1);
    e.compute_ns = i % 2 == 0 ? 1'000 : 5'000;
    e.duration_ns = 10;
    total += static_cast<double>(e.compute_ns);
    s.push_back(e);
  }
  const Trace t = compress(s);
  auto draws = [&](std::uint64_t seed) { return compute_times(t, TimingMode::Spread, seed); };
  const auto a = draws(3), b = draws(3), other = draws(4);
  ASSERT_EQ(a.size(), s.size());
  EXPECT_EQ(a, b) << "the same seed draws the same times";
  EXPECT_NE(a, other) << "another seed draws in another order";
  double drawn = 0;
  std::size_t low = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i] == 1'000 || a[i] == 5'000) << a[i];
    drawn += static_cast<double>(a[i]);
    low += a[i] == 1'000;
    if (i % 16 == 15) {
      EXPECT_EQ(low, (i + 1) / 2) << "each block of 16 holds 8 of each";
    }
  }
  EXPECT_DOUBLE_EQ(drawn, total);
  // Two seeds (two ranks) vary independently: both low in about a quarter of the occurrences.
  std::size_t both_low = 0;
  for (std::size_t i = 0; i < a.size(); ++i) both_low += a[i] == 1'000 && other[i] == 1'000;
  EXPECT_GT(both_low, 20u);
  EXPECT_LT(both_low, 60u);
}

TEST(Cursor, MovedCursorContinuesItsWalk) {
  std::vector<Event> s;
  for (int i = 0; i < 9; ++i) s.push_back(ev(Op::Send, 1, i % 3, 8 * (i % 3)));
  const Trace t = compress(s);
  Cursor first(t, 0);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(first.next());
  Cursor moved(std::move(first));
  std::size_t rest = 0;
  while (auto e = moved.next()) {
    EXPECT_TRUE(e->same_call(s[4 + rest])) << rest;
    ++rest;
  }
  EXPECT_EQ(rest, 5u);
}

TEST(Cursor, EmptyTraceEndsAtOnceAndRanksAreChecked) {
  Trace t;
  t.nranks = 3;
  Cursor c(t, 2);
  EXPECT_FALSE(c.next());
  EXPECT_EQ(c.last_node(), nullptr);
  EXPECT_TRUE(expand(t, 0).empty());
  EXPECT_THROW(Cursor(t, 3), UsageError);
  EXPECT_THROW(expand(t, -1), UsageError);
}
