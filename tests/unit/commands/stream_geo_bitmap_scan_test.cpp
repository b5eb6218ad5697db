// Arguments and reply conversions of the stream, geo and bitmap groups, and the HSCAN/SSCAN/
// ZSCAN ranges with skip_duplicates() and page_cursor() (no server: a recording sink with
// canned RESP2 and RESP3 replies).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "redmux/commands.hpp"
#include "redmux/scan.hpp"
#include "unit/commands/recording_sink.hpp"

namespace redmux::testing {
namespace {

using namespace std::chrono_literals;

TEST(StreamCommands, XaddArguments) {
  RecordingSink db;
  db.reply_with("$3\r\n1-0\r\n");
  EXPECT_EQ(db.xadd("s", {{"f", "v"}}).get(), "1-0");
  EXPECT_EQ(db.last(), (Words{"XADD", "s", "*", "f", "v"}));
  XAddOptions o;
  o.id = "5-*";
  o.trim = StreamTrim::max_len(10).approximate(50);
  db.reply_with("$3\r\n5-0\r\n");
  (void)db.xadd("s", {{"a", "1"}, {"b", "2"}}, o);
  EXPECT_EQ(db.last(),
            (Words{"XADD", "s", "MAXLEN", "~", "10", "LIMIT", "50", "5-*", "a", "1", "b", "2"}));
  db.reply_with("_\r\n");
  EXPECT_EQ(db.xadd_nomkstream("s", {{"f", "v"}}, {.trim = StreamTrim::min_id("3-0")}).get(),
            std::nullopt);
  EXPECT_EQ(db.last(), (Words{"XADD", "s", "NOMKSTREAM", "MINID", "=", "3-0", "*", "f", "v"}));
  db.reply_with(":2\r\n");
  EXPECT_EQ(db.xtrim("s", StreamTrim::max_len(0).approximate()).get(), 2);
  EXPECT_EQ(db.last(), (Words{"XTRIM", "s", "MAXLEN", "~", "0"}));
}

TEST(StreamCommands, ReadArgumentsAndShapes) {
  RecordingSink db;
  // RESP3: a map of stream → entries.
  db.reply_with("%1\r\n$1\r\na\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n");
  auto read = db.xread({{"a", "0"}, {"b", "$"}}, {.count = 5}).get();
  EXPECT_EQ(db.last(), (Words{"XREAD", "COUNT", "5", "STREAMS", "a", "b", "0", "$"}));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].stream, "a");
  EXPECT_EQ(read[0].entries, (std::vector<StreamEntry>{{"1-0", {{"f", "v"}}}}));
  // RESP2: nested arrays; nil when nothing is new.
  db.reply_with("*1\r\n*2\r\n$1\r\nb\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*0\r\n");
  read = db.xread_block({{"b", "0"}}, 1500ms).get();
  EXPECT_EQ(db.last(), (Words{"XREAD", "BLOCK", "1500", "STREAMS", "b", "0"}));
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].entries[0].id, "2-0");
  db.reply_with("*-1\r\n");
  EXPECT_TRUE(db.xreadgroup("g", "c", {{"s", ">"}}, {.count = 1, .no_ack = true}).get().empty());
  EXPECT_EQ(db.last(),
            (Words{"XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "NOACK", "STREAMS", "s", ">"}));
  db.reply_with("_\r\n");
  (void)db.xreadgroup_block("g", "c", {{"s", ">"}}, 0ms);
  EXPECT_EQ(db.last(), (Words{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"}));
  // An entry deleted while pending: [id, nil].
  db.reply_with("*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n3-0\r\n*-1\r\n");
  read = db.xreadgroup("g", "c", {{"s", "0"}}).get();
  ASSERT_EQ(read[0].entries.size(), 1u);
  EXPECT_TRUE(read[0].entries[0].fields.empty());
  // A malformed entry is an error naming the element.
  db.reply_with("*1\r\n:5\r\n");
  try {
    db.xrange("s").get();
    FAIL();
  } catch (const UnexpectedReplyError& e) {
    EXPECT_NE(std::string(e.what()).find("stream entry"), std::string::npos) << e.what();
  }
}

TEST(StreamCommands, GroupPendingClaimArguments) {
  RecordingSink db;
  (void)db.xgroup_create("s", "g", "0", {.mkstream = true, .entries_read = 3});
  EXPECT_EQ(db.last(), (Words{"XGROUP", "CREATE", "s", "g", "0", "MKSTREAM", "ENTRIESREAD", "3"}));
  db.reply_with("*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n");
  StreamPendingSummary empty = db.xpending("s", "g").get();
  EXPECT_EQ(empty.count, 0);
  EXPECT_FALSE(empty.smallest_id.has_value());
  EXPECT_TRUE(empty.consumers.empty());
  db.reply_with("*1\r\n*4\r\n$3\r\n1-0\r\n$1\r\nc\r\n:15\r\n:2\r\n");
  auto pending = db.xpending("s", "g", 10, {.consumer = "c", .min_idle = 5ms}).get();
  EXPECT_EQ(db.last(), (Words{"XPENDING", "s", "g", "IDLE", "5", "-", "+", "10", "c"}));
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].idle_ms, 15);
  EXPECT_EQ(pending[0].deliveries, 2);
  db.reply_with("*0\r\n");
  (void)db.xclaim("s", "g", "c", 100ms, {"1-0", "2-0"},
                  {.idle = 5ms, .retry_count = 3, .force = true});
  EXPECT_EQ(db.last(), (Words{"XCLAIM", "s", "g", "c", "100", "1-0", "2-0", "IDLE", "5",
                              "RETRYCOUNT", "3", "FORCE"}));
  // XAUTOCLAIM of Redis 6.2 has no deleted ids.
  db.reply_with("*2\r\n$3\r\n0-0\r\n*0\r\n");
  StreamAutoClaim claimed = db.xautoclaim("s", "g", "c", 0ms).get();
  EXPECT_EQ(db.last(), (Words{"XAUTOCLAIM", "s", "g", "c", "0", "0-0", "COUNT", "100"}));
  EXPECT_EQ(claimed.next_id, "0-0");
  EXPECT_TRUE(claimed.deleted_ids.empty());
}

TEST(StreamCommands, InfoInBothShapes) {
  RecordingSink db;
  // RESP2: flat names and values; unknown names are skipped; first-entry nil.
  db.reply_with(
      "*8\r\n$6\r\nlength\r\n:0\r\n$6\r\nfuture\r\n$1\r\nx\r\n$11\r\nfirst-entry\r\n$-1\r\n"
      "$17\r\nlast-generated-id\r\n$3\r\n0-0\r\n");
  StreamInfo info = db.xinfo_stream("s").get();
  EXPECT_EQ(info.length, 0);
  EXPECT_FALSE(info.first_entry.has_value());
  EXPECT_EQ(info.last_generated_id, "0-0");
  // RESP3: maps; lag may be nil.
  db.reply_with("*1\r\n%3\r\n$4\r\nname\r\n$1\r\ng\r\n$3\r\nlag\r\n_\r\n$7\r\npending\r\n:4\r\n");
  auto groups = db.xinfo_groups("s").get();
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].name, "g");
  EXPECT_EQ(groups[0].pending, 4);
  EXPECT_FALSE(groups[0].lag.has_value());
}

TEST(GeoCommands, ArgumentsAndMatches) {
  RecordingSink db;
  db.reply_with(":1\r\n");
  (void)db.geoadd("g", {{13.5, 38.25, "p"}},
                  {.condition = SetCondition::IfExists, .changed = true});
  EXPECT_EQ(db.last(), (Words{"GEOADD", "g", "XX", "CH", "13.5", "38.25", "p"}));
  db.reply_with("$-1\r\n");
  EXPECT_EQ(db.geodist("g", "a", "b", GeoUnit::Miles).get(), std::nullopt);
  EXPECT_EQ(db.last(), (Words{"GEODIST", "g", "a", "b", "mi"}));
  // RESP3 doubles, a missing member as null.
  db.reply_with("*2\r\n*2\r\n,1.5\r\n,2.5\r\n_\r\n");
  auto positions = db.geopos("g", {"a", "b"}).get();
  EXPECT_EQ(positions[0], (GeoPosition{1.5, 2.5}));
  EXPECT_FALSE(positions[1].has_value());

  // Distance (bulk string), hash (integer), position (array), in the server's order.
  db.reply_with(
      "*2\r\n*4\r\n$1\r\na\r\n$3\r\n1.5\r\n:42\r\n*2\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\nb\r\n");
  auto matches = db.geosearch("g", GeoSearch::around(1, 2)
                                       .box(3, 4, GeoUnit::Feet)
                                       .descending()
                                       .count(5, true)
                                       .with_position()
                                       .with_distance()
                                       .with_hash())
                     .get();
  EXPECT_EQ(db.last(), (Words{"GEOSEARCH", "g", "FROMLONLAT", "1", "2", "BYBOX", "3", "4", "ft",
                              "DESC", "COUNT", "5", "ANY", "WITHCOORD", "WITHDIST", "WITHHASH"}));
  ASSERT_EQ(matches.size(), 2u);
  EXPECT_EQ(matches[0].member, "a");
  EXPECT_EQ(matches[0].distance, std::optional<double>(1.5));
  EXPECT_EQ(matches[0].hash, std::optional<std::uint64_t>(42));
  EXPECT_EQ(matches[0].position, std::optional<GeoPosition>(GeoPosition{1, 2}));
  EXPECT_EQ(matches[1].member, "b");  // a plain name
  EXPECT_FALSE(matches[1].distance.has_value());

  db.reply_with(":0\r\n");
  (void)db.geosearchstore(
      "d", "g", GeoSearch::around_member("m").radius(5, GeoUnit::Kilometers).with_distance(), true);
  EXPECT_EQ(db.last(), (Words{"GEOSEARCHSTORE", "d", "g", "FROMMEMBER", "m", "BYRADIUS", "5", "km",
                              "STOREDIST"}));
}

TEST(BitmapCommands, Arguments) {
  RecordingSink db;
  db.reply_with(":0\r\n");
  EXPECT_FALSE(db.setbit("b", 7, true).get());
  EXPECT_EQ(db.last(), (Words{"SETBIT", "b", "7", "1"}));
  db.reply_with(":1\r\n");
  (void)db.bitcount("b", 0, -1, BitUnit::Bit);
  EXPECT_EQ(db.last(), (Words{"BITCOUNT", "b", "0", "-1", "BIT"}));
  db.reply_with(":1\r\n");
  (void)db.bitpos("b", false, 2);
  EXPECT_EQ(db.last(), (Words{"BITPOS", "b", "0", "2"}));
  db.reply_with(":1\r\n");
  (void)db.bitpos("b", true, 2, 9, BitUnit::Bit);
  EXPECT_EQ(db.last(), (Words{"BITPOS", "b", "1", "2", "9", "BIT"}));
  db.reply_with(":1\r\n");
  (void)db.bitpos("b", true, 50, std::nullopt, BitUnit::Bit);  // BIT needs an end: -1
  EXPECT_EQ(db.last(), (Words{"BITPOS", "b", "1", "50", "-1", "BIT"}));
  db.reply_with(":1\r\n");
  (void)db.bitop(BitOperation::Xor, "d", {"a", "b"});
  EXPECT_EQ(db.last(), (Words{"BITOP", "XOR", "d", "a", "b"}));

  BitFieldOps ops;
  ops.overflow(BitOverflow::Fail)
      .incrby(BitFieldType::signed_bits(5), BitFieldOffset::fields(2), -3)
      .set(BitFieldType::unsigned_bits(8), 100, 255)
      .get(BitFieldType::unsigned_bits(2), 0);
  db.reply_with("*3\r\n_\r\n:0\r\n:3\r\n");
  auto values = db.bitfield("b", ops).get();
  EXPECT_EQ(db.last(), (Words{"BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "i5", "#2", "-3",
                              "SET", "u8", "100", "255", "GET", "u2", "0"}));
  EXPECT_EQ(values, (std::vector<std::optional<long long>>{std::nullopt, 0, 3}));
}

TEST(ScanRanges, HashSetSortedSetPagesInBothShapes) {
  RecordingSink db;
  db.reply_with("*2\r\n$2\r\n17\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n");
  db.reply_with("*2\r\n$1\r\n0\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n");
  std::vector<FieldValue> fields;
  auto range = scan_hash(db, "h", {.pattern = "*", .page_size = 2});
  for (const FieldValue& fv : range) fields.push_back(fv);
  EXPECT_EQ(fields, (std::vector<FieldValue>{{"a", "1"}, {"b", "2"}, {"c", "3"}}));
  ASSERT_EQ(db.sent.size(), 2u);
  EXPECT_EQ(db.sent[0], (Words{"HSCAN", "h", "0", "MATCH", "*", "COUNT", "2"}));
  EXPECT_EQ(db.sent[1], (Words{"HSCAN", "h", "17", "MATCH", "*", "COUNT", "2"}));

  db.reply_with("*2\r\n$1\r\n0\r\n*2\r\n$1\r\nm\r\n$3\r\n1.5\r\n");
  std::vector<ScoredMember> scored;
  for (const ScoredMember& sm : scan_sorted_set(db, "z")) scored.push_back(sm);
  EXPECT_EQ(scored, (std::vector<ScoredMember>{{"m", 1.5}}));
  EXPECT_EQ(db.last(), (Words{"ZSCAN", "z", "0"}));
}

TEST(ScanRanges, SkipDuplicatesAndPageCursor) {
  RecordingSink db;
  // The server returns "b" on two pages (as after a resize), and "a" twice in one page.
  db.reply_with("*2\r\n$1\r\n5\r\n*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\na\r\n");
  db.reply_with("*2\r\n$1\r\n9\r\n*1\r\n$1\r\nb\r\n");  // only duplicates: skipped entirely
  db.reply_with("*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\nc\r\n");
  std::vector<std::string> unique;
  for (const std::string& m : scan_set(db, "s").skip_duplicates()) unique.push_back(m);
  EXPECT_EQ(unique, (Words{"a", "b", "c"}));
  EXPECT_EQ(db.sent.size(), 3u);

  db.sent.clear();
  db.reply_with("*2\r\n$1\r\n5\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  db.reply_with("*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\nc\r\n");
  std::vector<std::string> all;
  auto plain = scan_set(db, "s");
  auto it = plain.begin();
  EXPECT_EQ(plain.page_cursor(), 0u);
  EXPECT_EQ(plain.cursor(), 5u);
  for (; it != plain.end(); ++it) all.push_back(*it);
  EXPECT_EQ(all, (Words{"a", "b", "b", "c"}));  // without skip_duplicates: as the server sent
  EXPECT_EQ(plain.page_cursor(), 5u);
  EXPECT_EQ(plain.cursor(), 0u);
  // A range started from page_cursor() asks for that page again.
  db.reply_with("*2\r\n$1\r\n0\r\n*0\r\n");
  for ([[maybe_unused]] const std::string& m : scan_set(db, "s", {}, plain.page_cursor())) {
  }
  EXPECT_EQ(db.last(), (Words{"SSCAN", "s", "5"}));
}

}  // namespace
}  // namespace redmux::testing
