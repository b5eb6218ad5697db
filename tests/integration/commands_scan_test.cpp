// The SCAN family against a real redis-server: SCAN with TYPE, HSCAN, SSCAN, ZSCAN as lazy
// ranges — every element exactly once on an unchanging collection, MATCH patterns, resuming
// from a saved cursor — under RESP3 and RESP2.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "protocol_fixture.hpp"
#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"

namespace redmux {
namespace {

using test::RedisServer;

class ScanTest : public test::ProtocolTest<ScanTest> {
 protected:
  ScanTest() : ProtocolTest("scan-test") {}
};

constexpr int kMany = 2000;  // large enough for hashtable encodings and many pages

TEST_P(ScanTest, KeysWithTypeFilterAndPattern) {
  for (int i = 0; i < kMany; ++i) {
    db_.set("str:" + std::to_string(i), "v", Flags::FireAndForget);
  }
  for (int i = 0; i < 50; ++i)
    db_.hset("hash:" + std::to_string(i), "f", "v", Flags::FireAndForget);
  db_.hset("str:hash", "f", "v").get();  // matches the pattern, not the type

  std::map<std::string, int> seen;
  auto strings = scan_keys(db_, {.pattern = "str:*", .page_size = 100, .type = "string"});
  for (const std::string& key : strings) ++seen[key];
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(kMany));
  for (const auto& [key, count] : seen) ASSERT_EQ(count, 1) << key;
  EXPECT_EQ(seen.count("str:hash"), 0u);
  EXPECT_GT(strings.pages_fetched(), 1u);
  EXPECT_TRUE(strings.done());
  EXPECT_EQ(strings.cursor(), 0u);

  std::set<std::string> hashes;
  for (const std::string& key : scan_keys(db_, {.type = "hash"})) hashes.insert(key);
  EXPECT_EQ(hashes.size(), 51u);
  EXPECT_TRUE(hashes.count("str:hash"));
  std::size_t nothing = 0;
  for ([[maybe_unused]] const std::string& key : scan_keys(db_, {.type = "stream"})) ++nothing;
  EXPECT_EQ(nothing, 0u);
}

TEST_P(ScanTest, HashFieldsAndValuesExactlyOnce) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (int i = 0; i < kMany; ++i)
    fields.emplace_back("f" + std::to_string(i), "v" + std::to_string(i));
  ASSERT_EQ(db_.hset("h", fields).get(), kMany);

  std::map<std::string, std::string> seen;
  std::size_t yielded = 0;
  auto range = scan_hash(db_, "h", {.page_size = 50});
  for (const FieldValue& fv : range) {
    seen[fv.field] = fv.value;
    ++yielded;
  }
  EXPECT_EQ(yielded, static_cast<std::size_t>(kMany));  // no duplicates
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kMany));
  EXPECT_EQ(seen["f1234"], "v1234");
  EXPECT_GT(range.pages_fetched(), 10u);

  std::set<std::string> matched;
  for (const FieldValue& fv : scan_hash(db_, "h", {.pattern = "f12?"})) matched.insert(fv.field);
  EXPECT_EQ(matched.size(), 10u);  // f120 … f129
  EXPECT_TRUE(matched.count("f125"));

  // A small hash (listpack) comes back whole in one page.
  db_.hset("small", {{"a", "1"}, {"b", "2"}}).get();
  auto small = scan_hash(db_, "small", {.page_size = 1});
  std::size_t n = 0;
  for ([[maybe_unused]] const FieldValue& fv : small) ++n;
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(small.pages_fetched(), 1u);
  // A missing key: nothing.
  std::size_t missing = 0;
  for ([[maybe_unused]] const FieldValue& fv : scan_hash(db_, "nope")) ++missing;
  EXPECT_EQ(missing, 0u);
}

TEST_P(ScanTest, SetAndSortedSetMembers) {
  std::vector<std::string> members;
  for (int i = 0; i < kMany; ++i) members.push_back("m" + std::to_string(i));
  ASSERT_EQ(db_.sadd("s", members).get(), kMany);
  std::multiset<std::string> from_set;
  for (const std::string& m : scan_set(db_, "s", {.page_size = 100})) from_set.insert(m);
  EXPECT_EQ(from_set.size(), static_cast<std::size_t>(kMany));
  EXPECT_EQ(std::set<std::string>(from_set.begin(), from_set.end()).size(),
            static_cast<std::size_t>(kMany));

  std::vector<ScoredMember> scored;
  for (int i = 0; i < kMany; ++i) scored.push_back({"m" + std::to_string(i), i + 0.5});
  ASSERT_EQ(db_.zadd("z", scored).get(), kMany);
  std::map<std::string, double> from_zset;
  std::size_t yielded = 0;
  for (const ScoredMember& sm : scan_sorted_set(db_, "z", {.page_size = 100})) {
    from_zset[sm.member] = sm.score;
    ++yielded;
  }
  EXPECT_EQ(yielded, static_cast<std::size_t>(kMany));
  ASSERT_EQ(from_zset.size(), static_cast<std::size_t>(kMany));
  EXPECT_DOUBLE_EQ(from_zset["m1999"], 1999.5);

  std::set<std::string> matched;
  for (const ScoredMember& sm : scan_sorted_set(db_, "z", {.pattern = "m19??"}))
    matched.insert(sm.member);
  EXPECT_EQ(matched.size(), 100u);
}

