#include "conn/health.hpp"

#include <gtest/gtest.h>

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

Config fast() {
  Config config;
  config.heartbeat_interval = 100ms;
  config.async_timeout = 300ms;
  return config;
}

PendingCommand caller_entry() {
  PendingCommand command;
  command.kind = PendingKind::FireAndForget;  // no state needed: the pipeline only holds it
  command.deadline = Clock::time_point::max();
  command.counted = false;
  return command;
}

struct Fixture {
  Config config = fast();
  Health health{config};
  Pipeline pipeline;
  Clock::time_point t0 = Clock::time_point() + 100s;
};

TEST(HealthTest, AnIdleConnectionIsPingedOnceNothingMovedForTheInterval) {
  Fixture f;
  f.health.on_ready(f.t0);
  EXPECT_FALSE(f.health.on_tick(f.t0 + 50ms, f.pipeline, false, true, f.t0).heartbeat);
  EXPECT_TRUE(f.health.on_tick(f.t0 + 100ms, f.pipeline, false, true, f.t0).heartbeat);
  // Something being written or queued: no PING needed.
  EXPECT_FALSE(f.health.on_tick(f.t0 + 200ms, f.pipeline, false, false, f.t0).heartbeat);
  // A recent write counts as activity.
  EXPECT_FALSE(f.health.on_tick(f.t0 + 300ms, f.pipeline, false, true, f.t0 + 250ms).heartbeat);
  Config off = fast();
  off.heartbeat_interval = 0ms;
  Health none(off);
  none.on_ready(f.t0);
  EXPECT_FALSE(none.on_tick(f.t0 + 10s, f.pipeline, false, true, f.t0).heartbeat);
  EXPECT_EQ(none.period(), 300ms);  // ticks every asyncTimeout instead
}

// Dead: something overdue, and nothing read for two asyncTimeouts — from the later of the
// last read and the moment the pipeline became busy.
TEST(HealthTest, AConnectionIsDeadWhenOverdueAndSilentForTwoTimeouts) {
  Fixture f;
  f.health.on_ready(f.t0);
  const PendingCommand entry[] = {caller_entry()};
  f.pipeline.push(entry);
  f.health.on_busy(f.t0 + 1s);
  // Silent for 700 ms, but nothing is overdue: a slow command is not a dead connection.
  EXPECT_FALSE(f.health.on_tick(f.t0 + 1700ms, f.pipeline, false, true, f.t0).dead);
  f.health.on_timed_out();
  Health::Tick tick = f.health.on_tick(f.t0 + 1700ms, f.pipeline, false, true, f.t0);
  EXPECT_TRUE(tick.dead);
  EXPECT_EQ(tick.silent_ms, 700);
  f.health.on_read(f.t0 + 1800ms);  // bytes of a long reply: alive again
  EXPECT_FALSE(f.health.on_tick(f.t0 + 2399ms, f.pipeline, false, true, f.t0).dead);
  EXPECT_TRUE(f.health.on_tick(f.t0 + 2400ms, f.pipeline, false, true, f.t0).dead);
  f.health.on_replies();  // nothing is overdue any more
  EXPECT_FALSE(f.health.on_tick(f.t0 + 10s, f.pipeline, false, true, f.t0).dead);
}

TEST(HealthTest, AnUnansweredPingOrAnUnconfirmedSubscribeCountsAsOverdue) {
  Fixture f;
  f.health.on_ready(f.t0);
  EXPECT_TRUE(f.health.on_tick(f.t0 + 100ms, f.pipeline, false, true, f.t0).heartbeat);
  const PendingCommand ping[] = {caller_entry()};
  f.pipeline.push(ping);
  f.health.on_busy(f.t0 + 100ms);
  EXPECT_TRUE(f.health.on_tick(f.t0 + 700ms, f.pipeline, false, true, f.t0).dead);

  Fixture g;
  g.health.on_ready(g.t0);
  PendingCommand subscribe = pubsub_command("SUBSCRIBE", resp::PushKind::Subscribe, 1);
  g.pipeline.push(std::span<const PendingCommand>(&subscribe, 1));
  g.health.on_busy(g.t0);
  EXPECT_FALSE(g.health.on_tick(g.t0 + 599ms, g.pipeline, false, true, g.t0).dead);
  EXPECT_TRUE(g.health.on_tick(g.t0 + 600ms, g.pipeline, false, true, g.t0).dead);
}

TEST(HealthTest, AReplicaIsAskedItsRoleEverySecondAPrimaryEveryThirty) {
  Fixture f;
  f.health.on_ready(f.t0);
  EXPECT_FALSE(f.health.on_tick(f.t0 + 999ms, f.pipeline, true, false, f.t0).probe_role);
  EXPECT_TRUE(f.health.on_tick(f.t0 + 1s, f.pipeline, true, false, f.t0).probe_role);
  EXPECT_FALSE(f.health.on_tick(f.t0 + 20s, f.pipeline, false, false, f.t0).probe_role);
  EXPECT_TRUE(f.health.on_tick(f.t0 + 31s, f.pipeline, false, false, f.t0).probe_role);
}

}  // namespace
}  // namespace redmux::detail
