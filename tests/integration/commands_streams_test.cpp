// Stream commands against a real redis-server, under RESP3 and RESP2 (XREAD answers a map in
// RESP3 and nested arrays in RESP2; XINFO maps vs flat name/value arrays).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "protocol_fixture.hpp"
#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;

class StreamsTest : public test::ProtocolTest<StreamsTest> {
 protected:
  StreamsTest() : ProtocolTest("streams-test") {}
};

TEST_P(StreamsTest, AddRangeLengthDelete) {
  const std::string first = db_.xadd("s", {{"type", "click"}, {"x", "3"}}).get();
  EXPECT_NE(first.find('-'), std::string::npos);
  XAddOptions explicit_id;
  explicit_id.id = "9999999999999-1";
  EXPECT_EQ(db_.xadd("s", {{"type", "view"}}, explicit_id).get(), "9999999999999-1");
  std::vector<std::pair<std::string, std::string>> fields{{"a", "1"}, {"b", std::string("\0x", 2)}};
  const std::string third = db_.xadd("s", fields, {.id = "9999999999999-*"}).get();
  EXPECT_EQ(third, "9999999999999-2");
  EXPECT_EQ(db_.xlen("s").get(), 3);

  auto all = db_.xrange("s").get();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].id, first);
  EXPECT_EQ(all[0].fields, (std::vector<FieldValue>{{"type", "click"}, {"x", "3"}}));
  EXPECT_EQ(all[0].get("x"), std::optional<std::string_view>("3"));
  EXPECT_EQ(all[0].get("nope"), std::nullopt);
  EXPECT_EQ(all[2].get("b"), std::optional<std::string_view>(std::string_view("\0x", 2)));

  auto newest = db_.xrevrange("s", "+", "-", 2).get();
  ASSERT_EQ(newest.size(), 2u);
  EXPECT_EQ(newest[0].id, third);
  EXPECT_EQ(newest[1].id, "9999999999999-1");
  auto exclusive = db_.xrange("s", "(" + first, "+", 1).get();
  ASSERT_EQ(exclusive.size(), 1u);
  EXPECT_EQ(exclusive[0].id, "9999999999999-1");

  EXPECT_EQ(db_.xdel("s", {first, "1-1"}).get(), 1);
  EXPECT_EQ(db_.xlen("s").get(), 2);
  EXPECT_TRUE(db_.xrange("missing").get().empty());
  EXPECT_EQ(db_.xlen("missing").get(), 0);
}

TEST_P(StreamsTest, TrimmingExactApproximateAndMinId) {
  for (int i = 1; i <= 10; ++i) {
    db_.xadd("t", {{"n", std::to_string(i)}}, {.id = std::to_string(i) + "-0"}).get();
  }
  XAddOptions capped;
  capped.id = "11-0";
  capped.trim = StreamTrim::max_len(5);
  db_.xadd("t", {{"n", "11"}}, capped).get();
  EXPECT_EQ(db_.xlen("t").get(), 5);
  EXPECT_EQ(db_.xrange("t").get().front().id, "7-0");

  EXPECT_EQ(db_.xtrim("t", StreamTrim::min_id("9-0")).get(), 2);
  EXPECT_EQ(db_.xrange("t").get().front().id, "9-0");
  // Approximate trimming evicts whole nodes only: a 3-entry stream is one node, so nothing.
  EXPECT_EQ(db_.xtrim("t", StreamTrim::max_len(1).approximate()).get(), 0);
  EXPECT_EQ(db_.xtrim("t", StreamTrim::max_len(1).approximate(10)).get(), 0);
  EXPECT_EQ(db_.xlen("t").get(), 3);
  EXPECT_EQ(db_.xtrim("t", StreamTrim::max_len(0)).get(), 3);

  // ~ on a stream of many nodes does evict (node size 100 entries by default).
  for (int i = 0; i < 1000; ++i) db_.xadd("big", {{"i", "v"}}, {}, Flags::FireAndForget);
  EXPECT_EQ(db_.xlen("big").get(), 1000);
  const long long evicted = db_.xtrim("big", StreamTrim::max_len(10).approximate()).get();
  EXPECT_GT(evicted, 0);
  EXPECT_GE(db_.xlen("big").get(), 10);
}

TEST_P(StreamsTest, NoMkStreamLeavesMissingStreamAlone) {
  EXPECT_EQ(db_.xadd_nomkstream("absent", {{"a", "1"}}).get(), std::nullopt);
  EXPECT_FALSE(db_.exists("absent").get());
  db_.xadd("present", {{"a", "1"}}).get();
  EXPECT_TRUE(db_.xadd_nomkstream("present", {{"a", "2"}}).get().has_value());
  EXPECT_EQ(db_.xlen("present").get(), 2);
}

