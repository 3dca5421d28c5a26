// Simulator: LogGP closed forms met exactly on small in-memory traces (compressed and merged
// by the core, walked by cursors), what-if knobs move time as the model says, deadlocks and
// unmatched messages are reported, and synthetic programs simulate to the end with the
// communication matrix's message counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "scalatrace/analysis/analysis.hpp"
#include "scalatrace/compress/compressor.hpp"
#include "scalatrace/merge/merge.hpp"
#include "scalatrace/simulate/simulator.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

using namespace scalatrace;

namespace {

constexpr std::uint32_t kSites = 16;

/// One rank's program, events appended in order; sites 0..kSites-1 interned up front.
struct Prog {
  RankRecording rec;
  std::uint64_t slots = 0;
  Prog(std::int64_t rank, std::int64_t nranks) {
    rec.rank = rank;
    rec.nranks = nranks;
    const auto mod = rec.sites.intern_module("simtest");
    for (std::uint32_t s = 0; s < kSites; ++s) rec.sites.intern({Frame{mod, 0x100 + s}});
  }
  Event& push(Op op, std::uint32_t site, std::uint64_t compute_ns = 0) {
    Event e;
    e.op = op;
    e.site = site;
    e.compute_ns = compute_ns;
    if (op_creates_request(op)) ++slots;
    rec.events.push_back(e);
    return rec.events.back();
  }
  Event& p2p(Op op, std::uint32_t site, std::int64_t peer, std::int64_t bytes, std::int64_t tag = 0,
             std::uint64_t compute_ns = 0) {
    Event& e = push(op, site, compute_ns);
    e[Field::Peer] = peer;
    e[Field::Bytes] = bytes;
    e[Field::Tag] = tag;
    return e;
  }
};

Trace merged(std::vector<Prog>& progs) {
  std::vector<Trace> per_rank;
  for (auto& p : progs) {
    IntraCompressor c;
    for (const auto& e : p.rec.events) c.push(e);
    per_rank.push_back(make_rank_trace(p.rec.rank, p.rec.nranks, c.finish(), p.rec.sites, p.rec.comms, p.rec.names));
  }
  return merge_tree(std::move(per_rank));
}

/// The merged trace of a synthetic program (every rank recorded and compressed, then merged).
Trace synthetic_trace(const SyntheticSpec& spec) {
  std::vector<Trace> per_rank;
  for (std::int64_t r = 0; r < spec.nranks; ++r) {
    RankRecording rec = record_synthetic(spec, r);
    IntraCompressor c;
    for (const auto& e : rec.events) c.push(e);
    per_rank.push_back(make_rank_trace(r, spec.nranks, c.finish(), rec.sites, rec.comms, rec.names));
  }
  return merge_tree(std::move(per_rank));
}

std::vector<Prog> programs(std::int64_t n) {
  std::vector<Prog> v;
  for (std::int64_t r = 0; r < n; ++r) v.emplace_back(r, n);
  return v;
}

SimOptions options(double L = 1000, double o = 250, double G = 0.5, double g = 0) {
  SimOptions opt;
  opt.inter_node = LogGP{L, o, o, g, G};
  opt.intra_node = opt.inter_node;
  opt.timing = TimingMode::Mean;
  return opt;
}

/// n messages back and forth between ranks 0 and 1 (n even), `compute` before every send.
Trace ping_pong(int n, std::int64_t bytes, std::uint64_t compute = 0) {
  auto p = programs(2);
  for (int i = 0; i < n / 2; ++i) {
    p[0].p2p(Op::Send, 1, +1, bytes, 0, compute);
    p[0].p2p(Op::Recv, 2, +1, bytes);
    p[1].p2p(Op::Recv, 3, -1, bytes);
    p[1].p2p(Op::Send, 4, -1, bytes, 0, compute);
  }
  return merged(p);
}

}  // namespace

TEST(Simulator, EagerPingPongClosedForm) {
  const double L = 1000, o = 250, G = 0.5;
  const std::int64_t bytes = 1025;
  for (int n : {2, 10, 200}) {
    const SimResult r = simulate(ping_pong(n, bytes), options(L, o, G));
    EXPECT_DOUBLE_EQ(r.total_ns, n * (2 * o + L + (bytes - 1) * G)) << n << " messages";
    EXPECT_EQ(r.events, static_cast<std::uint64_t>(2 * n));
    EXPECT_EQ(r.sent_messages[0] + r.sent_messages[1], static_cast<std::uint64_t>(n));
    EXPECT_DOUBLE_EQ(r.sent_bytes[0], static_cast<double>(bytes * n / 2));
  }
}

TEST(Simulator, RendezvousPingPongClosedForm) {
  SimOptions opt = options(1000, 250, 0.5);
  opt.eager_threshold = 4096;
  const std::int64_t bytes = 8193;
  const SimResult r = simulate(ping_pong(20, bytes), opt);
  // request-to-send, clear-to-send, data: 3 latencies per message.
  EXPECT_DOUBLE_EQ(r.total_ns, 20 * (2 * 250 + 3 * 1000 + (bytes - 1) * 0.5));
}

TEST(Simulator, SizeAndComputeScaleMoveTimeByTheModel) {
  const double L = 1000, o = 250, G = 0.5;
  const std::int64_t bytes = 1025;
  const std::uint64_t compute = 4000;
  const int n = 40;
  const Trace t = ping_pong(n, bytes, compute);
  SimOptions opt = options(L, o, G);
  const double base = simulate(t, opt).total_ns;
  EXPECT_DOUBLE_EQ(base, n * (compute + 2 * o + L + (bytes - 1) * G));
  opt.size_scale = 2;
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, base + n * bytes * G);
  opt.size_scale = 1;
  opt.compute_scale = 3;
  const SimResult scaled = simulate(t, opt);
  EXPECT_DOUBLE_EQ(scaled.total_ns, base + n * 2.0 * compute);
  EXPECT_DOUBLE_EQ(scaled.ranks[0].compute + scaled.ranks[1].compute, 3.0 * compute * n);
  opt.compute_scale = 1;
  opt.site_compute_scale[1] = 0;  // rank 0's sends compute nothing any more
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, base - n / 2 * static_cast<double>(compute));
  opt.site_compute_scale.clear();
  opt.timing = TimingMode::None;
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, n * (2 * o + L + (bytes - 1) * G));
}

TEST(Simulator, WarmUpIsPaidOnceWhenEveryRankStallsInTheSameIteration) {
  // Two ranks exchange a message per iteration; both computed 200 us before their first send
  // (a first iteration's warm-up) and 5 us before every later one. The real run pays the
  // warm-up once. So does the simulation, in every timing mode and for every seed: the first
  // occurrence takes the first-occurrence time, the later ones never draw it.
  const double L = 1000, o = 250, G = 0.5;
  const std::int64_t bytes = 1025;
  const std::uint64_t warm_up = 200'000, compute = 5'000;
  const int n = 30;
  auto p = programs(2);
  for (int i = 0; i < n; ++i)
    for (std::int64_t r = 0; r < 2; ++r) {
      p[static_cast<std::size_t>(r)].p2p(Op::Send, 1, 1 - 2 * r, bytes, 0, i == 0 ? warm_up : compute);
      p[static_cast<std::size_t>(r)].p2p(Op::Recv, 2, 1 - 2 * r, bytes);
    }
  const Trace t = merged(p);
  const double expected = warm_up + (n - 1) * static_cast<double>(compute) + n * (2 * o + L + (bytes - 1) * G);
  SimOptions opt = options(L, o, G);
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, expected);
  opt.timing = TimingMode::Sample;
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    opt.seed = seed;
    EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, expected) << "seed " << seed;
  }
}

