// The connection's rules, driven through scripted event sequences: each test here replays
// deterministically a situation the integration and fault tests can only reach through
// timing (a real server, a proxy, a clock).
#include "conn/connection_machine.hpp"

#include <gtest/gtest.h>

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
std::string select_bytes(int db) {
  return test::command_bytes({"SELECT", std::to_string(db)});
}

TEST(ConnectionMachineTest, StartConnectsHandshakesAndBecomesReady) {
  ScriptedRunner r;
  r.start();
  EXPECT_EQ(r.machine.state(), ConnectionState::Connecting);
  ASSERT_EQ(r.connects.size(), 1u);
  EXPECT_EQ(r.connects[0].to_string(), "10.0.0.1:6379");
  EXPECT_EQ(r.timers.at(IoTimer::Connect).at, r.now + 5000ms);  // connectTimeout bounds it
  r.connected();
  EXPECT_EQ(r.machine.state(), ConnectionState::Handshaking);
  EXPECT_TRUE(r.handshake_sent.starts_with("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"));
  EXPECT_TRUE(r.reading);
  r.feed(handshake_replies(r.shared->config()));
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  EXPECT_EQ(r.machine.server().identity().version, "7.0.0");
  EXPECT_EQ(r.machine.server().databases(), 16);
  ASSERT_TRUE(r.first_result.has_value());
  EXPECT_FALSE(*r.first_result) << r.first_result->message();
  EXPECT_EQ(r.timers.count(IoTimer::Connect), 0u);  // the attempt's bound is cancelled
  EXPECT_EQ(r.timers.at(IoTimer::Health).at, r.now + 1000ms);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, ConnectionEventKind::Connected);

  auto& call = r.get("k");
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, get_bytes("k"));
  r.complete_write();
  r.feed(bulk("v"));
  ASSERT_TRUE(call.state->ready());
  EXPECT_EQ(value_of(call), "v");
}

// A server still loading its dataset answers the handshake with loading:1: the connection
// waits (probing 100 ms, 200 ms … later) instead of becoming ready, and commands wait queued
// instead of failing with -LOADING.
TEST(ConnectionMachineTest, ALoadingReplyInTheHandshakeHoldsCommandsUntilTheServerIsLoaded) {
  ScriptedRunner r;
  r.start();
  r.connected();
  auto& call = r.get("k");
  r.feed(handshake_replies(r.shared->config(), /*loading=*/true));
  EXPECT_EQ(r.machine.state(), ConnectionState::Handshaking);
  EXPECT_EQ(r.counters().loading_waits.load(), 1u);
  EXPECT_EQ(r.timers.count(IoTimer::Connect), 0u);  // no connectTimeout while it waits
  EXPECT_EQ(r.timers.at(IoTimer::Health).at, r.now + 100ms);
  EXPECT_FALSE(r.writing.has_value());

  r.handshake_sent.clear();
  r.advance(100ms);
  EXPECT_EQ(r.handshake_sent, "*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n");
  EXPECT_EQ(r.timers.at(IoTimer::Connect).at, r.now + 5000ms);  // each probe is bounded
  r.feed(bulk("loading:1\r\n"));
  EXPECT_EQ(r.timers.at(IoTimer::Health).at, r.now + 200ms);
  r.advance(200ms);
  EXPECT_FALSE(call.state->ready());
  EXPECT_FALSE(r.writing.has_value());

  r.feed(bulk("loading:0\r\n"));
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  EXPECT_EQ(r.counters().loading_waits.load(), 1u);
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, get_bytes("k"));
  r.complete_write();
  r.feed(bulk("v"));
  EXPECT_EQ(value_of(call), "v");
}

