// A sender's NIC in the simulator's network (cpp/core/src/simulate/sender_nic.hpp): in time
// order it is the single horizon it replaced; a message handled after a later one of the same
// sender takes the earliest free gap long enough for it, at or after its ready time.
#include "simulate/sender_nic.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using scalatrace::sim::SenderNic;

namespace {

/// Reserves the NIC for a message ready at `ready` that takes it `busy` ns; returns its start.
double send(SenderNic& nic, double ready, double busy) {
  const double start = nic.earliest_start(ready, busy);
  nic.reserve(start, busy);
  return start;
}

}  // namespace

TEST(SenderNic, InTimeOrderAMessageStartsAtTheLaterOfReadyAndTheHorizon) {
  // Ready times in order, busy or not, back to back or with idle time between: the same starts
  // and horizons as max(ready, horizon) and horizon = max(horizon, start + busy), bit for bit.
  std::mt19937_64 rng(34);
  std::uniform_real_distribution<double> step(0.0, 30.0), length(0.0, 20.0);
  SenderNic nic;
  double horizon = 0, ready = 0;
  for (int i = 0; i < 10000; ++i) {
    ready += i % 3 == 0 ? 0.0 : step(rng);
    const double busy = i % 5 == 0 ? 0.0 : length(rng);
    const double expected = std::max(ready, horizon);
    EXPECT_EQ(send(nic, ready, busy), expected) << i;
    if (busy > 0) horizon = std::max(horizon, expected + busy);
    EXPECT_EQ(nic.horizon(), horizon) << i;
  }
}

TEST(SenderNic, AnEarlierMessageHandledLaterTakesTheGapBeforeTheLaterOne) {
  // The engine handles the message ready at 9 us first (a nonblocking collective's next step),
  // then the one ready at 8 us (the rank's next collective): with g = 300 ns the NIC is free
  // from 8 to 9 us, so the earlier one starts at 8 us, not at 9.3 us.
  SenderNic nic;
  EXPECT_EQ(send(nic, 1000, 300), 1000);
  EXPECT_EQ(send(nic, 9000, 300), 9000);
  EXPECT_EQ(send(nic, 8000, 300), 8000);
  EXPECT_EQ(nic.horizon(), 9300);
  // Free before 9 us now: [1300, 8000) and [8300, 9000). 800 ns do not fit from 8100 on, 700 do.
  EXPECT_EQ(send(nic, 8100, 800), 9300);
  EXPECT_EQ(send(nic, 8100, 700), 8300);
  EXPECT_EQ(nic.horizon(), 10100);
}

TEST(SenderNic, AGapTooShortOrAlreadyTakenIsSkipped) {
  SenderNic nic;
  send(nic, 0, 100);                  // busy [0, 100)
  send(nic, 150, 100);                // gap [100, 150), busy [150, 250)
  send(nic, 400, 100);                // gap [250, 400), busy [400, 500)
  EXPECT_EQ(send(nic, 90, 60), 250);  // 50 ns free from 100: too short; from 250 on: room
  EXPECT_EQ(send(nic, 90, 50), 100);  // exactly the first gap
  EXPECT_EQ(send(nic, 0, 100), 500);  // [310, 400) is left: too short, so after the horizon
  EXPECT_EQ(nic.horizon(), 600);
}

TEST(SenderNic, AMessageOfNoLengthStartsInsideAGapAndReservesNothing) {
  SenderNic nic;
  send(nic, 0, 100);
  send(nic, 200, 100);  // gap [100, 200)
  EXPECT_EQ(send(nic, 150, 0), 150);
  EXPECT_EQ(send(nic, 50, 0), 100);   // busy at 50: the gap's start
  EXPECT_EQ(send(nic, 200, 0), 300);  // at the gap's end the next message holds the NIC
  EXPECT_EQ(nic.horizon(), 300);
  EXPECT_EQ(nic.gaps(), 1);
}

TEST(SenderNic, OnlyTheLatestGapsAreKeptOlderFreeTimeCountsAsBusy) {
  SenderNic nic;
  // Busy [1000 i, 1000 i + 100): gaps [100, 1000), [1100, 2000), ..., one more than are kept.
  for (int i = 0; i <= SenderNic::kGaps + 1; ++i) send(nic, 1000.0 * i, 100);
  EXPECT_EQ(nic.gaps(), SenderNic::kGaps);
  // The oldest gap, [100, 1000), was dropped: a message ready at 500 takes the next, [1100, 2000).
  EXPECT_EQ(send(nic, 500, 100), 1100);
}

TEST(SenderNic, AReservationOverlappingBusyTimeMarksWhatItCoversBusy) {
  // A route's link may delay a message past the gap its NIC offered (fat tree, congestion):
  // what the reservation covers is busy, gaps and horizon alike.
  SenderNic nic;
  send(nic, 0, 100);
  send(nic, 1000, 100);  // gap [100, 1000), horizon 1100
  nic.reserve(900, 400);
  EXPECT_EQ(nic.horizon(), 1300);
  EXPECT_EQ(nic.gaps(), 1);
  EXPECT_EQ(send(nic, 850, 100), 1300);  // [100, 900) left: from 850 only 50 ns
  EXPECT_EQ(send(nic, 200, 100), 200);
  EXPECT_EQ(nic.gaps(), 2);  // [100, 200) and [300, 900)
}
