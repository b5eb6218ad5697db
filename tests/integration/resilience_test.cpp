// Resilience against a real redis-server: connection events, the idle heartbeat, a frozen
// server declared dead and replaced, automatic resends after a break (never-written, and
// written-but-retryable commands), connect errors that list every attempt, and the server
// states LOADING, BUSY and READONLY. The fault-injection proxy suite (tests/fault) covers
// network faults; these tests use only signals to the server.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/ports.hpp"
#include "support/recorder.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;
using test::wait_until;

class EventLog : public test::Recorder<ConnectionEvent> {
 public:
  void attach(Multiplexer& mux) {
    mux.on_connection_event([this](const ConnectionEvent& event) { add(event); });
  }
  std::size_t count(ConnectionEventKind kind) const {
    return count_if([kind](const ConnectionEvent& event) { return event.kind == kind; });
  }
};

TEST(ResilienceTest, EventsReportFailureReconnectingAndRestore) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",reconnectBaseDelay=20ms");
  EventLog log;
  log.attach(*mux);
  Database db = mux->database();
  EXPECT_EQ(db.incr("n").get(), 1);
  server.kill();
  ASSERT_TRUE(wait_until([&] { return log.count(ConnectionEventKind::Failed) >= 1; }));
  ASSERT_TRUE(wait_until([&] { return log.count(ConnectionEventKind::Reconnecting) >= 1; }));
  EXPECT_FALSE(mux->is_connected());
  server.restart();
  ASSERT_TRUE(wait_until([&] { return log.count(ConnectionEventKind::Restored) == 1; }, 15s));
  EXPECT_EQ(db.incr("n").get(), 1);  // a fresh server: the command went to it
  const auto events = log.all();
  EXPECT_EQ(events.front().kind, ConnectionEventKind::Failed);
  EXPECT_EQ(events.front().endpoint, server.address());
  EXPECT_NE(events.front().error.message().find(server.address()), std::string::npos)
      << events.front().error.message();
  for (const ConnectionEvent& event : events) {
    if (event.kind == ConnectionEventKind::Reconnecting) {
      EXPECT_GT(event.delay.count(), 0);
      EXPECT_GE(event.attempt, 1);
    }
  }
  const MultiplexerStatus status = mux->status();
  EXPECT_EQ(status.reconnects, 1u);
  EXPECT_GE(status.connection_failures, 1u);
  EXPECT_NE(mux->status_text().find("connection-failures="), std::string::npos);
}

// A read buffer grown by large replies is given back after a health tick that saw none,
// while the connection's read is in progress: the read must land in memory that is still
// the buffer. Rounds of large GETs, each followed by three heartbeats (quiet ticks: from the
// second on a tick finds the buffer too large, and after its heartbeat's reply is read the
// buffer is given back):
// every value arrives whole and the connection never breaks.
TEST(ResilienceTest, LargeRepliesStayWholeAcrossTheTicksThatGiveTheirBufferBack) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",heartbeatInterval=20ms");
  Database db = mux->database();
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(round);
    std::string value(3 * 1024 * 1024 + 5, '\0');
    for (std::size_t i = 0; i < value.size(); ++i) {
      value[i] = static_cast<char>('a' + (i * 7 + i / 26 + round) % 26);
    }
    ASSERT_TRUE(db.set("large", value).get());
    std::vector<Future<std::optional<std::string>>> gets;
    for (int i = 0; i < 4; ++i) gets.push_back(db.get("large"));
    for (auto& get : gets) {
      const std::optional<std::string> got = get.get();
      ASSERT_TRUE(got.has_value());
      EXPECT_TRUE(*got == value) << "a value of " << got->size() << " bytes differs";
    }
    const std::uint64_t heartbeats = mux->status().heartbeats;
    ASSERT_TRUE(wait_until([&] { return mux->status().heartbeats >= heartbeats + 3; }, 5s));
    EXPECT_EQ(db.ping().get(), "PONG");
  }
  const MultiplexerStatus status = mux->status();
  EXPECT_EQ(status.connection_failures, 0u);
  EXPECT_EQ(status.reconnects, 0u);
}

