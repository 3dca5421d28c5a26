// even_alltoall_counts: Alltoallv counts that follow the data made even, everything else kept.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "merged_recordings.hpp"
#include "random_exchange.hpp"
#include "scalatrace/extrapolate/even_counts.hpp"
#include "scalatrace/read/cursor.hpp"
#include "scalatrace/support/errors.hpp"

namespace scalatrace {
namespace {

constexpr std::int64_t kRanks = 4;
constexpr std::int64_t kKeysPerRank = 64;  // ints: 256 bytes sent per rank and call

/// IS's shape: each rank sends its kKeysPerRank keys to random buckets (one per rank), so each
/// Alltoallv's counts differ per rank and per iteration; the receive side is the transpose.
/// A Barrier and an Allreduce around it stay as they are.
std::vector<RankRecording> bucket_program(int iterations, std::uint64_t seed) {
  auto recs = test_support::blank_recordings(kRanks, "buckets", 3);
  std::mt19937_64 rng(seed);
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::vector<std::int64_t>> sends(kRanks, std::vector<std::int64_t>(kRanks, 0));
    for (auto& row : sends)
      for (std::int64_t k = 0; k < kKeysPerRank; ++k) row[rng() % kRanks] += 4;
    for (std::int64_t r = 0; r < kRanks; ++r) {
      Event barrier;
      barrier.op = Op::Barrier;
      barrier.site = 0;
      Event a2a;
      a2a.op = Op::Alltoallv;
      a2a.site = 1;
      a2a[ArrayField::SendCounts] = sends[static_cast<std::size_t>(r)];
      for (std::int64_t p = 0; p < kRanks; ++p)
        a2a[ArrayField::RecvCounts].push_back(sends[static_cast<std::size_t>(p)][static_cast<std::size_t>(r)]);
      a2a[Field::Bytes] =
          std::accumulate(a2a[ArrayField::SendCounts].begin(), a2a[ArrayField::SendCounts].end(), std::int64_t{0});
      a2a[Field::Bytes2] =
          std::accumulate(a2a[ArrayField::RecvCounts].begin(), a2a[ArrayField::RecvCounts].end(), std::int64_t{0});
      a2a[Field::DtSize] = a2a[Field::DtSize2] = 4;
      Event reduce;
      reduce.op = Op::Allreduce;
      reduce.site = 2;
      reduce[Field::Bytes] = reduce[Field::Bytes2] = 8;
      auto& events = recs[static_cast<std::size_t>(r)].events;
      events.push_back(barrier);
      events.push_back(a2a);
      events.push_back(reduce);
    }
  }
  return recs;
}

std::vector<Event> events_of(const Trace& t, std::int64_t rank) {
  std::vector<Event> out;
  Cursor cur(t, rank, TimingMode::None);
  while (auto e = cur.next()) out.push_back(std::move(*e));
  return out;
}

TEST(EvenCounts, AlltoallvCountsBecomeTheEvenSplitOfTheMeanTotal) {
  const auto recs = bucket_program(5, 11);
  const Trace original = test_support::merged_trace(recs);
  EvenCountsReport report;
  const Trace even = even_alltoall_counts(original, &report);
  EXPECT_EQ(report.nodes, 1u);
  EXPECT_EQ(report.calls, 5u * kRanks);
  double element_dev = 0, total_dev = 0;
  std::uint64_t changed = 0;
  const std::int64_t per_peer = 4 * kKeysPerRank / kRanks;  // every rank sends the same total
  for (std::int64_t r = 0; r < kRanks; ++r) {
    const auto before = events_of(original, r);
    const auto after = events_of(even, r);
    ASSERT_EQ(before.size(), after.size());
    ASSERT_EQ(before.size(), recs[static_cast<std::size_t>(r)].events.size());
    for (std::size_t i = 0; i < before.size(); ++i) {
      // lossless before the transform
      EXPECT_TRUE(before[i].same_call(recs[static_cast<std::size_t>(r)].events[i])) << describe(before[i]);
      if (before[i].op != Op::Alltoallv) {
        EXPECT_TRUE(after[i].same_call(before[i])) << describe(after[i]);
        continue;
      }
      const std::vector<std::int64_t> flat(kRanks, per_peer);
      EXPECT_EQ(after[i][ArrayField::SendCounts], flat);
      EXPECT_EQ(after[i][ArrayField::RecvCounts], flat);
      EXPECT_EQ(after[i][Field::Bytes], per_peer * kRanks);
      EXPECT_EQ(after[i][Field::Bytes2], per_peer * kRanks);
      EXPECT_EQ(after[i][Field::DtSize], 4);
      for (auto f : {ArrayField::SendCounts, ArrayField::RecvCounts}) {
        const auto& v = before[i][f];
        if (v != flat) ++changed;
        for (auto c : v) element_dev = std::max(element_dev, std::abs(static_cast<double>(c - per_peer)) / per_peer);
        const auto sum = std::accumulate(v.begin(), v.end(), std::int64_t{0});
        total_dev = std::max(total_dev, std::abs(static_cast<double>(sum - per_peer * kRanks)) / (per_peer * kRanks));
      }
    }
  }
  EXPECT_EQ(report.changed_arrays, changed);
  EXPECT_GT(changed, 0u);
  EXPECT_DOUBLE_EQ(report.max_element_deviation, element_dev);
  EXPECT_DOUBLE_EQ(report.max_total_deviation, total_dev);
  EXPECT_GT(report.max_total_deviation, 0.0);  // receive totals follow the keys too
}

TEST(EvenCounts, EvenCountsAreKeptAndTheTransformIsIdempotent) {
  const Trace original = test_support::merged_trace(bucket_program(3, 5));
  const Trace once = even_alltoall_counts(original);
  EvenCountsReport report;
  const Trace twice = even_alltoall_counts(once, &report);
  EXPECT_EQ(report.changed_arrays, 0u);
  EXPECT_EQ(report.max_element_deviation, 0.0);
  for (std::int64_t r = 0; r < kRanks; ++r) {
    const auto a = events_of(once, r), b = events_of(twice, r);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].same_call(b[i])) << describe(b[i]);
  }
}