// Sentinel moves a connection to a new primary while it is still in its handshake: the
// attempt starts over at the new endpoint at once — a fresh handshake, no failure counted,
// no backoff — and what the old server still sends belongs to a stale generation.
TEST(ConnectionMachineTest, ARetargetDuringTheHandshakeStartsAFreshAttemptAtOnce) {
  ScriptedRunner r;
  r.start();
  r.connected();
  auto& call = r.get("k");
  const std::uint64_t old_generation = r.machine.generation();
  r.feed("%1\r\n" + bulk("server") + bulk("redis"));  // HELLO answered; the rest pending
  const int closes = r.closes;

  r.perform(r.machine.retarget(Endpoint{"10.0.0.2", 6380, {}}, r.now));
  EXPECT_EQ(r.machine.state(), ConnectionState::Connecting);
  EXPECT_NE(r.machine.generation(), old_generation);
  EXPECT_EQ(r.closes, closes + 1);
  ASSERT_EQ(r.connects.size(), 2u);
  EXPECT_EQ(r.connects[1].to_string(), "10.0.0.2:6380");
  EXPECT_EQ(r.machine.describe_endpoint(), "10.0.0.2:6380");
  EXPECT_EQ(r.timers.at(IoTimer::Connect).at, r.now + 5000ms);  // an attempt, not a backoff
  EXPECT_EQ(r.counters().connection_failures.load(), 0u);
  for (const ConnectionEvent& event : r.events) {
    EXPECT_NE(event.kind, ConnectionEventKind::Failed);
  }

  r.handshake_sent.clear();
  r.connected();
  EXPECT_TRUE(r.handshake_sent.starts_with("*2\r\n$5\r\nHELLO\r\n"));  // round one again
  r.feed(handshake_replies(r.shared->config()));
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, get_bytes("k"));
  r.complete_write();
  r.feed(bulk("from the new primary"));
  EXPECT_EQ(value_of(call), "from the new primary");
}

// Sentinel moves a ready connection: the break is reported at the old server, and the next
// attempt, at the new one, is announced as made at once — no backoff scheduled and said.
TEST(ConnectionMachineTest, ARetargetOfAReadyConnectionReconnectsAtOnceAndSaysSo) {
  ScriptedRunner r;
  r.start();
  r.connected();
  r.feed(handshake_replies(r.shared->config()));
  ASSERT_EQ(r.machine.state(), ConnectionState::Ready);
  const std::string old_endpoint = r.machine.describe_endpoint();
  r.events.clear();

  r.perform(r.machine.retarget(Endpoint{"10.0.0.2", 6380, {}}, r.now));
  EXPECT_EQ(r.machine.state(), ConnectionState::Connecting);
  ASSERT_EQ(r.connects.size(), 2u);
  EXPECT_EQ(r.connects[1].to_string(), "10.0.0.2:6380");
  EXPECT_EQ(r.timers.at(IoTimer::Connect).at, r.now + 5000ms);  // an attempt, not a backoff
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].kind, ConnectionEventKind::Failed);
  EXPECT_EQ(r.events[0].endpoint, old_endpoint);
  EXPECT_EQ(r.events[1].kind, ConnectionEventKind::Reconnecting);
  EXPECT_EQ(r.events[1].endpoint, "10.0.0.2:6380");
  EXPECT_EQ(r.events[1].delay, 0ms);
}

// A command for database 1 makes the queue insert SELECT 1 before it. The connection breaks
// when the SELECT reached the socket but the command did not: the command is resent, and on
// the new connection (which starts on database 0) it is again preceded by SELECT 1; a later
// command for database 0 switches back.
TEST(ConnectionMachineTest, AReconnectWhileAnInsertedSelectIsInFlightKeepsCommandsOnTheirDatabase) {
  ScriptedRunner r;
  r.ready();
  r.get("warm-up");  // arms the deadline timer, so that the next command may go inline
  r.complete_write();
  r.feed(bulk("x"));
  r.inline_capacity = select_bytes(1).size();  // the socket takes the SELECT only
  auto& call = r.get("k1", 5000ms, /*db=*/1);
  EXPECT_EQ(r.take_wire(), get_bytes("warm-up") + select_bytes(1));
  ASSERT_TRUE(r.writing.has_value());  // the I/O thread writes the rest
  EXPECT_EQ(*r.writing, get_bytes("k1"));
  r.fail_write(0);
  EXPECT_EQ(r.machine.state(), ConnectionState::Reconnecting);
  EXPECT_FALSE(call.state->ready());  // never sent: resent, not failed
  EXPECT_EQ(r.counters().resent.load(), 1u);

  r.advance(2s);  // the backoff
  r.connected();
  r.feed(handshake_replies(r.shared->config()));
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, select_bytes(1) + get_bytes("k1"));
  r.complete_write();
  r.feed("+OK\r\n" + bulk("v1"));
  EXPECT_EQ(value_of(call), "v1");

  auto& back = r.get("k0", 5000ms, /*db=*/0);
  r.run_posted();
  if (r.writing) r.complete_write();
  EXPECT_EQ(r.take_wire(), select_bytes(1) + get_bytes("k1") + select_bytes(0) + get_bytes("k0"));
  r.feed("+OK\r\n" + bulk("v0"));
  EXPECT_EQ(value_of(back), "v0");
}

