// The public API's generic faces against a real server: execute() and command<T>() on every
// sink (Database, Batch, Transaction), Task<T> run from a plain thread and started on an I/O
// pool, and the server handle (Multiplexer::servers(), Multiplexer::server()) on a standalone
// server and on a primary with a replica. The cluster's nodes: cluster_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
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

TEST(ApiTest, ExecuteWorksOnEverySink) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  EXPECT_EQ(db.execute("PING").get().string(), "PONG");
  EXPECT_EQ(db.execute({"SET", "sink:k", "v"}).get().string(), "OK");
  EXPECT_EQ(db.execute("GET", "sink:k").get().string(), "v");

  Batch batch = db.batch();
  Future<Reply> incr = batch.execute({"INCR", "sink:n"});
  Future<Reply> pong = batch.execute("PING");
  Future<long long> typed = batch.command<long long>("INCR", "sink:n");
  EXPECT_EQ(batch.size(), 3u);
  batch.execute();
  EXPECT_EQ(incr.get().integer(), 1);
  EXPECT_EQ(pong.get().string(), "PONG");
  EXPECT_EQ(typed.get(), 2);

  Transaction tx = db.transaction();
  Future<Reply> in_tx = tx.execute({"INCR", "sink:n"});
  Future<long long> typed_in_tx = tx.command<long long>({.timeout = 2s}, "INCR", "sink:n");
  Future<Reply> ping_in_tx = tx.execute("PING");
  ASSERT_TRUE(tx.execute().committed());
  EXPECT_EQ(in_tx.get().integer(), 3);
  EXPECT_EQ(typed_in_tx.get(), 4);
  EXPECT_EQ(ping_in_tx.get().string(), "PONG");
  EXPECT_EQ(server.cli({"GET", "sink:n"}), "4");
}

TEST(ApiTest, TypedCommandTakesCallOptions) {
  test::ServerOptions options;
  options.args = {"--maxmemory-policy", "allkeys-lfu"};
  RedisServer server(options);
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  db.set("typed:key", "abc").get();
  const long long freq =
      db.command<long long>({.timeout = 2s}, "OBJECT", "FREQ", "typed:key").get();
  EXPECT_GE(freq, 0);
  EXPECT_EQ(db.command<std::string>("GET", "typed:key").get(), "abc");
  EXPECT_THROW(db.command<long long>("GET", "typed:key").get(), UnexpectedReplyError);
  // Every way of giving the options compiles and means one overload: `{}` (the defaults),
  // Flags, a CallOptions and a CallSpec.
  EXPECT_EQ(db.command<long long>({}, "EXISTS", "typed:key").get(), 1);
  EXPECT_EQ(db.command<long long>(Flags::DemandMaster, "EXISTS", "typed:key").get(), 1);
  const CallOptions call_options(Flags::None, 2s);
  EXPECT_EQ(db.command<long long>(call_options, "EXISTS", "typed:key").get(), 1);
  const CallSpec call_spec{.timeout = 2s};
  EXPECT_EQ(db.command<long long>(call_spec, "EXISTS", "typed:key").get(), 1);
  // The per-call timeout is the one that applies, not asyncTimeout's 5 s.
  server.pause();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(db.command<long long>({.timeout = 100ms}, "DBSIZE").get(), TimeoutError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  server.resume();
}

Task<long long> count_views(Database db, std::string book) {
  co_await db.set("views:" + book, "10");
  long long views = co_await db.incr("views:" + book);
  std::optional<std::string> text = co_await db.get("views:" + book);
  co_return views + (text ? std::stoll(*text) : 0);
}

// A named future is awaited as a temporary is, and consumed like get() consumes it.
Task<long long> awaits_named_futures(Database db) {
  Future<bool> set = db.set("named", "5");
  Future<long long> incr = db.incr("named");
  co_await set;
  const long long value = co_await incr;
  co_return incr.valid() || set.valid() ? -1 : value;
}

Task<void> blocks_inside(Database db) {
  db.incr("task:blocking").get();  // a blocking wait on the I/O thread the task runs on
  co_return;
}

TEST(ApiTest, TaskRunsFromAPlainThreadAndOnTheIoPool) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address());
  Database db = mux->database();
  EXPECT_EQ(count_views(db, "1").get(), 22);
  EXPECT_EQ(awaits_named_futures(db).get(), 6);
  Future<long long> detached = count_views(db, "2").start_on(*mux->io_pool());
  EXPECT_EQ(detached.get(), 22);
  EXPECT_EQ(server.cli({"GET", "views:2"}), "11");
  std::vector<Future<long long>> many;
  for (int i = 0; i < 20; ++i) many.push_back(count_views(db, "m" + std::to_string(i)).start());
  for (Result<long long>& r : when_all(std::move(many)).get()) EXPECT_EQ(r.value(), 22);
  // Started on the pool, the body runs on an I/O thread: get() there is refused, not a hang.
  EXPECT_THROW(blocks_inside(db).start_on(*mux->io_pool()).get(), DeadlockError);
}

