// Multiplexer::status(): every connection counted (interactive, subscription, dedicated),
// and counters that agree — commands per write never below 1, in_flight never above
// outstanding (redmux's own commands are neither).
#include <gtest/gtest.h>

#include <string>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;
using test::wait_until;

std::size_t count_purpose(const MultiplexerStatus& status, ConnectionStatus::Purpose purpose) {
  std::size_t n = 0;
  for (const ConnectionStatus& one : status.per_connection) n += one.purpose == purpose;
  return n;
}

TEST(StatusTest, EveryConnectionIsCountedWithItsPurposeStateAndRole) {
  test::RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",name=status");
  Database db = mux->database();
  ASSERT_EQ(db.incr("n").get(), 1);
  MultiplexerStatus status = mux->status();
  ASSERT_EQ(status.connections, 1u);
  ASSERT_EQ(status.per_connection.size(), 1u);
  EXPECT_EQ(status.per_connection[0].endpoint, server.address());
  EXPECT_EQ(status.per_connection[0].purpose, ConnectionStatus::Purpose::Interactive);
  EXPECT_EQ(status.per_connection[0].state, ConnectionStatus::State::Ready);
  EXPECT_EQ(status.per_connection[0].role, ConnectionStatus::Role::Primary);

  // A subscription connection, and a dedicated one for a blocking command.
  Subscription subscription = mux->subscriber().subscribe("news", [](const Message&) {});
  subscription.confirmed().get();
  ASSERT_EQ(db.blpop("nothing", 50ms).get(), std::nullopt);
  status = mux->status();
  EXPECT_EQ(status.connections, 3u) << mux->status_text();
  EXPECT_EQ(status.connected, 3u) << mux->status_text();
  EXPECT_EQ(count_purpose(status, ConnectionStatus::Purpose::Subscription), 1u);
  EXPECT_EQ(count_purpose(status, ConnectionStatus::Purpose::Dedicated), 1u);
  const std::string text = mux->status_text();
  EXPECT_NE(text.find(server.address() + " primary ready"), std::string::npos) << text;
  EXPECT_NE(text.find(server.address() + " (subscription) primary ready"), std::string::npos)
      << text;
  EXPECT_NE(text.find(server.address() + " (dedicated) primary ready"), std::string::npos) << text;
  EXPECT_NE(text.find("connections=3 connected=3"), std::string::npos) << text;

  // A server gone: its connections say so.
  server.kill();
  ASSERT_TRUE(wait_until([&] { return mux->status().connected == 0; })) << mux->status_text();
  status = mux->status();
  EXPECT_EQ(status.connections, 3u);
  for (const ConnectionStatus& one : status.per_connection) {
    EXPECT_NE(one.state, ConnectionStatus::State::Ready) << one.endpoint;
  }
}

TEST(StatusTest, AConnectionThatIsNotReadySaysWhyItsLastAttemptFailed) {
  // With abortConnect=false a wrong password shows nowhere but in timeouts: status_text()
  // must say it too, without any part of the password.
  test::ServerOptions options;
  options.acl_file_contents =
      "user default on nopass ~* &* +@all\n"
      "user bookstore on >s3cret ~bookstore:* +@all\n";
  RedisServer server(options);
  auto mux = Multiplexer::connect(server.address() +
                                  ",user=bookstore,password=\"wr0ng,pa55\",abortConnect=false,"
                                  "reconnectBaseDelay=50,reconnectMaxDelay=200");
  const std::string failure =
      "(last failure: authentication to " + server.address() + " failed for user \"bookstore\"";
  ASSERT_TRUE(wait_until([&] { return mux->status_text().find(failure) != std::string::npos; }))
      << mux->status_text();
  const MultiplexerStatus status = mux->status();
  ASSERT_EQ(status.per_connection.size(), 1u);
  EXPECT_NE(status.per_connection[0].state, ConnectionStatus::State::Ready);
  // The refusal was a reply read like any other: `replies` counts it, and the bytes of the
  // handshake that asked are counted as written.
  EXPECT_GE(status.replies, 1u) << mux->status_text();
  EXPECT_GT(status.bytes_written, 0u) << mux->status_text();
  EXPECT_NE(status.per_connection[0].last_write, std::chrono::steady_clock::time_point{})
      << mux->status_text();
  EXPECT_NE(status.per_connection[0].last_failure.find("failed for user \"bookstore\""),
            std::string::npos)
      << status.per_connection[0].last_failure;
  const std::string text = mux->status_text();
  for (const char* part : {"wr0ng", "pa55"}) {
    EXPECT_EQ(text.find(part), std::string::npos) << "password shows in: " << text;
  }
}

