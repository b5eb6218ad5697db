// The exact arguments every typed command sends (no server: a recording sink).
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "redmux/commands.hpp"
#include "resp/encoder.hpp"
#include "unit/commands/recording_sink.hpp"

namespace redmux::testing {
namespace {

using namespace std::chrono_literals;

TEST(StringCommands, Get) {
  RecordingSink db;
  db.reply_with("$3\r\nabc\r\n");
  EXPECT_EQ(db.get("k").get(), "abc");
  EXPECT_EQ(db.last(), (Words{"GET", "k"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.get("k").get(), std::nullopt);
  db.reply_with("_\r\n");
  EXPECT_EQ(db.get("k").get(), std::nullopt);
}

TEST(StringCommands, SetAndItsOptions) {
  RecordingSink db;
  EXPECT_TRUE(db.set("k", "v").get());
  EXPECT_EQ(db.last(), (Words{"SET", "k", "v"}));
  (void)db.set("k", "v", SetOptions{.expiry = Expiry::after(10s)});
  EXPECT_EQ(db.last(), (Words{"SET", "k", "v", "EX", "10"}));
  (void)db.set("k", "v", SetOptions{.expiry = Expiry::after(1500ms)});
  EXPECT_EQ(db.last(), (Words{"SET", "k", "v", "PX", "1500"}));
  (void)db.set("k", "v", {.expiry = Expiry::keep_ttl(), .condition = SetCondition::IfExists});
  EXPECT_EQ(db.last(), (Words{"SET", "k", "v", "XX", "KEEPTTL"}));
  auto at = std::chrono::system_clock::time_point(1700000000123ms);
  (void)db.set("k", "v", {.expiry = Expiry::at(at), .condition = SetCondition::IfNotExists});
  EXPECT_EQ(db.last(), (Words{"SET", "k", "v", "NX", "PXAT", "1700000000123"}));
  db.reply_with("$-1\r\n");  // NX prevented it
  EXPECT_FALSE(db.set("k", "v", {.condition = SetCondition::IfNotExists}).get());
  db.reply_with("_\r\n");
  EXPECT_FALSE(db.set("k", "v", {.condition = SetCondition::IfNotExists}).get());
  // Flags convert to CallOptions and reach the sink.
  (void)db.set("k", "v", Flags::FireAndForget);
  EXPECT_EQ(db.last(), (Words{"SET", "k", "v"}));
  EXPECT_EQ(db.last_options.flags, Flags::FireAndForget);
}

TEST(StringCommands, SetGet) {
  RecordingSink db;
  db.reply_with("$3\r\nold\r\n");
  EXPECT_EQ(db.set_get("k", "new").get(), "old");
  EXPECT_EQ(db.last(), (Words{"SET", "k", "new", "GET"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.set_get("k", "new", {.expiry = Expiry::after(5s)}).get(), std::nullopt);
  EXPECT_EQ(db.last(), (Words{"SET", "k", "new", "GET", "EX", "5"}));
}

// KEEPTTL is SET's and PERSIST GETEX's: the other command refuses the option before
// anything is sent, naming it, instead of the server's bare "ERR syntax error".
TEST(StringCommands, AnExpiryTheCommandDoesNotTakeIsRefusedBeforeSending) {
  RecordingSink db;
  db.reply_with("$1\r\nv\r\n");
  (void)db.getex("k").get();
  const Words before = db.last();
  const Result<std::optional<std::string>> getex = db.getex("k", Expiry::keep_ttl()).result();
  ASSERT_FALSE(getex.has_value());
  EXPECT_EQ(getex.error().code(), errc::invalid_argument);
  EXPECT_NE(getex.error().message().find("Expiry::keep_ttl() is SET's KEEPTTL"), std::string::npos)
      << getex.error().message();
  const Result<bool> set = db.set("k", "v", {.expiry = Expiry::persist()}).result();
  ASSERT_FALSE(set.has_value());
  EXPECT_NE(set.error().message().find("Expiry::persist() is GETEX's PERSIST"), std::string::npos)
      << set.error().message();
  EXPECT_FALSE(db.set_get("k", "v", {.expiry = Expiry::persist()}).result().has_value());
  EXPECT_EQ(db.last(), before);  // nothing sent
}

TEST(StringCommands, GetexGetdelAndCounters) {
  RecordingSink db;
  db.reply_with("$1\r\nv\r\n");
  EXPECT_EQ(db.getex("k", Expiry::persist()).get(), "v");
  EXPECT_EQ(db.last(), (Words{"GETEX", "k", "PERSIST"}));
  db.reply_with("$1\r\nv\r\n");
  (void)db.getex("k");
  EXPECT_EQ(db.last(), (Words{"GETEX", "k"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.getdel("k").get(), std::nullopt);
  EXPECT_EQ(db.last(), (Words{"GETDEL", "k"}));

  db.reply_with(":5\r\n");
  EXPECT_EQ(db.incr("n").get(), 5);
  EXPECT_EQ(db.last(), (Words{"INCR", "n"}));
  db.reply_with(":-3\r\n");
  EXPECT_EQ(db.incrby("n", -8).get(), -3);
  EXPECT_EQ(db.last(), (Words{"INCRBY", "n", "-8"}));
  db.reply_with("$3\r\n1.5\r\n");  // INCRBYFLOAT answers a bulk string in both protocols
  EXPECT_DOUBLE_EQ(db.incrbyfloat("f", 1.5).get(), 1.5);
  EXPECT_EQ(db.last(), (Words{"INCRBYFLOAT", "f", "1.5"}));
  db.reply_with(":0\r\n");
  (void)db.decr("n");
  EXPECT_EQ(db.last(), (Words{"DECR", "n"}));
  db.reply_with(":0\r\n");
  (void)db.decrby("n", 2);
  EXPECT_EQ(db.last(), (Words{"DECRBY", "n", "2"}));
  db.reply_with(":7\r\n");
  EXPECT_EQ(db.append("k", "xyz").get(), 7);
  EXPECT_EQ(db.last(), (Words{"APPEND", "k", "xyz"}));
  db.reply_with(":7\r\n");
  (void)db.strlen("k");
  EXPECT_EQ(db.last(), (Words{"STRLEN", "k"}));
  db.reply_with("$2\r\nab\r\n");
  EXPECT_EQ(db.getrange("k", 0, -2).get(), "ab");
  EXPECT_EQ(db.last(), (Words{"GETRANGE", "k", "0", "-2"}));
  db.reply_with(":9\r\n");
  (void)db.setrange("k", 6, "zz");
  EXPECT_EQ(db.last(), (Words{"SETRANGE", "k", "6", "zz"}));
}

TEST(StringCommands, MultiKey) {
  RecordingSink db;
  db.reply_with("*2\r\n$1\r\na\r\n$-1\r\n");
  auto values = db.mget({"k1", "k2"}).get();
  EXPECT_EQ(db.last(), (Words{"MGET", "k1", "k2"}));
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0], "a");
  EXPECT_EQ(values[1], std::nullopt);
  std::vector<std::string> keys{"x", "y", "z"};
  db.reply_with("*3\r\n$-1\r\n$-1\r\n$-1\r\n");
  (void)db.mget(keys);
  EXPECT_EQ(db.last(), (Words{"MGET", "x", "y", "z"}));
  db.mset({{"a", "1"}, {"b", "2"}}).get();
  EXPECT_EQ(db.last(), (Words{"MSET", "a", "1", "b", "2"}));
  std::map<std::string, std::string> pairs{{"p", "1"}, {"q", "2"}};
  db.reply_with(":0\r\n");
  EXPECT_FALSE(db.msetnx(pairs).get());
  EXPECT_EQ(db.last(), (Words{"MSETNX", "p", "1", "q", "2"}));
}

TEST(StringCommands, BinarySafeArguments) {
  RecordingSink db;
  std::string key("a\0b", 3);
  std::string value("\r\n\0", 3);
  (void)db.set(key, value);
  EXPECT_EQ(db.last(), (Words{"SET", key, value}));
}

// The sink's contract: args viewed during send() are enough to encode the command.
class EncodingSink : public Commands<EncodingSink> {
 public:
  template <class T>
  Future<T> send(const CallOptions&, std::span<const Arg> args) {
    resp::encode_command(wire, args);
    return Future<T>::ready_with(Error(errc::not_sent, "encoding only"));
  }
  std::string wire;
};

TEST(StringCommands, EncodesToTheWire) {
  EncodingSink db;
  (void)db.set(std::string("k\0", 2), "v",
               SetOptions{.expiry = Expiry::after(std::chrono::seconds(7))});
  EXPECT_EQ(db.wire,
            std::string("*5\r\n$3\r\nSET\r\n$2\r\nk\0\r\n$1\r\nv\r\n$2\r\nEX\r\n$1\r\n7\r\n", 43));
  db.wire.clear();
  std::vector<std::string> keys{"a", "b"};
  (void)db.mget(keys);
  EXPECT_EQ(db.wire, "*3\r\n$4\r\nMGET\r\n$1\r\na\r\n$1\r\nb\r\n");
}

TEST(KeyCommands, DeleteExistsAndFriends) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  EXPECT_EQ(db.del("k").get(), 1);
  EXPECT_EQ(db.last(), (Words{"DEL", "k"}));
  db.reply_with(":2\r\n");
  (void)db.del({"a", "b"});
  EXPECT_EQ(db.last(), (Words{"DEL", "a", "b"}));
  std::vector<std::string_view> some{"c", "d"};
  db.reply_with(":2\r\n");
  (void)db.unlink(some);
  EXPECT_EQ(db.last(), (Words{"UNLINK", "c", "d"}));
  db.reply_with(":1\r\n");
  EXPECT_TRUE(db.exists("k").get());
  db.reply_with(":3\r\n");
  EXPECT_EQ(db.exists({"a", "a", "b"}).get(), 3);
  EXPECT_EQ(db.last(), (Words{"EXISTS", "a", "a", "b"}));
  db.reply_with(":2\r\n");
  (void)db.touch({"a", "b"});
  EXPECT_EQ(db.last(), (Words{"TOUCH", "a", "b"}));
}

TEST(KeyCommands, Expiry) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  EXPECT_TRUE(db.expire("k", 30s).get());
  EXPECT_EQ(db.last(), (Words{"EXPIRE", "k", "30"}));
  db.reply_with(":0\r\n");
  EXPECT_FALSE(db.expire("k", 30s, ExpireCondition::IfNoExpiry).get());
  EXPECT_EQ(db.last(), (Words{"EXPIRE", "k", "30", "NX"}));
  db.reply_with(":1\r\n");
  (void)db.pexpire("k", 1500ms, ExpireCondition::IfGreater);
  EXPECT_EQ(db.last(), (Words{"PEXPIRE", "k", "1500", "GT"}));
  auto at = std::chrono::system_clock::time_point(1700000000500ms);
  db.reply_with(":1\r\n");
  (void)db.expireat("k", at, ExpireCondition::IfLess);
  EXPECT_EQ(db.last(), (Words{"EXPIREAT", "k", "1700000000", "LT"}));
  db.reply_with(":1\r\n");
  (void)db.pexpireat("k", at, ExpireCondition::IfHasExpiry);
  EXPECT_EQ(db.last(), (Words{"PEXPIREAT", "k", "1700000000500", "XX"}));
  db.reply_with(":1\r\n");
  (void)db.expire("k", 1s, Flags::FireAndForget);
  EXPECT_EQ(db.last(), (Words{"EXPIRE", "k", "1"}));
  db.reply_with(":-2\r\n");
  EXPECT_EQ(db.ttl("k").get(), -2);
  db.reply_with(":-1\r\n");
  EXPECT_EQ(db.pttl("k").get(), -1);
  EXPECT_EQ(db.last(), (Words{"PTTL", "k"}));
  db.reply_with(":0\r\n");
  EXPECT_FALSE(db.persist("k").get());
}

TEST(KeyCommands, TypeRenameCopyObjectMemory) {
  RecordingSink db;
  db.reply_with("+none\r\n");
  EXPECT_EQ(db.type("k").get(), "none");
  db.rename("a", "b").get();
  EXPECT_EQ(db.last(), (Words{"RENAME", "a", "b"}));
  db.reply_with(":0\r\n");
  EXPECT_FALSE(db.renamenx("a", "b").get());
  db.reply_with(":1\r\n");
  EXPECT_TRUE(db.copy("a", "b", {.destination_db = 2, .replace = true}).get());
  EXPECT_EQ(db.last(), (Words{"COPY", "a", "b", "DB", "2", "REPLACE"}));
  db.reply_with("$8\r\nlistpack\r\n");
  EXPECT_EQ(db.object_encoding("k").get(), "listpack");
  EXPECT_EQ(db.last(), (Words{"OBJECT", "ENCODING", "k"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.memory_usage("k", 0).get(), std::nullopt);
  EXPECT_EQ(db.last(), (Words{"MEMORY", "USAGE", "k", "SAMPLES", "0"}));
  db.reply_with(":56\r\n");
  EXPECT_EQ(db.memory_usage("k").get(), 56);
  EXPECT_EQ(db.last(), (Words{"MEMORY", "USAGE", "k"}));
}

TEST(KeyCommands, Scan) {
  RecordingSink db;
  db.reply_with("*2\r\n$2\r\n17\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  ScanPage page = db.scan(0).get();
  EXPECT_EQ(db.last(), (Words{"SCAN", "0"}));
  EXPECT_EQ(page.cursor, 17u);
  EXPECT_EQ(page.items, (Words{"a", "b"}));
  db.reply_with("*2\r\n$1\r\n0\r\n*0\r\n");
  page = db.scan(17, {.pattern = "user:*", .page_size = 500, .type = "hash"}).get();
  EXPECT_EQ(db.last(), (Words{"SCAN", "17", "MATCH", "user:*", "COUNT", "500", "TYPE", "hash"}));
  EXPECT_EQ(page.cursor, 0u);
  EXPECT_TRUE(page.items.empty());
  // Cursors are unsigned 64-bit.
  db.reply_with("*2\r\n$20\r\n18446744073709551615\r\n*0\r\n");
  EXPECT_EQ(db.scan(0).get().cursor, 18446744073709551615u);
}

TEST(HashCommands, Arguments) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  (void)db.hset("h", "f", "v");
  EXPECT_EQ(db.last(), (Words{"HSET", "h", "f", "v"}));
  db.reply_with(":2\r\n");
  EXPECT_EQ(db.hset("h", {{"a", "1"}, {"b", "2"}}).get(), 2);
  EXPECT_EQ(db.last(), (Words{"HSET", "h", "a", "1", "b", "2"}));
  db.reply_with(":1\r\n");
  EXPECT_TRUE(db.hsetnx("h", "f", "v").get());
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.hget("h", "f").get(), std::nullopt);
  EXPECT_EQ(db.last(), (Words{"HGET", "h", "f"}));
  db.reply_with("*2\r\n$1\r\n1\r\n$-1\r\n");
  auto values = db.hmget("h", {"a", "zz"}).get();
  EXPECT_EQ(db.last(), (Words{"HMGET", "h", "a", "zz"}));
  EXPECT_EQ(values, (std::vector<std::optional<std::string>>{"1", std::nullopt}));
  db.reply_with(":1\r\n");
  (void)db.hdel("h", {"a", "b"});
  EXPECT_EQ(db.last(), (Words{"HDEL", "h", "a", "b"}));
  db.reply_with(":0\r\n");
  EXPECT_FALSE(db.hexists("h", "a").get());
  db.reply_with(":11\r\n");
  EXPECT_EQ(db.hincrby("h", "n", 10).get(), 11);
  EXPECT_EQ(db.last(), (Words{"HINCRBY", "h", "n", "10"}));
  db.reply_with("$4\r\n2.75\r\n");
  EXPECT_DOUBLE_EQ(db.hincrbyfloat("h", "x", 0.25).get(), 2.75);
  EXPECT_EQ(db.last(), (Words{"HINCRBYFLOAT", "h", "x", "0.25"}));
  db.reply_with("*1\r\n$1\r\na\r\n");
  EXPECT_EQ(db.hkeys("h").get(), (Words{"a"}));
  db.reply_with("*1\r\n$1\r\n1\r\n");
  EXPECT_EQ(db.hvals("h").get(), (Words{"1"}));
  db.reply_with(":1\r\n");
  (void)db.hlen("h");
  EXPECT_EQ(db.last(), (Words{"HLEN", "h"}));
  db.reply_with(":1\r\n");
  (void)db.hstrlen("h", "a");
  EXPECT_EQ(db.last(), (Words{"HSTRLEN", "h", "a"}));
  db.reply_with("$1\r\na\r\n");
  EXPECT_EQ(db.hrandfield("h").get(), "a");
  db.reply_with("*0\r\n");
  (void)db.hrandfield("h", -3);
  EXPECT_EQ(db.last(), (Words{"HRANDFIELD", "h", "-3"}));
  db.reply_with("*0\r\n");
  (void)db.hrandfield_with_values("h", 2);
  EXPECT_EQ(db.last(), (Words{"HRANDFIELD", "h", "2", "WITHVALUES"}));
}

TEST(ListCommands, Arguments) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  (void)db.lpush("l", "a");
  EXPECT_EQ(db.last(), (Words{"LPUSH", "l", "a"}));
  db.reply_with(":3\r\n");
  EXPECT_EQ(db.rpush("l", {"a", "b", "c"}).get(), 3);
  EXPECT_EQ(db.last(), (Words{"RPUSH", "l", "a", "b", "c"}));
  db.reply_with(":0\r\n");
  (void)db.lpushx("l", "a");
  EXPECT_EQ(db.last(), (Words{"LPUSHX", "l", "a"}));
  db.reply_with(":0\r\n");
  (void)db.rpushx("l", "a");
  EXPECT_EQ(db.last(), (Words{"RPUSHX", "l", "a"}));
  db.reply_with("$1\r\na\r\n");
  EXPECT_EQ(db.lpop("l").get(), "a");
  db.reply_with("*2\r\n$1\r\nc\r\n$1\r\nb\r\n");
  EXPECT_EQ(db.rpop("l", 2).get(), (Words{"c", "b"}));
  EXPECT_EQ(db.last(), (Words{"RPOP", "l", "2"}));
  db.reply_with("*0\r\n");
  (void)db.lrange("l", 0, -1);
  EXPECT_EQ(db.last(), (Words{"LRANGE", "l", "0", "-1"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.lindex("l", 9).get(), std::nullopt);
  db.lset("l", 0, "x").get();
  EXPECT_EQ(db.last(), (Words{"LSET", "l", "0", "x"}));
  db.reply_with(":-1\r\n");
  EXPECT_EQ(db.linsert("l", InsertPosition::Before, "p", "x").get(), -1);
  EXPECT_EQ(db.last(), (Words{"LINSERT", "l", "BEFORE", "p", "x"}));
  db.reply_with(":2\r\n");
  (void)db.lrem("l", -2, "x");
  EXPECT_EQ(db.last(), (Words{"LREM", "l", "-2", "x"}));
  db.ltrim("l", 1, -1).get();
  EXPECT_EQ(db.last(), (Words{"LTRIM", "l", "1", "-1"}));
  db.reply_with("$-1\r\n");  // no match
  EXPECT_EQ(db.lpos("l", "x", {.rank = -1, .maxlen = 100}).get(), std::nullopt);
  EXPECT_EQ(db.last(), (Words{"LPOS", "l", "x", "RANK", "-1", "MAXLEN", "100"}));
  db.reply_with("*2\r\n:0\r\n:3\r\n");
  EXPECT_EQ(db.lpos("l", "x", 0).get(), (std::vector<long long>{0, 3}));
  EXPECT_EQ(db.last(), (Words{"LPOS", "l", "x", "COUNT", "0"}));
  db.reply_with("$1\r\nz\r\n");
  EXPECT_EQ(db.lmove("a", "b", ListEnd::Right, ListEnd::Left).get(), "z");
  EXPECT_EQ(db.last(), (Words{"LMOVE", "a", "b", "RIGHT", "LEFT"}));
  db.reply_with("*-1\r\n");
  EXPECT_EQ(db.lmpop({"a", "b"}, ListEnd::Left, 3).get(), std::nullopt);
  EXPECT_EQ(db.last(), (Words{"LMPOP", "2", "a", "b", "LEFT", "COUNT", "3"}));
  db.reply_with("*-1\r\n");
  (void)db.lmpop({"a"}, ListEnd::Right);
  EXPECT_EQ(db.last(), (Words{"LMPOP", "1", "a", "RIGHT"}));
}

}  // namespace
}  // namespace redmux::testing
