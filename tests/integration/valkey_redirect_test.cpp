// Valkey's CLIENT CAPA redirect against real servers: a standalone replica answers a write
// with -REDIRECT host:port naming its primary, and redmux sends the write there (docs/valkey.md).
// Against Valkey 8 or later (REDMUX_TEST_SERVER=/path/to/valkey-server) the write is followed
// and runs once; against Redis, which has no CLIENT CAPA, the handshake never sends it.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;
using test::wait_until;

void replicate(const RedisServer& replica, const RedisServer& primary) {
  replica.cli({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())});
}

bool in_sync(const RedisServer& replica) {
  return replica.info_field("master_link_status") == "up";
}

// How many commands `server` refused with -REDIRECT (INFO errorstats).
long long redirects_sent(const RedisServer& server) {
  const std::string stats = server.cli({"INFO", "errorstats"});
  const std::string key = "errorstat_REDIRECT:count=";
  const std::size_t at = stats.find(key);
  return at == std::string::npos ? 0 : std::stoll(stats.substr(at + key.size()));
}

// A write sent to the connection of a server that has just become a replica (the multiplexer
// has not seen the failover yet) is answered -REDIRECT and runs on the new primary: every
// RPUSH is acknowledged, and the list on the server is exactly the acknowledged sequence, each
// element once, in order. Replica reads are still served by the replica (READONLY).
TEST(ValkeyRedirectTest, AWriteRedirectedByAReplicaRunsOnceOnThePrimary) {
  if (test::server_product() != "valkey") {
    GTEST_SKIP() << "needs Valkey 8 or later (REDMUX_TEST_SERVER=/path/to/valkey-server): Redis "
                    "has no CLIENT CAPA redirect";
  }
  RedisServer a;
  RedisServer b;
  replicate(b, a);
  ASSERT_TRUE(wait_until([&] { return in_sync(b); }, 20s));
  // Heartbeats and role checks far apart: the multiplexer learns of the swap from the
  // -REDIRECT replies themselves, not from a periodic check that might come first. A write
  // routed between a's demotion and b's promotion being seen waits for the primary
  // (failoverWait, the default): with failoverWait=false it would fail at once, not sent
  // (seen in 2 of 10 runs before b was asked its role at the first -REDIRECT naming it).
  auto mux = Multiplexer::connect(a.address() + "," + b.address() + ",heartbeatInterval=60000");
  Database db = mux->database();
  ASSERT_TRUE(db.set("probe", "v").get());
  ASSERT_TRUE(wait_until([&] { return b.cli({"GET", "probe"}) == "v"; }));
  const long long gets_on_b = b.command_calls("get");
  EXPECT_EQ(db.get("probe", Flags::PreferReplica).get(), std::optional<std::string>("v"));
  EXPECT_EQ(b.command_calls("get"), gets_on_b + 1) << "a replica read ran on the replica";
  EXPECT_GE(b.command_calls("client|capa"), 1) << "the handshake announced CLIENT CAPA redirect";

  // The swap, behind the multiplexer's back: b is the primary, a its replica.
  b.cli({"REPLICAOF", "NO", "ONE"});
  replicate(a, b);
  constexpr int kWrites = 200;
  std::vector<Future<long long>> pushes;
  for (int i = 0; i < kWrites; ++i) pushes.push_back(db.rpush("seq", {std::to_string(i)}));
  for (int i = 0; i < kWrites; ++i) {
    ASSERT_NO_THROW(pushes[i].get()) << "RPUSH " << i;
  }
  EXPECT_GE(redirects_sent(a), 1) << "no write reached a while it was a replica: nothing tested";
  EXPECT_GE(mux->status().redirects, 1u);
  const std::string list = b.cli({"LRANGE", "seq", "0", "-1"});
  std::string expected;
  for (int i = 0; i < kWrites; ++i) expected += (i ? "\n" : "") + std::to_string(i);
  // Each acknowledged element once: a redirected write did not also run on the replica, and
  // none ran twice. (Redirected writes may overtake the ones sent after them.)
  std::vector<std::string> got;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t end = std::min(list.find('\n', at), list.size());
    got.push_back(list.substr(at, end - at));
    at = end + 1;
  }
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kWrites)) << list;
  std::sort(got.begin(), got.end(),
            [](const std::string& x, const std::string& y) { return std::stoi(x) < std::stoi(y); });
  for (int i = 0; i < kWrites; ++i) EXPECT_EQ(got[i], std::to_string(i));
  EXPECT_EQ(a.cli({"LLEN", "seq"}), std::to_string(kWrites)) << "a replicates b";
}