// Both the SELECT and the command were written when the connection broke: the command's
// outcome is unknown (never resent), and the next command for that database selects it
// again on the new connection.
TEST(ConnectionMachineTest, AfterABreakWithTheSelectAnsweredTheNextCommandSelectsAgain) {
  ScriptedRunner r;
  r.ready();
  auto& lost = r.get("k1", 5000ms, /*db=*/1);
  r.complete_write();
  r.feed("+OK\r\n");  // SELECT 1 answered, GET k1 not yet
  r.server_closes();
  ASSERT_TRUE(lost.state->ready());
  EXPECT_EQ(error_of(lost).code(), errc::outcome_unknown);
  r.advance(2s);
  r.connected();
  r.feed(handshake_replies(r.shared->config()));
  r.take_wire();
  auto& next = r.get("k2", 5000ms, /*db=*/1);
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, select_bytes(1) + get_bytes("k2"));
  r.complete_write();
  r.feed("+OK\r\n" + bulk("v2"));
  EXPECT_EQ(value_of(next), "v2");
}

// The write of a, b, c fails after the socket took a and part of b: a and b may have run
// (outcome unknown), c never reached the server and is resent — first on the new
// connection, ahead of d, queued after the break.
TEST(ConnectionMachineTest, ABreakAfterAPartialWriteResendsOnlyWhatTheSocketNeverTook) {
  ScriptedRunner r;
  r.start();
  r.connected();
  auto& a = r.get("a");
  auto& b = r.get("b");
  auto& c = r.get("c");
  r.feed(handshake_replies(r.shared->config()));
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, get_bytes("a") + get_bytes("b") + get_bytes("c"));
  r.fail_write(get_bytes("a").size() + 5);
  ASSERT_TRUE(a.state->ready());
  ASSERT_TRUE(b.state->ready());
  EXPECT_EQ(error_of(a).code(), errc::outcome_unknown);
  EXPECT_EQ(error_of(b).code(), errc::outcome_unknown);
  EXPECT_NE(error_of(b).message().find("it may or may not have run"), std::string::npos);
  EXPECT_FALSE(c.state->ready());
  EXPECT_EQ(r.counters().resent.load(), 1u);

  auto& d = r.get("d");
  r.advance(2s);
  r.connected();
  r.feed(handshake_replies(r.shared->config()));
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, get_bytes("c") + get_bytes("d"));
  r.complete_write();
  r.feed(bulk("C") + bulk("D"));
  EXPECT_EQ(value_of(c), "C");
  EXPECT_EQ(value_of(d), "D");
}

// A break while a write is still in progress: how much of it reached the socket is unknown,
// so every command of it counts as sent — none is resent, none is called "not sent".
TEST(ConnectionMachineTest, ABreakDuringAWriteCountsAllOfItAsPossiblySent) {
  ScriptedRunner r;
  r.start();
  r.connected();
  auto& a = r.get("a");
  auto& b = r.get("b");
  r.feed(handshake_replies(r.shared->config()));
  ASSERT_TRUE(r.writing.has_value());
  r.server_closes();
  ASSERT_TRUE(a.state->ready());
  ASSERT_TRUE(b.state->ready());
  EXPECT_EQ(error_of(a).code(), errc::outcome_unknown);
  EXPECT_EQ(error_of(b).code(), errc::outcome_unknown);
  EXPECT_EQ(r.counters().resent.load(), 0u);
}

