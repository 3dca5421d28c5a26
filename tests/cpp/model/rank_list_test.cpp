// RankList: set/sequence semantics against a plain std::set / vector model, and compactness of
// unions built bottom-up over a radix tree of stencil boundary classes.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <set>

#include "scalatrace/model/comm_table.hpp"
#include "scalatrace/model/rank_list.hpp"

using scalatrace::CommEntry;
using scalatrace::CommTable;
using scalatrace::RankList;

namespace {

void expect_matches_set(const RankList& rl, const std::set<std::int64_t>& model, std::int64_t universe) {
  ASSERT_EQ(rl.size(), static_cast<std::int64_t>(model.size())) << rl.to_string();
  std::vector<std::int64_t> v = rl.to_vector();
  std::vector<std::int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(v, sorted) << "set not in ascending order: " << rl.to_string();
  EXPECT_EQ(std::set<std::int64_t>(v.begin(), v.end()), model);
  for (std::int64_t r = -2; r < universe + 2; ++r) {
    bool in = model.count(r) > 0;
    ASSERT_EQ(rl.contains(r), in) << "rank " << r << " in " << rl.to_string();
    std::int64_t idx = rl.index_of(r);
    if (in) {
      ASSERT_GE(idx, 0);
      ASSERT_EQ(rl.at(idx), r);
    } else {
      ASSERT_EQ(idx, -1);
    }
  }
}

/// Unites per-rank singletons bottom-up over a binary radix tree (i absorbs i + 2^k), as the
/// merge does, for the ranks accepted by pred.
RankList radix_union(std::int64_t n, const std::function<bool(std::int64_t)>& pred) {
  std::vector<RankList> lists(static_cast<std::size_t>(n));
  for (std::int64_t r = 0; r < n; ++r)
    if (pred(r)) lists[static_cast<std::size_t>(r)] = RankList::single(r);
  for (std::int64_t step = 1; step < n; step *= 2)
    for (std::int64_t i = 0; i + step < n; i += 2 * step)
      lists[static_cast<std::size_t>(i)] =
          lists[static_cast<std::size_t>(i)].unite(lists[static_cast<std::size_t>(i + step)]);
  return lists.empty() ? RankList{} : lists[0];
}

}  // namespace

TEST(RankList, SingleRangeAndString) {
  EXPECT_EQ(RankList::single(5).to_vector(), std::vector<std::int64_t>{5});
  EXPECT_EQ(RankList::range(0, 4).to_string(), "<1 0 4 1>");
  EXPECT_EQ(RankList::range(3, 3, 4).to_vector(), (std::vector<std::int64_t>{3, 7, 11}));
  EXPECT_TRUE(RankList::range(3, 0).empty());
  EXPECT_EQ(RankList{}.size(), 0);
  EXPECT_FALSE(RankList{}.contains(0));
}

TEST(RankList, PaperRadixTreeExample) {
  // ScalaTrace Fig. 8: 7 and 11 form <2,4,7>; with 3 -> <3,4,3>; children of 1 and 1 -> 1..7 by 1.
  RankList a = RankList::single(7).unite(RankList::single(11));
  EXPECT_EQ(a, RankList::range(7, 2, 4));
  RankList b = RankList::single(3).unite(a);
  EXPECT_EQ(b, RankList::range(3, 3, 4));
  RankList c = RankList::range(4, 3, 4);
  RankList d = RankList::single(1).unite(b).unite(c);
  EXPECT_EQ(d.size(), 7);
  EXPECT_EQ(d.to_vector(), (std::vector<std::int64_t>{1, 3, 4, 7, 8, 11, 12}));
}

TEST(RankList, SequenceKeepsInsertionOrder) {
  std::vector<std::int64_t> seq = {9, 7, 5, 3, 100, 4, 5, 6, 50};
  RankList rl = RankList::from_sequence(seq);
  EXPECT_EQ(rl.to_vector(), seq);
  for (std::size_t i = 0; i < seq.size(); ++i) {
    EXPECT_EQ(rl.at(static_cast<std::int64_t>(i)), seq[i]);
  }
  EXPECT_EQ(rl.index_of(100), 4);
  EXPECT_EQ(rl.index_of(50), 8);
  EXPECT_EQ(rl.index_of(8), -1);
  // 5 occurs twice in this (non-member-list) sequence: index_of finds the first.
  EXPECT_EQ(rl.index_of(5), 2);
}

TEST(RankList, SequenceOfRowsFoldsIntoTwoDims) {
  std::vector<std::int64_t> seq;
  for (int y = 0; y < 8; ++y)
    for (int x = 1; x < 16; ++x) seq.push_back(y * 16 + x);
  RankList rl = RankList::from_sequence(seq);
  EXPECT_EQ(rl.descriptors().size(), 1u) << rl.to_string();
  EXPECT_EQ(rl.to_vector(), seq);
}

TEST(RankList, RandomSequencesRoundTrip) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    std::vector<std::int64_t> seq;
    std::int64_t n = static_cast<std::int64_t>(rng() % 60);
    std::set<std::int64_t> used;
    while (static_cast<std::int64_t>(seq.size()) < n) {
      std::int64_t r = static_cast<std::int64_t>(rng() % 200);
      if (used.insert(r).second) seq.push_back(r);
    }
    if (iter % 2) std::sort(seq.begin(), seq.end());
    RankList rl = RankList::from_sequence(seq);
    ASSERT_EQ(rl.to_vector(), seq);
    for (std::size_t i = 0; i < seq.size(); ++i) {
      ASSERT_EQ(rl.index_of(seq[i]), static_cast<std::int64_t>(i));
      ASSERT_EQ(rl.at(static_cast<std::int64_t>(i)), seq[i]);
    }
  }
}