TEST(ApiTest, ServerHandleOnAStandaloneServer) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",name=handle-test");
  const std::vector<ServerEndpoint> servers = mux->servers();
  ASSERT_EQ(servers.size(), 1u);
  EXPECT_EQ(servers[0].endpoint.to_string(), server.address());
  EXPECT_EQ(servers[0].role, ServerRole::Primary);
  EXPECT_TRUE(servers[0].connected);
  EXPECT_FALSE(servers[0].cluster_node);
  EXPECT_EQ(servers[0].to_string(), server.address() + " primary (connected)");

  Server handle = mux->server(server.address());
  EXPECT_EQ(handle.describe().role, ServerRole::Primary);
  EXPECT_EQ(handle.info("server").get().get("server", "tcp_port"), std::to_string(server.port()));
  const std::vector<ClientInfo> clients = handle.client_list().get();
  EXPECT_TRUE(std::any_of(clients.begin(), clients.end(),
                          [](const ClientInfo& c) { return c.name == "handle-test"; }));
  // CONFIG is an admin command: refused unless allowAdmin=true, and nothing is sent.
  const long long config_gets = server.command_calls("config|get");  // the handshake's own
  EXPECT_THROW(handle.config_get("maxmemory-policy").get(), AdminModeError);
  EXPECT_EQ(server.command_calls("config|get"), config_gets);
  // Blocking and connection-state commands are refused like on a Database's shared pipe.
  EXPECT_THROW(handle.execute({"BLPOP", "q", "1"}).get(), NotAllowedError);
  EXPECT_THROW(handle.execute({"SELECT", "1"}).get(), NotAllowedError);

  Database db = mux->database();
  for (int i = 0; i < 30; ++i) db.set("handle:" + std::to_string(i), "v").get();
  std::set<std::string> keys;
  for (const std::string& key : handle.keys("handle:*", 7)) keys.insert(key);
  EXPECT_EQ(keys.size(), 30u);
  EXPECT_EQ(handle.dbsize().get(), 30);
  EXPECT_EQ(handle.command<long long>("DBSIZE").get(), 30);

  try {
    mux->server("127.0.0.1:1");
    FAIL() << "expected InvalidArgumentError";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find(server.address()), std::string::npos) << e.what();
  }

  auto admin = Multiplexer::connect(server.address() + ",allowAdmin=true");
  const auto config = admin->server(server.address()).config_get("maxmemory-policy").get();
  ASSERT_EQ(config.size(), 1u);
  EXPECT_EQ(config[0].first, "maxmemory-policy");
  EXPECT_EQ(config[0].second, server.cli({"CONFIG", "GET", "maxmemory-policy"}).substr(17));
  admin->close();
  mux->close();
  EXPECT_THROW(handle.ping().get(), ConnectionError);
}

TEST(ApiTest, ServerHandleListsPrimaryAndReplicaWithTheirRoles) {
  RedisServer primary;
  RedisServer replica;
  replica.cli({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())});
  ASSERT_TRUE(wait_until([&] { return replica.info_field("master_link_status") == "up"; }, 20s));
  auto mux = Multiplexer::connect(replica.address() + "," + primary.address());
  ASSERT_TRUE(wait_until([&] {
    const auto servers = mux->servers();
    return servers.size() == 2 && servers[0].connected && servers[1].connected;
  }));
  const std::vector<ServerEndpoint> servers = mux->servers();
  EXPECT_EQ(servers[0].endpoint.to_string(), replica.address());
  EXPECT_EQ(servers[0].role, ServerRole::Replica);
  EXPECT_EQ(servers[1].endpoint.to_string(), primary.address());
  EXPECT_EQ(servers[1].role, ServerRole::Primary);
  // Each handle reaches its own server.
  EXPECT_EQ(mux->server(servers[0].endpoint).info("replication").get().get("replication", "role"),
            "slave");
  EXPECT_EQ(mux->server(servers[1].endpoint).info("replication").get().get("replication", "role"),
            "master");
  const long long before = replica.command_calls("dbsize");
  EXPECT_EQ(mux->server(replica.address()).dbsize().get(), 0);
  EXPECT_EQ(replica.command_calls("dbsize"), before + 1);
}

}  // namespace
}  // namespace redmux