TEST(Simulator, CallsThatNeverWaitTakeTheirRecordedTime) {
  // An Isend recorded as taking 3 us and an Irecv as 2 us (the MPI library's own time: LogGP's
  // overheads are 250 ns here). Each takes its recorded time, less the overheads the model
  // already charges; the Waits and the message are the model's.
  const double L = 1000, o = 250, G = 0.5;
  const std::int64_t bytes = 1025;
  auto p = programs(2);
  p[0].p2p(Op::Isend, 1, +1, bytes).duration_ns = 3'000;
  p[0].push(Op::Wait, 2)[ArrayField::Requests] = {1};
  p[1].p2p(Op::Irecv, 3, -1, bytes).duration_ns = 2'000;
  p[1].push(Op::Wait, 4).duration_ns = 70'000;  // waited for the message: not taken
  p[1].rec.events.back()[ArrayField::Requests] = {1};
  const Trace t = merged(p);
  SimOptions opt = options(L, o, G);
  const SimResult r = simulate(t, opt);
  EXPECT_DOUBLE_EQ(r.end_ns[0], 3'000);      // Isend: its recorded 3 us (o_s included)
  EXPECT_DOUBLE_EQ(r.end_ns[1], 2'000 + o);  // the message arrived during the Irecv's 2 us
  EXPECT_DOUBLE_EQ(r.ranks[1].comm, 2'000 + o);
  opt.recorded_local_calls = false;  // the model alone: one eager message
  const SimResult model = simulate(t, opt);
  EXPECT_DOUBLE_EQ(model.end_ns[0], o);
  EXPECT_DOUBLE_EQ(model.end_ns[1], 2 * o + L + (bytes - 1) * G);
  opt.recorded_local_calls = true;
  opt.timing = TimingMode::None;  // no recorded times at all
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, model.total_ns);
}

TEST(Simulator, CopyOverheadPerByteChargesBothCPUs) {
  // LogGOPS's O: an eager message keeps the sender busy o_s + (k-1)O and the receiver
  // o_r + (k-1)O; a rendezvous sender pays only o_s. The ping-pong's per-byte time is G + 2O.
  const double L = 1000, o = 250, G = 0.5, O = 0.25;
  const std::int64_t bytes = 1025;
  SimOptions opt = options(L, o, G);
  opt.inter_node.O = opt.intra_node.O = O;
  const int n = 10;
  EXPECT_DOUBLE_EQ(simulate(ping_pong(n, bytes), opt).total_ns, n * (2 * o + L + (bytes - 1) * (G + 2 * O)));
  opt.eager_threshold = 512;  // rendezvous: RTS, CTS, data; the receiver still copies
  EXPECT_DOUBLE_EQ(simulate(ping_pong(n, bytes), opt).total_ns, n * (2 * o + 3 * L + (bytes - 1) * (G + O)));
  // A blocking eager send returns after its copy.
  auto p = programs(2);
  p[0].p2p(Op::Send, 1, +1, bytes);
  p[1].p2p(Op::Recv, 2, -1, bytes, 0, 100'000);
  opt.eager_threshold = 65536;
  const SimResult r = simulate(merged(p), opt);
  EXPECT_DOUBLE_EQ(r.end_ns[0], o + (bytes - 1) * O);
  EXPECT_DOUBLE_EQ(r.end_ns[1], 100'000 + o + (bytes - 1) * O);
}

TEST(Simulator, AMessageToOneselfIsACopyInMemory) {
  // MPI moves a message to the sending rank itself by copying it in memory: no latency, no
  // bytes on the wire, no time of the NIC (NPB CG and MG at 2 ranks exchange a third to two
  // thirds of their messages with themselves). The sender copies (o_s + (k-1)O); a receive
  // posted first gets the data with that copy and pays o_r, one posted later copies it out of
  // MPI's buffer (o_r + (k-1)O); a rendezvous message is copied once, by the receive.
  const double L = 1000, o = 250, G = 0.5, O = 0.25, g = 5000;
  const std::int64_t bytes = 1025;
  const double copy = (bytes - 1) * O;
  SimOptions opt = options(L, o, G, g);
  opt.inter_node.O = opt.intra_node.O = O;

  auto posted_first = programs(2);
  posted_first[0].p2p(Op::Irecv, 1, 0, bytes);
  posted_first[0].p2p(Op::Send, 2, 0, bytes);
  posted_first[0].push(Op::Wait, 3)[ArrayField::Requests] = {1};
  // The NIC stays free: a message to rank 1 right after is not held back by the gap g.
  posted_first[0].p2p(Op::Send, 4, +1, 1);
  posted_first[1].p2p(Op::Recv, 5, -1, 1);
  const SimResult r = simulate(merged(posted_first), opt);
  EXPECT_DOUBLE_EQ(r.end_ns[0], (o + copy) + o + o);
  EXPECT_DOUBLE_EQ(r.end_ns[1], (o + copy) + o + o + L + o);
  EXPECT_EQ(r.sent_messages[0], 1u);  // self messages are not counted as traffic

  auto posted_later = programs(1);
  posted_later[0].p2p(Op::Isend, 1, 0, bytes);
  posted_later[0].p2p(Op::Irecv, 2, 0, bytes);
  posted_later[0].push(Op::Waitall, 3)[ArrayField::Requests] = {2, 1};
  EXPECT_DOUBLE_EQ(simulate(merged(posted_later), opt).total_ns, (o + copy) + (o + copy));

  opt.eager_threshold = 512;  // rendezvous: no handshake latencies, one copy by the receive
  auto rendezvous = programs(1);
  rendezvous[0].p2p(Op::Irecv, 1, 0, bytes);
  rendezvous[0].p2p(Op::Send, 2, 0, bytes);
  rendezvous[0].push(Op::Wait, 3)[ArrayField::Requests] = {1};
  EXPECT_DOUBLE_EQ(simulate(merged(rendezvous), opt).total_ns, o + (o + copy));
}

TEST(Simulator, CollectivesAndEagerSendsKeepTheirFastestRecordedTime) {
  // Two Allreduce calls per rank recorded as 6 us when the rank was last to arrive and 40 us
  // when it waited: the fastest calls (6 us) are the library's time, more than the model's one
  // message (2o + L + (k-1)G = 1.5 us plus the bytes). Every call lasts at least that. An eager
  // Send recorded as 4 us lasts 4 us; one above the eager threshold (rendezvous: it can wait
  // for its receiver) keeps the model's time.
  const double L = 1000, o = 250, G = 0.5;
  auto p = programs(2);
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 2; ++i) {
      Event& e = p[r].push(Op::Allreduce, 1);
      e[Field::Bytes] = 8;
      e.duration_ns = (i == r) ? 6'000 : 40'000;
    }
  }
  const Trace t = merged(p);
  SimOptions opt = options(L, o, G);
  const double hop = 2 * o + L + 7 * G;
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, 2 * 6'000);
  opt.recorded_local_calls = false;
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, 2 * hop);

  for (const std::int64_t bytes : {64, 100'000}) {
    auto q = programs(2);
    q[0].p2p(Op::Send, 1, +1, bytes).duration_ns = 4'000;
    q[1].p2p(Op::Recv, 2, -1, bytes);
    const Trace sends = merged(q);
    opt.recorded_local_calls = true;
    const SimResult r = simulate(sends, opt);
    opt.recorded_local_calls = false;
    const SimResult model = simulate(sends, opt);
    if (bytes == 64) {
      EXPECT_DOUBLE_EQ(model.end_ns[0], o);
      EXPECT_DOUBLE_EQ(r.end_ns[0], 4'000);
    } else {
      EXPECT_DOUBLE_EQ(r.end_ns[0], model.end_ns[0]);
      EXPECT_DOUBLE_EQ(model.end_ns[0], o + 2 * L + (bytes - 1) * G);
    }
  }
}

TEST(Simulator, SenderGapSpacesMessages) {
  const double L = 1000, o = 100, g = 700;
  auto p = programs(2);
  const int n = 12;
  for (int i = 0; i < n; ++i) p[0].p2p(Op::Send, 1, +1, 1);
  for (int i = 0; i < n; ++i) p[1].p2p(Op::Recv, 2, -1, 1);
  const SimResult r = simulate(merged(p), options(L, o, 0.5, g));
  EXPECT_DOUBLE_EQ(r.total_ns, 2 * o + (n - 1) * g + L);
  EXPECT_DOUBLE_EQ(r.end_ns[0], o + (n - 1) * g);
}

TEST(Simulator, NonblockingReceiveOverlapsCompute) {
  const double L = 1000, o = 250, G = 0.5;
  auto p = programs(2);
  const std::uint64_t compute = 50000;
  p[0].p2p(Op::Send, 1, +1, 2001);
  p[1].p2p(Op::Irecv, 2, -1, 2001);
  p[1].push(Op::Wait, 3, compute)[ArrayField::Requests] = {1};
  const SimResult r = simulate(merged(p), options(L, o, G));
  EXPECT_DOUBLE_EQ(r.end_ns[1], compute + o);  // the message was there before the Wait
  EXPECT_DOUBLE_EQ(r.ranks[1].wait, 0);
  // Without the compute the receiver waits for the sender: late sender.
  auto q = programs(2);
  q[0].p2p(Op::Send, 1, +1, 2001, 0, compute);
  q[1].p2p(Op::Irecv, 2, -1, 2001);
  q[1].push(Op::Wait, 3)[ArrayField::Requests] = {1};
  const SimResult late = simulate(merged(q), options(L, o, G));
  EXPECT_DOUBLE_EQ(late.ranks[1].late_sender, compute + o + L + 2000 * G);
  EXPECT_DOUBLE_EQ(late.ranks[1].wait, late.ranks[1].late_sender);
}

TEST(Simulator, LateReceiverUnderRendezvous) {
  SimOptions opt = options(1000, 250, 0.5);
  opt.eager_threshold = 100;
  auto p = programs(2);
  const std::uint64_t compute = 30000;
  p[0].p2p(Op::Send, 1, +1, 1001);
  p[1].p2p(Op::Recv, 2, -1, 1001, 0, compute);
  const SimResult r = simulate(merged(p), opt);
  // RTS arrives at o + L; the receiver posts at `compute`; CTS takes L back.
  EXPECT_DOUBLE_EQ(r.ranks[0].late_receiver, compute + 1000 + 1000 * 0.5 - 250);
  EXPECT_DOUBLE_EQ(r.total_ns, compute + 2 * 1000 + 1000 * 0.5 + 250);
}

TEST(Simulator, CollectivesFollowTheirAlgorithms) {
  const double L = 1000, o = 250, G = 0.5;
  const std::int64_t bytes = 513;
  const double hop = 2 * o + L + (bytes - 1) * G;  // one message on the critical path
  for (std::int64_t n : {2, 4, 8, 16}) {
    const double rounds = std::log2(static_cast<double>(n));
    for (Op op : {Op::Barrier, Op::Bcast, Op::Allreduce}) {
      auto p = programs(n);
      for (auto& pr : p) {
        Event& e = pr.push(op, 1);
        e[Field::Bytes] = op == Op::Barrier ? 0 : bytes;
      }
      const SimResult r = simulate(merged(p), options(L, o, G));
      const double expected = op == Op::Barrier ? rounds * (2 * o + L) : rounds * hop;
      EXPECT_DOUBLE_EQ(r.total_ns, expected) << op_name(op) << " on " << n << " ranks";
    }
  }
}

TEST(Simulator, AllreduceOnOddSizesFoldsTheExtraRanks) {
  const double L = 1000, o = 250, G = 0.5;
  const std::int64_t bytes = 513;
  const double hop = 2 * o + L + (bytes - 1) * G;
  auto p = programs(6);  // 4 + 2: fold, 2 rounds, unfold
  for (auto& pr : p) pr.push(Op::Allreduce, 1)[Field::Bytes] = bytes;
  const SimResult r = simulate(merged(p), options(L, o, G));
  // Ranks 4 and 5 need no fold: their second-round message to rank 1 has arrived when rank 1
  // gets there, so that round costs rank 1 only its two overheads. Rank 0 ends last:
  // fold + round 1 + (o_s + o_r) + unfold.
  EXPECT_DOUBLE_EQ(r.total_ns, 3 * hop + 2 * o);
}

TEST(Simulator, WildcardTakesTheEarliestArrival) {
  const double L = 1000, o = 250, G = 0.5;
  auto p = programs(3);
  // Rank 1's message is simulated first (rank order) but arrives last.
  p[1].p2p(Op::Send, 1, -1, 1, 5, 90000);
  p[2].p2p(Op::Send, 4, -2, 1, 5, 1000);  // another site: its own compute histogram
  p[0].p2p(Op::Recv, 2, kAnySource, 1, 5);
  p[0].p2p(Op::Recv, 3, kAnySource, 1, 5);
  const SimResult r = simulate(merged(p), options(L, o, G));
  std::map<std::uint32_t, SimTimes> by_site;
  for (const auto& s : r.sites) by_site[s.site] = s.times;
  EXPECT_DOUBLE_EQ(by_site[2].wait, 1000 + o + L);
  EXPECT_DOUBLE_EQ(r.end_ns[0], 90000 + 2 * o + L);
}

TEST(Simulator, IntraNodeParametersApplyWithinANode) {
  SimOptions opt = options(5000, 250, 0.5);
  opt.intra_node = LogGP{100, 50, 50, 0, 0.1};
  opt.ranks_per_node = 2;
  const std::int64_t bytes = 1001;
  const SimResult r = simulate(ping_pong(10, bytes), opt);
  EXPECT_NEAR(r.total_ns, 10 * (2 * 50 + 100 + 1000 * 0.1), 1e-6);
  opt.ranks_per_node = 1;
  EXPECT_DOUBLE_EQ(simulate(ping_pong(10, bytes), opt).total_ns, 10 * (2 * 250 + 5000 + 1000 * 0.5));
}

TEST(Simulator, ContentionSerializesANodesLink) {
  // Ranks 0 and 1 (node 0) each send 1 MB to ranks 2 and 3 (node 1) at the same time.
  auto p = programs(4);
  const std::int64_t bytes = 1 << 20;
  p[0].p2p(Op::Send, 1, +2, bytes);
  p[1].p2p(Op::Send, 1, +2, bytes);
  p[2].p2p(Op::Recv, 2, -2, bytes);
  p[3].p2p(Op::Recv, 2, -2, bytes);
  const Trace t = merged(p);
  SimOptions opt = options(1000, 250, 1.0);
  opt.eager_threshold = 1e9;
  opt.ranks_per_node = 2;
  const double free_links = simulate(t, opt).total_ns;
  EXPECT_DOUBLE_EQ(free_links, 2 * 250 + 1000 + (bytes - 1) * 1.0);
  opt.contention = true;
  const double shared = simulate(t, opt).total_ns;
  EXPECT_DOUBLE_EQ(shared, 2 * 250 + 1000 + (bytes - 1) * 2.0);
}

TEST(Simulator, DeadlockIsReportedWithRankAndEvent) {
  auto p = programs(2);
  p[0].p2p(Op::Recv, 1, +1, 8);
  p[0].p2p(Op::Send, 2, +1, 8);
  p[1].p2p(Op::Recv, 1, -1, 8);
  p[1].p2p(Op::Send, 2, -1, 8);
  try {
    simulate(merged(p), options());
    FAIL() << "no deadlock reported";
  } catch (const SimulationError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("deadlock"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0 at event #0"), std::string::npos) << what;
    EXPECT_NE(what.find("Recv"), std::string::npos) << what;
  }
}

TEST(Simulator, RendezvousHeadToHeadSendsDeadlockLikeMPI) {
  auto p = programs(2);
  p[0].p2p(Op::Send, 1, +1, 1 << 20);
  p[0].p2p(Op::Recv, 2, +1, 1 << 20);
  p[1].p2p(Op::Send, 1, -1, 1 << 20);
  p[1].p2p(Op::Recv, 2, -1, 1 << 20);
  const Trace t = merged(p);
  EXPECT_THROW(simulate(t, options()), SimulationError);
  SimOptions eager = options();
  eager.eager_threshold = 1e9;
  EXPECT_NO_THROW(simulate(t, eager));
}

TEST(Simulator, UnmatchedSendIsAnError) {
  auto p = programs(2);
  p[0].p2p(Op::Send, 1, +1, 8, 3);
  p[1].push(Op::Barrier, 2);
  p[0].push(Op::Barrier, 2);
  try {
    simulate(merged(p), options());
    FAIL() << "unmatched send not reported";
  } catch (const SimulationError& e) {
    EXPECT_NE(std::string(e.what()).find("never received"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("from rank 0, tag 3"), std::string::npos) << e.what();
  }
}

TEST(Simulator, BadParametersAreUsageErrors) {
  const Trace t = ping_pong(2, 8);
  SimOptions opt = options();
  opt.inter_node.L = -1;
  EXPECT_THROW(simulate(t, opt), UsageError);
  opt = options();
  opt.size_scale = std::nan("");
  EXPECT_THROW(simulate(t, opt), UsageError);
  opt = options();
  opt.ranks_per_node = 0;
  EXPECT_THROW(simulate(t, opt), UsageError);
  opt = options();
  opt.timeline = true;
  opt.timeline_limit = 3;
  EXPECT_THROW(simulate(t, opt), UsageError);
}

TEST(Simulator, PersistentRequestsAndTimeline) {
  auto p = programs(2);
  for (std::int64_t r = 0; r < 2; ++r) {
    const std::int64_t peer = r == 0 ? 1 : -1;
    p[static_cast<std::size_t>(r)].p2p(Op::Send_init, 1, peer, 64, 9);
    p[static_cast<std::size_t>(r)].p2p(Op::Recv_init, 2, peer, 64, 9);
    for (int i = 0; i < 5; ++i) {
      p[static_cast<std::size_t>(r)].push(Op::Startall, 3)[ArrayField::Requests] = {2, 1};
      p[static_cast<std::size_t>(r)].push(Op::Waitall, 4, 100)[ArrayField::Requests] = {2, 1};
    }
    p[static_cast<std::size_t>(r)].push(Op::Request_free, 5)[ArrayField::Requests] = {2};
    p[static_cast<std::size_t>(r)].push(Op::Request_free, 5)[ArrayField::Requests] = {1};
  }
  SimOptions opt = options();
  opt.timeline = true;
  opt.pair_counts = true;
  const SimResult r = simulate(merged(p), opt);
  EXPECT_EQ(r.sent_messages[0], 5u);
  EXPECT_EQ(r.recv_messages[1], 5u);
  ASSERT_EQ(r.pairs.size(), 2u);
  EXPECT_EQ(r.pairs[0].messages, 5u);
  ASSERT_EQ(r.timeline.size(), r.events);
  for (const auto& row : r.timeline) EXPECT_LE(row.start, row.end);
  EXPECT_DOUBLE_EQ(r.timeline.back().end, r.end_ns[1]);
}

TEST(Simulator, SyntheticProgramsEndAndMatchTheCommMatrix) {
  // (Irregular is not a program: its random peers do not pair sends with receives.)
  const SyntheticPattern patterns[] = {SyntheticPattern::Stencil1D, SyntheticPattern::Stencil2D,
                                       SyntheticPattern::Stencil3D, SyntheticPattern::Collectives,
                                       SyntheticPattern::RowColumn};
  for (SyntheticPattern pat : patterns) {
    for (bool wrap : {true, false}) {
      SyntheticSpec spec;
      spec.pattern = pat;
      spec.nranks = pat == SyntheticPattern::Stencil3D ? 27 : 12;
      spec.timesteps = 6;
      spec.wrap = wrap;
      const Trace t = synthetic_trace(spec);
      SimOptions opt = options();
      opt.pair_counts = true;
      for (TimingMode mode : {TimingMode::Mean, TimingMode::Median, TimingMode::Sample}) {
        opt.timing = mode;
        const std::string what = std::string(synthetic_pattern_name(pat)) + (wrap ? " wrap" : "");
        SimResult r;
        ASSERT_NO_THROW(r = simulate(t, opt)) << what;
        const CommTriplets msgs = comm_matrix_sparse(t, Metric::Messages, CommKind::PointToPoint);
        const CommTriplets bytes = comm_matrix_sparse(t, Metric::Bytes, CommKind::PointToPoint);
        ASSERT_EQ(r.pairs.size(), msgs.src.size()) << what;
        std::vector<double> sent(static_cast<std::size_t>(spec.nranks)), recv(sent.size());
        for (std::size_t i = 0; i < r.pairs.size(); ++i) {
          EXPECT_EQ(r.pairs[i].src, msgs.src[i]) << what;
          EXPECT_EQ(r.pairs[i].dst, msgs.dst[i]) << what;
          EXPECT_DOUBLE_EQ(static_cast<double>(r.pairs[i].messages), msgs.value[i]) << what;
          EXPECT_DOUBLE_EQ(r.pairs[i].bytes, bytes.value[i]) << what;
          sent[static_cast<std::size_t>(msgs.src[i])] += msgs.value[i];
          recv[static_cast<std::size_t>(msgs.dst[i])] += msgs.value[i];
        }
        for (std::size_t k = 0; k < sent.size(); ++k) {
          EXPECT_DOUBLE_EQ(static_cast<double>(r.sent_messages[k]), sent[k]) << what;
          EXPECT_DOUBLE_EQ(static_cast<double>(r.recv_messages[k]), recv[k]) << what;
        }
        EXPECT_GT(r.total_ns, 0) << what;
        std::uint64_t calls = 0;
        for (const auto& rt : r.ranks) {
          calls += rt.calls;
          EXPECT_GE(rt.wait, rt.late_sender + rt.late_receiver - 1e-6) << what;
        }
        EXPECT_EQ(calls, r.events) << what;
      }
    }
  }
}

TEST(Simulator, CursorIntoOneEventEqualsTheExpandedRank) {
  // The simulator reuses one Event per rank (Cursor::next(Event&)): every field and array of
  // the previous event must be overwritten, so each rank's walk equals expand(), timing included.
  for (SyntheticPattern pat :
       {SyntheticPattern::Stencil2D, SyntheticPattern::Collectives, SyntheticPattern::Irregular}) {
    SyntheticSpec spec;
    spec.pattern = pat;
    spec.nranks = 9;
    spec.timesteps = 4;
    spec.wrap = true;
    const Trace t = synthetic_trace(spec);
    for (std::int64_t r = 0; r < spec.nranks; ++r) {
      const std::vector<Event> expected = expand(t, r);
      Cursor cursor(t, r);
      Event e;
      std::size_t i = 0;
      for (; cursor.next(e); ++i) {
        ASSERT_LT(i, expected.size());
        EXPECT_TRUE(e.same_call(expected[i])) << describe(e) << " vs " << describe(expected[i]);
        EXPECT_EQ(e.compute_ns, expected[i].compute_ns);
        EXPECT_EQ(e.duration_ns, expected[i].duration_ns);
      }
      EXPECT_EQ(i, expected.size()) << synthetic_pattern_name(pat) << " rank " << r;
    }
  }
}

TEST(Simulator, CursorNamesTheFieldThatRunsOut) {
  // A constant field (Bytes: one value) shorter than the loop around it: the cursor stops at
  // the first occurrence without a value and names the field.
  auto p = programs(1);
  for (int i = 0; i < 4; ++i) p[0].p2p(Op::Send, 1, 0, 8, 1);
  Trace t = merged(p);
  ASSERT_EQ(t.nodes.size(), 1u);
  ASSERT_TRUE(t.nodes[0].loop);
  auto& bytes = t.nodes[0].loop->body[0].event->fields[static_cast<std::size_t>(Field::Bytes)];
  bytes.alternatives[0].first = ValueSeq::constant(8, 3);
  Cursor c(t, 0);
  Event e;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.next(e));
  try {
    c.next(e);
    FAIL() << "expected FormatError";
  } catch (const FormatError& err) {
    EXPECT_NE(std::string(err.what()).find("field Bytes of a Send ran out of values at occurrence 3"),
              std::string::npos)
        << err.what();
  }
}

// ---------------------------------------------------------------- nonblocking collectives

TEST(Simulator, NonblockingCollectiveThenWaitTakesTheBlockingTime) {
  const double L = 1000, o = 250, G = 0.5;
  const std::int64_t bytes = 513;
  for (std::int64_t n : {2, 4, 8, 16}) {
    for (auto [iop, op] : {std::pair{Op::Ibarrier, Op::Barrier}, std::pair{Op::Ibcast, Op::Bcast},
                           std::pair{Op::Iallreduce, Op::Allreduce}}) {
      auto blocking = programs(n), nonblocking = programs(n);
      for (std::int64_t r = 0; r < n; ++r) {
        blocking[static_cast<std::size_t>(r)].push(op, 1)[Field::Bytes] = op == Op::Barrier ? 0 : bytes;
        nonblocking[static_cast<std::size_t>(r)].push(iop, 1)[Field::Bytes] = op == Op::Barrier ? 0 : bytes;
        nonblocking[static_cast<std::size_t>(r)].push(Op::Wait, 2)[ArrayField::Requests] = {1};
      }
      const SimResult b = simulate(merged(blocking), options(L, o, G));
      const SimResult nb = simulate(merged(nonblocking), options(L, o, G));
      EXPECT_DOUBLE_EQ(nb.total_ns, b.total_ns) << op_name(iop) << " on " << n << " ranks";
    }
  }
}

TEST(Simulator, NonblockingCollectiveOverlapsCompute) {
  // 2 ranks, Iallreduce, compute C, Wait: the collective (one exchange, `hop`) runs during C.
  const double L = 1000, o = 250, G = 0.5;
  const std::int64_t bytes = 1025;
  const double hop = 2 * o + L + (bytes - 1) * G;
  for (std::uint64_t compute : {std::uint64_t{0}, std::uint64_t{1000}, std::uint64_t{100000}}) {
    auto nb = programs(2), b = programs(2);
    for (std::size_t r = 0; r < 2; ++r) {
      nb[r].push(Op::Iallreduce, 1)[Field::Bytes] = bytes;
      nb[r].push(Op::Wait, 2, compute)[ArrayField::Requests] = {1};
      b[r].push(Op::Allreduce, 1)[Field::Bytes] = bytes;
      b[r].push(Op::Finalize, 3, compute);
    }
    const SimResult overlapped = simulate(merged(nb), options(L, o, G));
    const SimResult serial = simulate(merged(b), options(L, o, G));
    const double c = static_cast<double>(compute);
    // The call costs its send overhead; the Wait ends when both the compute and the exchange have.
    EXPECT_DOUBLE_EQ(overlapped.total_ns, std::max(o + c, hop)) << compute;
    EXPECT_DOUBLE_EQ(overlapped.ranks[0].wait, std::max(0.0, hop - (o + c))) << compute;
    EXPECT_DOUBLE_EQ(serial.total_ns, hop + c) << compute;
    EXPECT_DOUBLE_EQ(overlapped.ranks[0].compute + overlapped.ranks[0].comm + overlapped.ranks[0].wait,
                     overlapped.end_ns[0]);
  }
}

TEST(Simulator, NonblockingCollectiveProgressesWhileTheRankBlocksElsewhere) {
  // Rank 0 blocks in a receive that rank 1 sends only after its Ibarrier completed; the barrier's
  // later rounds need rank 0's messages, so they must progress while rank 0 is in its Recv.
  const double L = 1000, o = 250;
  const std::int64_t n = 8;
  auto p = programs(n);
  for (std::int64_t r = 0; r < n; ++r) {
    auto& pr = p[static_cast<std::size_t>(r)];
    pr.push(Op::Ibarrier, 1);
    if (r == 0) pr.p2p(Op::Recv, 2, +1, 8);
    pr.push(Op::Wait, 3)[ArrayField::Requests] = {1};
    if (r == 1) pr.p2p(Op::Send, 4, -1, 8);
  }
  const SimResult res = simulate(merged(p), options(L, o, 0.5));
  const double barrier = 3 * (2 * o + L);  // dissemination, log2(8) rounds
  EXPECT_DOUBLE_EQ(res.end_ns[1], barrier + o);
  EXPECT_DOUBLE_EQ(res.end_ns[0], barrier + o + L + 7 * 0.5 + o);  // rank 1's message
  EXPECT_EQ(res.sent_messages[1], 1u);
}

TEST(Simulator, OutstandingNonblockingCollectivesAndPointToPointInOneWaitall) {
  const double L = 1000, o = 250, G = 0.5;
  const std::int64_t n = 4, bytes = 4097;
  auto p = programs(n), serial = programs(n);
  auto bcasts = [&](Prog& prog, Op op) {  // roots 0 and 1, sites 1 and 2
    for (std::int64_t root : {0, 1}) {
      Event& e = prog.push(op, static_cast<std::uint32_t>(1 + root));
      e[Field::Bytes] = bytes;
      e[Field::Root] = root;
    }
  };
  for (std::int64_t r = 0; r < n; ++r) {
    auto& pr = p[static_cast<std::size_t>(r)];
    bcasts(pr, Op::Ibcast);
    pr.p2p(Op::Irecv, 3, -1, 100, 5);
    pr.p2p(Op::Isend, 4, +1, 100, 5);
    pr.push(Op::Waitall, 5)[ArrayField::Requests] = {4, 3, 2, 1};
    bcasts(serial[static_cast<std::size_t>(r)], Op::Bcast);
  }
  // The ring of Isend/Irecv (wrapping through peers +1/-1 relative) needs its ends matched.
  p[0].rec.events[2][Field::Peer] = n - 1;
  p[static_cast<std::size_t>(n - 1)].rec.events[3][Field::Peer] = -(n - 1);
  const SimResult res = simulate(merged(p), options(L, o, G));
  const SimResult one_after_other = simulate(merged(serial), options(L, o, G));
  for (std::int64_t r = 0; r < n; ++r) EXPECT_EQ(res.sent_messages[static_cast<std::size_t>(r)], 1u);
  // The two broadcasts overlap: less than one after the other, more than one alone.
  EXPECT_LT(res.total_ns, one_after_other.total_ns + 2 * o);
  EXPECT_GT(res.total_ns, one_after_other.total_ns / 2);
}

// ---------------------------------------------------------------- topology, placement, noise

namespace {

/// LogGP endpoint that costs nothing, so a message takes only its route's time.
SimOptions routed(Topology::Kind kind, std::vector<std::int64_t> shape, double hop_latency, double link_G) {
  SimOptions opt = options(0, 0, 0);
  opt.topology.kind = kind;
  opt.topology.shape = std::move(shape);
  opt.topology.hop_latency = hop_latency;
  opt.topology.link_G = link_G;
  opt.eager_threshold = 1e12;
  return opt;
}

/// Hops between the nodes of ranks 0 and 1 (one hop = 1 ns, nothing else costs).
double hops_between(Topology::Kind kind, std::vector<std::int64_t> shape, std::int64_t a, std::int64_t b) {
  SimOptions opt = routed(kind, std::move(shape), 1.0, 0.0);
  opt.placement = Placement::Explicit;
  opt.node_of_rank = {a, b};
  return simulate(ping_pong(2, 1), opt).total_ns / 2;
}

/// Ranks 0 and 1 send `bytes` to ranks 2 and 3 at time 0.
Trace two_flows(std::int64_t bytes) {
  auto p = programs(4);
  p[0].p2p(Op::Send, 1, +2, bytes);
  p[1].p2p(Op::Send, 1, +2, bytes);
  p[2].p2p(Op::Recv, 2, -2, bytes);
  p[3].p2p(Op::Recv, 2, -2, bytes);
  return merged(p);
}

/// Rank 0 sends `bytes` to rank 1, then to rank 2, at time 0 (blocking eager sends).
Trace one_sender_two_receivers(std::int64_t bytes) {
  auto p = programs(3);
  p[0].p2p(Op::Send, 1, +1, bytes);
  p[0].p2p(Op::Send, 2, +2, bytes);
  p[1].p2p(Op::Recv, 3, -1, bytes);
  p[2].p2p(Op::Recv, 4, -2, bytes);
  return merged(p);
}

}  // namespace

TEST(SimulatorTopology, TorusMessageTakesHopsTimesLatencyPlusBytesOverBandwidth) {
  // 4x4 torus: node 0 = (0,0), node 6 = (2,1): 2 + 1 hops; with o = 250 on both sides.
  SimOptions opt = routed(Topology::Kind::Torus, {4, 4}, 100, 0.5);
  opt.inter_node = opt.intra_node = LogGP{0, 250, 250, 0, 0.1};  // link slower than the NIC
  opt.placement = Placement::Explicit;
  opt.node_of_rank = {0, 6};
  const std::int64_t bytes = 1001;
  EXPECT_DOUBLE_EQ(simulate(ping_pong(2, bytes), opt).total_ns, 2 * (2 * 250 + 3 * 100 + (bytes - 1) * 0.5));
  // The endpoint's L adds to the route's latency; the slower of NIC and link sets the byte time.
  opt.inter_node.L = 700;
  opt.inter_node.G = 2.0;
  EXPECT_DOUBLE_EQ(simulate(ping_pong(2, bytes), opt).total_ns, 2 * (2 * 250 + 700 + 3 * 100 + (bytes - 1) * 2.0));
  // Wrap-around links: nodes 0 and 7 of a ring of 8 are neighbours; 0 and 4 are 4 apart.
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::Torus, {8}, 0, 7), 1);
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::Torus, {8}, 0, 4), 4);
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::Torus, {4, 4, 4}, 0, 63), 3);
}

