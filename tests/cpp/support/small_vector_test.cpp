// SmallVector (the simulator's and the cursor's inline-first vector): elements survive growth
// to the heap, moves of inline and heap vectors, erasure and truncation.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "support/small_vector.hpp"

using scalatrace::SmallVector;

namespace {

struct Item {
  std::int64_t a = 0;
  double b = 0;
};

template <std::uint32_t N>
std::vector<std::int64_t> values(const SmallVector<Item, N>& v) {
  std::vector<std::int64_t> out;
  for (const Item& x : v) out.push_back(x.a);
  return out;
}

}  // namespace

TEST(SmallVector, GrowsToTheHeapKeepingItsElements) {
  SmallVector<Item, 4> v;
  std::vector<std::int64_t> want;
  for (std::int64_t i = 0; i < 100; ++i) {
    v.push_back(Item{i, 0.5 * static_cast<double>(i)});
    want.push_back(i);
    ASSERT_EQ(values(v), want);
  }
  EXPECT_EQ(v[37].b, 18.5);
}

TEST(SmallVector, MovesInlineAndHeapVectors) {
  for (std::int64_t n : {0, 3, 4, 5, 40}) {
    SCOPED_TRACE(n);
    SmallVector<Item, 4> v;
    std::vector<std::int64_t> want;
    for (std::int64_t i = 0; i < n; ++i) {
      v.push_back(Item{i, 0});
      want.push_back(i);
    }
    SmallVector<Item, 4> moved(std::move(v));
    EXPECT_EQ(values(moved), want);
    EXPECT_TRUE(v.empty());   // NOLINT(bugprone-use-after-move): a moved-from vector is empty
    v.push_back(Item{7, 0});  // and usable (its own inline storage again)
    EXPECT_EQ(values(v), std::vector<std::int64_t>{7});
    SmallVector<Item, 4> assigned;
    assigned.push_back(Item{-1, 0});
    assigned = std::move(moved);
    EXPECT_EQ(values(assigned), want);
    assigned.push_back(Item{99, 0});  // still growable after the move
    want.push_back(99);
    EXPECT_EQ(values(assigned), want);
  }
  // Moves as std::vector makes them when it reallocates (the simulator's schedules).
  std::vector<SmallVector<Item, 2>> many;
  for (std::int64_t k = 0; k < 20; ++k) {
    many.emplace_back();
    for (std::int64_t i = 0; i <= k % 5; ++i) many.back().push_back(Item{k * 10 + i, 0});
  }
  for (std::int64_t k = 0; k < 20; ++k) {
    std::vector<std::int64_t> want;
    for (std::int64_t i = 0; i <= k % 5; ++i) want.push_back(k * 10 + i);
    EXPECT_EQ(values(many[static_cast<std::size_t>(k)]), want) << k;
  }
}

TEST(SmallVector, EraseAndTruncate) {
  SmallVector<Item, 4> v;
  for (std::int64_t i = 0; i < 6; ++i) v.push_back(Item{i, 0});
  v.erase(v.begin() + 1);
  EXPECT_EQ(values(v), (std::vector<std::int64_t>{0, 2, 3, 4, 5}));
  v.erase(v.begin(), v.begin() + 2);
  EXPECT_EQ(values(v), (std::vector<std::int64_t>{3, 4, 5}));
  v.erase(v.end() - 1);  // the last element: nothing moves
  EXPECT_EQ(values(v), (std::vector<std::int64_t>{3, 4}));
  v.push_back(Item{5, 0});
  v.truncate(1);
  EXPECT_EQ(values(v), std::vector<std::int64_t>{3});
  for (std::int64_t i = 0; i < 10; ++i) v.push_back(Item{100 + i, 0});
  EXPECT_EQ(v.size(), 11u);
  EXPECT_EQ(v[10].a, 109);
}

TEST(SmallVector, InlineAddressIsWhereInlineElementsAre) {
  SmallVector<Item, 4> v;
  for (std::int64_t i = 0; i < 3; ++i) v.push_back(Item{i, 0});
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(v.inline_address(i), static_cast<const void*>(&v[i])) << i;
  EXPECT_EQ(v.inline_address(4), nullptr);  // past the inline capacity: no address
  for (std::int64_t i = 3; i < 6; ++i) v.push_back(Item{i, 0});
  // On the heap now: the inline slots are no longer the elements.
  EXPECT_NE(v.inline_address(0), static_cast<const void*>(&v[0]));
}
