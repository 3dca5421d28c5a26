// collective_schedule: every rank's steps pair up with its peers' steps, message by message,
// with the receive sizes worked out from the receiver's own event.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "scalatrace/simulate/collective_schedule.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

/// What rank `r` of `n` records for collective `op` rooted at `root` in a correct program:
/// equal counts where MPI requires them, per-rank counts in the v-variants, and nothing
/// meaningful in the arguments MPI ignores (a non-root's scatter send count).
Event recorded(Op op, std::int64_t r, std::int64_t n, std::int64_t root, std::int64_t block) {
  Event e;
  e.op = op;
  e[Field::Root] = root;
  auto counts = [&](auto f) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = f(i);
    return v;
  };
  switch (op) {
    case Op::Gather:
      e[Field::Bytes] = block;
      e[Field::Bytes2] = r == root ? block : 0;
      break;
    case Op::Scatter:
      e[Field::Bytes] = r == root ? block : 0;
      e[Field::Bytes2] = block;
      break;
    case Op::Gatherv:
      e[Field::Bytes] = block + r;
      if (r == root) e[ArrayField::RecvCounts] = counts([&](std::int64_t i) { return block + i; });
      break;
    case Op::Scatterv:
      e[Field::Bytes2] = block + r;
      if (r == root) e[ArrayField::SendCounts] = counts([&](std::int64_t i) { return block + i; });
      break;
    case Op::Allgatherv:
      e[Field::Bytes] = block + r;
      e[ArrayField::RecvCounts] = counts([&](std::int64_t i) { return block + i; });
      break;
    case Op::Alltoallv:  // rank s sends 3*s + d + block bytes to rank d
      e[ArrayField::SendCounts] = counts([&](std::int64_t d) { return 3 * r + d + block; });
      e[ArrayField::RecvCounts] = counts([&](std::int64_t s) { return 3 * s + r + block; });
      break;
    case Op::Reduce_scatter: {
      e[ArrayField::RecvCounts] = counts([&](std::int64_t i) { return block + 2 * i; });
      const auto& rc = e[ArrayField::RecvCounts];
      e[Field::Bytes] = std::accumulate(rc.begin(), rc.end(), std::int64_t{0});
      e[Field::Bytes2] = block + 2 * r;
      break;
    }
    default:
      e[Field::Bytes] = block;
      e[Field::Bytes2] = block;
      break;
  }
  return e;
}

TEST(CollectiveSchedule, EverySendMeetsAReceiveOfTheSameSize) {
  const std::vector<Op> ops = {Op::Barrier,        Op::Bcast,
                               Op::Reduce,         Op::Allreduce,
                               Op::Gather,         Op::Gatherv,
                               Op::Scatter,        Op::Scatterv,
                               Op::Allgather,      Op::Allgatherv,
                               Op::Alltoall,       Op::Alltoallv,
                               Op::Reduce_scatter, Op::Reduce_scatter_block,
                               Op::Scan,           Op::Exscan,
                               Op::Comm_split,     Op::Ibcast,
                               Op::Iallreduce};
  // Small and large blocks: MPICH switches algorithm by size (binomial / scatter-ring bcast,
  // recursive doubling / Rabenseifner allreduce, recursive doubling / Bruck / ring allgather).
  for (std::int64_t block : {8, 40000, 300000})
    for (Op op : ops)
      for (std::int64_t n : {1, 2, 3, 5, 8, 12, 17})
        for (std::int64_t root : {std::int64_t{0}, n - 1}) {
          const std::string what = std::string(op_name(op)) + " n=" + std::to_string(n) +
                                   " root=" + std::to_string(root) + " block=" + std::to_string(block);
          std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> sent, received;
          std::size_t steps = 0;
          for (std::int64_t r = 0; r < n; ++r)
            for (const CollectiveStep& s : collective_schedule(recorded(op, r, n, root, block), r, n)) {
              ++steps;
              ASSERT_TRUE(s.recv_from >= 0 || s.send_to >= 0) << what;
              ASSERT_LT(s.recv_from, n) << what;
              ASSERT_LT(s.send_to, n) << what;
              if (s.send_to >= 0) sent[{r, s.send_to}].push_back(s.send_bytes);
              if (s.recv_from >= 0) received[{s.recv_from, r}].push_back(s.recv_bytes);
            }
          EXPECT_EQ(sent, received) << what;
          if (n > 1)
            EXPECT_GT(steps, 0U) << what;
          else
            EXPECT_EQ(steps, 0U) << what;
        }
}

TEST(CollectiveSchedule, KnownShapes) {
  // Binomial broadcast from rank 0 on 8 ranks: the root sends to 4, 2, 1; rank 6 receives from 4
  // and sends to 7.
  const Event bcast = recorded(Op::Bcast, 0, 8, 0, 100);
  const auto root = collective_schedule(bcast, 0, 8);
  ASSERT_EQ(root.size(), 3U);
  EXPECT_EQ(root[0].send_to, 4);
  EXPECT_EQ(root[1].send_to, 2);
  EXPECT_EQ(root[2].send_to, 1);
  const auto six = collective_schedule(bcast, 6, 8);
  ASSERT_EQ(six.size(), 2U);
  EXPECT_EQ(six[0].recv_from, 4);
  EXPECT_EQ(six[0].recv_bytes, 100);
  EXPECT_EQ(six[1].send_to, 7);
  // Dissemination barrier on 5 ranks: 3 rounds of zero-byte exchanges at distance 1, 2, 4.
  const auto barrier = collective_schedule(recorded(Op::Barrier, 1, 5, 0, 0), 1, 5);
  ASSERT_EQ(barrier.size(), 3U);
  EXPECT_EQ(barrier[2].send_to, 0);
  EXPECT_EQ(barrier[2].recv_from, 2);
}

TEST(CollectiveSchedule, RejectsARankOutsideTheCommunicator) {
  const Event e = recorded(Op::Bcast, 0, 4, 0, 8);
  EXPECT_THROW(collective_schedule(e, 4, 4), UsageError);
  EXPECT_THROW(collective_schedule(e, -1, 4), UsageError);
  EXPECT_THROW(collective_schedule(e, 0, 0), UsageError);
}

}  // namespace
}  // namespace scalatrace
