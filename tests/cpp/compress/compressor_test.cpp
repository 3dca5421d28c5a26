// IntraCompressor + Cursor: exact shapes of the thesis examples and lossless round trips.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <sstream>

#include "event_streams.hpp"
#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/format/format.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"
#include "scalatrace/synthetic/synthetic.hpp"
#include "trace_shape.hpp"

using namespace scalatrace;
using namespace scalatrace::test_support;

namespace {

void expect_round_trip(const std::vector<Event>& events, const Trace& t) {
  const auto out = expand(t, 0);
  ASSERT_EQ(out.size(), events.size()) << shape(t.nodes);
  for (std::size_t i = 0; i < events.size(); ++i)
    ASSERT_TRUE(out[i].same_call(events[i])) << "event " << i << " differs; trace " << shape(t.nodes);
}

/// The one top-level loop of `t` (fails the test if there is not exactly one).
const LoopNode* only_loop(const Trace& t) {
  const LoopNode* found = nullptr;
  for (const auto& n : t.nodes)
    if (n.loop) {
      EXPECT_EQ(found, nullptr) << "more than one top-level loop";
      found = n.loop.get();
    }
  EXPECT_NE(found, nullptr);
  return found;
}

/// One timestep of a halo exchange: Irecv x k, Isend x k, Waitall (+ optional Allreduce).
void halo_step(std::vector<Event>& s, int k, bool allreduce) {
  for (int i = 0; i < k; ++i) s.push_back(ev(Op::Irecv, 1, i + 1, 64));
  for (int i = 0; i < k; ++i) s.push_back(ev(Op::Isend, 2, i + 1, 64));
  s.push_back(ev(Op::Waitall, 3));
  if (allreduce) s.push_back(ev(Op::Allreduce, 4, 0, 8));
}

}  // namespace

TEST(Compressor, Figure51IterationSpecificBehaviour) {
  // for i in 0..1: Barrier(E1); if i==0 Isend(E2); if i==1 Irecv(E3); Barrier(E4)
  std::vector<Event> s{ev(Op::Barrier, 1), ev(Op::Isend, 2), ev(Op::Barrier, 4),
                       ev(Op::Barrier, 1), ev(Op::Irecv, 3), ev(Op::Barrier, 4)};
  auto t = compress(s);
  // E1(4,2) E2(1,1 0) E3(1,0 1) E4
  EXPECT_EQ(shape(t.nodes), "L[2]{Barrier1 Isend2?[1 0] Irecv3?[0 1] Barrier4 } ");
  expect_round_trip(s, t);
}

TEST(Compressor, PollingLoopWithOccasionalChangesIsLossless) {
  // A one-event loop (the speculation fast path, deferred field and array appends) whose
  // fields, arrays and call site change now and then, interleaved with runs of other loops.
  std::vector<Event> s;
  std::uint64_t compute_total = 0;
  for (int i = 0; i < 3000; ++i) {
    Event e = ev(Op::Probe, i % 997 == 5 ? 9 : 1, i % 250 < 3 ? 2 : 1, 0);
    if (i % 400 == 7) e[ArrayField::Requests] = {1, i % 3};
    if (i % 1000 == 500)
      for (int k = 0; k < 4; ++k) s.push_back(ev(Op::Isend, 2, k, 64));
    e.compute_ns = static_cast<std::uint64_t>(50 + i % 17);
    s.push_back(e);
  }
  for (const auto& e : s) compute_total += e.compute_ns;
  const auto t = compress(s);
  expect_round_trip(s, t);
  std::uint64_t histogram_total = 0, count = 0;
  std::vector<const Node*> stack;
  for (const auto& n : t.nodes) stack.push_back(&n);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (n->event) {
      histogram_total += static_cast<std::uint64_t>(n->event->compute.sum());
      count += n->event->compute.count();
    } else {
      for (const auto& c : n->loop->body) stack.push_back(&c);
    }
  }
  EXPECT_EQ(count, s.size());
  EXPECT_EQ(histogram_total, compute_total);
}

