// Groups of repeated ranklist descriptors (rank_periods.hpp), the form ranklists take in .sct
// files since format version 3: periods cover a list exactly, and the face ranks of 3D grids
// (one descriptor list per plane in memory) take the same number of written items at any size.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "scalatrace/format/rank_periods.hpp"
#include "scalatrace/model/rank_list.hpp"

using namespace scalatrace;

namespace {

std::vector<RankDescriptor> expand_all(const std::vector<RankDescriptor>& ds,
                                       const std::vector<DescriptorPeriod>& periods) {
  std::vector<RankDescriptor> out;
  for (const DescriptorPeriod& p : periods) {
    std::vector<RankDescriptor> once(ds.begin() + static_cast<std::ptrdiff_t>(p.first),
                                     ds.begin() + static_cast<std::ptrdiff_t>(p.first + p.period));
    expand_descriptor_period(once, p.repeat, p.stride, out);
  }
  return out;
}

/// Ranks of an X x Y x Z grid (x fastest) with exactly one coordinate on the boundary.
RankList face_ranks(std::int64_t nx, std::int64_t ny, std::int64_t nz) {
  std::vector<std::int64_t> ranks;
  for (std::int64_t z = 0; z < nz; ++z)
    for (std::int64_t y = 0; y < ny; ++y)
      for (std::int64_t x = 0; x < nx; ++x) {
        const int on = (x == 0 || x == nx - 1) + (y == 0 || y == ny - 1) + (z == 0 || z == nz - 1);
        if (on == 1) ranks.push_back(x + nx * (y + ny * z));
      }
  return RankList::from_sequence(ranks);
}

}  // namespace

TEST(RankPeriods, ExpandingThePeriodsGivesBackEveryDescriptorInOrder) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    // A few shapes, some stretches repeated at a constant shift, some random.
    std::vector<RankDescriptor> ds;
    std::int64_t at = static_cast<std::int64_t>(rng() % 5);
    const int stretches = 1 + static_cast<int>(rng() % 6);
    for (int s = 0; s < stretches; ++s) {
      std::vector<RankDescriptor> unit;
      const int k = 1 + static_cast<int>(rng() % 4);
      std::int64_t off = 0;
      for (int m = 0; m < k; ++m) {
        RankDescriptor d{off, {}};
        if (rng() % 2) d.dims.emplace_back(2 + static_cast<std::int64_t>(rng() % 3), 1);
        off += 3 + static_cast<std::int64_t>(rng() % 4) + 4;
        unit.push_back(d);
      }
      const std::size_t repeat = 1 + rng() % 5;
      const std::int64_t stride = off + static_cast<std::int64_t>(rng() % 3);
      std::vector<RankDescriptor> stretch;
      expand_descriptor_period(unit, repeat, stride, stretch);
      for (auto& d : stretch) {
        d.start += at;
        ds.push_back(d);
      }
      at += stride * static_cast<std::int64_t>(repeat) + 1 + static_cast<std::int64_t>(rng() % 4);
    }
    const std::vector<DescriptorPeriod> periods = find_descriptor_periods(ds);
    ASSERT_EQ(expand_all(ds, periods), ds) << "trial " << trial;
    std::size_t next = 0;
    for (const DescriptorPeriod& p : periods) {
      EXPECT_EQ(p.first, next);
      EXPECT_LE(p.period, kMaxDescriptorPeriod);
      if (p.repeat > 1) {
        EXPECT_GE(p.period * (p.repeat - 1), 2u) << "a group must save descriptors";
      }
      next = p.first + p.period * p.repeat;
    }
    EXPECT_EQ(next, ds.size());
  }
}

TEST(RankPeriods, EmptyAndSingleLists) {
  EXPECT_TRUE(find_descriptor_periods({}).empty());
  const std::vector<RankDescriptor> one{{5, {}}};
  EXPECT_EQ(find_descriptor_periods(one), (std::vector<DescriptorPeriod>{{0, 1, 1, 0}}));
}

TEST(RankPeriods, FaceRanksOfA3DGridAreAConstantNumberOfItemsAtAnySize) {
  std::size_t items_first = 0;
  std::size_t descriptors_first = 0;
  for (auto [nx, ny, nz] :
       {std::array<std::int64_t, 3>{8, 8, 8}, {16, 16, 16}, {32, 32, 16}, {64, 64, 32}, {128, 128, 64}}) {
    const RankList faces = face_ranks(nx, ny, nz);
    const auto periods = find_descriptor_periods(faces.descriptors());
    ASSERT_EQ(expand_all(faces.descriptors(), periods), faces.descriptors());
    if (items_first == 0) {
      items_first = periods.size();
      descriptors_first = faces.descriptors().size();
      continue;
    }
    // In memory the list grows with the number of planes; as written it does not.
    EXPECT_GT(faces.descriptors().size(), descriptors_first);
    EXPECT_EQ(periods.size(), items_first) << nx << "x" << ny << "x" << nz << ": " << faces.to_string();
  }
  EXPECT_LE(items_first, 12u);
}