// A large write the server ends by closing the connection (here: a bulk over
// proto-max-bulk-len, refused at its header) is cut off for good. The rest of the value must
// never reach the connection that replaces it, where the server would read it as commands:
// here, lines of "INCR injected". Before the fix, a step of the write still under way went
// on over the new socket once it connected, and the server ran thousands of those INCRs.
TEST(ResilienceTest, TheRestOfAWriteCutOffByABreakNeverReachesTheNextConnection) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",reconnectBaseDelay=1ms,asyncTimeout=20000");
  Database db = mux->database();
  server.cli({"CONFIG", "SET", "proto-max-bulk-len", "1mb"});
  std::string value;
  value.reserve(96u << 20);
  while (value.size() < (96u << 20)) value += "INCR injected\r\n";
  for (int round = 0; round < 3; ++round) {
    const Result<bool> set = db.set("victim", value).result();
    ASSERT_FALSE(set) << "the server took a bulk over proto-max-bulk-len";
    // The server's refusal, or the reset of the write it closed the connection on.
    EXPECT_TRUE(set.error().code() == errc::server_error ||
                set.error().code() == errc::outcome_unknown)
        << set.error().message();
    ASSERT_TRUE(db.ping().get().size() > 0);  // reconnected
  }
  EXPECT_EQ(server.cli({"GET", "injected"}), "") << "bytes of the value ran as commands";
  EXPECT_EQ(server.cli({"EXISTS", "victim"}), "0");
}

TEST(ResilienceTest, IdleConnectionIsPingedEveryHeartbeatInterval) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",heartbeatInterval=50ms");
  // Counted as each PING is queued, the next only once the last was answered: at 4, three
  // have reached the server.
  ASSERT_TRUE(wait_until([&] { return mux->status().heartbeats >= 4; }, 5s));
  // The server saw them (PING calls in its command statistics).
  const std::string stats = server.cli({"INFO", "commandstats"});
  const auto at = stats.find("cmdstat_ping:calls=");
  ASSERT_NE(at, std::string::npos) << stats;
  EXPECT_GE(std::stoll(stats.substr(at + 19)), 3);
  // Busy connections are not pinged: heartbeats only fill silence.
  auto quiet = Multiplexer::connect(server.address() + ",heartbeatInterval=0");
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(quiet->status().heartbeats, 0u);
}

TEST(ResilienceTest, FrozenServerIsDeclaredDeadAndTheConnectionReplaced) {
  RedisServer server;
  auto mux =
      Multiplexer::connect(server.address() +
                           ",asyncTimeout=300ms,heartbeatInterval=100ms,connectTimeout=300ms,"
                           "reconnectBaseDelay=20ms,reconnectMaxDelay=200ms");
  Database db = mux->database();
  EXPECT_TRUE(db.set("k", "v").get());
  server.pause();
  const auto paused_at = std::chrono::steady_clock::now();
  // Documented bound: 3 × heartbeatInterval + 2 × asyncTimeout (900 ms here) plus scheduling.
  ASSERT_TRUE(wait_until([&] { return mux->status().dead_connections >= 1; }, 10s))
      << mux->status_text();
  const auto detected_after = std::chrono::steady_clock::now() - paused_at;
  EXPECT_LT(detected_after, 5s);
  EXPECT_FALSE(mux->is_connected());
  server.resume();
  ASSERT_TRUE(wait_until([&] { return mux->is_connected(); }, 10s)) << mux->status_text();
  EXPECT_EQ(db.get("k").get(), std::optional<std::string>("v"));
}