// A broken connection stops being ready before anyone hears of the break: an event handler
// reacting to Failed, or a thread that sees the failure counted, never finds it ready, and
// under failFast a command submitted from that handler is refused at once.
TEST(ConnectionMachineTest, ABrokenConnectionIsNoLongerReadyWhenItsFailureIsReported) {
  Config config;
  config.backlog_policy = BacklogPolicy::FailFast;
  ScriptedRunner r(config);
  r.ready();
  auto& call = r.get("k");
  r.complete_write();
  std::optional<ConnectionState> state_at_failed;
  std::optional<Error> late_error_at_failed;
  r.shared->set_event_handler([&](const ConnectionEvent& event) {
    r.events.push_back(event);
    if (event.kind != ConnectionEventKind::Failed) return;
    state_at_failed = r.machine.state();
    EXPECT_EQ(r.counters().connection_failures.load(), 1u);
    const auto& late = r.get("late");
    if (late.state->ready()) late_error_at_failed = error_of(late);
  });
  r.server_closes();
  ASSERT_TRUE(state_at_failed.has_value());
  EXPECT_EQ(*state_at_failed, ConnectionState::Reconnecting);
  ASSERT_TRUE(late_error_at_failed.has_value());  // refused at once, not queued and failed later
  EXPECT_EQ(late_error_at_failed->code(), errc::disconnected);
  EXPECT_EQ(error_of(call).code(), errc::outcome_unknown);
  EXPECT_EQ(r.machine.state(), ConnectionState::Reconnecting);
}

// An inline write the socket took nothing of, and the connection breaks before the I/O
// thread takes over: the command never reached the server, so it is resent.
TEST(ConnectionMachineTest, AnInlineWriteTheSocketDidNotTakeIsResentAfterABreak) {
  ScriptedRunner r;
  r.ready();
  r.get("warm-up");
  r.complete_write();
  r.feed(bulk("x"));
  r.take_wire();
  r.inline_capacity = 0;
  r.defer_posts = true;
  auto& call = r.get("k");
  EXPECT_EQ(r.take_wire(), "");
  r.server_closes();
  EXPECT_FALSE(call.state->ready());
  EXPECT_EQ(r.counters().resent.load(), 1u);
  r.run_posted();  // the hand-over of the old generation changes nothing
  EXPECT_FALSE(r.writing.has_value());
  r.advance(2s);
  r.connected();
  r.feed(handshake_replies(r.shared->config()));
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, get_bytes("k"));
  r.complete_write();
  r.feed(bulk("v"));
  EXPECT_EQ(value_of(call), "v");
}

// The deadline passes while the reply is half read: the caller gets its timeout (saying the
// command was sent and how many bytes are unread), the command stays in flight, and its
// late reply is parsed and dropped, so the next caller still gets its own reply.
TEST(ConnectionMachineTest, ADeadlineWhileAReplyIsHalfReadFailsTheCallerAndLaterRepliesStillMatch) {
  ScriptedRunner r;
  r.ready();
  auto& slow = r.get("slow", 100ms);
  r.complete_write();
  r.feed("$10\r\nhello");
  r.facts.unread_bytes = 3;
  r.advance(100ms);
  ASSERT_TRUE(slow.state->ready());
  const Error& error = error_of(slow);
  EXPECT_EQ(error.code(), errc::timeout);
  EXPECT_NE(error.message().find("command was sent"), std::string::npos) << error.message();
  EXPECT_FALSE(error.never_ran());  // sent: it may have run
  EXPECT_FALSE(error.safe_to_retry());
  EXPECT_NE(error.message().find("sent-awaiting-reply=1"), std::string::npos);
  EXPECT_NE(error.message().find("bytes-unread=13"), std::string::npos) << error.message();
  EXPECT_EQ(r.counters().timeouts.load(), 1u);

  auto& next = r.get("next");
  if (r.writing) r.complete_write();
  r.feed("world\r\n" + bulk("mine"));
  EXPECT_EQ(value_of(next), "mine");
  EXPECT_EQ(error_of(slow).code(), errc::timeout);  // not overwritten
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
}

