// Benchmark generation: wildcard resolution (Alg. 3) and its deadlock report, collective
// alignment (Alg. 2), and the shape of the C and coNCePTuaL programs. The generated C is
// compiled and run under the collector in tests/py/test_codegen.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "scalatrace/codegen/codegen.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

using namespace scalatrace;

namespace {

struct Program {
  std::int64_t nranks;
  std::vector<RankRecording> recs;
  explicit Program(std::int64_t n) : nranks(n), recs(static_cast<std::size_t>(n)) {
    for (std::int64_t r = 0; r < n; ++r) {
      auto& rec = recs[static_cast<std::size_t>(r)];
      rec.rank = r;
      rec.nranks = n;
      rec.comms.entries.push_back(CommEntry{0, RankList::range(0, n), {}});
    }
  }
  Event& add(std::int64_t rank, Op op, std::uint32_t line) {
    auto& rec = recs[static_cast<std::size_t>(rank)];
    std::uint32_t m = rec.sites.intern_module("/bin/app");
    Event e;
    e.op = op;
    e.site = rec.sites.intern({Frame{m, line}});
    e.compute_ns = 1000;
    rec.events.push_back(e);
    return rec.events.back();
  }
  void p2p(std::int64_t rank, Op op, std::int64_t peer, std::uint32_t line, std::int64_t tag = 7) {
    Event& e = add(rank, op, line);
    e[Field::Peer] = peer == kAnySource ? kAnySource : peer - rank;
    e[Field::Tag] = tag;
    e[Field::Bytes] = 64;
    e[Field::DtSize] = 8;
  }
  void finalize_all() {
    for (std::int64_t r = 0; r < nranks; ++r) add(r, Op::Finalize, 999);
  }
  Trace merged() const {
    std::vector<Trace> traces;
    for (const auto& rec : recs) {
      Trace t = compress_recording(rec);
      traces.push_back(make_rank_trace(rec.rank, rec.nranks, std::move(t.nodes), std::move(t.sites), std::move(t.comms),
                                       std::move(t.names)));
    }
    return merge_tree(std::move(traces));
  }
};

Trace synthetic(SyntheticPattern p, std::int64_t n, std::int64_t steps) {
  SyntheticSpec spec;
  spec.pattern = p;
  spec.nranks = n;
  spec.timesteps = steps;
  spec.wrap = false;
  spec.timing_jitter = false;
  std::vector<Trace> traces;
  for (std::int64_t r = 0; r < n; ++r) {
    RankRecording rec = record_synthetic(spec, r);
    Trace t = compress_recording(rec);
    traces.push_back(
        make_rank_trace(r, n, std::move(t.nodes), std::move(t.sites), std::move(t.comms), std::move(t.names)));
  }
  return merge_tree(std::move(traces));
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST(Codegen, WildcardsResolveToTheMatchedSenders) {
  // a wavefront: 0 -> 1 -> 2 -> 3, every receive from MPI_ANY_SOURCE
  Program p(4);
  for (std::int64_t r = 1; r < 4; ++r) p.p2p(r, Op::Recv, kAnySource, 10);
  for (std::int64_t r = 0; r < 3; ++r) p.p2p(r, Op::Send, r + 1, 20);
  p.finalize_all();
  Trace t = p.merged();
  ASSERT_TRUE(has_wildcards(t));
  std::vector<WildcardResolution> resolved;
  Trace out = resolve_wildcards(t, &resolved);
  EXPECT_FALSE(has_wildcards(out));
  ASSERT_EQ(resolved.size(), 3u);
  for (std::int64_t r = 1; r < 4; ++r) {
    std::vector<Event> events = expand(out, r);
    ASSERT_EQ(events[0].op, Op::Recv);
    EXPECT_EQ(events[0][Field::Peer], -1) << "rank " << r;  // from rank r-1
  }
  // everything else is untouched
  for (std::int64_t r = 0; r < 4; ++r) {
    std::vector<Event> a = expand(t, r), b = expand(out, r);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i][Field::Peer] != kAnySource) {
        EXPECT_TRUE(a[i].same_call(b[i]));
      }
  }
}