TEST(SimulatorTopology, FatTreeAndDragonflyHopCounts) {
  // k = 4 fat tree: 2 nodes per edge switch, 4 per pod, 16 nodes.
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::FatTree, {4}, 0, 1), 2);   // same edge switch
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::FatTree, {4}, 0, 3), 4);   // same pod
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::FatTree, {4}, 0, 13), 6);  // through the core
  // Dragonfly of 3 groups x 2 routers x 2 nodes (routers 2g and 2g+1 in group g): group g's
  // link to group h is on its router h mod 2 (SimGrid's choice): group 0's to group 1 on its
  // router 1, to group 2 on router 0; group 1's and group 2's to group 0 on their router 0.
  const std::vector<std::int64_t> df{3, 2, 2};
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::Dragonfly, df, 0, 1), 2);  // one router
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::Dragonfly, df, 0, 2), 3);  // local link
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::Dragonfly, df, 0, 8), 3);  // global link only
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::Dragonfly, df, 0, 4), 4);  // local, global
  EXPECT_DOUBLE_EQ(hops_between(Topology::Kind::Dragonfly, df, 0, 6), 5);  // local, global, local
}

TEST(SimulatorTopology, TwoFlowsOnOneLinkTakeTwiceTheTransfer) {
  // Ring of 4 nodes, one rank each: 0->2 and 1->3 both cross link 1->2.
  const std::int64_t bytes = 1 << 20;
  SimOptions opt = routed(Topology::Kind::Torus, {4}, 50, 1.0);
  const double alone = 2 * 50 + (bytes - 1) * 1.0;
  EXPECT_DOUBLE_EQ(simulate(two_flows(bytes), opt).total_ns, 2 * 50 + 2 * (bytes - 1) * 1.0);
  opt.topology.congestion = false;
  EXPECT_DOUBLE_EQ(simulate(two_flows(bytes), opt).total_ns, alone);
  // Flows on disjoint routes (ranks 0->2 and 1->3 placed on 0->1 and 2->3) do not interfere.
  opt.topology.congestion = true;
  opt.placement = Placement::Explicit;
  opt.node_of_rank = {0, 2, 1, 3};
  EXPECT_DOUBLE_EQ(simulate(two_flows(bytes), opt).total_ns, 50 + (bytes - 1) * 1.0);
}

