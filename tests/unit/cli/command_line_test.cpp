// The prompt's quoting (redis-cli's rules) and the quoting of strings in the human format.
#include "command_line.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace redmux::cli
