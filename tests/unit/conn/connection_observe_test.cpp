// What a connection tells its Observer, under a scripted runner and a scripted clock: each
// command's phases (created, written, reply read, delivered) into the histograms and the
// command hook, its outcome (value, server error, timeout, connection error), each write to
// the write hook, and the log records; and that nothing is recorded when nothing watches.
#include <gtest/gtest.h>

#include "conn/connection_machine.hpp"
#include "scripted_runner.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;
using testing::bulk;
using testing::error_of;
using testing::ScriptedRunner;
using testing::value_of;

// The clock the Observer reads for "delivered": the test sets it.
Clock::time_point delivered_at;
Clock::time_point read_delivered_at() {
  return delivered_at;
}

Config observed_config() {
  Config config;
  config.latency_histograms = true;
  return config;
}

struct Seen {
  std::vector<CommandEvent> commands;
  std::vector<std::string> names;  // the events' views do not outlive the call
  std::vector<std::string> errors;
  std::vector<WriteEvent> writes;
};

/// Ready, with one command written and answered: the next ones a caller writes inline.
void ready_and_warm(ScriptedRunner& r) {
  r.shared->observer().set_clock(&read_delivered_at);
  delivered_at = r.now;
  r.ready();
  auto& warm = r.get("warm-up");
  r.complete_write();
  r.feed(bulk("x"));
  EXPECT_EQ(value_of(warm), "x");
  r.take_wire();
}

void watch(ScriptedRunner& r, Seen& seen) {
  r.shared->observer().set_clock(&read_delivered_at);
  r.shared->observer().set_command_hook([&seen](const CommandEvent& event) {
    seen.commands.push_back(event);
    seen.names.emplace_back(event.operation_name);
    seen.errors.emplace_back(event.response_status_code);
  });
  r.shared->observer().set_write_hook([&seen](const WriteEvent& e) { seen.writes.push_back(e); });
}

TEST(ConnectionObserveTest, EachPhaseComesFromTheEventThatEndedIt) {
  ScriptedRunner r(observed_config());
  Seen seen;
  ready_and_warm(r);
  watch(r, seen);
  r.inline_capacity = 0;  // the I/O thread writes: b first, then c and d in one write
  const Clock::time_point created = r.now;
  auto& b = r.get("b");
  auto& c = r.get("c");
  auto& d = r.get("d");
  r.advance(3ms);
  r.complete_write();  // b; c and d's write starts now
  const Clock::time_point written = r.now;
  r.advance(2ms);
  r.complete_write();
  r.advance(5ms);
  delivered_at = r.now + 1ms;
  r.feed(bulk("1") + bulk("2") + bulk("3"));
  EXPECT_EQ(value_of(b), "1");
  EXPECT_EQ(value_of(c), "2");
  EXPECT_EQ(value_of(d), "3");
  ASSERT_EQ(seen.commands.size(), 3u);
  const CommandEvent& event = seen.commands[1];  // c
  EXPECT_EQ(seen.names[1], "GET");
  EXPECT_EQ(event.outcome, CommandOutcome::Value);
  EXPECT_EQ(event.server_port, 6379);
  EXPECT_EQ(event.db_namespace, 0);
  EXPECT_EQ(event.bytes_written, std::string("*2\r\n$3\r\nGET\r\n$1\r\nc\r\n").size());
  EXPECT_EQ(event.bytes_read, bulk("2").size());
  EXPECT_EQ(event.phases.created, created);
  EXPECT_EQ(event.phases.written, written);
  EXPECT_EQ(event.phases.reply_read, created + 10ms);
  EXPECT_EQ(event.phases.delivered, created + 11ms);
  // The histograms: the warm-up GET (0 ms) and these three, 10 ms to reply and 11 ms until
  // delivered (the median within a bucket's width).
  const Latencies latencies = r.shared->observer().latencies();
  const LatencyStats* get = latencies.command("GET");
  ASSERT_NE(get, nullptr);
  EXPECT_EQ(get->to_reply.count(), 4u);
  EXPECT_EQ(get->to_reply.max(), 10ms);
  EXPECT_EQ(get->to_delivery.max(), 11ms);
  EXPECT_GE(get->to_reply.percentile(0.5), 10ms);
  EXPECT_LE(get->to_reply.percentile(0.5), 10ms * 1.125);
  const LatencyStats* endpoint = latencies.endpoint("10.0.0.1:6379");
  ASSERT_NE(endpoint, nullptr);
  EXPECT_EQ(endpoint->to_delivery.count(), 4u);
  // The writes: b's (handed over by its caller) and c + d's by the I/O thread.
  ASSERT_EQ(seen.writes.size(), 2u);
  EXPECT_TRUE(seen.writes[0].from_caller);
  EXPECT_EQ(seen.writes[0].batch_size, 1u);
  EXPECT_FALSE(seen.writes[1].from_caller);
  EXPECT_EQ(seen.writes[1].batch_size, 2u);
  EXPECT_EQ(seen.writes[1].at, written);
  // The connection's own counts, for status().
  const ConnectionMachine::Activity activity = r.machine.activity();
  EXPECT_EQ(activity.last_read, r.now);
  EXPECT_EQ(activity.last_write, written + 2ms);
  EXPECT_GE(activity.writes, 2u);
}