// A -REDIRECT to a primary the multiplexer has no connection to fails the command with the
// server's words and what to do; it did not run.
TEST(ValkeyRedirectTest, ARedirectToAnUnknownPrimaryFailsWithAClearError) {
  if (test::server_product() != "valkey") {
    GTEST_SKIP() << "needs Valkey 8 or later (REDMUX_TEST_SERVER=/path/to/valkey-server): Redis "
                    "has no CLIENT CAPA redirect";
  }
  RedisServer a;
  RedisServer b;
  RedisServer elsewhere;
  auto mux = Multiplexer::connect(a.address() + "," + b.address() +
                                  ",heartbeatInterval=60000,failoverWait=false");
  Database db = mux->database();
  replicate(b, a);
  ASSERT_TRUE(db.set("k", "0").get());
  // a becomes a replica of a server this multiplexer does not know.
  replicate(a, elsewhere);
  const Result<bool> write = db.set("k", "1").result();
  ASSERT_FALSE(write) << "the write was accepted";
  const std::string message = write.error().message();
  // READONLY is also right when the role check saw the change first; anything else is not.
  if (message.find("READONLY") == std::string::npos) {
    EXPECT_EQ(write.error().code(), errc::server_error) << message;
    EXPECT_NE(message.find("REDIRECT 127.0.0.1:" + std::to_string(elsewhere.port())),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("did not run"), std::string::npos) << message;
    EXPECT_NE(message.find("no connection of this multiplexer goes to"), std::string::npos)
        << message;
  }
  EXPECT_TRUE(write.error().safe_to_retry()) << message;  // either way, it did not run
  EXPECT_EQ(elsewhere.cli({"GET", "k"}), "");
}

// Redis has no CLIENT CAPA ("ERR unknown subcommand"): a multiplexer with a primary and a
// replica never sends it, nor READONLY — each server refuses exactly what it refuses to the
// handshake of a single-server multiplexer (CLIENT SETINFO before Redis 7.2), no more.
TEST(ValkeyRedirectTest, RedisGetsNoClientCapaAndItsHandshakeIsUnchanged) {
  if (test::server_product() == "valkey") {
    GTEST_SKIP() << "the Redis path: runs against redis-server";
  }
  RedisServer a;
  RedisServer b;
  RedisServer alone;
  replicate(b, a);
  ASSERT_TRUE(wait_until([&] { return in_sync(b); }, 20s));
  auto mux = Multiplexer::connect(a.address() + "," + b.address());
  Database db = mux->database();
  ASSERT_TRUE(db.set("k", "v").get());
  ASSERT_TRUE(wait_until([&] { return b.cli({"GET", "k"}) == "v"; }));
  EXPECT_EQ(db.get("k", Flags::PreferReplica).get(), std::optional<std::string>("v"));
  auto single = Multiplexer::connect(alone.address());
  ASSERT_TRUE(single->database().set("k", "v").get());
  const long long baseline = alone.info_int("total_error_replies");
  for (const RedisServer* server : {&a, &b}) {
    EXPECT_EQ(server->info_int("total_error_replies"), baseline)
        << server->cli({"INFO", "errorstats"});
    EXPECT_EQ(server->command_calls("readonly"), 0);
  }
}

}  // namespace
}  // namespace redmux
