// Geo commands against a real redis-server, under RESP3 and RESP2 (GEOPOS answers doubles in
// RESP3 and bulk strings in RESP2).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "protocol_fixture.hpp"
#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"

namespace redmux {
namespace {

using test::RedisServer;

class GeoTest : public test::ProtocolTest<GeoTest> {
 protected:
  GeoTest() : ProtocolTest("geo-test") {}
  void SetUp() override {
    ProtocolTest::SetUp();
    ASSERT_EQ(db_.geoadd("sicily", {{13.361389, 38.115556, "Palermo"},
                                    {15.087269, 37.502669, "Catania"},
                                    {12.758489, 38.788135, "edge1"},
                                    {17.241510, 38.788135, "edge2"}})
                  .get(),
              4);
  }
};

TEST_P(GeoTest, AddConditionsAndChanged) {
  GeoAddOptions nx{.condition = SetCondition::IfNotExists};
  EXPECT_EQ(db_.geoadd("sicily", {{0, 0, "Palermo"}, {14.0, 37.0, "Agrigento"}}, nx).get(), 1);
  auto palermo = db_.geopos("sicily", {"Palermo"}).get();
  ASSERT_TRUE(palermo[0].has_value());
  EXPECT_NEAR(palermo[0]->longitude, 13.361389, 1e-5);  // NX did not move it

  GeoAddOptions xx_changed{.condition = SetCondition::IfExists, .changed = true};
  EXPECT_EQ(db_.geoadd("sicily", {{13.5, 37.3, "Agrigento"}, {1, 1, "Nowhere"}}, xx_changed).get(),
            1);  // moved one, added none
  EXPECT_FALSE(db_.geopos("sicily", {"Nowhere"}).get()[0].has_value());
  std::vector<GeoMember> more{{9.19, 45.4642, "Milan"}};
  EXPECT_EQ(db_.geoadd("italy", more).get(), 1);
}

TEST_P(GeoTest, DistanceInUnitsAndPositions) {
  auto km = db_.geodist("sicily", "Palermo", "Catania", GeoUnit::Kilometers).get();
  ASSERT_TRUE(km.has_value());
  EXPECT_NEAR(*km, 166.2742, 0.001);
  auto meters = db_.geodist("sicily", "Palermo", "Catania").get();
  EXPECT_NEAR(*meters, 166274.1516, 0.01);
  EXPECT_NEAR(*db_.geodist("sicily", "Palermo", "Catania", GeoUnit::Miles).get(), 103.3182, 0.001);
  EXPECT_NEAR(*db_.geodist("sicily", "Palermo", "Catania", GeoUnit::Feet).get(), 545518.8700, 0.1);
  EXPECT_EQ(db_.geodist("sicily", "Palermo", "Atlantis").get(), std::nullopt);
  EXPECT_EQ(db_.geodist("nokey", "a", "b").get(), std::nullopt);

  auto positions = db_.geopos("sicily", {"Palermo", "Atlantis", "Catania"}).get();
  ASSERT_EQ(positions.size(), 3u);
  ASSERT_TRUE(positions[0].has_value());
  EXPECT_NEAR(positions[0]->longitude, 13.361389, 1e-5);
  EXPECT_NEAR(positions[0]->latitude, 38.115556, 1e-5);
  EXPECT_FALSE(positions[1].has_value());
  ASSERT_TRUE(positions[2].has_value());
  EXPECT_NEAR(positions[2]->latitude, 37.502669, 1e-5);
  auto none = db_.geopos("nokey", {"x"}).get();
  ASSERT_EQ(none.size(), 1u);
  EXPECT_FALSE(none[0].has_value());
}

TEST_P(GeoTest, SearchByRadiusAndBoxWithExtras) {
  auto near = db_.geosearch("sicily", GeoSearch::around(15, 37)
                                          .radius(200, GeoUnit::Kilometers)
                                          .ascending()
                                          .with_distance()
                                          .with_position()
                                          .with_hash())
                  .get();
  ASSERT_EQ(near.size(), 2u);
  EXPECT_EQ(near[0].member, "Catania");
  EXPECT_EQ(near[1].member, "Palermo");
  ASSERT_TRUE(near[0].distance && near[0].position && near[0].hash);
  EXPECT_NEAR(*near[0].distance, 56.4413, 0.001);
  EXPECT_NEAR(near[0].position->longitude, 15.087269, 1e-5);
  EXPECT_EQ(*near[0].hash, 3479447370796909u);
  EXPECT_NEAR(*near[1].distance, 190.4424, 0.001);

  auto farthest =
      db_.geosearch(
             "sicily",
             GeoSearch::around(15, 37).radius(200, GeoUnit::Kilometers).descending().count(1))
          .get();
  ASSERT_EQ(farthest.size(), 1u);
  EXPECT_EQ(farthest[0].member, "Palermo");
  EXPECT_FALSE(farthest[0].distance.has_value());
  EXPECT_FALSE(farthest[0].position.has_value());

  auto in_box = db_.geosearch("sicily", GeoSearch::around(15, 37)
                                            .box(400, 400, GeoUnit::Kilometers)
                                            .ascending()
                                            .with_distance())
                    .get();
  std::vector<std::string> names;
  for (const auto& m : in_box) names.push_back(m.member);
  EXPECT_EQ(names, (std::vector<std::string>{"Catania", "Palermo", "edge2", "edge1"}));

  auto around_member = db_.geosearch("sicily", GeoSearch::around_member("Palermo")
                                                   .radius(100, GeoUnit::Kilometers)
                                                   .ascending()
                                                   .with_distance())
                           .get();
  ASSERT_FALSE(around_member.empty());
  EXPECT_EQ(around_member[0].member, "Palermo");
  EXPECT_NEAR(*around_member[0].distance, 0.0, 1e-9);

  auto any =
      db_.geosearch("sicily",
                    GeoSearch::around(15, 37).radius(1000, GeoUnit::Kilometers).count(2, true))
          .get();
  EXPECT_EQ(any.size(), 2u);

  EXPECT_EQ(db_.geosearchstore("near", "sicily",
                               GeoSearch::around(15, 37).radius(200, GeoUnit::Kilometers))
                .get(),
            2);
  EXPECT_EQ(db_.zcard("near").get(), 2);
  EXPECT_EQ(db_.geosearchstore("dists", "sicily",
                               GeoSearch::around(15, 37).radius(200, GeoUnit::Kilometers), true)
                .get(),
            2);
  EXPECT_NEAR(*db_.zscore("dists", "Catania").get(), 56.4413, 0.001);
}

TEST_P(GeoTest, Errors) {
  EXPECT_THROW(db_.geoadd("sicily", {{200, 100, "Bad"}}).get(), ServerError);  // out of range
  db_.set("str", "v").get();
  EXPECT_THROW(db_.geoadd("str", {{1, 1, "m"}}).get(), ServerError);
  EXPECT_THROW(db_.geodist("str", "a", "b").get(), ServerError);
  EXPECT_THROW(
      db_.geosearch("sicily", GeoSearch::around_member("Atlantis").radius(1, GeoUnit::Meters))
          .get(),
      ServerError);
  EXPECT_THROW(db_.geosearch("sicily", GeoSearch::around(15, 37)).get(), ServerError);  // no shape
  // ANY needs COUNT; a negative count is refused.
  EXPECT_THROW(
      db_.geosearch("sicily", GeoSearch::around(15, 37).radius(1, GeoUnit::Meters).count(-1)).get(),
      ServerError);
}

INSTANTIATE_TEST_SUITE_P(Protocols, GeoTest, ::testing::Values("resp3", "resp2"));

}  // namespace
}  // namespace redmux