TEST_P(StreamsTest, ReadWithoutBlocking) {
  db_.xadd("a", {{"k", "1"}}, {.id = "1-0"}).get();
  db_.xadd("a", {{"k", "2"}}, {.id = "2-0"}).get();
  db_.xadd("b", {{"k", "3"}}, {.id = "5-0"}).get();
  auto read = db_.xread({{"a", "0"}, {"b", "0"}}).get();
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].stream, "a");
  ASSERT_EQ(read[0].entries.size(), 2u);
  EXPECT_EQ(read[0].entries[1].id, "2-0");
  EXPECT_EQ(read[1].stream, "b");
  EXPECT_EQ(read[1].entries[0].get("k"), std::optional<std::string_view>("3"));

  auto counted = db_.xread({{"a", "0"}}, {.count = 1}).get();
  ASSERT_EQ(counted.size(), 1u);
  EXPECT_EQ(counted[0].entries.size(), 1u);
  // Only streams with something newer are listed; nothing newer anywhere: empty (a nil).
  auto partial = db_.xread({{"a", "2-0"}, {"b", "0"}}).get();
  ASSERT_EQ(partial.size(), 1u);
  EXPECT_EQ(partial[0].stream, "b");
  EXPECT_TRUE(db_.xread({{"a", "2-0"}, {"b", "5-0"}}).get().empty());
  EXPECT_TRUE(db_.xread({{"a", "$"}}).get().empty());
  EXPECT_TRUE(db_.xread({{"missing", "0"}}).get().empty());
}