TEST(Compressor, FieldsZeroForAWhileThenNotAreLossless) {
  // The compressor stores an event field from its first non-zero value on, an array from its
  // first non-empty one (compressor_nodes.hpp, FieldStorage::Lazy): values that turn non-zero
  // late, in loop bodies taken by speculation (deferred values), in one-event loops, and in
  // iterations merged by the general path, must come back with their zeros.
  std::vector<Event> s;
  for (int k = 0; k < 200; ++k) {
    Event send = ev(Op::Isend, 1, 1, 64);
    send[Field::Root] = k < 20 ? 0 : k % 3;  // 0, then 0 1 2 0 1 2 ...
    s.push_back(send);
    Event recv = ev(Op::Irecv, 2, 1, 64);
    recv[Field::Count] = k >= 50 ? 7 : 0;
    s.push_back(recv);
    Event wait = ev(Op::Waitall, 3);
    if (k >= 30) wait[ArrayField::Requests] = std::vector<std::int64_t>(static_cast<std::size_t>(1 + k % 2), 1);
    s.push_back(wait);
    if (k % 40 == 39) {  // now and then an iteration of another shape
      Event extra = ev(Op::Bcast, 4, 0, 8);
      extra[Field::Color] = k > 100 ? 5 : 0;
      s.push_back(extra);
    }
  }
  for (int i = 0; i < 500; ++i) {  // a one-event loop: flag 0, later 1 every fifth call
    Event probe = ev(Op::Iprobe, 5, 1, 0);
    probe[Field::Flag] = i >= 300 && i % 5 == 0 ? 1 : 0;
    s.push_back(probe);
  }
  expect_round_trip(s, compress(s));
}

TEST(Compressor, Figure52TrailingIterations) {
  // for i < m: Bcast; for j < n(i): Isend Irecv Waitall
  const std::vector<int> n{3, 2, 4, 1, 5, 5, 2, 1, 1, 6};
  std::vector<Event> s;
  for (int trips : n) {
    s.push_back(ev(Op::Bcast, 1));
    for (int j = 0; j < trips; ++j) {
      s.push_back(ev(Op::Isend, 2, 1));
      s.push_back(ev(Op::Irecv, 3, -1));
      Event w = ev(Op::Waitall, 4);
      w[ArrayField::Requests] = {2, 1};
      s.push_back(w);
    }
  }
  auto t = compress(s);
  EXPECT_EQ(shape(t.nodes), "L[10]{Bcast1 L[3 2 4 1 5 5 2 1 1 6]{Isend2 Irecv3 Waitall4 } } ");
  expect_round_trip(s, t);
}

TEST(Compressor, PollsThatEndEachIterationOfAnOuterLoopAreLossless) {
  // Timestep loops whose iterations end with a poll of varying length (the fast path extends
  // the poll inside the last iteration, as the general path's absorption would): two levels,
  // three levels, and polls whose fields change now and then.
  std::vector<Event> s;
  s.push_back(ev(Op::Init, 0));
  for (int i = 0; i < 40; ++i) {
    s.push_back(ev(Op::Isend, 1, 1, 64));
    s.push_back(ev(Op::Irecv, 2, -1, 64));
    for (int k = 0; k < 3 + i % 7; ++k) {
      Event poll = ev(Op::Probe, 5, k % 5 == 4 ? 2 : 1, (i * 7 + k) % 61 == 3 ? 16 : 0);
      poll.compute_ns = static_cast<std::uint64_t>(10 + k);
      s.push_back(poll);
    }
  }
  for (int i = 0; i < 30; ++i) {
    s.push_back(ev(Op::Barrier, 7));
    for (int j = 0; j < 2; ++j) {
      s.push_back(ev(Op::Send, 8, j + 1, 8));
      for (int k = 0; k < 1 + (i + j) % 4; ++k) s.push_back(ev(Op::Iprobe, 9, -1, 0));
    }
  }
  // The poll's own call starts the outer iteration too: the fast path must leave it alone.
  for (int i = 0; i < 20; ++i) {
    s.push_back(ev(Op::Iprobe, 10, -1, 0));
    s.push_back(ev(Op::Recv, 11, 1, 8));
    for (int k = 0; k < i % 3; ++k) s.push_back(ev(Op::Iprobe, 10, -1, 0));
  }
  s.push_back(ev(Op::Finalize, 12));
  const auto t = compress(s);
  expect_round_trip(s, t);
  // The first timestep loop stays one loop of 40 iterations ending with its poll loop.
  const std::string text = shape(t.nodes);
  EXPECT_EQ(text.rfind("Init0 L[40]{Isend1 Irecv2 L[", 0), 0u) << text;
}