TEST(ConnectionObserveTest, ACommandItsCallerWroteWasWrittenWhenItWasCreated) {
  ScriptedRunner r(observed_config());
  Seen seen;
  ready_and_warm(r);
  watch(r, seen);
  const Clock::time_point created = r.now;
  auto& a = r.get("a");  // written inline by the caller
  r.advance(4ms);
  delivered_at = r.now;
  r.feed(bulk("x"));
  EXPECT_EQ(value_of(a), "x");
  ASSERT_EQ(seen.commands.size(), 1u);
  EXPECT_EQ(seen.commands[0].phases.written, created);
  EXPECT_EQ(seen.commands[0].phases.reply_read, created + 4ms);
}

TEST(ConnectionObserveTest, ServerErrorsTimeoutsAndBreaksAreReportedWithTheirKind) {
  ScriptedRunner r(observed_config());
  Seen seen;
  ready_and_warm(r);
  watch(r, seen);
  auto& wrong = r.get("list");
  delivered_at = r.now;
  r.feed("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT_EQ(error_of(wrong).code(), errc::server_error);
  ASSERT_EQ(seen.commands.size(), 1u);
  EXPECT_EQ(seen.commands[0].outcome, CommandOutcome::ServerError);
  EXPECT_EQ(seen.errors[0], "WRONGTYPE");

  auto& slow = r.get("slow", 100ms);
  r.advance(100ms);
  EXPECT_EQ(error_of(slow).code(), errc::timeout);
  ASSERT_EQ(seen.commands.size(), 2u);
  EXPECT_EQ(seen.commands[1].outcome, CommandOutcome::Timeout);
  EXPECT_EQ(seen.commands[1].error_type, "timeout");

  r.feed(bulk("late"));  // the timed-out command's reply: skipped, not reported again
  EXPECT_EQ(seen.commands.size(), 2u);
  r.inline_capacity = 0;
  auto& cut = r.get("cut");  // written when the connection breaks: outcome unknown
  while (r.writing) r.complete_write();
  EXPECT_NE(r.take_wire().find("cut"), std::string::npos);
  r.server_closes();
  ASSERT_TRUE(cut.state->ready());
  ASSERT_EQ(seen.commands.size(), 3u);
  EXPECT_EQ(seen.commands[2].outcome, CommandOutcome::ConnectionError);
  EXPECT_EQ(seen.commands[2].error_type, "connection_error");
  // Only the replies that came in time are in the histograms (the warm-up's, WRONGTYPE).
  const Latencies latencies = r.shared->observer().latencies();
  EXPECT_EQ(latencies.command("GET")->to_reply.count(), 2u);
}

TEST(ConnectionObserveTest, NothingWatchingNothingIsRecorded) {
  ScriptedRunner r;  // latencyHistograms off, no hook
  ready_and_warm(r);
  auto& a = r.get("a");
  r.feed(bulk("x"));
  EXPECT_EQ(value_of(a), "x");
  EXPECT_FALSE(r.shared->observer().watching());
  EXPECT_TRUE(r.shared->observer().latencies().by_command.empty());
  EXPECT_TRUE(r.shared->observer().latencies().by_endpoint.empty());
}

TEST(ConnectionObserveTest, TheLogHearsOfConnectionEventsAndSlowCommandsWithTheirPhases) {
  Config config;
  config.slow_command_threshold = 5ms;
  ScriptedRunner r(config);
  r.shared->observer().set_clock(&read_delivered_at);
  std::vector<std::pair<LogLevel, std::string>> logged;
  r.shared->observer().set_log_hook(LogLevel::Info, [&](const LogRecord& record) {
    logged.emplace_back(record.level, std::string(record.message));
  });
  ready_and_warm(r);
  ASSERT_FALSE(logged.empty());
  EXPECT_EQ(logged[0], std::make_pair(LogLevel::Info, std::string("connection connected")));
  logged.clear();
  auto& fast = r.get("fast");
  delivered_at = r.now + 1ms;
  r.feed(bulk("x"));
  EXPECT_EQ(value_of(fast), "x");
  EXPECT_TRUE(logged.empty());  // under the threshold
  auto& slow = r.get("slow");
  r.advance(7ms);
  delivered_at = r.now + 1ms;
  r.feed(bulk("y"));
  EXPECT_EQ(value_of(slow), "y");
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].first, LogLevel::Warning);
  EXPECT_EQ(logged[0].second,
            "slow command: GET took 8000 µs (threshold 5000 µs): written by its caller at "
            "once, 7000 µs until its reply was read (the server and the network), 1000 µs until "
            "delivered; 23 bytes out, 7 bytes in");
  EXPECT_EQ(r.shared->observer().slow_commands(), 1u);
}

TEST(ConnectionObserveTest, SlowCommandsAreCountedWithoutALogHook) {
  Config config;
  config.slow_command_threshold = 5ms;
  ScriptedRunner r(config);  // no hook of any kind
  r.shared->observer().set_clock(&read_delivered_at);
  ready_and_warm(r);
  // A GET whose reply comes `after` and is delivered 1 ms later.
  const auto get_taking = [&r](std::chrono::milliseconds after) {
    auto& get = r.get("k");
    r.advance(after);
    delivered_at = r.now + 1ms;
    r.feed(bulk("v"));
    EXPECT_EQ(value_of(get), "v");
  };
  get_taking(0ms);
  get_taking(7ms);
  EXPECT_EQ(r.shared->observer().slow_commands(), 1u);
  // A log hook above Warning logs nothing, and the count goes on.
  r.shared->observer().set_log_hook(LogLevel::Error, [](const LogRecord&) { FAIL(); });
  get_taking(7ms);
  EXPECT_EQ(r.shared->observer().slow_commands(), 2u);
}

}  // namespace
}  // namespace redmux::detail
