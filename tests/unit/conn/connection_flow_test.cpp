// The data path of ConnectionMachine (connection_flow.cpp) under scripted faults: what each
// kind of break, refusal or odd reply does to the commands queued and in flight.
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

void reconnect(ScriptedRunner& r) {
  r.advance(2s);  // the backoff
  r.connected();
  r.feed(handshake_replies(r.shared->config()));
}

TEST(ConnectionFlowTest, ABreakReportsFailedAndReconnectingThenRestored) {
  ScriptedRunner r;
  r.ready();
  r.events.clear();
  r.server_closes();
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].kind, ConnectionEventKind::Failed);
  EXPECT_EQ(r.events[0].error.message(), "10.0.0.1:6379 closed the connection");
  EXPECT_EQ(r.events[1].kind, ConnectionEventKind::Reconnecting);
  EXPECT_EQ(r.events[1].attempt, 1);
  EXPECT_GE(r.events[1].delay, 80ms);  // reconnectBaseDelay ± 20 %
  EXPECT_LE(r.events[1].delay, 120ms);
  EXPECT_EQ(r.timers.at(IoTimer::Connect).at, r.now + r.events[1].delay);
  reconnect(r);
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.events[2].kind, ConnectionEventKind::Restored);
  EXPECT_EQ(r.counters().reconnects.load(), 1u);
  EXPECT_EQ(r.counters().connection_failures.load(), 1u);
}

// A reply cut by a break is never delivered truncated, and the next connection parses
// afresh: the half reply is not glued to the new handshake's first reply.
TEST(ConnectionFlowTest, AReplyCutByABreakIsNeverDeliveredAndTheNextConnectionParsesAfresh) {
  ScriptedRunner r;
  r.ready();
  auto& big = r.get("big");
  r.complete_write();
  r.feed("$10\r\nhello");
  r.server_closes();
  ASSERT_TRUE(big.state->ready());
  EXPECT_EQ(error_of(big).code(), errc::outcome_unknown);
  EXPECT_EQ(r.last_failure().message(),
            "10.0.0.1:6379 closed the connection; a reply was cut short (10 bytes of it had "
            "arrived)");
  reconnect(r);
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
}

// A TLS port closes a plain connection at its first bytes: the error says what to change.
TEST(ConnectionFlowTest, APlainConnectionClosedInTheHandshakeAsksWhetherItIsATlsPort) {
  ScriptedRunner r;
  r.start();
  r.connected();
  r.server_closes();
  EXPECT_EQ(r.last_failure().message(),
            "10.0.0.1:6379 closed the connection during the handshake: is this a TLS port? set "
            "ssl=true (or use rediss://)");
  EXPECT_EQ(r.machine.last_failure(), r.last_failure().message());
}

// With abortConnect=false a connection that cannot be made shows only as timeouts: they say
// why its last attempt failed.
TEST(ConnectionFlowTest, ATimeoutWhileNotReadySaysWhyTheLastAttemptFailed) {
  ScriptedRunner r;
  r.start();
  r.perform(r.machine.on_connect_failed("Connection refused", r.now));
  auto& call = r.get("k", 100ms);
  r.advance(100ms);
  const std::string message = error_of(call).message();
  EXPECT_NE(message.find("command was still queued, not sent"), std::string::npos) << message;
  EXPECT_NE(message.find(". The connection is not ready; its last attempt failed: connecting to "
                         "10.0.0.1:6379 failed: Connection refused."),
            std::string::npos)
      << message;
  EXPECT_EQ(r.machine.last_failure(), "connecting to 10.0.0.1:6379 failed: Connection refused");
}

// READONLY (or MASTERDOWN) says the server may have been demoted: one ROLE probe goes out at
// once — not one per refusal — and its answer updates the role and runs the role hook.
TEST(ConnectionFlowTest, AReadonlyReplyAsksTheServerItsRoleOnce) {
  Config config;
  config.replica_health_check = false;  // ROLE (INFO replication: replica_probe_test.cpp)
  ScriptedRunner r(config);
  int role_changes = 0;
  r.machine.set_role_hook([&] { ++role_changes; });
  r.ready();
  r.defer_posts = true;  // both commands leave in one write
  auto& a = r.get("a");
  auto& b = r.get("b");
  r.run_posted();
  r.complete_write();
  const std::string readonly = "-READONLY You can't write against a read only replica.\r\n";
  r.feed(readonly + readonly);
  EXPECT_EQ(error_of(a).code(), errc::server_error);
  EXPECT_EQ(error_of(b).code(), errc::server_error);
  if (r.writing) r.complete_write();
  EXPECT_EQ(r.take_wire(),
            "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n"
            "*1\r\n$4\r\nROLE\r\n");
  EXPECT_FALSE(r.machine.server().is_replica());
  r.feed("*5\r\n" + bulk("slave") + bulk("10.0.0.9") + ":6379\r\n" + bulk("connected") + ":42\r\n");
  EXPECT_TRUE(r.machine.server().is_replica());
  EXPECT_EQ(r.machine.server().identity().role, "replica");
  EXPECT_EQ(role_changes, 1);
}

