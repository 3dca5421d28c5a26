// Histogram: log bins, statistics, merge and sampling.
#include <gtest/gtest.h>

#include "scalatrace/model/histogram.hpp"
#include "scalatrace/support/errors.hpp"

using namespace scalatrace;

TEST(Histogram, BinIndexIsMonotoneAndExactForSmallValues) {
  for (std::uint32_t s : {1u, 2u, 4u, 8u, 16u}) {
    std::uint32_t prev = 0;
    for (std::uint64_t v = 0; v < 5000; ++v) {
      const auto b = Histogram::bin_index(v, s);
      EXPECT_GE(b, prev);
      prev = b;
      if (v < s) {
        EXPECT_EQ(b, v);
      }
    }
    EXPECT_LT(Histogram::bin_index(UINT64_MAX, s), 1024u);
    EXPECT_GT(Histogram::bin_index(UINT64_MAX, s), Histogram::bin_index(UINT64_MAX / 2, s));
  }
  // 4 sub-bins per octave: [8,10) [10,12) [12,14) [14,16)
  EXPECT_EQ(Histogram::bin_index(8, 4), Histogram::bin_index(9, 4));
  EXPECT_NE(Histogram::bin_index(9, 4), Histogram::bin_index(10, 4));
  EXPECT_EQ(Histogram::bin_index(1000, 1), 10u);  // 2^9 <= 1000 < 2^10: octave 9, after bin 0
  EXPECT_THROW(Histogram::bin_index(1, 3), UsageError);
  EXPECT_THROW(Histogram::bin_index(1, 32), UsageError);
}

TEST(Histogram, StatisticsAndBins) {
  Histogram h(4);
  for (std::uint64_t v : {100, 110, 120, 5000, 5100}) h.add(v);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_EQ(h.min(), 100u);
  EXPECT_EQ(h.max(), 5100u);
  EXPECT_DOUBLE_EQ(h.sum(), 10430.0);
  EXPECT_DOUBLE_EQ(h.mean(), 2086.0);
  std::uint64_t total = 0;
  std::uint32_t prev = 0;
  for (const auto& b : h.bins()) {
    EXPECT_GE(b.index, prev);
    prev = b.index + 1;
    EXPECT_EQ(Histogram::bin_index(b.min, 4), b.index);
    EXPECT_EQ(Histogram::bin_index(b.max, 4), b.index);
    total += b.count;
  }
  EXPECT_EQ(total, 5u);
}

TEST(Histogram, MergeEqualsAddingEverything) {
  Histogram a(8), b(8), all(8);
  for (std::uint64_t v = 1; v < 3000; v += 7) {
    ((v % 3) ? a : b).add(v * v);
    all.add(v * v);
  }
  a.merge(b);
  EXPECT_EQ(a, all);
  Histogram empty(8);
  empty.merge(all);
  EXPECT_EQ(empty, all);
  Histogram other(2);
  other.add(5);
  EXPECT_THROW(a.merge(other), UsageError);
}

TEST(Histogram, SampleStaysInsideBinsAndFollowsCounts) {
  Histogram h(4);
  for (int i = 0; i < 900; ++i) h.add(1000 + i % 10);
  for (int i = 0; i < 100; ++i) h.add(1'000'000);
  std::mt19937_64 rng(3);
  int big = 0;
  for (int i = 0; i < 10000; ++i) {
    const auto v = h.sample(rng);
    EXPECT_TRUE((v >= 1000 && v <= 1009) || v == 1'000'000) << v;
    big += v == 1'000'000;
  }
  EXPECT_GT(big, 700);
  EXPECT_LT(big, 1300);
  EXPECT_EQ(Histogram(4).sample(rng), 0u);
  auto copy = Histogram::from_parts(4, h.count(), h.sum(), h.min(), h.max(), h.bins());
  EXPECT_EQ(copy, h);
}

TEST(Histogram, SamplesKeepEachBinsMean) {
  // 99 values of 2100 ns and one of 2500 share the bin [2048, 2560): draws stay around the
  // bin's mean (2104), not spread over [2100, 2500] (mean 2300), so a simulation drawing compute
  // times predicts the recorded total, not one inflated by the bin's outlier.
  Histogram h(4);
  for (int i = 0; i < 99; ++i) h.add(2100);
  h.add(2500);
  ASSERT_EQ(h.bins().size(), 1u);
  std::mt19937_64 rng(9);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const auto v = h.sample(rng);
    ASSERT_GE(v, 2100u);
    ASSERT_LE(v, 2108u);
    sum += static_cast<double>(v);
  }
  EXPECT_NEAR(sum / 10000, h.mean(), 0.5);
}