TEST(Codegen, WildcardsInLoopsStayCompressed) {
  // ranks 1..3 each send 50 messages to rank 0, which receives 150 times from MPI_ANY_SOURCE
  Program p(4);
  for (int k = 0; k < 150; ++k) p.p2p(0, Op::Recv, kAnySource, 10);
  for (std::int64_t r = 1; r < 4; ++r)
    for (int k = 0; k < 50; ++k) p.p2p(r, Op::Send, 0, 20);
  p.finalize_all();
  Trace t = p.merged();
  Trace out = resolve_wildcards(t);
  std::vector<Event> events = expand(out, 0);
  std::vector<int> from(4, 0);
  for (const auto& e : events)
    if (e.op == Op::Recv) ++from[static_cast<std::size_t>(e[Field::Peer])];
  EXPECT_EQ(from[1], 50);
  EXPECT_EQ(from[2], 50);
  EXPECT_EQ(from[3], 50);
  EXPECT_LE(out.node_count(), t.node_count() + 2);
}

TEST(Codegen, ThesisFigure46DeadlockIsReportedWithTheEvents) {
  // thesis Fig. 4.6: rank 1 receives from MPI_ANY_SOURCE, then from 0; ranks 0 and 2 send to 1.
  // Matching the wildcard with rank 0 (the first sender the traversal meets) leaves Recv(0)
  // without a sender.
  Program p(3);
  p.p2p(1, Op::Recv, kAnySource, 10);
  p.p2p(1, Op::Recv, 0, 11);
  p.p2p(0, Op::Send, 1, 20);
  p.p2p(2, Op::Send, 1, 20);
  p.finalize_all();
  Trace t = p.merged();
  try {
    resolve_wildcards(t);
    FAIL() << "expected a DeadlockError";
  } catch (const DeadlockError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 1 blocked in event #1: MPI_Recv from relative -1"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0 blocked"), std::string::npos) << what;  // in MPI_Finalize
    EXPECT_NE(what.find("MPI_Finalize"), std::string::npos) << what;
  }
  EXPECT_THROW(generate_conceptual(t), DeadlockError);
  CodegenOptions resolve;
  resolve.resolve_wildcards = true;
  EXPECT_THROW(generate_c(t, resolve), DeadlockError);
  EXPECT_NO_THROW(generate_c(t));  // wildcards kept: the program is what was recorded
}

TEST(Codegen, CollectivesSplitOverCallSitesAreAligned) {
  // thesis Fig. 4.4: rank 0 Isend + Barrier (site A); rank 1 Barrier (site B) + Irecv
  Program p(2);
  p.p2p(0, Op::Isend, 1, 10);
  p.add(0, Op::Barrier, 30);
  p.add(1, Op::Barrier, 31);
  p.p2p(1, Op::Irecv, 0, 40);
  for (std::int64_t r = 0; r < 2; ++r) {
    Event& w = p.add(r, Op::Wait, 50);
    w[ArrayField::Requests] = {1};
  }
  p.finalize_all();
  Trace t = p.merged();
  EXPECT_EQ(unaligned_collectives(t).size(), 2u);
  const std::string program = generate_conceptual(t);
  EXPECT_EQ(count(program, "SYNCHRONIZE"), 1u) << program;
  EXPECT_EQ(count(program, "unaligned"), 0u) << program;
}

TEST(Codegen, AnyTagReceivesTakeTheMatchedTagForConceptual) {
  // rank 1 receives from 0 with MPI_ANY_TAG, then from 2 with MPI_ANY_TAG; the senders use 5 and 9
  Program p(3);
  p.p2p(0, Op::Send, 1, 10, 5);
  p.p2p(1, Op::Recv, 0, 20, kAnyTag);
  p.p2p(1, Op::Recv, 2, 21, kAnyTag);
  p.p2p(2, Op::Send, 1, 30, 9);
  p.finalize_all();
  Trace t = p.merged();
  EXPECT_TRUE(has_wildcard_tags(t));
  EXPECT_FALSE(has_wildcards(t));
  EXPECT_TRUE(has_wildcard_tags(resolve_wildcards(t)));  // C: tags kept unless asked
  EXPECT_FALSE(has_wildcard_tags(resolve_wildcards(t, nullptr, true)));
  const std::string ncptl = generate_conceptual(t);
  EXPECT_NE(ncptl.find("RECEIVE A 64 BYTE MESSAGE USING TAG 5 FROM TASK (1)+(-1)"), std::string::npos) << ncptl;
  EXPECT_NE(ncptl.find("RECEIVE A 64 BYTE MESSAGE USING TAG 9 FROM TASK (1)+1"), std::string::npos) << ncptl;
}

