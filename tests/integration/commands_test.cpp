// Typed commands against a real redis-server, under RESP3 and RESP2 (the reply shapes differ:
// maps vs flat arrays, doubles vs bulk strings) — each must convert alike.
#include <gtest/gtest.h>

#include <set>

#include "protocol_fixture.hpp"
#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

class CommandsTest : public test::ProtocolTest<CommandsTest> {
 protected:
  CommandsTest() : ProtocolTest("commands-test") {}
};

TEST_P(CommandsTest, Strings) {
  EXPECT_TRUE(db_.set("s", "v").get());
  SetOptions nx;
  nx.condition = SetCondition::IfNotExists;
  EXPECT_FALSE(db_.set("s", "other", nx).get());
  EXPECT_EQ(db_.set_get("s", "w").get(), std::optional<std::string>("v"));
  EXPECT_EQ(db_.append("s", "xyz").get(), 4);
  EXPECT_EQ(db_.strlen("s").get(), 4);
  EXPECT_EQ(db_.getrange("s", 1, 2).get(), "xy");
  db_.mset({{"a", "1"}, {"b", "2"}}).get();
  auto values = db_.mget({"a", "missing", "b"}).get();
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[0], std::optional<std::string>("1"));
  EXPECT_EQ(values[1], std::nullopt);
  EXPECT_EQ(db_.incrby("a", 10).get(), 11);
  EXPECT_EQ(db_.decr("a").get(), 10);
  EXPECT_DOUBLE_EQ(db_.incrbyfloat("f", 1.5).get(), 1.5);
  EXPECT_EQ(db_.getdel("b").get(), std::optional<std::string>("2"));
  EXPECT_EQ(db_.exists({"b"}).get(), 0);
}

TEST_P(CommandsTest, KeysAndExpiry) {
  db_.set("k", "v").get();
  EXPECT_TRUE(db_.expire("k", 100s).get());
  const long long ttl = db_.ttl("k").get();
  EXPECT_GT(ttl, 90);
  EXPECT_LE(ttl, 100);
  EXPECT_TRUE(db_.persist("k").get());
  EXPECT_EQ(db_.ttl("k").get(), -1);
  EXPECT_EQ(db_.type("k").get(), "string");
  db_.rename("k", "k2").get();
  EXPECT_EQ(db_.get("k2").get(), std::optional<std::string>("v"));
  EXPECT_EQ(db_.del({"k2", "nothing"}).get(), 1);
}

TEST_P(CommandsTest, Hashes) {
  EXPECT_EQ(db_.hset("h", {{"f1", "a"}, {"f2", "b"}}).get(), 2);
  EXPECT_EQ(db_.hget("h", "f1").get(), std::optional<std::string>("a"));
  auto all = db_.hgetall("h").get();
  EXPECT_EQ(all.at("f2"), "b");
  EXPECT_EQ(db_.hincrby("h", "n", 5).get(), 5);
  EXPECT_EQ(db_.hlen("h").get(), 3);
  EXPECT_TRUE(db_.hexists("h", "n").get());
  EXPECT_EQ(db_.hdel("h", "n").get(), 1);
}