TEST(StatusTest, AReadyConnectionShowsNoPastFailure) {
  test::RedisServer server;
  auto mux = Multiplexer::connect(
      server.address() + ",reconnectBaseDelay=50,reconnectMaxDelay=200,abortConnect=false");
  Database db = mux->database();
  ASSERT_EQ(db.incr("n").get(), 1);
  server.restart();  // the session breaks, and a new one is made
  ASSERT_TRUE(wait_until([&] {
    const MultiplexerStatus s = mux->status();
    return s.reconnects >= 1 && s.connected == 1;
  })) << mux->status_text();
  const MultiplexerStatus status = mux->status();
  EXPECT_TRUE(status.per_connection.at(0).last_failure.empty())
      << status.per_connection.at(0).last_failure;
  EXPECT_EQ(mux->status_text().find("last failure"), std::string::npos) << mux->status_text();
  // Nor once closed: the failure it recovered from is not the reason it is down.
  mux->close();
  EXPECT_EQ(mux->status_text().find("last failure"), std::string::npos) << mux->status_text();
}

TEST(StatusTest, CommandsPerWriteCountsRedmuxsOwnCommandsSoNeverReadsBelowOne) {
  // Idle heartbeats are writes too; so are the parts of a command split over nodes. They
  // used to be divided into the callers' commands alone.
  test::RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",heartbeatInterval=20ms");
  Database db = mux->database();
  ASSERT_EQ(db.incr("n").get(), 1);
  // A heartbeat is counted as its PING is queued, and the next one only once the pipeline is
  // empty: at 6, the fifth PING has been written (and answered).
  ASSERT_TRUE(wait_until([&] { return mux->status().heartbeats >= 6; }));
  const MultiplexerStatus status = mux->status();
  EXPECT_EQ(status.commands, 1u);
  EXPECT_GE(status.writes, 6u);
  EXPECT_GE(status.commands_written, status.writes);
  EXPECT_GE(status.commands_per_write(), 1.0) << mux->status_text();
}

TEST(StatusTest, InFlightCountsCallersCommandsOnlySoNeverExceedsOutstanding) {
  // An idle PING in flight is redmux's own: no slot of maxQueuedCommands, and no caller
  // waits for it. It used to read in_flight=1 with outstanding=0.
  test::RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",heartbeatInterval=20ms,asyncTimeout=30000");
  Database db = mux->database();
  ASSERT_EQ(db.incr("n").get(), 1);
  server.pause();
  // A PING of redmux's own in flight: the next heartbeat, or one written just before the pause
  // (then no other comes while it waits for its reply).
  const std::uint64_t heartbeats = mux->status().heartbeats;
  ASSERT_TRUE(wait_until([&] {
    const MultiplexerStatus s = mux->status();
    return s.heartbeats > heartbeats ||
           s.per_connection.at(0).last_write > s.per_connection.at(0).last_read;
  }));
  MultiplexerStatus status = mux->status();
  EXPECT_EQ(status.outstanding, 0u);
  EXPECT_EQ(status.in_flight, 0u) << mux->status_text();
  // A caller's command in flight is counted in both.
  Future<long long> waiting = db.incr("n");
  ASSERT_TRUE(wait_until([&] { return mux->status().in_flight == 1; })) << mux->status_text();
  status = mux->status();
  EXPECT_EQ(status.outstanding, 1u);
  EXPECT_EQ(status.queued, 0u);
  EXPECT_EQ(status.per_connection.at(0).in_flight, 1u);
  server.resume();
  EXPECT_EQ(waiting.get(), 2);
  ASSERT_TRUE(wait_until([&] {
    const MultiplexerStatus s = mux->status();
    return s.outstanding == 0 && s.in_flight == 0;
  }));
}

}  // namespace
}  // namespace redmux