// A command that times out while the connection is not ready: what the socket or the read
// buffer holds then (the rest of a refused handshake's replies) is not a reply the I/O
// thread is late reading, so the message does not say so.
TEST(ConnectionMachineTest, ATimeoutWhileNotReadyReportsNoUnreadBytes) {
  ScriptedRunner r;
  r.start();
  r.connected();         // handshaking: never answered
  r.feed("-WRONGPASS");  // half a reply in the read buffer
  r.facts.unread_bytes = 208;
  auto& queued = r.get("k", 100ms);
  r.advance(100ms);
  ASSERT_TRUE(queued.state->ready());
  const Error& error = error_of(queued);
  EXPECT_EQ(error.code(), errc::timeout);
  EXPECT_NE(error.message().find("was still queued, not sent"), std::string::npos)
      << error.message();
  EXPECT_TRUE(error.never_ran());  // never written, and never written later
  EXPECT_TRUE(error.safe_to_retry());
  EXPECT_NE(error.message().find("bytes-unread=0,"), std::string::npos) << error.message();
}

// status().timeouts counts a timeout before the caller learns of it, in flight or queued:
// a caller reading the status after its TimeoutError finds its own timeout counted.
TEST(ConnectionMachineTest, ATimeoutIsCountedBeforeItsCallerIsTold) {
  const auto counted_when_told = [](ScriptedRunner& r, testing::Call& call) {
    auto seen = std::make_shared<std::uint64_t>(0);
    call.state->add_ref();  // the continuation's reference
    call.state->then([&r, seen](Result<std::string>) { *seen = r.counters().timeouts.load(); });
    return seen;
  };
  ScriptedRunner in_flight;
  in_flight.ready();
  auto& first = in_flight.get("first", 100ms);
  auto& second = in_flight.get("second", 100ms);
  if (in_flight.writing) in_flight.complete_write();
  const auto first_seen = counted_when_told(in_flight, first);
  const auto second_seen = counted_when_told(in_flight, second);
  in_flight.advance(100ms);
  EXPECT_EQ(*first_seen, 1u);
  EXPECT_EQ(*second_seen, 2u);

  ScriptedRunner queued;
  queued.start();  // never connected: the command stays queued
  auto& waiting = queued.get("waiting", 100ms);
  const auto waiting_seen = counted_when_told(queued, waiting);
  queued.advance(100ms);
  EXPECT_EQ(*waiting_seen, 1u);
}

Config fast_health() {
  Config config;
  config.heartbeat_interval = 100ms;
  config.async_timeout = 300ms;
  return config;
}

// A long reply arrives slowly: its caller timed out (it is overdue), and the health tick
// falls due many times meanwhile — but bytes keep coming, so the connection is alive. No
// PING is queued behind the reply and the connection is not replaced; once it is idle, the
// heartbeat goes out.
TEST(ConnectionMachineTest, AHeartbeatDueDuringALongReplyNeitherPingsNorDeclaresItDead) {
  ScriptedRunner r(fast_health());
  r.ready();
  auto& big = r.get("big", 300ms);
  r.complete_write();
  r.take_wire();
  const std::string value(1200, 'x');
  r.feed("$1200\r\n");
  for (std::size_t sent = 0; sent < value.size(); sent += 100) {
    r.advance(100ms);
    r.feed(value.substr(sent, 100));
  }
  ASSERT_TRUE(big.state->ready());
  EXPECT_EQ(error_of(big).code(), errc::timeout);  // at 300 ms
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  EXPECT_EQ(r.counters().dead_connections.load(), 0u);
  EXPECT_EQ(r.counters().heartbeats.load(), 0u);
  EXPECT_EQ(r.take_wire(), "");

  auto& after = r.get("after");
  if (r.writing) r.complete_write();
  r.feed("\r\n" + bulk("fine"));  // the end of the long reply, then the next one
  EXPECT_EQ(value_of(after), "fine");
  r.take_wire();
  r.advance(250ms);
  EXPECT_EQ(r.counters().heartbeats.load(), 1u);
  if (r.writing) r.complete_write();
  EXPECT_EQ(r.take_wire(), "*1\r\n$4\r\nPING\r\n");
}

