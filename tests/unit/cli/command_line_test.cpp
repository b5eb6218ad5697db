// The prompt's quoting (redis-cli's rules) and the quoting of strings in the human format.
#include "command_line.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace redmux::cli {
namespace {

using Words = std::vector<std::string>;

TEST(SplitCommandLineTest, BlanksSeparateWords) {
  EXPECT_EQ(split_command_line("SET  key\tvalue "), (Words{"SET", "key", "value"}));
  EXPECT_EQ(split_command_line(""), Words{});
  EXPECT_EQ(split_command_line("   "), Words{});
}

TEST(SplitCommandLineTest, DoubleQuotesKeepBlanksAndUnderstandEscapes) {
  EXPECT_EQ(split_command_line(R"(SET "a b" "x\"y")"), (Words{"SET", "a b", "x\"y"}));
  EXPECT_EQ(split_command_line(R"("\x41\x62" "\n\r\t\b\a\\")"), (Words{"Ab", "\n\r\t\b\a\\"}));
  EXPECT_EQ(split_command_line(R"("\x00")"), (Words{std::string(1, '\0')}));
  EXPECT_EQ(split_command_line(R"("")"), (Words{""}));
  // \x with no two hex digits is not an escape: the x is kept.
  EXPECT_EQ(split_command_line(R"("\xZZ")"), (Words{"xZZ"}));
}

TEST(SplitCommandLineTest, SingleQuotesAreLiteralExceptEscapedQuote) {
  EXPECT_EQ(split_command_line(R"('\x41 b' 'it\'s')"), (Words{"\\x41 b", "it's"}));
}

TEST(SplitCommandLineTest, QuotesMayStartInsideAWord) {
  EXPECT_EQ(split_command_line(R"(key"a b")"), (Words{"keya b"}));
}

TEST(SplitCommandLineTest, UnbalancedQuotesAreRejected) {
  EXPECT_EQ(split_command_line(R"(SET "abc)"), std::nullopt);
  EXPECT_EQ(split_command_line("SET 'abc"), std::nullopt);
  EXPECT_EQ(split_command_line(R"(SET "abc\")"), std::nullopt);
}

TEST(SplitCommandLineTest, ClosingQuoteMustEndTheWord) {
  EXPECT_EQ(split_command_line(R"("a"b)"), std::nullopt);
  EXPECT_EQ(split_command_line("'a'b"), std::nullopt);
  EXPECT_EQ(split_command_line(R"("a" b)"), (Words{"a", "b"}));
}

TEST(QuoteStringTest, EscapesLikeRedisCli) {
  EXPECT_EQ(quote_string("hello"), "\"hello\"");
  EXPECT_EQ(quote_string("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(quote_string("\r\n\t\a\b"), R"("\r\n\t\a\b")");
  EXPECT_EQ(quote_string("\x01\xff \xc3\xa9"), R"("\x01\xff \xc3\xa9")");
}

TEST(QuoteStringTest, RoundTripsThroughTheParser) {
  const std::string bytes = "a b\"c\\d\n\x01\xfe'";
  EXPECT_EQ(split_command_line(quote_string(bytes)), (Words{bytes}));
}

// SELECT's index, read as the server reads it (string2ll): what redis-cli's server refuses
// with "ERR value is not an integer or out of range" is refused here too.
TEST(ParseServerIntegerTest, AcceptsOnlyWhatTheServerAccepts) {
  EXPECT_EQ(parse_server_integer("0"), 0);
  EXPECT_EQ(parse_server_integer("5"), 5);
  EXPECT_EQ(parse_server_integer("-1"), -1);
  EXPECT_EQ(parse_server_integer("15"), 15);
  EXPECT_EQ(parse_server_integer("-9223372036854775808"), std::numeric_limits<long long>::min());
  EXPECT_EQ(parse_server_integer("9223372036854775807"), std::numeric_limits<long long>::max());
  for (const char* bad : {"0x5", "3abc", "07", "015", "-0", "+1", " 1", "1 ", "", "-", "00",
                          "9223372036854775808", "1.0", "1e3"}) {
    EXPECT_EQ(parse_server_integer(bad), std::nullopt) << bad;
  }
}

// The prompt explains a long wait, except for a command whose wait was asked for.
TEST(BlocksByDesignTest, BlockingCommandsWaitAndOthersDoNot) {
  EXPECT_TRUE(blocks_by_design({"BLPOP", "q", "0"}));
  EXPECT_TRUE(blocks_by_design({"bzpopmin", "z", "0"}));
  EXPECT_TRUE(blocks_by_design({"WAIT", "1", "0"}));
  EXPECT_TRUE(blocks_by_design({"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}));
  EXPECT_FALSE(blocks_by_design({"XREAD", "STREAMS", "s", "0"}));
  EXPECT_FALSE(blocks_by_design({"DEBUG", "SLEEP", "10"}));
  EXPECT_FALSE(blocks_by_design({"GET", "blpop"}));
  EXPECT_FALSE(blocks_by_design({}));
}

}  // namespace
}  // namespace redmux::cli