TEST(SimulatorTopology, ATorusNodeSendsOnEachLinkAtOnceAFatTreeNodeOneMessageAtATime) {
  // Rank 0 sends two messages at time 0, to its neighbours on either side of a ring of 4 (links
  // 0->1 and 0->3: a port each), then on a fat tree (one link from node 0: one port).
  const std::int64_t bytes = 1000;
  const double body = (bytes - 1) * 1.0;
  const Trace t = one_sender_two_receivers(bytes);
  SimOptions opt = routed(Topology::Kind::Torus, {4}, 50, 1.0);
  opt.placement = Placement::Explicit;
  opt.node_of_rank = {0, 1, 3};
  for (bool congestion : {true, false}) {
    opt.topology.congestion = congestion;
    EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, 50 + body);
  }
  // Both on port 0->1 (node 2 is 2 hops up): one after the other, also without congestion.
  opt.node_of_rank = {0, 1, 2};
  for (bool congestion : {true, false}) {
    opt.topology.congestion = congestion;
    EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, 2 * body + 2 * 50);
  }
  // k = 4 fat tree, nodes 0 and 1 on one edge switch (2 hops), node 2 in the pod (4 hops).
  opt = routed(Topology::Kind::FatTree, {4}, 50, 1.0);
  opt.placement = Placement::Explicit;
  opt.node_of_rank = {0, 1, 2};
  for (bool congestion : {true, false}) {
    opt.topology.congestion = congestion;
    EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, 2 * body + 4 * 50);
  }
}