TEST(RankList, RandomUnionsMatchSetModel) {
  std::mt19937_64 rng(11);
  for (int iter = 0; iter < 300; ++iter) {
    const std::int64_t universe = 80;
    auto random_set = [&]() {
      std::set<std::int64_t> s;
      int kind = static_cast<int>(rng() % 3);
      if (kind == 0) {
        int k = static_cast<int>(rng() % 20);
        for (int i = 0; i < k; ++i) s.insert(static_cast<std::int64_t>(rng() % universe));
      } else {
        std::int64_t start = static_cast<std::int64_t>(rng() % universe);
        std::int64_t stride = 1 + static_cast<std::int64_t>(rng() % 5);
        for (std::int64_t r = start; r < universe && s.size() < 15; r += stride) s.insert(r);
      }
      return s;
    };
    auto a = random_set(), b = random_set();
    RankList ra = RankList::from_sequence({a.begin(), a.end()});
    RankList rb = RankList::from_sequence({b.begin(), b.end()});
    expect_matches_set(ra, a, universe);
    std::set<std::int64_t> u = a;
    u.insert(b.begin(), b.end());
    RankList ru = ra.unite(rb);
    expect_matches_set(ru, u, universe);
    expect_matches_set(rb.unite(ra), u, universe);
  }
}

TEST(RankList, AllButColumnZeroOfLargeGridIsOneDescriptor) {
  const std::int64_t q = 1024, n = q * q;
  RankList rl = radix_union(n, [&](std::int64_t r) { return r % q != 0; });
  ASSERT_EQ(rl.descriptors().size(), 1u) << rl.to_string();
  EXPECT_EQ(rl.descriptors()[0].dims.size(), 2u);
  EXPECT_EQ(rl.size(), n - q);
  EXPECT_FALSE(rl.contains(0));
  EXPECT_FALSE(rl.contains(5 * q));
  EXPECT_TRUE(rl.contains(5 * q + 1));
  EXPECT_TRUE(rl.contains(n - 1));
  EXPECT_EQ(rl.index_of(q + 1), q - 1);
  EXPECT_EQ(rl.at(q - 1), q + 1);
}

TEST(RankList, StencilClassesStaySmall) {
  // Every boundary class of 2D and 3D grids (sides not powers of two, too) unites into O(1)
  // descriptors over the radix tree.
  struct Grid {
    std::int64_t x, y, z;
  };
  for (Grid g : {Grid{32, 32, 1}, Grid{30, 20, 1}, Grid{16, 16, 16}, Grid{10, 12, 7}}) {
    std::int64_t n = g.x * g.y * g.z;
    auto cls = [&](std::int64_t r) {
      std::int64_t xi = r % g.x, yi = (r / g.x) % g.y, zi = r / (g.x * g.y);
      auto side = [](std::int64_t i, std::int64_t len) { return i == 0 ? 0 : (i == len - 1 ? 2 : 1); };
      return side(xi, g.x) + 3 * side(yi, g.y) + 9 * (g.z > 1 ? side(zi, g.z) : 0);
    };
    for (int c = 0; c < 27; ++c) {
      std::set<std::int64_t> model;
      for (std::int64_t r = 0; r < n; ++r)
        if (cls(r) == c) model.insert(r);
      RankList rl = radix_union(n, [&](std::int64_t r) { return cls(r) == c; });
      expect_matches_set(rl, model, n);
      EXPECT_LE(rl.descriptors().size(), 8u) << "class " << c << ": " << rl.to_string();
    }
  }
}

TEST(RankList, InterleavedUnionFallsBackCorrectly) {
  RankList evens = RankList::range(0, 50, 2), odds = RankList::range(1, 50, 2);
  RankList all = evens.unite(odds);
  EXPECT_EQ(all, RankList::range(0, 100));
  RankList overlap = RankList::range(0, 10).unite(RankList::range(5, 10));
  EXPECT_EQ(overlap, RankList::range(0, 15));
}

TEST(CommTable, FindAndMerge) {
  CommTable a, b;
  a.entries.push_back(CommEntry{2, RankList::range(0, 4), RankList::range(0, 4)});
  b.entries.push_back(CommEntry{2, RankList::range(4, 4), RankList::range(4, 4)});
  b.entries.push_back(CommEntry{0, RankList::range(0, 8), RankList::range(4, 4)});
  a.entries.push_back(CommEntry{0, RankList::range(0, 8), RankList::range(0, 4)});
  a.merge(b);
  ASSERT_EQ(a.entries.size(), 3u);
  EXPECT_EQ(a.find(0, 6)->holders, RankList::range(0, 8));
  EXPECT_EQ(a.find(2, 1)->members, RankList::range(0, 4));
  EXPECT_EQ(a.find(2, 5)->members, RankList::range(4, 4));
  EXPECT_EQ(a.find(3, 5), nullptr);
  CommTable per_rank;
  per_rank.entries.push_back(CommEntry{0, RankList::range(0, 8), {}});
  EXPECT_NE(per_rank.find(0, 3), nullptr);
}
