// ConnectionMachine's part in three counts other layers rely on, under a scripted runner: a
// command that times out gives its maxQueuedCommands slot back at once (only its entry waits
// for the late reply, to skip it); a write counts the commands it carries; and a connection
// waiting out its reconnect backoff can be told to try at once (a Redis Cluster node the
// refreshed slot map lists again).
#include <gtest/gtest.h>

#include "conn/connection_machine.hpp"
#include "scripted_runner.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;
using testing::bulk;
using testing::error_of;
using testing::handshake_replies;
using testing::ScriptedRunner;
using testing::value_of;

std::string get_bytes(std::string_view key) {
  return test::command_bytes({"GET", key});
}

/// Ready, with one command written and answered: the next ones a caller writes inline.
void ready_and_warm(ScriptedRunner& r) {
  r.ready();
  auto& warm = r.get("warm-up");
  r.complete_write();
  r.feed(bulk("x"));
  EXPECT_EQ(value_of(warm), "x");
  r.take_wire();
}

// Issue: the slot came back only with the late reply, so a stalled server turned timeouts
// into QueueFullErrors.
TEST(ConnectionSlotsTest, ACommandTimedOutInFlightGivesItsSlotBackAtOnceAndOnlyOnce) {
  ScriptedRunner r;
  r.count_slots = true;
  ready_and_warm(r);
  auto& slow = r.get("slow", 100ms);
  auto& next = r.get("next", 5s);
  while (r.writing) r.complete_write();
  EXPECT_EQ(r.take_wire(), get_bytes("slow") + get_bytes("next"));
  EXPECT_EQ(r.shared->outstanding(), 2u);
  r.advance(100ms);
  ASSERT_TRUE(slow.state->ready());
  EXPECT_EQ(error_of(slow).code(), errc::timeout);
  EXPECT_EQ(r.shared->outstanding(), 1u);      // before its reply: the server is silent
  EXPECT_EQ(r.machine.tally().in_flight, 1u);  // nobody waits for the late one
  EXPECT_EQ(r.machine.in_flight_count(), 2u);  // but its entry stays, to skip its reply
  r.feed(bulk("late") + bulk("mine"));
  EXPECT_EQ(value_of(next), "mine");
  EXPECT_EQ(r.shared->outstanding(), 0u);  // the late reply gave nothing back a second time
  EXPECT_EQ(r.machine.tally().in_flight, 0u);
}

// A write that does not finish (a server that stopped reading) keeps the writer busy: the
// commands queued behind it that time out must still give their slots back and leave the
// queue, or memory would grow while new commands are accepted in their place.
TEST(ConnectionSlotsTest, QueuedCommandsTimedOutBehindAStuckWriteLeaveTheQueueAndTheirSlots) {
  ScriptedRunner r;
  r.count_slots = true;
  r.ready();
  r.inline_capacity = 0;  // the socket is full: the I/O thread takes the write over
  auto& first = r.get("first", 5s);
  ASSERT_TRUE(r.writing.has_value());
  auto& stuck = r.get("stuck", 100ms);
  auto& stuck2 = r.get("stuck2", 100ms);
  EXPECT_EQ(r.machine.queued_count(), 2u);
  EXPECT_EQ(r.machine.tally().queued, 2u);
  r.advance(100ms);
  for (auto* call : {&stuck, &stuck2}) {
    ASSERT_TRUE(call->state->ready());
    EXPECT_NE(error_of(*call).message().find("still queued, not sent"), std::string::npos)
        << error_of(*call).message();
  }
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  EXPECT_EQ(r.shared->outstanding(), 1u);
  EXPECT_EQ(r.machine.queued_count(), 0u);  // purged although the connection is ready
  EXPECT_EQ(r.machine.tally().queued, 0u);
  // The write finishes at last: the timed-out commands are never written.
  r.complete_write();
  EXPECT_FALSE(r.writing.has_value());
  EXPECT_EQ(r.take_wire(), get_bytes("first"));
  r.feed(bulk("v"));
  EXPECT_EQ(value_of(first), "v");
  EXPECT_EQ(r.shared->outstanding(), 0u);
  EXPECT_EQ(r.counters().timeouts.load(), 2u);
}

// commands_per_write() divides these two: it must never read below 1.
TEST(ConnectionSlotsTest, EachWriteCountsTheCommandsItCarries) {
  ScriptedRunner r;
  ready_and_warm(r);
  const std::uint64_t writes = r.counters().writes.load();
  const std::uint64_t written = r.counters().commands_written.load();
  r.get("a");  // written inline by the caller
  EXPECT_EQ(r.counters().writes.load() - writes, 1u);
  EXPECT_EQ(r.counters().commands_written.load() - written, 1u);
  r.feed(bulk("1"));
  r.inline_capacity = 0;
  r.get("b");  // the socket takes none of it inline: the I/O thread writes it
  r.get("c");
  r.get("d");
  r.complete_write();  // b
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, get_bytes("c") + get_bytes("d"));
  r.complete_write();
  EXPECT_EQ(r.counters().writes.load() - writes, 2u);  // a; c and d (b's send took nothing)
  EXPECT_EQ(r.counters().commands_written.load() - written, 3u);
}

TEST(ConnectionSlotsTest, WaitingToReconnectReconnectNowTriesAtOnce) {
  Config config;
  config.reconnect_base_delay = 6s;  // a backoff grown long while the server was down
  ScriptedRunner r(config);
  r.ready();
  r.server_closes();
  ASSERT_EQ(r.machine.state(), ConnectionState::Reconnecting);
  ASSERT_EQ(r.connects.size(), 1u);
  const std::uint64_t waiting = r.machine.generation();
  r.perform(r.machine.reconnect_now(r.now));
  EXPECT_EQ(r.connects.size(), 2u);  // now, not in 6 s
  EXPECT_EQ(r.machine.state(), ConnectionState::Connecting);
  EXPECT_NE(r.machine.generation(), waiting);  // the backoff's timer is stale
  EXPECT_EQ(r.timers.at(IoTimer::Connect).at, r.now + config.connect_timeout);
  r.connected();
  r.feed(handshake_replies(r.shared->config()));
  ASSERT_EQ(r.machine.state(), ConnectionState::Ready);
  // Ready (or connecting): nothing to cut short.
  const int closes = r.closes;
  r.perform(r.machine.reconnect_now(r.now));
  EXPECT_EQ(r.connects.size(), 2u);
  EXPECT_EQ(r.closes, closes);
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
}

}  // namespace
}  // namespace redmux::detail