// A script that runs longer than two asyncTimeouts holds its connection silent, as a frozen
// server would: the connection is replaced all the same, but the cause names the script as
// what may be keeping the server busy, and how to end it.
TEST(ResilienceTest, AConnectionSilentBehindALongScriptIsReplacedWithTheScriptNamed) {
  // Runs for 1.5 s by the server's clock.
  constexpr const char* kScript =
      "local t = redis.call('TIME') local until_us = t[1] * 1000000 + t[2] + 1500000 "
      "repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= until_us return 1";
  test::ServerOptions options;
  options.args = {"--busy-reply-threshold", "50"};
  RedisServer server(options);
  auto mux = Multiplexer::connect(server.address() +
                                  ",asyncTimeout=300ms,heartbeatInterval=100ms,"
                                  "reconnectBaseDelay=20ms,reconnectMaxDelay=100ms");
  std::mutex mutex;
  std::vector<std::string> failures;
  mux->on_connection_event([&](const ConnectionEvent& event) {
    if (event.kind != ConnectionEventKind::Failed) return;
    std::lock_guard lock(mutex);
    failures.push_back(event.error.message());
  });
  Database db = mux->database();
  Future<Reply> script = db.eval(kScript);
  ASSERT_TRUE(wait_until([&] { return mux->status().dead_connections >= 1; }, 10s))
      << mux->status_text();
  EXPECT_EQ(script.result().error().code(), errc::timeout);
  {
    std::lock_guard lock(mutex);
    ASSERT_FALSE(failures.empty());
    const std::string& cause = failures.front();
    EXPECT_NE(cause.find("the oldest command awaiting its reply is EVAL, issued "),
              std::string::npos)
        << cause;
    EXPECT_NE(cause.find("SCRIPT KILL or FUNCTION KILL"), std::string::npos) << cause;
  }
  // Once the script has ended the multiplexer serves again.
  ASSERT_TRUE(wait_until([&] { return db.set("after", "ok").result().has_value(); }, 10s))
      << mux->status_text();
  // With a call timeout of its own that it does not outlast, and nothing behind it timing
  // out, the script's connection is not taken for dead.
  const std::uint64_t dead_before = mux->status().dead_connections;
  EXPECT_EQ(db.eval<long long>(kScript, {}, {}, CallOptions(Flags::None, 5s)).get(), 1);
  EXPECT_EQ(mux->status().dead_connections, dead_before);
}

TEST(ResilienceTest, RetryableWriteIsResentOnceAfterTheBreakOthersAreOutcomeUnknown) {
  RedisServer server;
  auto mux = Multiplexer::connect(
      server.address() + ",asyncTimeout=20000ms,reconnectBaseDelay=20ms,heartbeatInterval=0");
  Database db = mux->database();
  EXPECT_EQ(db.incr("warm").get(), 1);
  server.pause();
  Future<long long> retryable = db.incr("retried", Flags::Retryable);
  Future<long long> plain = db.incr("plain");
  Future<std::optional<std::string>> read = db.get("warm");
  // All three are written (the socket takes them) and await replies that never come.
  ASSERT_TRUE(wait_until([&] { return mux->status().in_flight == 3; })) << mux->status_text();
  server.kill();  // the connection breaks after the commands were written
  server.restart();
  // The retryable INCR ran again on the new server (which starts empty): 1.
  EXPECT_EQ(retryable.get(), 1);
  Result<long long> plain_result = plain.result();
  ASSERT_FALSE(plain_result.has_value());
  EXPECT_EQ(plain_result.error().code(), errc::outcome_unknown) << plain_result.error().message();
  EXPECT_FALSE(plain_result.error().safe_to_retry());
  // A read is not retried unless retryReadOnlyCommands=true.
  EXPECT_EQ(read.result().error().code(), errc::outcome_unknown);
  EXPECT_EQ(server.cli({"GET", "plain"}), "");
  EXPECT_GE(mux->status().resent, 1u);
}

TEST(ResilienceTest, ReadOnlyCommandsAreResentUnderRetryReadOnlyCommands) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() +
                                  ",asyncTimeout=20000ms,reconnectBaseDelay=20ms,"
                                  "heartbeatInterval=0,retryReadOnlyCommands=true");
  Database db = mux->database();
  EXPECT_TRUE(db.set("k", "before").get());
  server.pause();
  Future<std::optional<std::string>> read = db.get("k");
  Future<long long> write = db.incr("w");
  ASSERT_TRUE(wait_until([&] { return mux->status().in_flight == 2; })) << mux->status_text();
  server.kill();
  server.restart();
  EXPECT_EQ(read.get(), std::nullopt);  // resent to the fresh, empty server
  EXPECT_EQ(write.result().error().code(), errc::outcome_unknown);
}

TEST(ResilienceTest, CommandsQueuedWhileDownAreSentInOrderAfterTheRestart) {
  RedisServer server;
  auto mux = Multiplexer::connect(
      server.address() + ",asyncTimeout=20000ms,reconnectBaseDelay=20ms,reconnectMaxDelay=100ms");
  Database db = mux->database();
  Database db3 = mux->database(3);
  EXPECT_TRUE(db.set("warm", "1").get());
  server.kill();
  ASSERT_TRUE(wait_until([&] { return !mux->is_connected(); }));
  std::vector<Future<long long>> pushes;
  for (int i = 0; i < 200; ++i) {
    // Alternate databases so the requeued stream must keep its SELECTs right.
    pushes.push_back((i % 2 ? db3 : db).rpush("list", std::to_string(i)));
  }
  server.restart();
  for (int i = 0; i < 200; ++i) EXPECT_EQ(pushes[i].get(), i / 2 + 1) << i;
  EXPECT_EQ(db.lrange("list", 0, 2).get(), (std::vector<std::string>{"0", "2", "4"}));
  EXPECT_EQ(db3.lrange("list", 0, 2).get(), (std::vector<std::string>{"1", "3", "5"}));
}