TEST(SimulatorTopology, AMessageTakesEachLinksFreeTimeInPieces) {
  // Ring of 4: rank 0 sends 0->2 over links 0->1->2 and rank 1 sends 1->2 over link 1->2, both
  // at time 0. Whichever is reserved first, link 1->2 carries both back to back from time 0:
  // the last byte arrives after 2 bodies and one hop (a common window on the whole route, or
  // a message holding link 0->1 while it waits for link 1->2, would add a hop or a body).
  const std::int64_t bytes = 1000;
  auto p = programs(3);
  p[0].p2p(Op::Send, 1, +2, bytes);
  p[1].p2p(Op::Send, 1, +1, bytes);
  p[2].p2p(Op::Recv, 2, -2, bytes);
  p[2].p2p(Op::Recv, 3, -1, bytes);
  const SimResult r = simulate(merged(p), routed(Topology::Kind::Torus, {4}, 50, 1.0));
  EXPECT_DOUBLE_EQ(r.end_ns[2], 2 * (bytes - 1) * 1.0 + 50);
}

TEST(SimulatorTopology, FairSharingGivesTwoFlowsOnALinkHalfEach) {
  // Ring of 4: 0->2 and 1->3 both cross link 1->2 from time 0. First come, first served: one
  // arrives after one body, the other after two; fair sharing: both after two.
  const std::int64_t bytes = 1000;
  const double body = (bytes - 1) * 1.0;
  SimOptions opt = routed(Topology::Kind::Torus, {4}, 50, 1.0);
  const SimResult first_come = simulate(two_flows(bytes), opt);
  EXPECT_DOUBLE_EQ(std::min(first_come.end_ns[2], first_come.end_ns[3]), 2 * 50 + body);
  opt.topology.sharing = Topology::Sharing::Fair;
  const SimResult fair = simulate(two_flows(bytes), opt);
  EXPECT_DOUBLE_EQ(fair.end_ns[2], 2 * 50 + 2 * body);
  EXPECT_DOUBLE_EQ(fair.end_ns[3], 2 * 50 + 2 * body);
  // Without congestion the sharing changes nothing.
  opt.topology.congestion = false;
  EXPECT_DOUBLE_EQ(simulate(two_flows(bytes), opt).total_ns, 2 * 50 + body);
}

