// synthetic_grid is the grid MPI_Dims_create makes: synthetic programs and extrapolation's
// balanced grids (a code calling MPI_Dims_create at the target rank count) depend on it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "scalatrace/support/errors.hpp"
#include "scalatrace/synthetic/synthetic.hpp"

namespace scalatrace {
namespace {

using Dims = std::vector<std::int64_t>;

// What MPICH 4.0.2's MPI_Dims_create(n, ndims, {0...}) returned for these n (recorded with a
// program calling it for every n <= 5000 in 2 and 3 dimensions). The greedy placement of prime
// factors the project used before gave 12x6, 18x10, 20x12, 12x4x2... for some of them.
TEST(SyntheticGrid, IsWhatMpichDimsCreateGives) {
  const std::vector<std::pair<std::int64_t, Dims>> mpich2 = {
      {72, {9, 8}}, {180, {15, 12}}, {240, {16, 15}},  {24, {6, 4}}, {48, {8, 6}}, {96, {12, 8}},
      {18, {6, 3}}, {50, {10, 5}},   {4096, {64, 64}}, {7, {7, 1}},  {1, {1, 1}},  {12, {4, 3}}};
  for (const auto& [n, dims] : mpich2) EXPECT_EQ(synthetic_grid(n, 2), dims) << n;
  const std::vector<std::pair<std::int64_t, Dims>> mpich3 = {
      {72, {6, 4, 3}},      {48, {4, 4, 3}}, {96, {6, 4, 4}},   {144, {6, 6, 4}},    {4096, {16, 16, 16}},
      {1000, {10, 10, 10}}, {40, {5, 4, 2}}, {360, {10, 6, 6}}, {4608, {18, 16, 16}}};
  for (const auto& [n, dims] : mpich3) EXPECT_EQ(synthetic_grid(n, 3), dims) << n;
}

/// Every factorization of n into `left` factors, each at most `cap`, largest first.
void factorizations(std::int64_t n, std::size_t left, std::int64_t cap, Dims& current, std::vector<Dims>& out) {
  if (left == 1) {
    if (n <= cap) {
      current.push_back(n);
      out.push_back(current);
      current.pop_back();
    }
    return;
  }
  for (std::int64_t d = std::min(n, cap); d >= 1; --d)
    if (n % d == 0) {
      current.push_back(d);
      factorizations(n / d, left - 1, d, current, out);
      current.pop_back();
    }
}

TEST(SyntheticGrid, HasTheSmallestSpreadOfAllFactorizations) {
  for (std::size_t ndims = 1; ndims <= 4; ++ndims)
    for (std::int64_t n = 1; n <= (ndims == 4 ? 300 : 1500); ++n) {
      const Dims grid = synthetic_grid(n, ndims);
      ASSERT_EQ(grid.size(), ndims) << n;
      std::int64_t product = 1;
      for (std::size_t i = 0; i < ndims; ++i) {
        product *= grid[i];
        if (i) {
          ASSERT_LE(grid[i], grid[i - 1]) << n;
        }
      }
      ASSERT_EQ(product, n);
      std::vector<Dims> all;
      Dims current;
      factorizations(n, ndims, n, current, all);
      // The first of the least spread ones, in the order that tries large factors first.
      const Dims* best = nullptr;
      for (const auto& f : all)
        if (!best || f.front() - f.back() < best->front() - best->back()) best = &f;
      ASSERT_NE(best, nullptr);
      EXPECT_EQ(grid, *best) << n << " in " << ndims << " dimensions";
    }
}

TEST(SyntheticGrid, LargeRankCountsAndBadInput) {
  EXPECT_EQ(synthetic_grid(1 << 20, 2), (Dims{1024, 1024}));
  EXPECT_EQ(synthetic_grid(1 << 20, 3), (Dims{128, 128, 64}));
  EXPECT_EQ(synthetic_grid(999983, 2), (Dims{999983, 1}));  // a prime
  EXPECT_THROW(synthetic_grid(0, 2), UsageError);
  EXPECT_THROW(synthetic_grid(8, 0), UsageError);
}

}  // namespace
}  // namespace scalatrace