TEST(ResilienceTest, ConnectErrorListsWhyEachAttemptFailed) {
  const test::ClosedPort closed;
  const std::uint16_t port = closed.port();
  try {
    Multiplexer::connect("127.0.0.1:" + std::to_string(port) +
                         ",connectRetry=2,connectTimeout=500ms,reconnectBaseDelay=10ms");
    FAIL() << "nothing listens there";
  } catch (const ConnectionError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("3 attempts"), std::string::npos) << message;
    // Three alike refusals: named once, with the attempts they were.
    EXPECT_NE(message.find("attempts 1–3: "), std::string::npos) << message;
    EXPECT_NE(message.find("refused"), std::string::npos) << message;
    EXPECT_NE(message.find("connectRetry=2"), std::string::npos) << message;
  }
}

// A server at its maxclients limit answers the first command with its error and closes: the
// connect error names that answer, not the guess made for a silent close (a TLS port).
TEST(ResilienceTest, AServerAtItsMaxclientsLimitIsNamedNotTakenForATlsPort) {
  RedisServer server;
  auto holder = Multiplexer::connect(server.address() + ",allowAdmin=true");
  Database admin = holder->database();
  admin.execute({"CONFIG", "SET", "maxclients", "1"}).get();
  try {
    Multiplexer::connect(server.address() + ",connectRetry=0");
    FAIL() << "a second client was let in";
  } catch (const ConnectionError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("closed the connection during the handshake, after answering it with "
                           "\"ERR max number of clients reached\""),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find("TLS"), std::string::npos) << message;
  }
  admin.execute({"CONFIG", "SET", "maxclients", "10000"}).get();
}

TEST(ResilienceTest, ServerLoadingItsDatasetIsWaitedOutNotReportedAsErrors) {
  test::ServerOptions options;
  // 6,000 keys × 200 µs per key: seconds of loading after a restart (restart() waits for a
  // PONG, which a loading server does not give: allow it the whole load).
  // Small process-events interval: the loading server answers (with -LOADING) meanwhile.
  options.args = {"--key-load-delay", "200", "--loading-process-events-interval-bytes", "1024"};
  options.ready_timeout = 60s;
  RedisServer server(options);
  auto mux = Multiplexer::connect(
      server.address() + ",asyncTimeout=30000ms,reconnectBaseDelay=20ms,reconnectMaxDelay=50ms");
  Database db = mux->database();
  {
    Batch batch = db.batch();
    std::vector<Future<bool>> sets;
    for (int i = 0; i < 6000; ++i) sets.push_back(batch.set("key:" + std::to_string(i), "v"));
    batch.execute();
    for (auto& set : sets) ASSERT_TRUE(set.get());
  }
  server.cli({"SAVE"});
  server.kill();
  // Asked while the server is down: queued until a connection is ready. The restarted server
  // accepts connections while it loads (and answers -LOADING); restart() returns once it
  // answers PONG, i.e. once loading is done — meanwhile redmux reconnects (every ≤ 50 ms)
  // and must hold the GET instead of sending it into -LOADING.
  // (Once the connection saw the kill: a command written to the dying socket before that
  // would rightly fail as outcome_unknown.)
  ASSERT_TRUE(wait_until([&] { return !mux->is_connected(); }));
  Future<std::optional<std::string>> later = db.get("key:5999");
  server.restart();
  Result<std::optional<std::string>> during = later.result();
  ASSERT_TRUE(during.has_value()) << during.error().message();  // not a -LOADING error
  EXPECT_GE(mux->status().loading_waits, 1u) << "the connection never saw the server loading";
  EXPECT_EQ(*during, std::optional<std::string>("v"));
  EXPECT_EQ(mux->status().reconnects, 1u);
}