TEST(Codegen, ConceptualCallsMadeOnSomeIterationsAreConditions) {
  // a loop of 6 iterations whose Allreduce happens on every 3rd (presence 1 0 0 1 0 0)
  Program p(2);
  for (int it = 0; it < 6; ++it)
    for (std::int64_t r = 0; r < 2; ++r) {
      p.p2p(r, Op::Send, 1 - r, 10);
      p.p2p(r, Op::Recv, 1 - r, 11);
      if (it % 3 == 0) {
        Event& a = p.add(r, Op::Allreduce, 12);
        a[Field::Bytes] = 8;
        a[Field::DtSize] = 8;
      }
    }
  p.finalize_all();
  Trace t = p.merged();
  const std::string ncptl = generate_conceptual(t);
  EXPECT_EQ(count(ncptl, "REDUCE 1 DOUBLEWORDS TO TASKS u SUCH THAT u >= 0"), 1u) << ncptl;
  EXPECT_NE(ncptl.find("IF ("), std::string::npos) << ncptl;  // under a condition on the loop variable
  EXPECT_EQ(count(ncptl, "note"), 0u) << ncptl;
}

TEST(Codegen, ConceptualAwaitsWhereTheTraceHadCompletedEveryRequest) {
  // rank 0 posts two receives from rank 1 (tags 1, 2) and completes them with two Waitany;
  // rank 1 sends tag 1, waits for rank 0's tag 3, then sends tag 2; rank 0 sends tag 3 between
  // its Waitany calls. AWAIT COMPLETION at rank 0's first Waitany would wait for tag 2 too,
  // which rank 1 sends only after tag 3: a deadlock. Rank 0 awaits only at the second one.
  Program p(2);
  p.p2p(0, Op::Irecv, 1, 10, 1);
  p.p2p(0, Op::Irecv, 1, 11, 2);
  Event& first = p.add(0, Op::Waitany, 12);
  first[ArrayField::Requests] = {2, 1};
  first[Field::Index] = 0;
  p.p2p(0, Op::Send, 1, 13, 3);
  Event& second = p.add(0, Op::Waitany, 14);
  second[ArrayField::Requests] = {kNullRequest, 1};
  second[Field::Index] = 1;
  p.p2p(1, Op::Send, 0, 20, 1);
  p.p2p(1, Op::Recv, 0, 21, 3);
  p.p2p(1, Op::Send, 0, 22, 2);
  p.finalize_all();
  const std::string ncptl = generate_conceptual(p.merged());
  EXPECT_EQ(count(ncptl, "TASK 0 AWAIT COMPLETION"), 1u) << ncptl;
  EXPECT_LT(ncptl.find("USING TAG 3 TO UNSUSPECTING TASK"), ncptl.find("TASK 0 AWAIT COMPLETION")) << ncptl;
  EXPECT_NE(ncptl.find("MPI_Waitany leaves some of the task's requests outstanding"), std::string::npos) << ncptl;
}

TEST(Codegen, ConceptualSendrecvAwaitsOnlyWithoutOtherRequestsOutstanding) {
  // rank 0's Sendrecv runs while its Irecv of tag 5 is outstanding (completed by a later
  // Wait): its AWAIT COMPLETION would wait for that receive too, so it has none; rank 1's has
  Program p(2);
  p.p2p(0, Op::Irecv, 1, 10, 5);
  for (std::int64_t r = 0; r < 2; ++r) {
    Event& e = p.add(r, Op::Sendrecv, 11);
    e[Field::Peer] = 1 - 2 * r;
    e[Field::Tag] = 6;
    e[Field::Bytes] = 64;
    e[Field::DtSize] = 8;
    e[Field::Peer2] = 1 - 2 * r;
    e[Field::Tag2] = 6;
    e[Field::Bytes2] = 64;
  }
  Event& w = p.add(0, Op::Wait, 12);
  w[ArrayField::Requests] = {1};
  p.p2p(1, Op::Send, 0, 20, 5);
  p.finalize_all();
  const std::string ncptl = generate_conceptual(p.merged());
  EXPECT_EQ(count(ncptl, "TASK 0 AWAIT COMPLETION"), 1u) << ncptl;  // at the Wait
  EXPECT_EQ(count(ncptl, "TASK 1 AWAIT COMPLETION"), 1u) << ncptl;  // at the Sendrecv
  EXPECT_NE(ncptl.find("written only where the traced run had no other request outstanding"), std::string::npos)
      << ncptl;
}