TEST(SimulatorTopology, FairSharingSharesANodesOneLinkAmongItsMessages) {
  // k = 4 fat tree: rank 0 sends to nodes 1 (2 hops) and 2 (4 hops) at time 0 over its one
  // link. First come: the NIC sends one after the other. Fair: each flow starts after its
  // route's latency (100, 200) and they share node 0's link: the first alone from 100 to 200,
  // then both at half; it ends at 2 body, the other has 100 left then and ends at 2 body + 100.
  const std::int64_t bytes = 1000;
  const double body = (bytes - 1) * 1.0;
  const Trace t = one_sender_two_receivers(bytes);
  SimOptions opt = routed(Topology::Kind::FatTree, {4}, 50, 1.0);
  opt.placement = Placement::Explicit;
  opt.node_of_rank = {0, 1, 2};
  const SimResult first_come = simulate(t, opt);
  EXPECT_DOUBLE_EQ(first_come.end_ns[1], body + 2 * 50);
  EXPECT_DOUBLE_EQ(first_come.end_ns[2], 2 * body + 4 * 50);
  opt.topology.sharing = Topology::Sharing::Fair;
  const SimResult fair = simulate(t, opt);
  EXPECT_DOUBLE_EQ(fair.end_ns[1], 2 * body);
  EXPECT_DOUBLE_EQ(fair.end_ns[2], 2 * body + 100);
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, fair.total_ns);  // deterministic
}