TEST(ResilienceTest, BusyScriptRepliesAreTypedSafeToRetryAndTheConnectionSurvives) {
  test::ServerOptions options;
  options.args = {"--busy-reply-threshold", "50"};
  RedisServer server(options);
  auto mux = Multiplexer::connect(server.address() + ",asyncTimeout=5000ms");
  Database db = mux->database();
  EXPECT_TRUE(db.set("k", "v").get());
  std::thread busy([&] { server.try_cli({"EVAL", "while true do end", "0"}, 20s); });
  Error seen;
  ASSERT_TRUE(wait_until(
      [&] {
        Result<std::optional<std::string>> r = db.get("k").result();
        if (r.has_value()) return false;
        seen = r.error();
        return true;
      },
      10s));
  EXPECT_EQ(seen.code(), errc::server_error);
  EXPECT_EQ(seen.message().rfind("BUSY", 0), 0u) << seen.message();
  EXPECT_TRUE(seen.safe_to_retry());
  server.cli({"SCRIPT", "KILL"});
  busy.join();
  EXPECT_EQ(db.get("k").get(), std::optional<std::string>("v"));
  EXPECT_EQ(mux->status().reconnects, 0u);
}

// A script that keeps the server busy, sent by this multiplexer, is ended by SCRIPT KILL from
// the same multiplexer without allowAdmin: the kill goes on a connection of its own, not
// behind the EVAL on the shared one. A server handle sends it the same way.
TEST(ResilienceTest, ScriptKillFromTheMultiplexerWhoseScriptKeepsTheServerBusyEndsIt) {
  test::ServerOptions options;
  options.args = {"--busy-reply-threshold", "50"};
  RedisServer server(options);
  const auto busy = [&] {
    const test::ProcessResult ping = server.try_cli({"PING"}, 5s);
    return (ping.out + ping.err).find("BUSY") != std::string::npos;
  };
  // On another database too: the kill's connection is opened while the server is busy, and
  // the server refuses its handshake's SELECT with BUSY.
  for (const std::string database : {"", ",defaultDatabase=2"}) {
    auto mux = Multiplexer::connect(server.address() + ",asyncTimeout=20000ms" + database);
    Database db = mux->database();
    for (const bool through_server_handle : {false, true}) {
      SCOPED_TRACE((through_server_handle ? "through a server handle" : "through a Database") +
                   database);
      Future<Reply> script = db.eval("while true do end");
      ASSERT_TRUE(wait_until(busy, 10s));
      const Reply killed = through_server_handle
                               ? mux->server(server.address()).execute("SCRIPT", "KILL").get()
                               : db.execute("SCRIPT", "KILL").get();
      EXPECT_EQ(killed.string(), "OK");
      try {
        script.get();
        ADD_FAILURE() << "the script was not ended";
      } catch (const ServerError& e) {
        EXPECT_NE(std::string(e.what()).find("killed"), std::string::npos) << e.what();
      }
      EXPECT_TRUE(db.set("after", "ok").get());  // the shared connection is in use again
    }
    // A blocking command on the kill's connection runs in its database.
    ASSERT_EQ(db.rpush("jobs", "j").get(), 1);
    const std::optional<KeyedElement> job = db.blpop("jobs", 1s).get();
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->element, "j");
    EXPECT_EQ(mux->status().reconnects, 0u);
  }
}

TEST(ResilienceTest, ReadonlyAfterADemotionIsTypedAndTheRoleIsRediscovered) {
  RedisServer primary;
  RedisServer demoted;
  auto mux = Multiplexer::connect(demoted.address() + ",allowAdmin=true");
  Database db = mux->database();
  EXPECT_TRUE(db.set("k", "v").get());
  EXPECT_EQ(mux->server_identity().role, "master");
  // A failover elsewhere turned our server into a replica.
  demoted.cli({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())});
  Result<bool> write = db.set("k2", "v2").result();
  ASSERT_FALSE(write.has_value());
  EXPECT_EQ(write.error().message().rfind("READONLY", 0), 0u) << write.error().message();
  EXPECT_TRUE(write.error().safe_to_retry());
  ASSERT_TRUE(wait_until([&] { return mux->server_identity().role == "replica"; }))
      << mux->server_identity().role;
  demoted.cli({"REPLICAOF", "NO", "ONE"});
  ASSERT_TRUE(wait_until([&] { return db.set("k3", "v3").result().has_value(); }));
  ASSERT_TRUE(wait_until([&] { return mux->server_identity().role == "master"; }));
}

}  // namespace
}  // namespace redmux
