// When a cluster router asks for the slot map again: single flight, debounced, and the
// periodic look's pace and reasons.
#include "topology/refresh_schedule.hpp"

#include <gtest/gtest.h>

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;
using Clock = RefreshSchedule::Clock;

TEST(RefreshScheduleTest, OneRefreshAtATimeAndAtMostOnePerSpacing) {
  RefreshSchedule schedule;
  const auto now = Clock::now();
  EXPECT_EQ(schedule.begin(now), 0ms);           // the first: at once
  EXPECT_EQ(schedule.begin(now), std::nullopt);  // under way: the asker relies on it
  EXPECT_EQ(schedule.begin(now + 1s), std::nullopt);
  schedule.finished(now + 10ms);
  // Asked right after: it waits out the spacing from the end of the last one.
  EXPECT_EQ(schedule.begin(now + 110ms), RefreshSchedule::kSpacing - 100ms);
  schedule.finished(now + 260ms);
  EXPECT_EQ(schedule.begin(now + 260ms + RefreshSchedule::kSpacing), 0ms);
}

TEST(RefreshScheduleTest, APeriodicLookRefreshesForAnUnreachablePrimaryANodeDownOrAtRest) {
  RefreshSchedule schedule;
  const auto now = Clock::now();
  ASSERT_EQ(schedule.begin(now), 0ms);
  schedule.finished(now);
  EXPECT_FALSE(schedule.due(now + 1s, false, false));
  EXPECT_TRUE(schedule.due(now + 1s, /*primary_unreachable=*/true, false));
  EXPECT_FALSE(schedule.due(now + 1s, false, /*node_unreachable=*/true));
  EXPECT_TRUE(schedule.due(now + RefreshSchedule::kWhileNodeDown, false, true));
  EXPECT_FALSE(schedule.due(now + RefreshSchedule::kAtRest - 1ms, false, false));
  EXPECT_TRUE(schedule.due(now + RefreshSchedule::kAtRest, false, false));
}

TEST(RefreshScheduleTest, AfterANodeFailsTheLookQuickensWhileAPrimaryIsUnreachable) {
  RefreshSchedule schedule;
  const auto now = Clock::now();
  EXPECT_EQ(schedule.next_tick(now, true), RefreshSchedule::kTick);  // no failure seen
  schedule.node_failed(now);
  EXPECT_EQ(schedule.next_tick(now + 1s, true), RefreshSchedule::kFastTick);
  EXPECT_EQ(schedule.next_tick(now + 1s, false), RefreshSchedule::kTick);
  EXPECT_EQ(schedule.next_tick(now + RefreshSchedule::kFastWindow, true), RefreshSchedule::kTick);
}

TEST(RefreshScheduleTest, OlderThanMeasuresFromTheLastEnd) {
  RefreshSchedule schedule;
  const auto now = Clock::now();
  ASSERT_TRUE(schedule.begin(now));
  schedule.finished(now);
  EXPECT_FALSE(schedule.older_than(now + 5s, 5s));
  EXPECT_TRUE(schedule.older_than(now + 5s + 1ms, 5s));
}

}  // namespace
}  // namespace redmux::detail