TEST(EvenCounts, MeanTotalsThatDoNotSplitEvenlyAreRoundedToWholeElements) {
  // 3 ranks sending 10, 11 and 12 ints in all: mean 11 ints = 44 bytes over 3 peers ->
  // 14.67 bytes, rounded to 4 ints (16 bytes) per peer.
  auto recs = test_support::blank_recordings(3, "uneven", 1);
  const std::vector<std::vector<std::int64_t>> sends = {{12, 12, 16}, {16, 12, 16}, {16, 16, 16}};
  for (std::int64_t r = 0; r < 3; ++r) {
    Event a2a;
    a2a.op = Op::Alltoallv;
    a2a[ArrayField::SendCounts] = sends[static_cast<std::size_t>(r)];
    for (std::int64_t p = 0; p < 3; ++p)
      a2a[ArrayField::RecvCounts].push_back(sends[static_cast<std::size_t>(p)][static_cast<std::size_t>(r)]);
    a2a[Field::DtSize] = a2a[Field::DtSize2] = 4;
    recs[static_cast<std::size_t>(r)].events.push_back(a2a);
  }
  const Trace even = even_alltoall_counts(test_support::merged_trace(recs));
  for (std::int64_t r = 0; r < 3; ++r) {
    const auto evs = events_of(even, r);
    ASSERT_EQ(evs.size(), 1u);
    EXPECT_EQ(evs[0][ArrayField::SendCounts], (std::vector<std::int64_t>{16, 16, 16}));
    EXPECT_EQ(evs[0][ArrayField::RecvCounts], (std::vector<std::int64_t>{16, 16, 16}));
    EXPECT_EQ(evs[0][Field::Bytes], 48);
  }
}

TEST(EvenCounts, ClusteredTraceIsRefused) {
  Trace t = test_support::merged_trace(bucket_program(1, 3));
  t.clusters.push_back(RankCluster{0, RankList::range(0, kRanks)});
  EXPECT_THROW(even_alltoall_counts(t), UsageError);
}

}  // namespace
}  // namespace scalatrace
