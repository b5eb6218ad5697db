// The blocking-command pieces that need no server: the blocking time each command's timeout
// argument gives, and the typed blocking commands' arguments and reply conversions.
#include "mux/blocking.hpp"

#include <gtest/gtest.h>

#include "redmux/commands/blocking.hpp"
#include "unit/commands/recording_sink.hpp"

namespace redmux::detail {
namespace {

using std::chrono::milliseconds;

std::optional<milliseconds> time_of(std::vector<Arg> args) {
  return blocking_time(command_info(args), args);
}

TEST(BlockingTime, SecondsForTheListAndSortedSetFamily) {
  EXPECT_EQ(time_of({"BLPOP", "a", "b", "2"}), milliseconds(2000));
  EXPECT_EQ(time_of({"brpop", "a", "0.25"}), milliseconds(250));
  EXPECT_EQ(time_of({"BZPOPMIN", "z", "1.0001"}), milliseconds(1001));  // rounded up
  EXPECT_EQ(time_of({"BLMOVE", "s", "d", "LEFT", "RIGHT", "3"}), milliseconds(3000));
  EXPECT_EQ(time_of({"BRPOPLPUSH", "s", "d", "4"}), milliseconds(4000));
  EXPECT_EQ(time_of({"BLMPOP", "5", "1", "k", "LEFT"}), milliseconds(5000));
  EXPECT_EQ(time_of({"BZMPOP", "0.5", "1", "z", "MIN"}), milliseconds(500));
}

TEST(BlockingTime, MillisecondsForXreadAndWait) {
  EXPECT_EQ(time_of({"XREAD", "COUNT", "2", "BLOCK", "1500", "STREAMS", "s", "$"}),
            milliseconds(1500));
  EXPECT_EQ(time_of({"XREADGROUP", "GROUP", "g", "c", "block", "20", "STREAMS", "s", ">"}),
            milliseconds(20));
  EXPECT_EQ(time_of({"WAIT", "1", "300"}), milliseconds(300));
  EXPECT_EQ(time_of({"WAITAOF", "1", "0", "700"}), milliseconds(700));
}

TEST(BlockingTime, ZeroIsForever) {
  EXPECT_EQ(time_of({"BLPOP", "a", "0"}), std::nullopt);
  EXPECT_EQ(time_of({"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}), std::nullopt);
  EXPECT_EQ(time_of({"WAIT", "1", "0"}), std::nullopt);
}

TEST(BlockingTime, MalformedOrMissingIsNoBlockingTime) {
  // The server refuses these at once; redmux then adds only the call's timeout.
  EXPECT_EQ(time_of({"BLPOP", "a", "soon"}), milliseconds(0));
  EXPECT_EQ(time_of({"BLPOP", "a", "-1"}), milliseconds(0));
  EXPECT_EQ(time_of({"BLPOP", "a"}), milliseconds(0));
  EXPECT_EQ(time_of({"WAIT", "1"}), milliseconds(0));
  EXPECT_EQ(time_of({"XREAD", "BLOCK"}), milliseconds(0));
}

}  // namespace
}  // namespace redmux::detail

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
