// command<T>(): which types convert a reply alike under RESP2 and RESP3 (docs/protocol.md's
// table), and which of RESP3's shapes do not convert to what their RESP2 form would.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol_fixture.hpp"
#include "redmux/redmux.hpp"

namespace redmux {
namespace {

class CommandConversionTest : public test::ProtocolTest<CommandConversionTest> {
 protected:
  CommandConversionTest() : ProtocolTest("conversion-test") {}
  bool resp3() const { return GetParam() == std::string("resp3"); }
};

TEST_P(CommandConversionTest, TheTypesTheProtocolPageNamesConvertUnderBoth) {
  ASSERT_EQ(db_.zadd("z", std::vector<ScoredMember>{{"m1", 1.5}, {"m2", 2}}).get(), 2);
  ASSERT_EQ(db_.hset("h", "f1", "v1").get(), 1);
  using Pairs = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(db_.command<Pairs>(CallOptions{}, "ZRANGE", "z", 0, -1, "WITHSCORES").get(),
            (Pairs{{"m1", 1.5}, {"m2", 2}}));
  const auto scored =
      db_.command<std::vector<ScoredMember>>(CallOptions{}, "ZRANGE", "z", 0, -1, "WITHSCORES")
          .get();
  ASSERT_EQ(scored.size(), 2u);
  EXPECT_EQ(scored[1].member, "m2");
  EXPECT_EQ(scored[1].score, 2);
  using Fields = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(db_.command<Fields>(CallOptions{}, "HRANDFIELD", "h", 1, "WITHVALUES").get(),
            (Fields{{"f1", "v1"}}));
  EXPECT_EQ(db_.command<double>(CallOptions{}, "ZSCORE", "z", "m2").get(), 2.0);
  EXPECT_EQ(db_.command<std::optional<double>>(CallOptions{}, "ZSCORE", "z", "none").get(),
            std::nullopt);
}

TEST_P(CommandConversionTest, RespThreeShapesThatDoNotConvertAsTheirRespTwoForm) {
  ASSERT_EQ(db_.zadd("z", std::vector<ScoredMember>{{"m1", 1.5}, {"m2", 2}}).get(), 2);
  ASSERT_EQ(db_.hset("h", "f1", "v1").get(), 1);
  const Result<std::vector<std::string>> flat =
      db_.command<std::vector<std::string>>(CallOptions{}, "ZRANGE", "z", 0, -1, "WITHSCORES")
          .result();
  const Result<std::pair<std::string, std::string>> pair =
      db_.command<std::pair<std::string, std::string>>(CallOptions{}, "HRANDFIELD", "h", 1,
                                                       "WITHVALUES")
          .result();
  const Result<long long> whole =
      db_.command<long long>(CallOptions{}, "ZSCORE", "z", "m2").result();
  EXPECT_EQ(flat.has_value(), !resp3());
  EXPECT_EQ(pair.has_value(), !resp3());
  EXPECT_EQ(whole.has_value(), !resp3());
  if (resp3()) {
    EXPECT_EQ(flat.error().code(), errc::unexpected_reply) << flat.error().message();
    EXPECT_EQ(whole.error().code(), errc::unexpected_reply) << whole.error().message();
  }
}

INSTANTIATE_TEST_SUITE_P(Protocols, CommandConversionTest, ::testing::Values("resp3", "resp2"));

}  // namespace
}  // namespace redmux
