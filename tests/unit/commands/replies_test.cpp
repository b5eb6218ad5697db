// Replies captured from redis-server 7.0 in RESP2 and RESP3 (fixtures.inc) convert to the
// typed commands' result types alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <string>
#include <string_view>
#include <vector>

#include "redmux/commands.hpp"
#include "unit/commands/recording_sink.hpp"

namespace redmux::testing {
namespace {

#include "unit/commands/fixtures.inc"

struct Shapes {
  std::string_view resp2;
  std::string_view resp3;
};

/// Runs `check(sink)` once per protocol, with the sink's next reply the captured one.
template <class Check>
void for_both(Shapes shapes, Check check) {
  for (std::string_view resp : {shapes.resp2, shapes.resp3}) {
    SCOPED_TRACE(resp == shapes.resp2 ? "RESP2" : "RESP3");
    RecordingSink db;
    db.reply_with(std::string(resp));
    check(db);
  }
}

TEST(Replies, ZrangeWithScores) {
  for_both({kZrangeWithscores_resp2, kZrangeWithscores_resp3}, [](RecordingSink& db) {
    auto members = db.zrange_with_scores("z", ZRange::by_rank(0, -1)).get();
    ASSERT_EQ(members.size(), 3u);
    EXPECT_EQ(members[0], (ScoredMember{"a", 1}));
    EXPECT_EQ(members[1], (ScoredMember{"b", 2.5}));
    EXPECT_EQ(members[2].member, "c");
    EXPECT_TRUE(std::isinf(members[2].score));
  });
}

TEST(Replies, Hgetall) {
  for_both({kHgetall_resp2, kHgetall_resp3}, [](RecordingSink& db) {
    auto hash = db.hgetall("h").get();
    EXPECT_EQ(hash.size(), 2u);
    EXPECT_EQ(hash["f1"], "v1");
    EXPECT_EQ(hash["f2"], "v2");
  });
}

TEST(Replies, Zscore) {
  for_both({kZscore_resp2, kZscore_resp3},
           [](RecordingSink& db) { EXPECT_EQ(db.zscore("z", "b").get(), 2.5); });
  for_both({kZscoreInf_resp2, kZscoreInf_resp3}, [](RecordingSink& db) {
    auto score = db.zscore("z", "c").get();
    ASSERT_TRUE(score.has_value());
    EXPECT_TRUE(std::isinf(*score));
  });
  for_both({kZmscore_resp2, kZmscore_resp3}, [](RecordingSink& db) {
    auto scores = db.zmscore("z", {"a", "nope"}).get();
    EXPECT_EQ(scores, (std::vector<std::optional<double>>{1.0, std::nullopt}));
  });
}

TEST(Replies, ZpopminAndZaddIncr) {
  for_both({kZpopminCount_resp2, kZpopminCount_resp3}, [](RecordingSink& db) {
    EXPECT_EQ(db.zpopmin("z").get(), (std::vector<ScoredMember>{{"a", 1}}));
  });
  for_both({kZaddIncrNxNil_resp2, kZaddIncrNxNil_resp3}, [](RecordingSink& db) {
    EXPECT_EQ(db.zadd_incr("z", 1, "b", {.condition = SetCondition::IfNotExists}).get(),
              std::nullopt);
  });
}

TEST(Replies, Scan) {
  for_both({kScan_resp2, kScan_resp3}, [](RecordingSink& db) {
    ScanPage page = db.scan(0, {.pattern = "s*", .page_size = 100}).get();
    EXPECT_EQ(page.cursor, 0u);
    auto keys = page.items;
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(keys, (Words{"s", "st"}));
  });
}

TEST(Replies, ListPops) {
  for_both({kLmpop_resp2, kLmpop_resp3}, [](RecordingSink& db) {
    auto popped = db.lmpop({"nolist", "l"}, ListEnd::Left, 2).get();
    ASSERT_TRUE(popped.has_value());
    EXPECT_EQ(popped->key, "l");
    EXPECT_EQ(popped->elements, (Words{"x", "y"}));
  });
  for_both({kLmpopNil_resp2, kLmpopNil_resp3}, [](RecordingSink& db) {
    EXPECT_EQ(db.lmpop({"nolist"}, ListEnd::Left).get(), std::nullopt);
  });
  for_both({kLpopCountNil_resp2, kLpopCountNil_resp3},
           [](RecordingSink& db) { EXPECT_EQ(db.lpop("nolist", 2).get(), std::nullopt); });
}

TEST(Replies, HrandfieldWithValues) {
  for_both({kHrandfieldWithvalues_resp2, kHrandfieldWithvalues_resp3}, [](RecordingSink& db) {
    auto pairs = db.hrandfield_with_values("h", 1).get();
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_TRUE(pairs[0] == (FieldValue{"f1", "v1"}) || pairs[0] == (FieldValue{"f2", "v2"}));
  });
}

TEST(Replies, Sets) {
  for_both({kSmismember_resp2, kSmismember_resp3}, [](RecordingSink& db) {
    EXPECT_EQ(db.smismember("st", {"m1", "m2"}).get(), (std::vector<bool>{true, false}));
  });
  for_both({kSmembers_resp2, kSmembers_resp3},
           [](RecordingSink& db) { EXPECT_EQ(db.smembers("st").get(), (Words{"m1"})); });
}

TEST(Replies, SetOutcome) {
  for_both({kSetOk_resp2, kSetOk_resp3},
           [](RecordingSink& db) { EXPECT_TRUE(db.set("s", "v").get()); });
  for_both({kSetNxNil_resp2, kSetNxNil_resp3}, [](RecordingSink& db) {
    EXPECT_FALSE(db.set("s", "v2", {.condition = SetCondition::IfNotExists}).get());
  });
}

TEST(Replies, Time) {
  for_both({kTime_resp2, kTime_resp3}, [](RecordingSink& db) {
    ServerTime t = db.time().get();
    EXPECT_GT(t.seconds, 1'600'000'000);
    EXPECT_GE(t.microseconds, 0);
    EXPECT_LT(t.microseconds, 1'000'000);
    auto since_epoch = t.time_point().time_since_epoch();
    EXPECT_EQ(std::chrono::duration_cast<std::chrono::seconds>(since_epoch).count(), t.seconds);
  });
}

TEST(Replies, Info) {
  for_both({kInfo_resp2, kInfo_resp3}, [](RecordingSink& db) {
    InfoSections info = db.info().get();
    EXPECT_EQ(info.get("server", "redis_version"), "7.0.15");
    EXPECT_EQ(info.get("Server", "redis_mode"), "standalone");
    EXPECT_EQ(info.get_integer("server", "arch_bits"), 64);
    EXPECT_GE(info.get_integer("clients", "connected_clients").value_or(0), 2);
    EXPECT_TRUE(info.get_double("memory", "mem_fragmentation_ratio").has_value());
    EXPECT_TRUE(info.get("keyspace", "db0").has_value());
    EXPECT_EQ(info.find("role"), "master");
    EXPECT_EQ(info.get("server", "no_such_field"), std::nullopt);
    EXPECT_EQ(info.get("nosection", "redis_version"), std::nullopt);
  });
}

TEST(Replies, ClientList) {
  for_both({kClientList_resp2, kClientList_resp3}, [](RecordingSink& db) {
    std::vector<ClientInfo> clients = db.client_list().get();
    ASSERT_GE(clients.size(), 2u);
    const ClientInfo* named = nullptr;
    for (const ClientInfo& c : clients)
      if (c.name == "fixture-conn") named = &c;
    ASSERT_NE(named, nullptr);
    EXPECT_GT(named->id, 0);
    EXPECT_EQ(named->cmd, "client|list");
    EXPECT_EQ(named->db, 0);
    EXPECT_EQ(named->user, "default");
    EXPECT_GT(named->tot_mem, 0);
    EXPECT_NE(named->addr.find("127.0.0.1:"), std::string::npos);
    EXPECT_EQ(named->get("qbuf-free").has_value(), true);
  });
}

TEST(Replies, FloatsAndErrors) {
  for_both({kIncrbyfloat_resp2, kIncrbyfloat_resp3},
           [](RecordingSink& db) { EXPECT_DOUBLE_EQ(db.incrbyfloat("f", 1.5).get(), 1.5); });
  for_both({kWrongtype_resp2, kWrongtype_resp3}, [](RecordingSink& db) {
    auto result = db.lpush("s", "x").result();
    ASSERT_FALSE(result.has_value());
    EXPECT_EQ(result.error().code(), errc::server_error);
    EXPECT_NE(result.error().message().find("WRONGTYPE"), std::string::npos);
  });
}

TEST(Replies, ShapeMismatchIsAnErrorNotACrash) {
  RecordingSink db;
  db.reply_with("*3\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n");  // odd flat array
  auto odd = db.zrange_with_scores("z", ZRange::by_rank(0, -1)).result();
  ASSERT_FALSE(odd.has_value());
  EXPECT_EQ(odd.error().code(), errc::unexpected_reply);
  db.reply_with("*2\r\n$1\r\na\r\n$3\r\nabc\r\n");  // score not a number
  EXPECT_EQ(db.zrange_with_scores("z", ZRange::by_rank(0, -1)).result().error().code(),
            errc::unexpected_reply);
  db.reply_with(":1\r\n");  // SCAN answered with an integer
  EXPECT_EQ(db.scan(0).result().error().code(), errc::unexpected_reply);
  db.reply_with("*1\r\n$1\r\n5\r\n");  // TIME with one element
  EXPECT_EQ(db.time().result().error().code(), errc::unexpected_reply);
  db.reply_with(":5\r\n");  // INFO answered with an integer: "5" is text, parses to nothing
  EXPECT_TRUE(db.info().get().empty());
}

}  // namespace
}  // namespace redmux::testing