TEST_P(CommandsTest, ListsSetsSortedSetsHyperLogLog) {
  EXPECT_EQ(db_.rpush("l", {"a", "b", "c"}).get(), 3);
  EXPECT_EQ(db_.lpop("l").get(), std::optional<std::string>("a"));
  EXPECT_EQ(db_.lrange("l", 0, -1).get(), (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(db_.sadd("set", {"x", "y"}).get(), 2);
  EXPECT_TRUE(db_.sismember("set", "x").get());
  auto members = db_.smembers("set").get();
  EXPECT_EQ(std::set<std::string>(members.begin(), members.end()),
            (std::set<std::string>{"x", "y"}));
  EXPECT_EQ(db_.zadd("z", 1.5, "one").get(), 1);
  EXPECT_EQ(db_.zadd("z", 2.5, "two").get(), 1);
  EXPECT_EQ(db_.zscore("z", "two").get(), std::optional<double>(2.5));
  EXPECT_EQ(db_.zcard("z").get(), 2);
  EXPECT_EQ(db_.pfadd("hll", {"a", "b", "c"}).get(), true);
  EXPECT_EQ(db_.pfcount({"hll"}).get(), 3);
}

TEST_P(CommandsTest, ServerCommandsParsed) {
  EXPECT_EQ(db_.ping().get(), "PONG");
  EXPECT_EQ(db_.echo("hi").get(), "hi");
  InfoSections info = db_.info("server").get();
  // Valkey 8 says server_mode (redis_mode only with extended-redis-compatibility).
  const auto mode = info.get("server", "redis_mode") ? info.get("server", "redis_mode")
                                                     : info.get("server", "server_mode");
  EXPECT_EQ(mode, std::optional<std::string_view>("standalone"));
  const long long id = db_.client_id().get();
  EXPECT_GT(id, 0);
  EXPECT_EQ(db_.client_getname().get(), std::optional<std::string>("commands-test"));
  auto clients = db_.client_list().get();
  bool found = false;
  for (const ClientInfo& c : clients) {
    if (c.id == id) {
      found = true;
      EXPECT_EQ(c.name, "commands-test");
      EXPECT_EQ(c.resp, std::string(GetParam()) == "resp3" ? 3 : 2);
    }
  }
  EXPECT_TRUE(found);
  db_.set("x", "1").get();
  EXPECT_EQ(db_.dbsize().get(), 1);
  const ServerTime server_time = db_.time().get();
  const auto skew = server_time.time_point() - std::chrono::system_clock::now();
  EXPECT_LT(std::chrono::abs(skew), 60s);  // same machine: the clocks agree
}

TEST_P(CommandsTest, GenericExecuteReturnsReply) {
  Reply ok = db_.execute({"SET", "g", "1"}).get();
  EXPECT_EQ(ok.text(), "OK");
  db_.execute({"HSET", "gh", "a", "1", "b", "2"}).get();
  Reply map = db_.execute({"HGETALL", "gh"}).get();
  using Fields = std::map<std::string, std::string>;
  EXPECT_EQ(map.as<Fields>(), (Fields{{"a", "1"}, {"b", "2"}}));
  Reply nil = db_.execute({"GET", "none"}).get();
  EXPECT_TRUE(nil.is_null());
  EXPECT_THROW(db_.execute({"HELLO", "3"}).get(), NotAllowedError);
  EXPECT_THROW(db_.execute({"NOSUCHCOMMAND"}).get(), ServerError);
}

TEST_P(CommandsTest, KeysIteratesWithScanNeverKeys) {
  for (int i = 0; i < 1000; ++i) db_.set("scan:" + std::to_string(i), "v", Flags::FireAndForget);
  db_.set("other", "v").get();
  std::set<std::string> seen;
  auto range = db_.keys("scan:*", 100);
  for (const std::string& key : range) seen.insert(key);
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_EQ(seen.count("other"), 0u);
  // SCAN, not KEYS, did the work.
  EXPECT_EQ(server_->cli({"INFO", "commandstats"}).find("cmdstat_keys"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Protocols, CommandsTest, ::testing::Values("resp3", "resp2"));

// A RESP3 attribute (`|`, here the one DEBUG PROTOCOL attrib sends before its reply) reaches a
// Reply's attributes(); the next reply has none.
TEST(ReplyAttributesTest, AnAttributeBeforeTheReplyIsKeptInTheReply) {
  RedisServer server;
  auto mux = Multiplexer::connect(server.address() + ",allowAdmin=true");
  Database db = mux->database();
  const Reply reply = db.execute({"DEBUG", "PROTOCOL", "attrib"}).get();
  EXPECT_EQ(reply.string(), "Some real reply following the attribute");
  const Reply* attributes = reply.attributes();
  ASSERT_NE(attributes, nullptr) << reply.to_string();
  ASSERT_EQ(attributes->type(), ReplyType::Attribute);
  ASSERT_EQ(attributes->size(), 1u) << attributes->to_string();
  EXPECT_EQ(attributes->key(0).string(), "key-popularity");
  EXPECT_EQ(db.execute({"PING"}).get().attributes(), nullptr);
  // A typed result has no place for them: the value converts as without.
  EXPECT_EQ(db.command<std::string>("DEBUG", "PROTOCOL", "attrib").get(),
            "Some real reply following the attribute");
}

}  // namespace
}  // namespace redmux
