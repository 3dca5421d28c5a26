// Max-min fair sharing of links among flows (cpp/core/src/simulate/flow_sharing.cpp): the
// progressive filling's shares and the event-driven finishing times, exact.
#include "simulate/flow_sharing.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using scalatrace::sim::FairSharing;

namespace {

std::uint32_t add(FairSharing& s, double start, double work, std::vector<std::uint32_t> links, double cap = 1.0,
                  double weight = 1.0) {
  return s.add(start, work, cap, links.data(), links.size(), weight);
}

}  // namespace

TEST(FairSharing, TwoFlowsOnOneLinkEachGetHalf) {
  FairSharing s;
  const auto a = add(s, 0, 100, {0});
  const auto b = add(s, 0, 100, {0});
  s.solve();
  EXPECT_DOUBLE_EQ(s.end(a), 200);
  EXPECT_DOUBLE_EQ(s.end(b), 200);
}

TEST(FairSharing, AFlowBottleneckedElsewhereLeavesTheRestToTheOther) {
  // Link 1 carries A, C, D, E: a quarter each. A also crosses link 0, where B gets the three
  // quarters A leaves; when A, C, D, E end at 100, B (75 of its 150 done) has link 0 alone.
  FairSharing s;
  const auto a = add(s, 0, 25, {0, 1});
  const auto b = add(s, 0, 150, {0});
  std::vector<std::uint32_t> others;
  for (int i = 0; i < 3; ++i) others.push_back(add(s, 0, 25, {1}));
  s.solve();
  EXPECT_DOUBLE_EQ(s.end(a), 100);
  for (auto o : others) EXPECT_DOUBLE_EQ(s.end(o), 100);
  EXPECT_DOUBLE_EQ(s.end(b), 175);
}

TEST(FairSharing, RatesChangeWhenFlowsStartAndEnd) {
  // A alone from 0 to 50 (50 done), then A and B at half each: A ends at 150, B (50 done) alone
  // until 200. C, on another link, is not affected.
  FairSharing s;
  const auto a = add(s, 0, 100, {3});
  const auto b = add(s, 50, 100, {3});
  const auto c = add(s, 10, 30, {7});
  s.solve();
  EXPECT_DOUBLE_EQ(s.end(a), 150);
  EXPECT_DOUBLE_EQ(s.end(b), 200);
  EXPECT_DOUBLE_EQ(s.end(c), 40);
}

TEST(FairSharing, AFlowCappedBelowItsShareLeavesTheRest) {
  // A's endpoint allows a quarter of the link: B takes the other three quarters.
  FairSharing s;
  const auto a = add(s, 0, 25, {0}, 0.25);
  const auto b = add(s, 0, 75, {0});
  const auto empty = add(s, 5, 0, {0});
  s.solve();
  EXPECT_DOUBLE_EQ(s.end(a), 100);
  EXPECT_DOUBLE_EQ(s.end(b), 100);
  EXPECT_DOUBLE_EQ(s.end(empty), 5);
}

TEST(FairSharing, ParkingLot) {
  // The parking lot: A crosses links 0, 1, 2; B, C, D one each, so every link has two flows and
  // all run at half. B ends at 64; A stays at half (links 1 and 2 still hold two flows) and ends
  // with C at 128; D has done 64 of 96 by then and does the rest alone.
  FairSharing s;
  const auto a = add(s, 0, 64, {0, 1, 2});
  const auto b = add(s, 0, 32, {0});
  const auto c = add(s, 0, 64, {1});
  const auto d = add(s, 0, 96, {2});
  s.solve();
  EXPECT_DOUBLE_EQ(s.end(b), 64);
  EXPECT_DOUBLE_EQ(s.end(a), 128);
  EXPECT_DOUBLE_EQ(s.end(c), 128);
  EXPECT_DOUBLE_EQ(s.end(d), 160);
  // Deterministic: solving again gives the same times.
  s.solve();
  EXPECT_DOUBLE_EQ(s.end(d), 160);
}

TEST(FairSharing, WeightedFlowsShareInProportionToTheirWeights) {
  // Weights 2 and 1 on one link: A at two thirds ends at 150, B (50 of 100 done) then alone
  // until 200. (SimGrid's CM02 weighs a flow by the inverse of its route's latency.)
  FairSharing s;
  const auto a = add(s, 0, 100, {0}, 1.0, 2.0);
  const auto b = add(s, 0, 100, {0}, 1.0, 1.0);
  s.solve();
  EXPECT_NEAR(s.end(a), 150, 1e-9);
  EXPECT_NEAR(s.end(b), 200, 1e-9);
}

TEST(FairSharing, AWeightedFlowCappedBelowItsShareLeavesTheRest) {
  // Weights 3 and 1 would give A three quarters, but its cap is a half: A at a half ends at
  // 100, B at the other half has 50 of 100 done then and ends at 150.
  FairSharing s;
  const auto a = add(s, 0, 50, {0}, 0.5, 3.0);
  const auto b = add(s, 0, 100, {0}, 1.0, 1.0);
  s.solve();
  EXPECT_NEAR(s.end(a), 100, 1e-9);
  EXPECT_NEAR(s.end(b), 150, 1e-9);
}