TEST(Codegen, ConceptualKeepsRanksAMergedPresenceDoesNotName) {
  // a merged node may carry presence for some of its ranks only (approximate loop matching);
  // the others are present at every visit (the cursor) and keep their statement: rank 0's
  // sends were left out of the benchmark, which then hung (issue 33, waitsome)
  Program p(2);
  for (int it = 0; it < 4; ++it)
    for (std::int64_t r = 0; r < 2; ++r) {
      p.p2p(r, Op::Send, 1 - r, 10);
      p.p2p(r, Op::Recv, 1 - r, 11);
    }
  p.finalize_all();
  Trace t = p.merged();
  Node* send = nullptr;
  for (Node& n : t.nodes)
    if (n.loop)
      for (Node& b : n.loop->body)
        if (b.event && b.event->op == Op::Send) send = &b;
  ASSERT_NE(send, nullptr);
  ValueSeq every_other;
  for (int k = 0; k < 4; ++k) every_other.append(k % 2 == 0 ? 1 : 0);
  send->presence.alternatives.push_back({every_other, RankList::single(1)});
  const std::string ncptl = generate_conceptual(t);
  EXPECT_EQ(count(ncptl, "TASK 0 SEND A 64 BYTE MESSAGE"), 1u) << ncptl;
  EXPECT_EQ(count(ncptl, "TASK 1 SEND A 64 BYTE MESSAGE"), 1u) << ncptl;
}

TEST(Codegen, StencilKeepsItsLoopAndIsShort) {
  Trace t = synthetic(SyntheticPattern::Stencil1D, 8, 20);
  const std::string c = generate_c(t);
  EXPECT_EQ(count(c, "for (long i0 = 0, n0 = 20;"), 1u) << c;
  EXPECT_GE(count(c, "MPI_Isend("), 1u);
  EXPECT_GE(count(c, "wait_all(1, "), 1u);
  const std::string ncptl = generate_conceptual(t);
  EXPECT_EQ(count(ncptl, "FOR EACH i1 IN {0, ..., 19}"), 1u) << ncptl;  // peers change per iteration
  EXPECT_EQ(count(ncptl, "varies"), 0u) << ncptl;                       // ... and are exact
  // one statement per group of ranks with the same neighbours (edges have fewer)
  EXPECT_LE(lines(ncptl), 60u) << ncptl;
  EXPECT_NE(ncptl.find("ASYNCHRONOUSLY SEND A 4096 BYTE MESSAGE"), std::string::npos) << ncptl;
}

TEST(Codegen, TraversalVisitsLoopsAsLoops) {
  struct Recorder final : CodegenBackend {
    std::ostringstream out;
    void begin(const Trace&) override { out << "begin;"; }
    void enter_loop(const Node&, const LoopNode&, int d) override { out << "loop" << d << "{"; }
    void leave_loop(const Node&, const LoopNode&, int) override { out << "}"; }
    void event(const Node&, const EventNode& e, int) override { out << op_name(e.op) << ";"; }
    std::string finish() override { return out.str(); }
  } rec;
  Trace t = synthetic(SyntheticPattern::Collectives, 4, 5);
  traverse(t, rec);
  EXPECT_EQ(rec.finish(), "begin;Init;loop0{Bcast;Allreduce;Barrier;Reduce;Alltoall;}Finalize;");
}

TEST(Codegen, EmptyTraceIsRejected) {
  Trace t;
  EXPECT_THROW(generate_c(t), UsageError);
  EXPECT_THROW(generate_conceptual(t), UsageError);
}