TEST(Compressor, NestedLoopsWithVaryingParameters) {
  std::vector<Event> s;
  s.push_back(ev(Op::Init, 0));
  for (int i = 0; i < 50; ++i) {
    for (int j = 0; j < 4; ++j) s.push_back(ev(Op::Send, 1, j + 1, 8 * i));
    for (int j = 0; j < 4; ++j) s.push_back(ev(Op::Recv, 2, -(j + 1), 8 * i));
    s.push_back(ev(Op::Allreduce, 3));
  }
  s.push_back(ev(Op::Finalize, 9));
  auto t = compress(s);
  EXPECT_EQ(shape(t.nodes), "Init0 L[50]{L[4x50]{Send1 } L[4x50]{Recv2 } Allreduce3 } Finalize9 ");
  expect_round_trip(s, t);
  // Elastic values: peers are 1 2 3 4 repeated, sizes 0 8 16 ... four times each.
  const auto& send = *t.nodes[1].loop->body[0].loop->body[0].event;
  const auto& peers = send.fields[static_cast<std::size_t>(Field::Peer)].alternatives.at(0).first;
  EXPECT_EQ(peers.size(), 200u);
  EXPECT_LE(peers.blocks().size(), 2u) << peers.to_string();
  EXPECT_EQ(send.compute.count(), 200u);
}

TEST(Compressor, RecursionShapedStreams) {
  // A recursive solver: depth-d recursion makes d "descend" sends, a barrier at the bottom,
  // then d "return" receives; d varies per call. Size must not grow with the number of calls.
  std::size_t nodes_at_100 = 0;
  for (int calls : {100, 1000}) {
    std::vector<Event> s;
    std::mt19937_64 rng(5);
    for (int c = 0; c < calls; ++c) {
      const int d = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < d; ++k) s.push_back(ev(Op::Send, 1, 1, k));
      s.push_back(ev(Op::Barrier, 2));
      for (int k = 0; k < d; ++k) s.push_back(ev(Op::Recv, 3, -1, k));
    }
    auto t = compress(s);
    expect_round_trip(s, t);
    if (calls == 100)
      nodes_at_100 = t.node_count();
    else
      EXPECT_LE(t.node_count(), nodes_at_100 + 2) << shape(t.nodes);
    EXPECT_LE(t.node_count(), 20u) << shape(t.nodes);
  }
}

TEST(Compressor, ApproximateCallSiteMatchingIsLossless) {
  CallSiteTable sites;
  const auto m = sites.intern_module("a.out");
  std::vector<std::uint32_t> ids;
  for (std::uint64_t k = 0; k < 6; ++k) ids.push_back(sites.intern({Frame{m, 100}, Frame{m, 200 + k}}));
  std::vector<Event> s;
  for (int i = 0; i < 30; ++i) {
    s.push_back(ev(Op::Bcast, ids[static_cast<std::size_t>(i % 6)]));
    s.push_back(ev(Op::Barrier, 99));
  }
  CompressorConfig cfg;
  cfg.site_threshold = 1;
  IntraCompressor c(cfg);
  c.set_sites(&sites);
  for (const auto& e : s) c.push(e);
  Trace t;
  t.nranks = 1;
  t.nodes = c.finish();
  EXPECT_EQ(t.node_count(), 3u) << shape(t.nodes);
  EXPECT_FALSE(t.nodes[0].loop->body[0].event->site_ids.empty());
  expect_round_trip(s, t);
  // Exact matching (default) keeps the six sites apart.
  auto exact = compress(s);
  EXPECT_GT(exact.node_count(), 3u);
  expect_round_trip(s, exact);
}

