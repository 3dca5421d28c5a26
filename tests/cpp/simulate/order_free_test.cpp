// Which runs the simulator may process in any order (sim::OrderFreedom): read from the compressed
// trace's nodes, whose values are loop-compressed runs, so a wildcard source or a large message
// hidden inside a strided run must still be found; and the bound of a collective's step sizes
// that decides whether it is gathered.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "merged_recordings.hpp"
#include "random_exchange.hpp"
#include "scalatrace/model/recording.hpp"
#include "simulate/order_free.hpp"

using namespace scalatrace;

namespace {

/// Two ranks exchanging `steps` times: rank 0 sends to rank 1 with `send_op` and sizes
/// `bytes(step)`; rank 1 receives with the source `source(step)` (relative); an Allreduce of
/// 8 bytes per step.
template <class Bytes, class Source>
Trace exchange(Op send_op, Bytes bytes, Source source, int steps = 12) {
  std::vector<RankRecording> recs = test_support::blank_recordings(2, "order_free", 4);
  for (int step = 0; step < steps; ++step) {
    Event send;
    send.op = send_op;
    send.site = 0;
    send[Field::Peer] = 1;
    send[Field::Bytes] = bytes(step);
    recs[0].events.push_back(send);
    Event recv;
    recv.op = Op::Recv;
    recv.site = 1;
    recv[Field::Peer] = source(step);
    recv[Field::Bytes] = bytes(step);
    recs[1].events.push_back(recv);
    for (auto& rec : recs) {
      Event e;
      e.op = Op::Allreduce;
      e.site = 2;
      e[Field::Bytes] = e[Field::Bytes2] = 8;
      rec.events.push_back(e);
    }
  }
  return test_support::merged_trace(recs);
}

const auto kSmall = [](int step) { return std::int64_t{8} * (1 + step); };
const auto kFromRank0 = [](int) { return std::int64_t{-1}; };

}  // namespace

TEST(OrderFreedom, EagerSpecificExchangesAreOrderFree) {
  const Trace t = exchange(Op::Send, kSmall, kFromRank0);
  SimOptions opt;
  const sim::OrderFreedom f(t, opt);
  EXPECT_TRUE(f.order_free());
  EXPECT_TRUE(f.eager_collective(Op::Allreduce, 2));
  EXPECT_FALSE(f.eager_collective(Op::Bcast, 2)) << "an op the trace does not have";
}

TEST(OrderFreedom, ARendezvousMessageInsideAStridedRunIsFound) {
  // Sizes 8, 16, ..., 96: one strided run; above a threshold of 90 only the last one.
  const Trace t = exchange(Op::Send, kSmall, kFromRank0);
  SimOptions opt;
  opt.eager_threshold = 90;
  EXPECT_FALSE(sim::OrderFreedom(t, opt).order_free());
  opt.eager_threshold = 96;
  EXPECT_TRUE(sim::OrderFreedom(t, opt).order_free());
  // Scaled sizes count.
  opt.size_scale = 2;
  EXPECT_FALSE(sim::OrderFreedom(t, opt).order_free());
  // Buffered sends never go rendezvous; synchronous ones always do.
  opt = SimOptions{};
  opt.eager_threshold = 90;
  EXPECT_TRUE(sim::OrderFreedom(exchange(Op::Bsend, kSmall, kFromRank0), opt).order_free());
  EXPECT_FALSE(sim::OrderFreedom(exchange(Op::Ssend, kSmall, kFromRank0), SimOptions{}).order_free());
}

TEST(OrderFreedom, AWildcardSourceAmongSpecificOnesIsFound) {
  // The 7th receive of 12 takes MPI_ANY_SOURCE.
  const auto once = [](int step) { return step == 6 ? kAnySource : std::int64_t{-1}; };
  EXPECT_FALSE(sim::OrderFreedom(exchange(Op::Send, kSmall, once), SimOptions{}).order_free());
  // A strided run of sources that passes over kAnySource's value without taking it is no
  // wildcard: -1 - k * 2^39 reaches -2^40 - 1 at k = 2, never -2^40.
  const auto strided = [](int step) { return std::int64_t{-1} - std::int64_t{step % 3} * (std::int64_t{1} << 39); };
  const Trace t = exchange(Op::Send, kSmall, strided);
  EXPECT_TRUE(sim::OrderFreedom(t, SimOptions{}).order_free());
}

TEST(OrderFreedom, SharedLinksAndProbesAreNotOrderFree) {
  const Trace t = exchange(Op::Send, kSmall, kFromRank0);
  SimOptions contended;
  contended.contention = true;
  EXPECT_FALSE(sim::OrderFreedom(t, contended).order_free());
  SimOptions torus;
  torus.topology.kind = Topology::Kind::Torus;
  torus.topology.shape = {2};
  EXPECT_FALSE(sim::OrderFreedom(t, torus).order_free());
  // A nonblocking send, a probe.
  EXPECT_TRUE(sim::OrderFreedom(exchange(Op::Isend, kSmall, kFromRank0), SimOptions{}).order_free());
  std::vector<RankRecording> recs = test_support::blank_recordings(2, "order_free", 2);
  Event probe;
  probe.op = Op::Probe;
  probe[Field::Peer] = 1;
  recs[0].events.push_back(probe);
  EXPECT_FALSE(sim::OrderFreedom(test_support::merged_trace(recs), SimOptions{}).order_free());
}

TEST(OrderFreedom, CollectiveStepBoundsFollowTheAlgorithms) {
  // An Allreduce of up to 8 * 12 = 96 bytes; a Gather whose blocks travel together.
  std::vector<RankRecording> recs = test_support::blank_recordings(4, "order_free", 2);
  for (auto& rec : recs) {
    Event a;
    a.op = Op::Allreduce;
    a[Field::Bytes] = a[Field::Bytes2] = 96;
    rec.events.push_back(a);
    Event g;
    g.op = Op::Gather;
    g.site = 1;
    g[Field::Bytes] = 100;
    g[Field::Bytes2] = 100;
    rec.events.push_back(g);
  }
  const Trace t = test_support::merged_trace(recs);
  SimOptions opt;
  opt.eager_threshold = 96;
  const sim::OrderFreedom f(t, opt);
  EXPECT_TRUE(f.eager_collective(Op::Allreduce, 4));
  EXPECT_TRUE(f.eager_collective(Op::Allreduce, 1'000'000)) << "recursive doubling sends the buffer, whatever P";
  opt.eager_threshold = 1000;
  const sim::OrderFreedom g(t, opt);
  EXPECT_TRUE(g.eager_collective(Op::Gather, 8)) << "100 bytes x 8 members";
  EXPECT_FALSE(g.eager_collective(Op::Gather, 16)) << "a subtree of 16 members' blocks can exceed 1,000";
}