// The same overdue command with nothing read for two asyncTimeouts: the peer is gone or
// frozen, so the connection is declared dead and replaced; the command is not resent.
TEST(ConnectionMachineTest, NothingReadForTwoTimeoutsWhileOverdueDeclaresTheConnectionDead) {
  ScriptedRunner r(fast_health());
  r.ready();
  auto& call = r.get("k", 300ms);
  r.complete_write();
  r.advance(550ms);
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);  // overdue, but not silent for long
  EXPECT_EQ(error_of(call).code(), errc::timeout);
  r.advance(50ms);  // the tick at 600 ms: nothing read for 2 × asyncTimeout
  EXPECT_EQ(r.machine.state(), ConnectionState::Reconnecting);
  EXPECT_EQ(r.counters().dead_connections.load(), 1u);
  EXPECT_EQ(error_of(call).code(), errc::timeout);
  const Error cause = r.last_failure();
  EXPECT_NE(cause.message().find("looks dead or half-open"), std::string::npos) << cause.message();
  EXPECT_EQ(r.counters().resent.load(), 0u);
}

// Under load the writer waits for replies, never for time: with 16 commands in flight, one
// new command waits for the next reply and then leaves.
TEST(ConnectionMachineTest, UnderLoadAFewNewCommandsWaitForTheNextRepliesNotForATimer) {
  ScriptedRunner r;
  r.start();
  r.connected();
  for (int i = 0; i < 16; ++i) r.get("k" + std::to_string(i));
  r.feed(handshake_replies(r.shared->config()));
  r.complete_write();
  EXPECT_EQ(r.machine.in_flight_count(), 16u);
  auto& late = r.get("late");
  EXPECT_FALSE(r.writing.has_value());  // held for the next replies
  EXPECT_TRUE(r.timers.count(IoTimer::Deadline) > 0);
  auto& hurried = r.get("hurried", 10ms);  // held too, and its deadline comes first
  r.advance(10ms);
  EXPECT_NE(error_of(hurried).message().find(
                "was still queued, not sent (held for the next replies: 16 commands were "
                "awaiting theirs)"),
            std::string::npos)
      << error_of(hurried).message();
  r.feed(bulk("v0"));
  ASSERT_TRUE(r.writing.has_value());
  EXPECT_EQ(*r.writing, get_bytes("late"));
  r.complete_write();
  std::string replies;
  for (int i = 1; i < 16; ++i) replies += bulk("v" + std::to_string(i));
  r.feed(replies + bulk("L"));
  EXPECT_EQ(value_of(late), "L");
}

TEST(ConnectionMachineTest, TheFirstSeriesGivesUpAfterConnectRetryAndSaysWhyEachAttemptFailed) {
  Config config;
  config.connect_retry = 2;
  ScriptedRunner r(config);
  r.start();
  for (int attempt = 1; attempt <= 3; ++attempt) {
    r.perform(r.machine.on_connect_failed("Connection refused", r.now));
    EXPECT_EQ(r.machine.state(), ConnectionState::Reconnecting);
    if (attempt < 3) {
      EXPECT_FALSE(r.first_result.has_value());
      const auto delay = r.timers.at(IoTimer::Connect).at - r.now;
      const auto base = config.reconnect_base_delay * (1 << (attempt - 1));
      EXPECT_GE(delay, base * 8 / 10) << attempt;
      EXPECT_LE(delay, base * 12 / 10) << attempt;
      r.advance(delay);
      EXPECT_EQ(r.machine.state(), ConnectionState::Connecting);
    }
  }
  ASSERT_TRUE(r.first_result.has_value());
  EXPECT_EQ(r.first_result->code(), errc::connection_failed);
  EXPECT_EQ(r.first_result->message(),
            "could not connect to 10.0.0.1:6379 in 3 attempts (connectRetry=2, "
            "connectTimeout=5000 ms); attempts 1–3: connecting to 10.0.0.1:6379 failed: "
            "Connection refused");
}