TEST(Compressor, MemoryBudgetDegradesLosslessly) {
  // Non-repeating stream (every event a new site), tiny budget.
  CompressorConfig cfg;
  cfg.memory_budget = 64 * 1024;
  IntraCompressor c(cfg);
  std::vector<Event> s;
  for (std::uint32_t i = 0; i < 20000; ++i) s.push_back(ev(Op::Send, i, 1, i));
  // Then a regular part: must still compress after the freeze.
  for (int i = 0; i < 5000; ++i) {
    s.push_back(ev(Op::Isend, 1u << 30, 1, 64));
    s.push_back(ev(Op::Wait, (1u << 30) + 1));
  }
  for (const auto& e : s) c.push(e);
  EXPECT_GT(c.memory_bytes(), cfg.memory_budget);
  EXPECT_LE(c.node_count(), 20000u + 10u);
  Trace t;
  t.nranks = 1;
  t.nodes = c.finish();
  expect_round_trip(s, t);
}

TEST(Compressor, WindowLimitsTheSearch) {
  // Period of 40 distinct events: both iterations (80 entries) fit in a window of 100, not in 64.
  std::vector<Event> s;
  for (int i = 0; i < 10; ++i)
    for (std::uint32_t k = 0; k < 40; ++k) s.push_back(ev(Op::Send, k));
  CompressorConfig wide;
  wide.window = 100;
  CompressorConfig narrow;
  narrow.window = 64;
  auto tw = compress(s, wide);
  auto tn = compress(s, narrow);
  EXPECT_EQ(tw.node_count(), 41u);
  EXPECT_EQ(tn.node_count(), 400u) << shape(tn.nodes);
  expect_round_trip(s, tw);
  expect_round_trip(s, tn);
}

TEST(Compressor, SyntheticPatternsRoundTrip) {
  for (auto p : {SyntheticPattern::Stencil1D, SyntheticPattern::Stencil2D, SyntheticPattern::Stencil3D,
                 SyntheticPattern::Collectives, SyntheticPattern::RowColumn, SyntheticPattern::Irregular}) {
    for (bool wrap : {true, false}) {
      SyntheticSpec spec;
      spec.pattern = p;
      spec.nranks = 27;
      spec.dims = p == SyntheticPattern::Stencil3D   ? std::vector<std::int64_t>{3, 3, 3}
                  : p == SyntheticPattern::Stencil1D ? std::vector<std::int64_t>{27}
                                                     : std::vector<std::int64_t>{9, 3};
      if (p == SyntheticPattern::Collectives || p == SyntheticPattern::Irregular) spec.dims.clear();
      spec.wrap = wrap;
      spec.timesteps = 60;
      for (std::int64_t rank : {0, 4, 13, 26}) {
        SCOPED_TRACE(std::string(synthetic_pattern_name(p)) + " wrap=" + std::to_string(wrap) +
                     " rank=" + std::to_string(rank));
        auto rec = record_synthetic(spec, rank);
        auto t = compress_recording(rec);
        expect_round_trip(rec.events, t);
        if (p != SyntheticPattern::Irregular) {
          EXPECT_LE(t.node_count(), 12u) << shape(t.nodes);
        }
      }
    }
  }
}

// ---- Loop discovery at the ends of a loop (issue 9): a first iteration that lacks a call, a
// last iteration that skips one, loops folded in two steps; timestep_loops() on the result.

TEST(LoopEnds, LeadingIterationWithoutACallJoinsTheLoop) {
  // The Allreduce begins in the second timestep: 15 timesteps, the first one differs.
  std::vector<Event> s{ev(Op::Init, 9)};
  for (int step = 0; step < 15; ++step) halo_step(s, 6, step > 0);
  s.push_back(ev(Op::Finalize, 10));
  const Trace t = compress(s);
  const LoopNode* loop = only_loop(t);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->trips.alternatives.at(0).first.to_vector(), std::vector<std::int64_t>{15});
  expect_round_trip(s, t);
  const auto steps = timestep_loops(t);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].max_iterations, 15);
}

TEST(LoopEnds, TrailingIterationWithoutACallJoinsTheLoop) {
  // The last timestep skips the Allreduce, then the program finalizes.
  std::vector<Event> s{ev(Op::Init, 9)};
  for (int step = 0; step < 12; ++step) halo_step(s, 4, step < 11);
  s.push_back(ev(Op::Finalize, 10));
  const Trace t = compress(s);
  const LoopNode* loop = only_loop(t);
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->trips.alternatives.at(0).first.to_vector(), std::vector<std::int64_t>{12});
  EXPECT_EQ(t.nodes.back().event->op, Op::Finalize);  // what follows stays outside
  expect_round_trip(s, t);
}