// A replica that lost its primary refuses reads with MASTERDOWN without running them. The
// server is then known to refuse stale reads (MuxCore keeps the bytes of PreferReplica reads
// sent to it from then on), and a PreferReplica read that kept its bytes goes to the redirect
// hook, which sends it elsewhere; a DemandReplica read, and one without its bytes, get the
// refusal, safe to retry.
TEST(ConnectionFlowTest, AMasterDownReplyHandsOnlyAPreferReplicaReadThatKeptItsBytesOn) {
  Config config;
  config.replica_health_check = false;
  ScriptedRunner r(config);
  std::vector<std::string> handed;
  r.machine.set_redirect_hook([&](std::string_view reply, const PendingCommand& command) {
    EXPECT_EQ(reply.rfind("MASTERDOWN", 0), 0u) << reply;
    handed.push_back(command.state->retained_command);
    command.state->release();  // the copy sent on would own the connection's reference
    return true;
  });
  r.ready();
  r.defer_posts = true;  // the three leave in one write
  auto& kept = r.get("a", 5000ms, -1, ReplicaUse::Prefer, /*keep_bytes=*/true);
  auto& demanded = r.get("b", 5000ms, -1, ReplicaUse::Demand, /*keep_bytes=*/false);
  auto& unkept = r.get("c", 5000ms, -1, ReplicaUse::Prefer, /*keep_bytes=*/false);
  r.run_posted();
  r.complete_write();
  EXPECT_FALSE(r.machine.server().refuses_stale_reads());
  const std::string down =
      "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n";
  r.feed(down + down + down);
  EXPECT_TRUE(r.machine.server().refuses_stale_reads());
  EXPECT_EQ(handed, std::vector<std::string>{"*2\r\n$3\r\nGET\r\n$1\r\na\r\n"});
  EXPECT_FALSE(kept.state->ready());  // handed on, not completed here
  for (const testing::Call* refused : {&demanded, &unkept}) {
    const Error error = error_of(*refused);
    EXPECT_EQ(error.code(), errc::server_error);
    EXPECT_TRUE(error.safe_to_retry()) << error.message();
    EXPECT_EQ(error.message().rfind("MASTERDOWN", 0), 0u) << error.message();
  }
  EXPECT_EQ(r.counters().redirects.load(), 1u);
  // The refusals asked the server its role, once; answered, nothing is left in flight.
  if (r.writing) r.complete_write();
  EXPECT_EQ(r.take_wire(),
            "*2\r\n$3\r\nGET\r\n$1\r\na\r\n*2\r\n$3\r\nGET\r\n$1\r\nb\r\n"
            "*2\r\n$3\r\nGET\r\n$1\r\nc\r\n*1\r\n$4\r\nROLE\r\n");
  r.feed("*5\r\n" + bulk("slave") + bulk("10.0.0.9") + ":6379\r\n" + bulk("connected") + ":42\r\n");
  EXPECT_TRUE(r.machine.server().is_replica());
}

// The SELECT redmux inserted for a database switch fails: commands written behind it may
// have run against the previous database, so the connection is reset rather than trusted.
TEST(ConnectionFlowTest, AFailingInsertedSelectResetsTheConnection) {
  ScriptedRunner r;
  std::vector<Error> reported;
  r.shared->set_error_handler([&](const Error& e) { reported.push_back(e); });
  r.ready();
  auto& call = r.get("k", 5000ms, /*db=*/7);
  r.complete_write();
  r.feed("-ERR DB index is out of range\r\n");
  EXPECT_EQ(r.machine.state(), ConnectionState::Reconnecting);
  ASSERT_TRUE(call.state->ready());
  EXPECT_EQ(error_of(call).code(), errc::outcome_unknown);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_NE(reported[0].message().find("DB index is out of range"), std::string::npos);
  EXPECT_EQ(r.counters().fire_and_forget_errors.load(), 0u);  // redmux's own command
  EXPECT_EQ(r.last_failure().message(),
            "a SELECT redmux sent to switch databases failed on 10.0.0.1:6379 (ERR DB index "
            "is out of range); commands written behind it may have run against the previous "
            "database, so the connection was reset");
}

