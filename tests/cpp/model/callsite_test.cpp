#include "scalatrace/model/callsite.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace scalatrace {
namespace {

std::vector<Frame> frames(std::initializer_list<std::uint64_t> offsets, std::uint32_t module = 0) {
  std::vector<Frame> out;
  for (auto o : offsets) out.push_back(Frame{module, o});
  return out;
}

TEST(SignatureHash, IsOrderSensitiveAndDeterministic) {
  EXPECT_EQ(signature_hash(frames({1, 2, 3})), signature_hash(frames({1, 2, 3})));
  EXPECT_NE(signature_hash(frames({1, 2, 3})), signature_hash(frames({3, 2, 1})));
  EXPECT_NE(signature_hash(frames({1, 2})), signature_hash(frames({1, 2}, 1)));
  EXPECT_NE(signature_hash(frames({5, 5})), signature_hash(frames({5})));
}

TEST(SignatureHash, DistinctForManyRandomStacks) {
  std::mt19937_64 rng(7);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 5000; ++i) {
    std::vector<Frame> f;
    for (int k = 0; k < 8; ++k) f.push_back(Frame{static_cast<std::uint32_t>(rng() % 3), rng() % 100000});
    seen.insert(signature_hash(f));
  }
  EXPECT_GT(seen.size(), 4990u);
}

TEST(FoldRecursion, SingleFrameRuns) {
  auto f = frames({1, 2, 2, 2, 3});
  fold_recursion(f);
  EXPECT_EQ(f, frames({1, 2, 3}));
}

TEST(FoldRecursion, MultiFrameBlocks) {
  auto f = frames({1, 2, 3, 2, 3, 2, 3, 4});
  fold_recursion(f);
  EXPECT_EQ(f, frames({1, 2, 3, 4}));
}

TEST(FoldRecursion, LeavesNonRepeatingStacksAlone) {
  auto f = frames({1, 2, 3, 1, 2, 4});
  fold_recursion(f);
  EXPECT_EQ(f, frames({1, 2, 3, 1, 2, 4}));
  std::vector<Frame> empty;
  fold_recursion(empty);
  EXPECT_TRUE(empty.empty());
}

TEST(FoldRecursion, DifferentRecursionDepthsFoldToTheSameSignature) {
  auto shallow = frames({9, 5, 6, 5, 6, 1});
  auto deep = frames({9, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 1});
  fold_recursion(shallow);
  fold_recursion(deep);
  EXPECT_EQ(shallow, deep);
  EXPECT_EQ(signature_hash(shallow), signature_hash(deep));
}

TEST(FoldRecursion, ResultHasNoAdjacentRepeatedBlock) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<Frame> f;
    const int n = static_cast<int>(rng() % 20);
    for (int i = 0; i < n; ++i) f.push_back(Frame{0, rng() % 3});
    fold_recursion(f);
    for (std::size_t i = 0; i < f.size(); ++i)
      for (std::size_t len = 1; i + 2 * len <= f.size(); ++len)
        EXPECT_FALSE(std::equal(f.begin() + i, f.begin() + i + len, f.begin() + i + len));
  }
}

TEST(FrameDistance, CountsDifferingPositionsAndLength) {
  EXPECT_EQ(frame_distance(frames({1, 2, 3}), frames({1, 2, 3})), 0u);
  EXPECT_EQ(frame_distance(frames({1, 2, 3}), frames({1, 9, 3})), 1u);
  EXPECT_EQ(frame_distance(frames({1, 2, 3}), frames({1, 2})), 1u);
  EXPECT_EQ(frame_distance(frames({}), frames({4, 5})), 2u);
}

TEST(CallSiteTable, InternsDenselyInFirstSeenOrder) {
  CallSiteTable t;
  EXPECT_EQ(t.intern(frames({1, 2})), 0u);
  EXPECT_EQ(t.intern(frames({3})), 1u);
  EXPECT_EQ(t.intern(frames({1, 2})), 0u);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.sites[0].hash, signature_hash(frames({1, 2})));
  EXPECT_EQ(t.intern_module("a.so"), 0u);
  EXPECT_EQ(t.intern_module("b.so"), 1u);
  EXPECT_EQ(t.intern_module("a.so"), 0u);
}

TEST(CallSiteTable, ImportRemapsModules) {
  CallSiteTable a, b;
  a.intern_module("exe");
  const auto lib_in_b = b.intern_module("lib.so");
  const auto exe_in_b = b.intern_module("exe");
  const auto id = b.intern({Frame{lib_in_b, 10}, Frame{exe_in_b, 20}});
  b.sites[id].symbol = "f";
  const auto mine = a.import(b, id);
  ASSERT_EQ(a.sites[mine].frames.size(), 2u);
  EXPECT_EQ(a.modules[a.sites[mine].frames[0].module], "lib.so");
  EXPECT_EQ(a.modules[a.sites[mine].frames[1].module], "exe");
  EXPECT_EQ(a.sites[mine].symbol, "f");
  EXPECT_EQ(a.import(b, id), mine);
}

TEST(CallSiteTable, WorksOnVectorsFilledDirectly) {
  CallSiteTable t;
  t.modules = {"x", "y"};
  t.sites.push_back(CallSite{frames({7}, 1), signature_hash(frames({7}, 1)), "", ""});
  EXPECT_EQ(t.intern(frames({7}, 1)), 0u);
  EXPECT_EQ(t.intern_module("y"), 1u);
  EXPECT_EQ(t.intern(frames({8}, 1)), 1u);
}

}  // namespace
}  // namespace scalatrace