TEST(LoopEnds, IterationsMissingCallsAtEitherEndStillCountAsIterations) {
  // 15 iterations of { Isend Irecv Waitall Allreduce } in which the first or the last
  // iterations lack calls: whatever the compressor folds first (often a loop rotated to start
  // at the second call), the main loop covers all 15 iterations and the trace is lossless.
  struct Case {
    const char* name;
    std::function<bool(int step, int call)> present;  ///< call 0..3 of iteration `step`
  };
  const std::vector<Case> cases{
      {"first lacks the first call", [](int step, int call) { return step > 0 || call != 0; }},
      {"first lacks the first two", [](int step, int call) { return step > 0 || call > 1; }},
      {"first lacks a middle call", [](int step, int call) { return step > 0 || call != 1; }},
      {"last lacks the first call", [](int step, int call) { return step < 14 || call != 0; }},
      {"last lacks the last two", [](int step, int call) { return step < 14 || call < 2; }},
      {"first and last lack calls",
       [](int step, int call) { return (step > 0 || call != 0) && (step < 14 || call != 3); }},
      {"Allreduce begins in the third", [](int step, int call) { return step > 1 || call != 3; }},
  };
  const Op ops[] = {Op::Isend, Op::Irecv, Op::Waitall, Op::Allreduce};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Event> s{ev(Op::Init, 9)};
    for (int step = 0; step < 15; ++step)
      for (int call = 0; call < 4; ++call)
        if (c.present(step, call)) s.push_back(ev(ops[call], static_cast<std::uint32_t>(call + 1), 1, 64));
    s.push_back(ev(Op::Finalize, 10));
    const Trace t = compress(s);
    expect_round_trip(s, t);
    const auto steps = timestep_loops(t);
    ASSERT_EQ(steps.size(), 1u) << shape(t.nodes);
    EXPECT_EQ(steps[0].max_iterations, 15) << shape(t.nodes);
    EXPECT_EQ(t.nodes.back().event->op, Op::Finalize) << shape(t.nodes);
  }
}

TEST(LoopEnds, LongIterationsLackingACallAtEitherEndJoinTheLoop) {
  // LULESH-like: each of 20 timesteps opens with an Allreduce (the time increment), exchanges
  // over 80 distinct calls (longer than the per-event alignment bound) and closes with another
  // Allreduce; the first or the last timestep skips one call. Whatever the compressor folds
  // first (for the first case a loop rotated to start at the second call, the first
  // timestep's remainder after it), the result is one loop of 20 iterations with the same
  // event nodes as without the skip: the skipped call costs a presence vector, not a second
  // copy of the timestep (issue 30: 157 of LULESH's 413 event nodes at 8 ranks).
  constexpr int kSteps = 20, kHalo = 80;
  struct Case {
    const char* name;
    std::function<bool(int step, int call)> present;  ///< call 0..kHalo+1 of timestep `step`
  };
  const std::vector<Case> cases{
      {"no skip", [](int, int) { return true; }},
      {"first skips the opening Allreduce", [](int step, int call) { return step > 0 || call != 0; }},
      {"first skips the closing Allreduce", [](int step, int call) { return step > 0 || call != kHalo + 1; }},
      {"first skips a middle call", [](int step, int call) { return step > 0 || call != 40; }},
      {"last skips the opening Allreduce", [](int step, int call) { return step < kSteps - 1 || call != 0; }},
      {"last skips the closing Allreduce", [](int step, int call) { return step < kSteps - 1 || call != kHalo + 1; }},
      {"first and last skip one each",
       [](int step, int call) { return (step > 0 || call != 0) && (step < kSteps - 1 || call != kHalo + 1); }},
  };
  const Op halo_ops[] = {Op::Irecv, Op::Irecv, Op::Isend, Op::Isend, Op::Waitall};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Event> s{ev(Op::Init, 9), ev(Op::Bcast, 8, 0, 8)};
    for (int step = 0; step < kSteps; ++step)
      for (int call = 0; call < kHalo + 2; ++call) {
        if (!c.present(step, call)) continue;
        if (call == 0 || call == kHalo + 1)
          s.push_back(ev(Op::Allreduce, call == 0 ? 4 : 5, 0, 8));
        else
          s.push_back(ev(halo_ops[call % 5], static_cast<std::uint32_t>(100 + call), 1 + call % 3, 64));
      }
    s.push_back(ev(Op::Reduce, 6, 0, 8));
    s.push_back(ev(Op::Finalize, 10));
    const Trace t = compress(s);
    expect_round_trip(s, t);
    const auto steps = timestep_loops(t);
    ASSERT_EQ(steps.size(), 1u) << shape(t.nodes);
    EXPECT_EQ(steps[0].max_iterations, kSteps) << shape(t.nodes);
    EXPECT_EQ(event_nodes(t.nodes), static_cast<std::size_t>(kHalo + 2 + 4)) << shape(t.nodes);
    EXPECT_EQ(t.nodes.back().event->op, Op::Finalize) << shape(t.nodes);
  }
}