TEST_P(ScanTest, ATemporaryDatabaseCanBeScannedSinceTheRangeKeepsACopy) {
  // scan_keys(mux->database(3)): the Database is a temporary; the range copies it.
  Database three = mux_->database(3);
  ASSERT_TRUE(three.set("only-in-3", "v").get());
  std::vector<std::string> keys;
  for (const std::string& key : scan_keys(mux_->database(3))) keys.push_back(key);
  EXPECT_EQ(keys, std::vector<std::string>{"only-in-3"});
  ASSERT_EQ(three.sadd("s3", {"a", "b"}).get(), 2);
  std::set<std::string> members;
  for (const std::string& m : scan_set(mux_->database(3), "s3")) members.insert(m);
  EXPECT_EQ(members, (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(three.del({"only-in-3", "s3"}).get(), 2);
}

TEST_P(ScanTest, ResumeFromSavedCursor) {
  std::vector<std::string> members;
  for (int i = 0; i < kMany; ++i) members.push_back("m" + std::to_string(i));
  db_.sadd("s", members).get();

  // Walk a few pages, stop in the middle of one, save both cursors.
  std::set<std::string> before;
  std::uint64_t next_cursor = 0, page_cursor = 0;
  std::set<std::string> current_page_rest;
  {
    auto range = scan_set(db_, "s", {.page_size = 100});
    for (const std::string& m : range) {
      before.insert(m);
      if (before.size() == 350) {
        next_cursor = range.cursor();
        page_cursor = range.page_cursor();
        break;
      }
    }
    ASSERT_NE(next_cursor, 0u);
    EXPECT_FALSE(range.done());
  }
  // From page_cursor(): nothing is missed (the interrupted page comes again).
  std::set<std::string> resumed(before);
  for (const std::string& m : scan_set(db_, "s", {.page_size = 100}, page_cursor))
    resumed.insert(m);
  EXPECT_EQ(resumed.size(), static_cast<std::size_t>(kMany));

  // From cursor(): the rest of the interrupted page is skipped, nothing else; no element of
  // the earlier pages comes again.
  std::set<std::string> after;
  for (const std::string& m : scan_set(db_, "s", {.page_size = 100}, next_cursor)) after.insert(m);
  for (const std::string& m : after) EXPECT_EQ(before.count(m), 0u) << m;
  EXPECT_LT(before.size() + after.size(), static_cast<std::size_t>(kMany) + 1);
  EXPECT_GT(before.size() + after.size(), static_cast<std::size_t>(kMany) - 400);

  // The single-page commands expose the cursor directly.
  ScanPageOf<std::string> page = db_.sscan("s", 0, {.page_size = 10}).get();
  EXPECT_NE(page.cursor, 0u);
  EXPECT_FALSE(page.items.empty());
  ScanPageOf<FieldValue> hpage = db_.hscan("missing", 0).get();
  EXPECT_EQ(hpage.cursor, 0u);
  EXPECT_TRUE(hpage.items.empty());
}

TEST_P(ScanTest, SkipDuplicatesYieldsEachOnce) {
  std::vector<std::string> members;
  for (int i = 0; i < 500; ++i) members.push_back("m" + std::to_string(i));
  db_.sadd("s", members).get();
  // The server repeats elements only when the set shrinks mid-walk, which a test cannot
  // provoke reliably; the filtering itself is unit-tested with canned repeating pages
  // (tests/unit/commands). Here: a full walk with it on is still complete and exactly once.
  std::multiset<std::string> seen;
  auto range = scan_set(db_, "s", {.page_size = 50}).skip_duplicates();
  for (const std::string& m : range) seen.insert(m);
  EXPECT_EQ(seen.size(), 500u);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), 500u);
}

TEST_P(ScanTest, WrongTypeFailsFromTheIterator) {
  db_.set("str", "v").get();
  auto range = scan_hash(db_, "str");
  EXPECT_THROW(range.begin(), ServerError);
  EXPECT_THROW(db_.sscan("str", 0).get(), ServerError);
  EXPECT_THROW(db_.zscan("str", 0).get(), ServerError);
  // A bad cursor is the server's to refuse.
  EXPECT_THROW(db_.execute({"HSCAN", "h", "notanumber"}).get(), ServerError);
}

INSTANTIATE_TEST_SUITE_P(Protocols, ScanTest, ::testing::Values("resp3", "resp2"));

}  // namespace
}  // namespace redmux