TEST(SimulatorTopology, LatencyWeightedSharingFavoursTheShorterRoute) {
  // As above, each flow's share in proportion to 1 / its route's latency (SimGrid's CM02): the
  // first alone from 100 to 200 (100 done), then 1/100 : 1/200, two thirds and one third: it
  // ends at 200 + 899 * 1.5; the other has 449.5 done then and ends alone at 2 body + 100.
  const std::int64_t bytes = 1000;
  const double body = (bytes - 1) * 1.0;
  const Trace t = one_sender_two_receivers(bytes);
  SimOptions opt = routed(Topology::Kind::FatTree, {4}, 50, 1.0);
  opt.placement = Placement::Explicit;
  opt.node_of_rank = {0, 1, 2};
  opt.topology.sharing = Topology::Sharing::LatencyWeighted;
  const SimResult weighted = simulate(t, opt);
  EXPECT_NEAR(weighted.end_ns[1], 200 + (body - 100) * 1.5, 1e-6);
  EXPECT_NEAR(weighted.end_ns[2], 2 * body + 100, 1e-6);
  EXPECT_TRUE(weighted.fair_settled);
}

TEST(SimulatorTopology, AStencilOnATorusTakesNearlyItsBusiestLinksLoad) {
  // 64-rank 2D stencil (8 neighbours, 8x8 grid) on an 8x8 torus, no compute: every directed
  // link carries 3 messages a step (its own direction's, and the first or second hop of two
  // diagonals), so a step takes at least 3 transfers. SimGrid's flow sharing takes 3.1; holding
  // one window on the whole route took 4 or more, sending a node's messages in order 5.
  SyntheticSpec spec;
  spec.nranks = 64;
  spec.timesteps = 4;
  spec.bytes = 32768;
  SimOptions opt = routed(Topology::Kind::Torus, {8, 8}, 100, 1.0);
  opt.eager_threshold = 65536;
  opt.compute_scale = 0;
  opt.recorded_local_calls = false;  // the synthetic calls' durations are no library time
  const double body = (spec.bytes - 1) * 1.0;
  const double total = simulate(synthetic_trace(spec), opt).total_ns;
  EXPECT_GE(total, spec.timesteps * 3 * body);
  EXPECT_LE(total, spec.timesteps * 3.3 * body);
}