/// NPB BT's pipelined sweeps (x_solve) over `cells` stages, `steps` timesteps: a face copy,
/// then forward stages (the first sends only, the last receives only) and backward stages
/// whose first send is a call site of its own (gfortran -O2 peels that iteration).
std::vector<Event> bt_sweeps(int steps, int cells) {
  std::vector<Event> s{ev(Op::Init, 9)};
  for (int step = 0; step < steps; ++step) {
    s.push_back(ev(Op::Irecv, 1, 1, 64));
    s.push_back(ev(Op::Isend, 2, 1, 64));
    s.push_back(ev(Op::Waitall, 3));
    for (int stage = 0; stage < cells; ++stage) {
      if (stage > 0) {
        s.push_back(ev(Op::Irecv, 12, -1, 640));
        s.push_back(ev(Op::Wait, 13));
        s.push_back(ev(Op::Wait, 14));
      }
      if (stage < cells - 1) s.push_back(ev(Op::Isend, 11, 1, 640));
    }
    for (int stage = cells - 1; stage >= 0; --stage) {
      if (stage == cells - 1) {
        s.push_back(ev(Op::Isend, 15, -1, 320));
        continue;
      }
      s.push_back(ev(Op::Irecv, 16, 1, 320));
      s.push_back(ev(Op::Wait, 17));
      s.push_back(ev(Op::Wait, 18));
      if (stage > 0) s.push_back(ev(Op::Isend, 19, -1, 320));
    }
  }
  s.push_back(ev(Op::Finalize, 10));
  return s;
}

TEST(LoopEnds, PipelinedSweepStagesAreTheLoopsIterations) {
  // Both sweeps' loops run cells - 1 iterations in every timestep: the forward one as
  // (Isend Irecv Wait Wait), the backward one as (Irecv Wait Wait Isend?) with the last
  // stage's missing send a presence value, not a copy of "Irecv Wait Wait" after a loop of
  // cells - 2 (issue 30: BT at 16 ranks had trips [2x59 3] against the forward [3x60]).
  for (const int cells : {4, 5, 8}) {
    SCOPED_TRACE("cells " + std::to_string(cells));
    const std::vector<Event> s = bt_sweeps(10, cells);
    const Trace t = compress(s);
    expect_round_trip(s, t);
    const auto steps = timestep_loops(t);
    ASSERT_EQ(steps.size(), 1u) << shape(t.nodes);
    EXPECT_EQ(steps[0].max_iterations, 10) << shape(t.nodes);
    const Node& timestep = t.nodes.at(steps[0].path.at(0));
    int sweeps = 0;
    for (const Node& n : timestep.loop->body) {
      if (!n.loop) continue;
      ++sweeps;
      EXPECT_EQ(n.loop->trips.alternatives.at(0).first, ValueSeq::constant(cells - 1, 10)) << shape(t.nodes);
    }
    EXPECT_EQ(sweeps, 2) << shape(t.nodes);
    EXPECT_EQ(event_nodes(t.nodes), 2u + 3 + 4 + 1 + 4) << shape(t.nodes);
  }
}