TEST(Histogram, EvenlySpreadFractionsKeepTheMeanAndTheSpread) {
  // Two clusters (1 us x 30, 9 us x 10): fractions below 3/4 land in the first, the others in
  // the second, each around its bin's mean, so n evenly spread fractions sum to n means.
  Histogram h(4);
  double sum = 0;
  for (int i = 0; i < 30; ++i) {
    const std::uint64_t v = 1'000 + 10 * static_cast<std::uint64_t>(i % 3);
    h.add(v);
    sum += static_cast<double>(v);
  }
  for (int i = 0; i < 10; ++i) {
    h.add(9'000);
    sum += 9'000;
  }
  EXPECT_LE(h.at_fraction(0.0), 1'020u);
  EXPECT_LE(h.at_fraction(0.74), 1'020u);
  EXPECT_EQ(h.at_fraction(0.76), 9'000u);
  EXPECT_EQ(h.at_fraction(0.999999), 9'000u);
  EXPECT_EQ(h.at_fraction(1.0), h.max());  // clamped: the last value
  constexpr int kDraws = 4000;
  double drawn = 0;
  for (int i = 0; i < kDraws; ++i) drawn += static_cast<double>(h.at_fraction((i + 0.5) / kDraws));
  EXPECT_NEAR(drawn / kDraws, sum / 40, 2.0);
  EXPECT_EQ(Histogram(4).at_fraction(0.5), 0u);
  // Without a part (the first occurrences), the rest's values only.
  Histogram first(4);
  first.add(9'000);
  h.add(9'000);  // `first` is part of h
  double rest = 0;
  for (int i = 0; i < kDraws; ++i) rest += static_cast<double>(h.at_fraction_excluding(first, (i + 0.5) / kDraws));
  EXPECT_NEAR(rest / kDraws, sum / 40, 2.0);  // the 40 values before the added one
}

TEST(Histogram, ExcludingAPartLeavesTheRest) {
  // 2 ranks' first occurrences (warm-up, ~1.2 ms) among 54 later ones (~0.2 ms): without the
  // firsts, the mean is the later ones' exactly and no draw reaches the warm-up's bin.
  Histogram all(4), first(4);
  double rest_sum = 0;
  for (std::uint64_t v : {1'190'000u, 1'185'000u}) {
    all.add(v);
    first.add(v);
  }
  for (int i = 0; i < 54; ++i) {
    const std::uint64_t v = 200'000 + 100 * static_cast<std::uint64_t>(i % 7);
    all.add(v);
    rest_sum += static_cast<double>(v);
  }
  EXPECT_NEAR(all.mean_excluding(first), rest_sum / 54, 1e-6);
  std::mt19937_64 rng(3);
  double sum = 0;
  for (int i = 0; i < 5000; ++i) {
    const auto v = all.sample_excluding(first, rng);
    ASSERT_GE(v, 200'000u);
    ASSERT_LE(v, 200'600u);
    sum += static_cast<double>(v);
  }
  EXPECT_NEAR(sum / 5000, rest_sum / 54, 50.0);
  // Nothing left, another layout, or no part: the whole histogram.
  EXPECT_DOUBLE_EQ(first.mean_excluding(first), first.mean());
  Histogram other_layout(8);
  other_layout.add(1'190'000);
  EXPECT_DOUBLE_EQ(all.mean_excluding(other_layout), all.mean());
  EXPECT_DOUBLE_EQ(all.mean_excluding(Histogram(4)), all.mean());
  Histogram not_a_subset(4);
  not_a_subset.add(50'000'000);
  EXPECT_DOUBLE_EQ(all.mean_excluding(not_a_subset), all.mean());
  const auto v = all.sample_excluding(not_a_subset, rng);
  EXPECT_TRUE(v >= all.min() && v <= all.max());
}

TEST(Histogram, BinsStayBoundedWhateverTheOutliers) {
  // 20 µs compute with preempted outliers at every power of two up to 1 s: at most kMaxBins
  // bins, the same however the values arrive, and every value still inside its bin.
  Histogram forward(4), backward(4), halves_a(4), halves_b(4);
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 5000; ++i) values.push_back(20000 + static_cast<std::uint64_t>(i % 97));
  for (std::uint64_t v = 1; v < (1ull << 30); v *= 2) values.push_back(v);
  for (auto v : values) forward.add(v);
  for (auto it = values.rbegin(); it != values.rend(); ++it) backward.add(*it);
  for (std::size_t i = 0; i < values.size(); ++i) (i % 2 ? halves_a : halves_b).add(values[i]);
  halves_a.merge(halves_b);
  EXPECT_LE(forward.bins().size(), Histogram::kMaxBins);
  EXPECT_GT(forward.coarsening(), 0u);
  EXPECT_EQ(forward, backward);
  EXPECT_EQ(forward, halves_a);
  EXPECT_EQ(forward.count(), values.size());
  for (const auto& b : forward.bins()) {
    EXPECT_EQ(Histogram::bin_index(b.min, 4) >> forward.coarsening(), b.index);
    EXPECT_EQ(Histogram::bin_index(b.max, 4) >> forward.coarsening(), b.index);
  }
  // The typical value ignores the outliers; the mean does not.
  EXPECT_NEAR(forward.typical(), 20048.0, 200.0);
  EXPECT_GT(forward.mean(), 200000.0);
}
