// The typed blocking commands' arguments and reply conversions (no server). The blocking
// time of each command's timeout argument is tested in unit/commands/command_rules_test.cpp.
#include <gtest/gtest.h>

#include "redmux/commands/blocking.hpp"
#include "unit/commands/recording_sink.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;

class BlockingSink : public testing::RecordingSink, public BlockingCommands<BlockingSink> {
 public:
  using RecordingSink::send;
};

using Args = std::vector<std::string>;

TEST(BlockingCommands, ArgumentsSendTheTimeoutInTheCommandsUnit) {
  BlockingSink sink;
  sink.reply_with("*-1\r\n");
  sink.blpop({"a", "b"}, 250ms);
  EXPECT_EQ(sink.last(), (Args{"BLPOP", "a", "b", "0.25"}));
  sink.reply_with("*-1\r\n");
  sink.brpop("a", 0ms);
  EXPECT_EQ(sink.last(), (Args{"BRPOP", "a", "0"}));
  sink.reply_with("$-1\r\n");
  sink.blmove("s", "d", ListEnd::Right, ListEnd::Left, 2s);
  EXPECT_EQ(sink.last(), (Args{"BLMOVE", "s", "d", "RIGHT", "LEFT", "2"}));
  sink.reply_with("*-1\r\n");
  sink.blmpop({"x", "y"}, ListEnd::Right, 1500ms, 3);
  EXPECT_EQ(sink.last(), (Args{"BLMPOP", "1.5", "2", "x", "y", "RIGHT", "COUNT", "3"}));
  sink.reply_with("*-1\r\n");
  sink.bzmpop({"z"}, ScoreEnd::Max, 1s);
  EXPECT_EQ(sink.last(), (Args{"BZMPOP", "1", "1", "z", "MAX"}));
  sink.reply_with(":0\r\n");
  sink.wait(2, 100ms);
  EXPECT_EQ(sink.last(), (Args{"WAIT", "2", "100"}));
}

TEST(BlockingCommands, RepliesInBothProtocols) {
  BlockingSink sink;
  sink.reply_with("*2\r\n$1\r\nq\r\n$3\r\njob\r\n");
  EXPECT_EQ(sink.blpop("q", 1s).get(), (KeyedElement{"q", "job"}));
  sink.reply_with("*-1\r\n");
  EXPECT_EQ(sink.blpop("q", 1s).get(), std::nullopt);
  sink.reply_with("_\r\n");  // RESP3 null
  EXPECT_EQ(sink.brpop("q", 1s).get(), std::nullopt);
  sink.reply_with("*3\r\n$1\r\nz\r\n$1\r\nm\r\n$3\r\n2.5\r\n");  // RESP2 score: bulk string
  EXPECT_EQ(sink.bzpopmin("z", 1s).get(), (KeyedScoredMember{"z", "m", 2.5}));
  sink.reply_with("*3\r\n$1\r\nz\r\n$1\r\nm\r\n,-1.5\r\n");  // RESP3 score: double
  EXPECT_EQ(sink.bzpopmax("z", 1s).get(), (KeyedScoredMember{"z", "m", -1.5}));
  sink.reply_with("*2\r\n$1\r\nz\r\n$1\r\nm\r\n");
  EXPECT_THROW(sink.bzpopmin("z", 1s).get(), UnexpectedReplyError);
  sink.reply_with("*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\na\r\n,1\r\n");
  auto popped = sink.bzmpop({"z"}, ScoreEnd::Min, 1s).get();
  ASSERT_TRUE(popped);
  EXPECT_EQ(popped->key, "z");
  EXPECT_EQ(popped->members, (std::vector<ScoredMember>{{"a", 1}}));
}

}  // namespace
}  // namespace redmux