TEST(LoopEnds, AnIterationCutAtTheFirstOfTwoAlikeStagesIsNotALoopBoundary) {
  // With 3 cells a timestep ends with the backward sweep's two "Irecv Wait Wait" stages; the
  // next timestep so far ends with the first of them. Folding the two timesteps there (all of
  // the second is in the first) cut every later timestep at the wrong place (before: a loop of
  // 2 timesteps, then a rotated loop of the others, 38 event nodes for this stream's 17). The
  // loop waits for the second stage and is the timestep loop as written.
  const std::vector<Event> s = bt_sweeps(10, 3);
  const Trace t = compress(s);
  expect_round_trip(s, t);
  const auto steps = timestep_loops(t);
  ASSERT_EQ(steps.size(), 1u) << shape(t.nodes);
  EXPECT_EQ(steps[0].max_iterations, 10) << shape(t.nodes);
  EXPECT_EQ(t.nodes.size(), 3u) << shape(t.nodes);  // Init, the timestep loop, Finalize
}

TEST(LoopEnds, NestedSplitIsReportedAsTheLoopAsWritten) {
  // for step < 6: Bcast; Barrier -- compressed as one loop of 6 (never 3 x 2).
  std::vector<Event> s;
  for (int step = 0; step < 6; ++step) {
    s.push_back(ev(Op::Bcast, 1, 0, 8));
    s.push_back(ev(Op::Barrier, 2));
  }
  const Trace t = compress(s);
  const auto steps = timestep_loops(t);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].max_iterations, 6);
  expect_round_trip(s, t);
}

TEST(LoopEnds, LoopOfALoopFlattensLosslessly) {
  // A loop whose whole body is a loop of constant trips is one loop: timestep_loops reports
  // the product of the trip counts whether or not the trace was flattened.
  Trace t;
  t.nranks = 1;
  Node inner;
  inner.loop = std::make_unique<LoopNode>();
  inner.loop->trips.alternatives.emplace_back(ValueSeq::constant(2, 3), RankList{});
  Node e;
  e.event = std::make_unique<EventNode>();
  e.event->op = Op::Allreduce;
  e.event->fields[0].alternatives.emplace_back(ValueSeq::constant(0, 6), RankList{});
  inner.loop->body.push_back(std::move(e));
  Node outer;
  outer.loop = std::make_unique<LoopNode>();
  outer.loop->trips.alternatives.emplace_back(ValueSeq::constant(3, 1), RankList{});
  outer.loop->body.push_back(std::move(inner));
  t.nodes.push_back(std::move(outer));
  const auto steps = timestep_loops(t);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].min_iterations, 6);
  EXPECT_EQ(steps[0].max_iterations, 6);
  EXPECT_EQ(expand(t, 0).size(), 6u);
}

TEST(LoopEnds, MultigridMainLoopIsReported) {
  // for it < 8: V-cycle down 4 levels (halo exchange of shrinking size), coarse Allreduce,
  // up 4 levels, residual Allreduce.
  std::vector<Event> s{ev(Op::Init, 9)};
  for (int it = 0; it < 8; ++it) {
    for (int level = 0; level < 4; ++level) {
      s.push_back(ev(Op::Irecv, 11, 1, 4096 >> level));
      s.push_back(ev(Op::Isend, 12, 1, 4096 >> level));
      s.push_back(ev(Op::Waitall, 13));
    }
    s.push_back(ev(Op::Allreduce, 14, 0, 8));
    for (int level = 3; level >= 0; --level) {
      s.push_back(ev(Op::Irecv, 15, 1, 4096 >> level));
      s.push_back(ev(Op::Isend, 16, 1, 4096 >> level));
      s.push_back(ev(Op::Waitall, 17));
    }
    s.push_back(ev(Op::Allreduce, 18, 0, 8));
  }
  s.push_back(ev(Op::Finalize, 10));
  const Trace t = compress(s);
  expect_round_trip(s, t);
  const auto steps = timestep_loops(t);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].max_iterations, 8);
  EXPECT_EQ(steps[0].path.size(), 1u);
}

TEST(LoopEnds, CallEveryOtherStepIsReportedWithEveryStep) {
  // for step < 10: halo exchange; if step is odd: Allreduce -> 10 iterations, not 5 x 2.
  std::vector<Event> s{ev(Op::Init, 9)};
  for (int step = 0; step < 10; ++step) halo_step(s, 3, step % 2 == 1);
  s.push_back(ev(Op::Finalize, 10));
  const Trace t = compress(s);
  expect_round_trip(s, t);
  const auto steps = timestep_loops(t);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].max_iterations, 10);
}