TEST(SimulatorTopology, ALaterReservationLeavesTheGapBeforeItFree) {
  // Rank 0 computes 1 ms, then sends 0->2 over links 0->1->2; rank 1 sends 1->3 over 1->2->3 at
  // time 0. Rank 0 is processed first and reserves link 1->2 at 1 ms; rank 1's message, done
  // long before, takes the gap before it instead of queueing behind it.
  auto p = programs(4);
  const std::int64_t bytes = 1000;
  p[0].p2p(Op::Send, 1, +2, bytes, 0, 1'000'000);
  p[1].p2p(Op::Send, 1, +2, bytes);
  p[2].p2p(Op::Recv, 2, -2, bytes);
  p[3].p2p(Op::Recv, 2, -2, bytes);
  const SimResult r = simulate(merged(p), routed(Topology::Kind::Torus, {4}, 50, 1.0));
  EXPECT_DOUBLE_EQ(r.end_ns[3], 2 * 50 + (bytes - 1) * 1.0);
  EXPECT_DOUBLE_EQ(r.total_ns, 1'000'000 + 2 * 50 + (bytes - 1) * 1.0);
}

TEST(SimulatorTopology, PlacementDecidesWhichLinkAPairUses) {
  SimOptions opt = options(5000, 250, 0.5);
  opt.intra_node = LogGP{100, 50, 50, 0, 0.1};
  opt.ranks_per_node = 2;
  const std::int64_t bytes = 1001;
  const double intra = 10 * (2 * 50 + 100 + 1000 * 0.1), inter = 10 * (2 * 250 + 5000 + 1000 * 0.5);
  EXPECT_NEAR(simulate(ping_pong(10, bytes), opt).total_ns, intra, 1e-6);  // block: one node
  opt.placement = Placement::RoundRobin;                                   // 1 node used: still one
  EXPECT_NEAR(simulate(ping_pong(10, bytes), opt).total_ns, intra, 1e-6);
  opt.ranks_per_node = 1;
  EXPECT_DOUBLE_EQ(simulate(ping_pong(10, bytes), opt).total_ns, inter);
  opt.placement = Placement::Explicit;
  opt.node_of_rank = {1, 1};
  EXPECT_NEAR(simulate(ping_pong(10, bytes), opt).total_ns, intra, 1e-6);
  // Random placement: seeded, the same for the same seed; on a flat network ranks_per_node = 2
  // puts both ranks on the one node used.
  opt.placement = Placement::Random;
  opt.node_of_rank.clear();
  opt.ranks_per_node = 2;
  EXPECT_NEAR(simulate(ping_pong(10, bytes), opt).total_ns, intra, 1e-6);
}

TEST(SimulatorTopology, RandomPlacementIsSeededAndFitsTheTopology) {
  // 4 ranks on a 64-node torus, one per node: hop counts change with the seed, not between runs.
  SimOptions opt = routed(Topology::Kind::Torus, {4, 4, 4}, 1.0, 0.0);
  opt.placement = Placement::Random;
  std::map<double, int> seen;
  for (std::uint64_t seed = 0; seed < 8; ++seed) {
    opt.placement_seed = seed;
    const double t = simulate(two_flows(1), opt).total_ns;
    EXPECT_DOUBLE_EQ(simulate(two_flows(1), opt).total_ns, t);
    EXPECT_GE(t, 1);
    EXPECT_LE(t, 6);  // at most 6 hops in a 4x4x4 torus
    ++seen[t];
  }
  EXPECT_GT(seen.size(), 1u);
}

TEST(SimulatorTopology, BadTopologiesAndPlacementsAreUsageErrors) {
  SimOptions opt = routed(Topology::Kind::Torus, {2}, 1.0, 0.0);
  EXPECT_THROW(simulate(two_flows(1), opt), UsageError);  // 4 ranks, 2 nodes
  opt.ranks_per_node = 2;
  EXPECT_NO_THROW(simulate(two_flows(1), opt));
  opt.topology.kind = Topology::Kind::FatTree;
  opt.topology.shape = {3};
  EXPECT_THROW(simulate(two_flows(1), opt), UsageError);  // k odd
  opt.topology.kind = Topology::Kind::Dragonfly;
  opt.topology.shape = {2, 2};
  EXPECT_THROW(simulate(two_flows(1), opt), UsageError);
  opt = options();
  opt.placement = Placement::Explicit;
  opt.node_of_rank = {0, 1};
  EXPECT_THROW(simulate(two_flows(1), opt), UsageError);  // one node per rank: 4 needed
  opt.node_of_rank = {0, 1, -1, 2};
  EXPECT_THROW(simulate(two_flows(1), opt), UsageError);
  opt.node_of_rank = {0, 1, 2, 1'000'000'000'000};  // a flat network numbers nodes below the ranks
  EXPECT_THROW(simulate(two_flows(1), opt), UsageError);
  opt = options();
  opt.noise = OsNoise{1000, 1000, false, 0};
  EXPECT_THROW(simulate(two_flows(1), opt), UsageError);  // a detour as long as its period
}

TEST(SimulatorNoise, DetoursStretchComputeByTheirShare) {
  // One rank, 90 calls of 900 ns compute: 81,000 ns of work. Detours of 100 ns every 1,000 ns
  // leave 900 ns of work per period: the work ends after 90 periods, within one detour of
  // 90,000 ns whatever the phase.
  auto p = programs(1);
  for (int i = 0; i < 90; ++i) p[0].push(Op::Other, 5, 900);
  const Trace t = merged(p);
  SimOptions opt = options();
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, 81000);
  for (std::uint64_t seed = 0; seed < 5; ++seed) {
    opt.noise = OsNoise{1000, 100, false, seed};
    const SimResult r = simulate(t, opt);
    EXPECT_GE(r.total_ns, 90000 - 100 - 1e-6) << seed;
    EXPECT_LE(r.total_ns, 90000 + 100 + 1e-6) << seed;
    EXPECT_DOUBLE_EQ(r.ranks[0].compute, r.total_ns);  // the detours count as compute
  }
  // A detour of 0 ns changes nothing, bit for bit.
  opt.noise = OsNoise{1000, 0, false, 3};
  EXPECT_DOUBLE_EQ(simulate(t, opt).total_ns, 81000);
}

TEST(SimulatorNoise, CoscheduledNoiseDelaysEveryRankAlike) {
  // Two ranks computing 5,000 ns then exchanging: coscheduled detours delay both the same, so
  // the exchange adds no wait; independent phases make one rank wait for the other.
  auto p = programs(2);
  p[0].p2p(Op::Send, 1, +1, 8, 0, 5000);
  p[0].p2p(Op::Recv, 2, +1, 8);
  p[1].p2p(Op::Recv, 3, -1, 8, 0, 5000);
  p[1].p2p(Op::Send, 4, -1, 8);
  const Trace t = merged(p);
  SimOptions opt = options();
  opt.noise = OsNoise{1000, 300, true, 11};
  const SimResult r = simulate(t, opt);
  EXPECT_DOUBLE_EQ(r.ranks[0].compute, r.ranks[1].compute);
  EXPECT_GT(r.ranks[0].compute, 5000);
}