TEST_P(StreamsTest, ConsumerGroupLifecycle) {
  EXPECT_THROW(db_.xgroup_create("jobs", "workers", "0").get(), ServerError);  // no stream
  db_.xgroup_create("jobs", "workers", "$", {.mkstream = true}).get();
  try {
    db_.xgroup_create("jobs", "workers", "$").get();
    FAIL() << "a second XGROUP CREATE must fail";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("BUSYGROUP"), std::string::npos) << e.what();
  }
  const std::string id1 = db_.xadd("jobs", {{"job", "1"}}).get();
  const std::string id2 = db_.xadd("jobs", {{"job", "2"}}).get();
  const std::string id3 = db_.xadd("jobs", {{"job", "3"}}).get();

  auto got = db_.xreadgroup("workers", "alice", {{"jobs", ">"}}, {.count = 2}).get();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].entries.size(), 2u);
  EXPECT_EQ(got[0].entries[0].id, id1);
  auto bob = db_.xreadgroup("workers", "bob", {{"jobs", ">"}}).get();
  ASSERT_EQ(bob.size(), 1u);
  ASSERT_EQ(bob[0].entries.size(), 1u);
  EXPECT_EQ(bob[0].entries[0].id, id3);
  EXPECT_TRUE(db_.xreadgroup("workers", "bob", {{"jobs", ">"}}).get().empty());

  StreamPendingSummary summary = db_.xpending("jobs", "workers").get();
  EXPECT_EQ(summary.count, 3);
  EXPECT_EQ(summary.smallest_id, std::optional<std::string>(id1));
  EXPECT_EQ(summary.largest_id, std::optional<std::string>(id3));
  using Counts = std::vector<std::pair<std::string, long long>>;
  EXPECT_EQ(summary.consumers, (Counts{{"alice", 2}, {"bob", 1}}));

  auto alice_pending = db_.xpending("jobs", "workers", 10, {.consumer = "alice"}).get();
  ASSERT_EQ(alice_pending.size(), 2u);
  EXPECT_EQ(alice_pending[0].id, id1);
  EXPECT_EQ(alice_pending[0].consumer, "alice");
  EXPECT_EQ(alice_pending[0].deliveries, 1);
  EXPECT_GE(alice_pending[0].idle_ms, 0);
  EXPECT_TRUE(db_.xpending("jobs", "workers", 10, {.min_idle = 3600s}).get().empty());

  EXPECT_EQ(db_.xack("jobs", "workers", {id1, "0-1"}).get(), 1);

  // bob takes alice's remaining entry; then claims it again by XAUTOCLAIM as carol.
  auto claimed = db_.xclaim("jobs", "workers", "bob", 0ms, {id2}).get();
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].get("job"), std::optional<std::string_view>("2"));
  EXPECT_EQ(db_.xclaim_ids("jobs", "workers", "bob", 0ms, {id2}, {.retry_count = 7}).get(),
            (std::vector<std::string>{id2}));
  auto after = db_.xpending("jobs", "workers", 10, {.start = id2, .end = id2}).get();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].consumer, "bob");
  EXPECT_EQ(after[0].deliveries, 7);
  EXPECT_TRUE(db_.xclaim("jobs", "workers", "bob", 3600s, {id2}).get().empty());  // not idle

  StreamAutoClaim auto_claimed = db_.xautoclaim("jobs", "workers", "carol", 0ms, "0-0", 10).get();
  EXPECT_EQ(auto_claimed.next_id, "0-0");
  ASSERT_EQ(auto_claimed.entries.size(), 2u);
  EXPECT_EQ(auto_claimed.entries[0].id, id2);
  EXPECT_TRUE(auto_claimed.deleted_ids.empty());
  // An entry deleted while pending: XAUTOCLAIM reports its id as deleted (7.0+).
  db_.xdel("jobs", {id3}).get();
  StreamAutoClaimIds ids = db_.xautoclaim_ids("jobs", "workers", "dave", 0ms).get();
  EXPECT_EQ(ids.ids, (std::vector<std::string>{id2}));
  EXPECT_EQ(ids.deleted_ids, (std::vector<std::string>{id3}));

  // Pending history of a consumer (id "0" instead of ">").
  auto history = db_.xreadgroup("workers", "dave", {{"jobs", "0"}}).get();
  ASSERT_EQ(history.size(), 1u);
  ASSERT_EQ(history[0].entries.size(), 1u);
  EXPECT_EQ(history[0].entries[0].id, id2);

  StreamInfo info = db_.xinfo_stream("jobs").get();
  EXPECT_EQ(info.length, 2);
  EXPECT_EQ(info.groups, 1);
  EXPECT_EQ(info.last_generated_id, id3);
  EXPECT_EQ(info.max_deleted_entry_id, id3);
  EXPECT_EQ(info.entries_added, 3);
  ASSERT_TRUE(info.first_entry.has_value());
  EXPECT_EQ(info.first_entry->id, id1);
  ASSERT_TRUE(info.last_entry.has_value());
  EXPECT_EQ(info.last_entry->get("job"), std::optional<std::string_view>("2"));

  auto groups = db_.xinfo_groups("jobs").get();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].name, "workers");
  EXPECT_EQ(groups[0].consumers, 4);  // alice, bob, carol, dave
  EXPECT_EQ(groups[0].pending, 1);
  EXPECT_EQ(groups[0].last_delivered_id, id3);

  EXPECT_TRUE(db_.xgroup_createconsumer("jobs", "workers", "erin").get());
  EXPECT_FALSE(db_.xgroup_createconsumer("jobs", "workers", "erin").get());
  auto consumers = db_.xinfo_consumers("jobs", "workers").get();
  ASSERT_EQ(consumers.size(), 5u);
  for (const auto& c : consumers) {
    EXPECT_EQ(c.pending, c.name == "dave" ? 1 : 0) << c.name;
    EXPECT_GE(c.idle_ms, 0);
  }
  EXPECT_EQ(db_.xgroup_delconsumer("jobs", "workers", "dave").get(), 1);
  EXPECT_EQ(db_.xpending("jobs", "workers").get().count, 0);

  db_.xgroup_setid("jobs", "workers", "0").get();
  auto again = db_.xreadgroup("workers", "erin", {{"jobs", ">"}}, {.no_ack = true}).get();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].entries.size(), 2u);
  EXPECT_EQ(db_.xpending("jobs", "workers").get().count, 0);  // NOACK

  EXPECT_TRUE(db_.xgroup_destroy("jobs", "workers").get());
  EXPECT_FALSE(db_.xgroup_destroy("jobs", "workers").get());
  EXPECT_TRUE(db_.xinfo_groups("jobs").get().empty());
}

TEST_P(StreamsTest, DeletedPendingEntryHasNoFields) {
  db_.xgroup_create("q", "g", "$", {.mkstream = true}).get();
  const std::string id = db_.xadd("q", {{"f", "v"}}).get();
  db_.xreadgroup("g", "c", {{"q", ">"}}).get();
  db_.xdel("q", {id}).get();
  auto history = db_.xreadgroup("g", "c", {{"q", "0"}}).get();
  ASSERT_EQ(history.size(), 1u);
  ASSERT_EQ(history[0].entries.size(), 1u);
  EXPECT_EQ(history[0].entries[0].id, id);
  EXPECT_TRUE(history[0].entries[0].fields.empty());
}