TEST(ConnectionFlowTest, AReplyNobodyWaitsForIsAProtocolErrorThatResetsTheConnection) {
  ScriptedRunner r;
  r.ready();
  r.feed("+OK\r\n");
  EXPECT_EQ(r.machine.state(), ConnectionState::Reconnecting);
  const Error cause = r.last_failure();
  EXPECT_EQ(cause.code(), errc::protocol_error);
  EXPECT_EQ(cause.message(), "a reply arrived from 10.0.0.1:6379 with no command waiting for it");
}

TEST(ConnectionFlowTest, BytesThatAreNotRespResetTheConnectionSayingWhy) {
  ScriptedRunner r;
  r.ready();
  auto& call = r.get("k");
  r.complete_write();
  r.feed("?garbage\r\n");
  EXPECT_EQ(r.machine.state(), ConnectionState::Reconnecting);
  EXPECT_EQ(error_of(call).code(), errc::outcome_unknown);
  const Error cause = r.last_failure();
  EXPECT_EQ(cause.code(), errc::protocol_error);
  EXPECT_TRUE(cause.message().starts_with("reply from 10.0.0.1:6379 is not valid RESP: "))
      << cause.message();
}

// backlogPolicy=failFast: while the connection is down a command fails at once, and those
// queued when it breaks fail too — never held for a reconnect.
TEST(ConnectionFlowTest, UnderFailFastNothingWaitsForAReconnect) {
  Config config;
  config.backlog_policy = BacklogPolicy::FailFast;
  ScriptedRunner r(config);
  r.start();
  auto& early = r.get("early");
  ASSERT_TRUE(early.state->ready());
  EXPECT_EQ(error_of(early).code(), errc::disconnected);
  EXPECT_EQ(error_of(early).message(),
            "GET not sent: 10.0.0.1:6379 is not connected (connecting) and backlogPolicy=failFast");
  r.connected();
  r.feed(handshake_replies(r.shared->config()));
  auto& sent = r.get("sent");
  auto& queued = r.get("queued");  // behind the write in progress
  r.server_closes();
  EXPECT_EQ(error_of(sent).code(), errc::outcome_unknown);
  EXPECT_EQ(error_of(queued).code(), errc::disconnected);
  EXPECT_EQ(error_of(queued).message(),
            "GET not sent: 10.0.0.1:6379 closed the connection (backlogPolicy=failFast)");
}

// A leased dedicated connection (a transaction's) carries nothing over: what was queued or
// never written fails as not sent, nothing is resent on the next connection.
TEST(ConnectionFlowTest, WithoutCarryOverNothingIsResentOrHeldAcrossABreak) {
  ScriptedRunner r;
  r.machine.set_carry_over(false);
  r.start();
  r.connected();
  auto& written = r.get("written");
  r.feed(handshake_replies(r.shared->config()));
  auto& queued = r.get("queued");
  r.fail_write(0);  // "written" never reached the socket
  EXPECT_EQ(error_of(written).code(), errc::not_sent);
  EXPECT_EQ(error_of(queued).code(), errc::not_sent);
  EXPECT_NE(
      error_of(queued).message().find("(dedicated connection: not carried over to a new one)"),
      std::string::npos);
  EXPECT_EQ(r.counters().resent.load(), 0u);
  reconnect(r);
  EXPECT_FALSE(r.writing.has_value());
}

// The idle PING goes unanswered (the server froze while nothing else was in flight): the
// heartbeat is what finds the connection dead.
TEST(ConnectionFlowTest, AnUnansweredHeartbeatFindsAFrozenIdleConnection) {
  Config config;
  config.heartbeat_interval = 100ms;
  config.async_timeout = 300ms;
  ScriptedRunner r(config);
  r.ready();
  r.advance(100ms);
  EXPECT_EQ(r.counters().heartbeats.load(), 1u);
  if (r.writing) r.complete_write();
  EXPECT_EQ(r.take_wire(), "*1\r\n$4\r\nPING\r\n");
  // The PING was written inline; the tick at 200 ms takes it into the pipeline.
  r.advance(600ms);
  EXPECT_EQ(r.machine.state(), ConnectionState::Ready);
  r.advance(100ms);  // overdue, and nothing read for 2 × 300 ms since the PING was in flight
  EXPECT_EQ(r.counters().dead_connections.load(), 1u);
  EXPECT_NE(r.machine.state(), ConnectionState::Ready);
}

}  // namespace
}  // namespace redmux::detail