TEST(ConnectionMachineTest, AConnectTimeoutNamesTheStepThatTookTooLong) {
  Config config;
  config.connect_retry = 0;
  ScriptedRunner tls(config, Endpoint{"10.0.0.1", 6379, {}}, /*tls=*/true);
  tls.start();
  tls.connected();  // TCP is up; the TLS handshake never answers
  tls.advance(5000ms);
  ASSERT_TRUE(tls.first_result.has_value());
  EXPECT_EQ(tls.first_result->message(),
            "connecting to 10.0.0.1:6379 timed out after 5000 ms (TLS handshake; "
            "connectTimeout=5000); is this the server's TLS port (tls-port)?");

  ScriptedRunner plain(config);
  plain.start();
  plain.connected();
  plain.advance(5000ms);
  ASSERT_TRUE(plain.first_result.has_value());
  EXPECT_EQ(plain.first_result->message(),
            "connecting to 10.0.0.1:6379 timed out after 5000 ms (handshaking; "
            "connectTimeout=5000)");
}

TEST(ConnectionMachineTest, ShutdownFailsQueuedAndInFlightCommandsSayingWhetherTheyWereSent) {
  ScriptedRunner r;
  r.ready();
  auto& sent = r.get("sent");
  r.complete_write();
  r.defer_posts = true;  // the wake-up for the next command has not run yet
  auto& unsent = r.get("unsent");
  ASSERT_FALSE(r.writing.has_value());
  r.perform(r.machine.shutdown(r.now));
  EXPECT_EQ(r.machine.state(), ConnectionState::Closed);
  EXPECT_EQ(error_of(sent).code(), errc::outcome_unknown);
  EXPECT_EQ(error_of(unsent).code(), errc::shut_down);
  EXPECT_EQ(error_of(unsent).message(), "GET not sent: the multiplexer was closed");
  auto& late = r.get("late");
  EXPECT_EQ(error_of(late).message(), "GET not sent: the multiplexer was closed");
}

// Pushes never answer a command: they go to the push handler; a subscribe confirmation
// answers the SUBSCRIBE in flight, and the caller's reply behind it is still its own.
TEST(ConnectionMachineTest, PushesGoToTheHandlerAndConfirmTheSubscribeInFlight) {
  ScriptedRunner r;
  std::vector<std::string> pushes;
  r.machine.set_push_handler([&](NodeSpan push) { pushes.emplace_back(push[1].value); });
  r.ready();
  const Arg args[] = {Arg("SUBSCRIBE"), Arg("news")};
  EXPECT_NE(r.machine.submit(-1, args, pubsub_command("SUBSCRIBE", resp::PushKind::Subscribe, 1)),
            SubmissionQueue::Pushed::Closed);
  r.perform(r.machine.on_wake(r.now));
  r.complete_write();
  auto& call = r.get("k");
  if (r.writing) r.complete_write();
  EXPECT_EQ(r.machine.in_flight_count(), 2u);
  r.feed(">3\r\n" + bulk("message") + bulk("other") + bulk("hi"));  // not a confirmation
  EXPECT_FALSE(call.state->ready());
  r.feed(">3\r\n" + bulk("subscribe") + bulk("news") + ":1\r\n" + bulk("v"));
  EXPECT_EQ(value_of(call), "v");
  EXPECT_EQ(pushes, (std::vector<std::string>{"message", "subscribe"}));
  EXPECT_EQ(r.counters().pushes.load(), 2u);
}

}  // namespace
}  // namespace redmux::detail