TEST_P(StreamsTest, ErrorsAreServerErrors) {
  db_.set("str", "v").get();
  try {
    db_.xadd("str", {{"a", "1"}}).get();
    FAIL() << "XADD to a string must fail";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
  }
  EXPECT_THROW(db_.xlen("str").get(), ServerError);
  EXPECT_THROW(db_.xread({{"str", "0"}}).get(), ServerError);
  db_.xadd("s", {{"a", "1"}}, {.id = "5-0"}).get();
  EXPECT_THROW(db_.xadd("s", {{"a", "1"}}, {.id = "4-0"}).get(), ServerError);  // not increasing
  EXPECT_THROW(db_.xadd("s", {{"a", "1"}}, {.id = "not-an-id"}).get(), ServerError);
  EXPECT_THROW(db_.xrange("s", "bad", "+").get(), ServerError);
  EXPECT_THROW(db_.xinfo_stream("missing").get(), ServerError);
  EXPECT_THROW(db_.xreadgroup("nogroup", "c", {{"s", ">"}}).get(), ServerError);
  EXPECT_THROW(db_.xpending("s", "nogroup").get(), ServerError);
  // LIMIT without ~ cannot be expressed; MINID with a malformed id is the server's to refuse.
  EXPECT_THROW(db_.xtrim("s", StreamTrim::min_id("x")).get(), ServerError);
}

TEST_P(StreamsTest, DeferredFaceAndBatch) {
  Future<std::string> added = db_.xadd("d", {{"a", "1"}});
  Future<long long> length = db_.xlen("d");
  EXPECT_EQ(length.get(), 1);
  EXPECT_FALSE(added.get().empty());

  auto batch = db_.batch();
  auto id = batch.xadd("d", {{"b", "2"}});
  auto range = batch.xrange("d");
  auto read = batch.xread({{"d", "0"}});
  batch.execute();
  const std::string new_id = id.get();
  auto entries = range.get();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].id, new_id);
  ASSERT_EQ(read.get().size(), 1u);
}

// XREAD/XREADGROUP with BLOCK are blocking commands: they run on dedicated connections. In a
// build without the dedicated-connection pool the core refuses them (NotAllowedError naming
// dedicated connections) and this test skips itself; once the pool exists it must pass.
TEST_P(StreamsTest, BlockingReadsOnDedicatedConnections) {
  db_.xadd("bs", {{"a", "1"}}, {.id = "1-0"}).get();
  std::vector<StreamMessages> ready;
  try {
    ready = db_.xread_block({{"bs", "0"}}, 1000ms).get();
  } catch (const NotAllowedError& e) {
    if (std::string(e.what()).find("dedicated connections") != std::string::npos) {
      GTEST_SKIP() << "blocking commands need the dedicated-connection pool: " << e.what();
    }
    throw;
  }
  ASSERT_EQ(ready.size(), 1u);  // data available: answered at once
  EXPECT_EQ(ready[0].entries[0].id, "1-0");

  // Nothing new within the block time: empty (a nil reply).
  EXPECT_TRUE(db_.xread_block({{"bs", "$"}}, 100ms).get().empty());

  // Woken by an XADD from another thread, without holding up the shared connection. (After
  // id 1-0 rather than "$", so the result is the same whichever arrives first.)
  Future<std::vector<StreamMessages>> waiting = db_.xread_block({{"bs", "1-0"}}, 10000ms);
  std::thread writer([db = db_]() mutable {
    std::this_thread::sleep_for(200ms);
    db.xadd("bs", {{"woken", "yes"}}, {.id = "2-0"}).get();
  });
  EXPECT_EQ(db_.incr("counter").get(), 1);  // the shared connection still answers
  auto woken = waiting.get();
  writer.join();
  ASSERT_EQ(woken.size(), 1u);
  EXPECT_EQ(woken[0].entries[0].id, "2-0");

  db_.xgroup_create("bs", "g", "2-0").get();
  Future<std::vector<StreamMessages>> group_wait =
      db_.xreadgroup_block("g", "c", {{"bs", ">"}}, 10000ms);
  db_.xadd("bs", {{"n", "3"}}, {.id = "3-0"}).get();
  auto group_read = group_wait.get();
  ASSERT_EQ(group_read.size(), 1u);
  EXPECT_EQ(group_read[0].entries[0].id, "3-0");
}

INSTANTIATE_TEST_SUITE_P(Protocols, StreamsTest, ::testing::Values("resp3", "resp2"));

}  // namespace
}  // namespace redmux
