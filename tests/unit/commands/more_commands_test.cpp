// Arguments of the set, sorted-set, HyperLogLog and server groups, execute(), and the SCAN
// range (no server: a recording sink).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "redmux/commands.hpp"
#include "redmux/scan.hpp"
#include "unit/commands/recording_sink.hpp"

namespace redmux::testing {
namespace {

TEST(SetCommands, Arguments) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  (void)db.sadd("s", "m");
  EXPECT_EQ(db.last(), (Words{"SADD", "s", "m"}));
  db.reply_with(":2\r\n");
  EXPECT_EQ(db.sadd("s", {"a", "b"}).get(), 2);
  EXPECT_EQ(db.last(), (Words{"SADD", "s", "a", "b"}));
  db.reply_with(":1\r\n");
  (void)db.srem("s", {"a"});
  EXPECT_EQ(db.last(), (Words{"SREM", "s", "a"}));
  db.reply_with("~1\r\n$1\r\nm\r\n");  // RESP3 set
  EXPECT_EQ(db.smembers("s").get(), (Words{"m"}));
  db.reply_with(":1\r\n");
  EXPECT_TRUE(db.sismember("s", "m").get());
  db.reply_with("*2\r\n:1\r\n:0\r\n");
  EXPECT_EQ(db.smismember("s", {"m", "x"}).get(), (std::vector<bool>{true, false}));
  EXPECT_EQ(db.last(), (Words{"SMISMEMBER", "s", "m", "x"}));
  db.reply_with(":1\r\n");
  (void)db.scard("s");
  EXPECT_EQ(db.last(), (Words{"SCARD", "s"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.spop("s").get(), std::nullopt);
  db.reply_with("*0\r\n");
  (void)db.spop("s", 3);
  EXPECT_EQ(db.last(), (Words{"SPOP", "s", "3"}));
  db.reply_with("*0\r\n");
  (void)db.srandmember("s", -2);
  EXPECT_EQ(db.last(), (Words{"SRANDMEMBER", "s", "-2"}));
  db.reply_with("*0\r\n");
  (void)db.sinter({"a", "b"});
  EXPECT_EQ(db.last(), (Words{"SINTER", "a", "b"}));
  db.reply_with("*0\r\n");
  (void)db.sunion({"a", "b"});
  EXPECT_EQ(db.last(), (Words{"SUNION", "a", "b"}));
  db.reply_with("*0\r\n");
  (void)db.sdiff({"a", "b"});
  EXPECT_EQ(db.last(), (Words{"SDIFF", "a", "b"}));
  db.reply_with(":0\r\n");
  (void)db.sinterstore("d", {"a", "b"});
  EXPECT_EQ(db.last(), (Words{"SINTERSTORE", "d", "a", "b"}));
  db.reply_with(":0\r\n");
  (void)db.sunionstore("d", {"a"});
  EXPECT_EQ(db.last(), (Words{"SUNIONSTORE", "d", "a"}));
  db.reply_with(":0\r\n");
  (void)db.sdiffstore("d", {"a"});
  EXPECT_EQ(db.last(), (Words{"SDIFFSTORE", "d", "a"}));
  db.reply_with(":1\r\n");
  EXPECT_TRUE(db.smove("a", "b", "m").get());
  EXPECT_EQ(db.last(), (Words{"SMOVE", "a", "b", "m"}));
  db.reply_with(":1\r\n");
  (void)db.sintercard({"a", "b"}, 5);
  EXPECT_EQ(db.last(), (Words{"SINTERCARD", "2", "a", "b", "LIMIT", "5"}));
  std::vector<std::string> keys{"x", "y", "z"};
  db.reply_with(":1\r\n");
  (void)db.sintercard(keys);
  EXPECT_EQ(db.last(), (Words{"SINTERCARD", "3", "x", "y", "z"}));
}

TEST(SortedSetCommands, Zadd) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  EXPECT_EQ(db.zadd("z", 1.5, "a").get(), 1);
  EXPECT_EQ(db.last(), (Words{"ZADD", "z", "1.5", "a"}));
  db.reply_with(":2\r\n");
  (void)db.zadd("z", {{1, "a"}, {2, "b"}},
                {.condition = SetCondition::IfExists,
                 .score_condition = ScoreCondition::IfGreater,
                 .changed = true});
  EXPECT_EQ(db.last(), (Words{"ZADD", "z", "XX", "GT", "CH", "1", "a", "2", "b"}));
  std::vector<ScoredMember> members{{"m", -0.5}};
  db.reply_with(":1\r\n");
  (void)db.zadd("z", members, {.condition = SetCondition::IfNotExists});
  EXPECT_EQ(db.last(), (Words{"ZADD", "z", "NX", "-0.5", "m"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.zadd_incr("z", 2, "a", {.condition = SetCondition::IfNotExists}).get(),
            std::nullopt);
  EXPECT_EQ(db.last(), (Words{"ZADD", "z", "NX", "INCR", "2", "a"}));
  db.reply_with(",3.5\r\n");
  EXPECT_EQ(db.zadd_incr("z", 2, "a").get(), 3.5);
}

TEST(SortedSetCommands, ScoresRanksAndRemoval) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  (void)db.zrem("z", "a");
  EXPECT_EQ(db.last(), (Words{"ZREM", "z", "a"}));
  db.reply_with(":2\r\n");
  (void)db.zrem("z", {"a", "b"});
  EXPECT_EQ(db.last(), (Words{"ZREM", "z", "a", "b"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.zscore("z", "nope").get(), std::nullopt);
  db.reply_with("$3\r\n2.5\r\n");
  (void)db.zincrby("z", 1, "a");
  EXPECT_EQ(db.last(), (Words{"ZINCRBY", "z", "1", "a"}));
  db.reply_with(":3\r\n");
  (void)db.zcard("z");
  EXPECT_EQ(db.last(), (Words{"ZCARD", "z"}));
  db.reply_with(":3\r\n");
  (void)db.zcount("z", ScoreBound::exclusive(1), ScoreBound::max());
  EXPECT_EQ(db.last(), (Words{"ZCOUNT", "z", "(1", "inf"}));
  db.reply_with(":3\r\n");
  (void)db.zcount("z", ScoreBound::min(), 2.5);
  EXPECT_EQ(db.last(), (Words{"ZCOUNT", "z", "-inf", "2.5"}));
  db.reply_with(":0\r\n");
  EXPECT_EQ(db.zrank("z", "a").get(), 0);
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.zrevrank("z", "a").get(), std::nullopt);
  EXPECT_EQ(db.last(), (Words{"ZREVRANK", "z", "a"}));
  db.reply_with("*0\r\n");
  (void)db.zpopmin("z");
  EXPECT_EQ(db.last(), (Words{"ZPOPMIN", "z", "1"}));
  db.reply_with("*0\r\n");
  (void)db.zpopmax("z", 3);
  EXPECT_EQ(db.last(), (Words{"ZPOPMAX", "z", "3"}));
  db.reply_with(":1\r\n");
  (void)db.zremrangebyscore("z", ScoreBound::exclusive(5), ScoreBound::max());
  EXPECT_EQ(db.last(), (Words{"ZREMRANGEBYSCORE", "z", "(5", "inf"}));
  db.reply_with(":1\r\n");
  (void)db.zremrangebyrank("z", 0, -3);
  EXPECT_EQ(db.last(), (Words{"ZREMRANGEBYRANK", "z", "0", "-3"}));
}

TEST(SortedSetCommands, Zrange) {
  RecordingSink db;
  db.reply_with("*0\r\n");
  (void)db.zrange("z", ZRange::by_rank(0, -1));
  EXPECT_EQ(db.last(), (Words{"ZRANGE", "z", "0", "-1"}));
  db.reply_with("*0\r\n");
  (void)db.zrange("z", ZRange::by_rank(0, 9).reversed());
  EXPECT_EQ(db.last(), (Words{"ZRANGE", "z", "0", "9", "REV"}));
  db.reply_with("*0\r\n");
  (void)db.zrange("z", ZRange::by_score(ScoreBound::exclusive(1), 10).limit(5, 20));
  EXPECT_EQ(db.last(), (Words{"ZRANGE", "z", "(1", "10", "BYSCORE", "LIMIT", "5", "20"}));
  // Reversed by score: redmux sends the upper bound first, as the server wants.
  db.reply_with("*0\r\n");
  (void)db.zrange("z", ZRange::by_score(1, 10).reversed());
  EXPECT_EQ(db.last(), (Words{"ZRANGE", "z", "10", "1", "BYSCORE", "REV"}));
  db.reply_with("*0\r\n");
  (void)db.zrange("z", ZRange::by_lex(LexBound::inclusive("a"), LexBound::max()));
  EXPECT_EQ(db.last(), (Words{"ZRANGE", "z", "[a", "+", "BYLEX"}));
  db.reply_with("*0\r\n");
  (void)db.zrange_with_scores("z", ZRange::by_lex(LexBound::min(), LexBound::exclusive("m")));
  EXPECT_EQ(db.last(), (Words{"ZRANGE", "z", "-", "(m", "BYLEX", "WITHSCORES"}));
  db.reply_with(":2\r\n");
  (void)db.zrangestore("dst", "src", ZRange::by_score(0, 1));
  EXPECT_EQ(db.last(), (Words{"ZRANGESTORE", "dst", "src", "0", "1", "BYSCORE"}));
}

TEST(SortedSetCommands, StoreCommands) {
  RecordingSink db;
  db.reply_with(":2\r\n");
  (void)db.zunionstore("d", {"a", "b"});
  EXPECT_EQ(db.last(), (Words{"ZUNIONSTORE", "d", "2", "a", "b"}));
  const double weights[] = {1, 0.5};
  db.reply_with(":2\r\n");
  (void)db.zinterstore("d", {"a", "b"}, {.weights = weights, .aggregate = ZAggregate::Max});
  EXPECT_EQ(db.last(),
            (Words{"ZINTERSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "0.5", "AGGREGATE", "MAX"}));
  std::vector<std::string> keys{"x"};
  db.reply_with(":0\r\n");
  (void)db.zunionstore("d", keys, {.aggregate = ZAggregate::Min});
  EXPECT_EQ(db.last(), (Words{"ZUNIONSTORE", "d", "1", "x", "AGGREGATE", "MIN"}));
}

TEST(PubSubCommands, CountsTakeAnyStringRange) {
  RecordingSink db;
  const std::vector<std::string> channels = {"a", "b"};
  db.reply_with("*4\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:0\r\n");
  auto counts = db.pubsub_shardnumsub(channels).get();
  EXPECT_EQ(db.last(), (Words{"PUBSUB", "SHARDNUMSUB", "a", "b"}));
  ASSERT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts[0], (std::pair<std::string, long long>{"a", 1}));
  db.reply_with("*2\r\n$1\r\nc\r\n:2\r\n");
  (void)db.pubsub_shardnumsub({"c"}).get();
  EXPECT_EQ(db.last(), (Words{"PUBSUB", "SHARDNUMSUB", "c"}));
  db.reply_with("*4\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:0\r\n");
  (void)db.pubsub_numsub(channels).get();
  EXPECT_EQ(db.last(), (Words{"PUBSUB", "NUMSUB", "a", "b"}));
}

TEST(HyperLogLogCommands, Arguments) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  EXPECT_TRUE(db.pfadd("hll", {"a", "b"}).get());
  EXPECT_EQ(db.last(), (Words{"PFADD", "hll", "a", "b"}));
  db.reply_with(":2\r\n");
  EXPECT_EQ(db.pfcount("hll").get(), 2);
  EXPECT_EQ(db.last(), (Words{"PFCOUNT", "hll"}));
  db.reply_with(":2\r\n");
  (void)db.pfcount({"h1", "h2"});
  EXPECT_EQ(db.last(), (Words{"PFCOUNT", "h1", "h2"}));
  db.pfmerge("d", {"h1", "h2"}).get();
  EXPECT_EQ(db.last(), (Words{"PFMERGE", "d", "h1", "h2"}));
}

TEST(ServerCommands, Arguments) {
  RecordingSink db;
  db.reply_with("+PONG\r\n");
  EXPECT_EQ(db.ping().get(), "PONG");
  EXPECT_EQ(db.last(), (Words{"PING"}));
  db.reply_with("$2\r\nhi\r\n");
  EXPECT_EQ(db.ping("hi").get(), "hi");
  EXPECT_EQ(db.last(), (Words{"PING", "hi"}));
  db.reply_with("$2\r\nhi\r\n");
  (void)db.echo("hi");
  EXPECT_EQ(db.last(), (Words{"ECHO", "hi"}));
  db.reply_with(":0\r\n");
  (void)db.dbsize();
  EXPECT_EQ(db.last(), (Words{"DBSIZE"}));
  db.reply_with("$0\r\n\r\n");
  (void)db.info();
  EXPECT_EQ(db.last(), (Words{"INFO"}));
  db.reply_with("$0\r\n\r\n");
  (void)db.info("memory");
  EXPECT_EQ(db.last(), (Words{"INFO", "memory"}));
  db.reply_with(":12\r\n");
  EXPECT_EQ(db.client_id().get(), 12);
  EXPECT_EQ(db.last(), (Words{"CLIENT", "ID"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.client_getname().get(), std::nullopt);
  EXPECT_EQ(db.last(), (Words{"CLIENT", "GETNAME"}));
  db.reply_with("$0\r\n\r\n");
  EXPECT_TRUE(db.client_list().get().empty());
  EXPECT_EQ(db.last(), (Words{"CLIENT", "LIST"}));
}

TEST(ServerCommands, Execute) {
  RecordingSink db;
  db.reply_with(":3\r\n");
  Reply r = db.execute("OBJECT", "FREQ", std::string("k")).get();
  EXPECT_EQ(db.last(), (Words{"OBJECT", "FREQ", "k"}));
  EXPECT_EQ(r.integer(), 3);
  db.reply_with("+OK\r\n");
  (void)db.execute({"SET", "k", 42}, Flags::FireAndForget);
  EXPECT_EQ(db.last(), (Words{"SET", "k", "42"}));
  EXPECT_EQ(db.last_options.flags, Flags::FireAndForget);
  std::vector<Arg> args{"HELLO", 3};
  db.reply_with("-ERR nope\r\n");
  auto failed = db.execute(args).result();
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code(), errc::server_error);
}

TEST(ScanRange, WalksAllPagesSkippingEmptyOnes) {
  RecordingSink db;
  db.reply_with("*2\r\n$1\r\n5\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  db.reply_with("*2\r\n$1\r\n9\r\n*0\r\n");  // an empty page mid-walk
  db.reply_with("*2\r\n$1\r\n0\r\n*1\r\n$1\r\nc\r\n");
  auto range = scan_keys(db, {.pattern = "k*", .page_size = 2});
  std::vector<std::string> seen;
  for (const std::string& key : range) seen.push_back(key);
  EXPECT_EQ(seen, (Words{"a", "b", "c"}));
  EXPECT_TRUE(range.done());
  EXPECT_EQ(range.cursor(), 0u);
  EXPECT_EQ(range.pages_fetched(), 3u);
  ASSERT_EQ(db.sent.size(), 3u);
  EXPECT_EQ(db.sent[0], (Words{"SCAN", "0", "MATCH", "k*", "COUNT", "2"}));
  EXPECT_EQ(db.sent[1], (Words{"SCAN", "5", "MATCH", "k*", "COUNT", "2"}));
  EXPECT_EQ(db.sent[2], (Words{"SCAN", "9", "MATCH", "k*", "COUNT", "2"}));
}

TEST(ScanRange, ResumesFromACursor) {
  RecordingSink db;
  db.reply_with("*2\r\n$2\r\n42\r\n*1\r\n$1\r\na\r\n");
  auto first = scan_keys(db);
  auto it = first.begin();
  EXPECT_EQ(*it, "a");
  EXPECT_EQ(first.cursor(), 42u);  // stop here; a new walk continues after this page
  db.reply_with("*2\r\n$1\r\n0\r\n*1\r\n$1\r\nz\r\n");
  auto rest = scan_keys(db, {}, first.cursor());
  std::vector<std::string> seen;
  for (const std::string& key : rest) seen.push_back(key);
  EXPECT_EQ(seen, (Words{"z"}));
  EXPECT_EQ(db.last(), (Words{"SCAN", "42"}));
}

// A copyable sink (like Database) is copied into the range: the range outlives it safely.
class CountingSink : public Commands<CountingSink> {
 public:
  template <class T>
  Future<T> send(const CallOptions&, std::span<const Arg> args) {
    ++*calls;
    if constexpr (std::is_same_v<T, ScanPage>) {
      std::uint64_t cursor = args[1].bytes() == "0" ? 3 : 0;
      return Future<T>::ready_with(ScanPage{cursor, {std::string(args[1].bytes())}});
    } else {
      return Future<T>::ready_with(Error(errc::not_sent, "unused"));
    }
  }
  std::shared_ptr<int> calls = std::make_shared<int>(0);
};

TEST(ScanRange, CopiesACopyableSink) {
  std::vector<std::string> seen;
  std::shared_ptr<int> calls;
  auto range = [&] {
    CountingSink sink;
    calls = sink.calls;
    return scan_keys(sink);  // the sink dies here; the range holds a copy
  }();
  for (const std::string& key : range) seen.push_back(key);
  EXPECT_EQ(seen, (Words{"0", "3"}));  // each page holds the cursor it was asked with
  EXPECT_EQ(*calls, 2);
}

TEST(ScanRange, EmptyDatabaseAndErrors) {
  RecordingSink db;
  db.reply_with("*2\r\n$1\r\n0\r\n*0\r\n");
  auto empty = scan_keys(db);
  EXPECT_TRUE(empty.begin() == empty.end());
  EXPECT_TRUE(empty.done());
  db.reply_with("-ERR boom\r\n");
  auto failing = scan_keys(db);
  EXPECT_THROW((void)failing.begin(), ServerError);
}

}  // namespace
}  // namespace redmux::testing
