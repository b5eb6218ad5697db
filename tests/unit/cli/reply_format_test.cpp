// redis-cli's human and raw formats and the JSON form, for every RESP3 type. Expected
// strings come from redis-cli 7.0 against redis-server 7.0 (--no-raw / piped).
#include "reply_format.hpp"

#include <gtest/gtest.h>

namespace redmux::cli {
namespace {

Reply str(std::string s) {
  return Reply(ReplyType::BulkString, std::move(s));
}
Reply integer(long long n) {
  return Reply(ReplyType::Integer, std::to_string(n));
}
Reply array(std::vector<Reply> elements) {
  return Reply(ReplyType::Array, "", std::move(elements));
}
Reply map(std::vector<Reply> elements) {
  return Reply(ReplyType::Map, "", std::move(elements));
}
Reply boolean(bool b) {
  return Reply(ReplyType::Boolean, b ? "t" : "f");
}

TEST(FormatHumanTest, Scalars) {
  EXPECT_EQ(format_human(Reply(ReplyType::SimpleString, "OK")), "OK\n");
  EXPECT_EQ(format_human(integer(12345)), "(integer) 12345\n");
  EXPECT_EQ(format_human(Reply(ReplyType::Double, "3.141")), "(double) 3.141\n");
  EXPECT_EQ(format_human(str("Hello World")), "\"Hello World\"\n");
  EXPECT_EQ(format_human(Reply()), "(nil)\n");
  EXPECT_EQ(format_human(boolean(true)), "(true)\n");
  EXPECT_EQ(format_human(boolean(false)), "(false)\n");
  EXPECT_EQ(format_human(Reply(ReplyType::BigNumber, "1234567999999999999999999999999999999")),
            "(big number) 1234567999999999999999999999999999999\n");
  EXPECT_EQ(format_human(Reply(ReplyType::SimpleError, "ERR boom")), "(error) ERR boom\n");
  EXPECT_EQ(format_human(Reply(ReplyType::BulkError, "ERR bulk")), "(error) ERR bulk\n");
}

TEST(FormatHumanTest, VerbatimStringIsPrintedAsItIs) {
  EXPECT_EQ(format_human(Reply(ReplyType::VerbatimString, "This is a verbatim\nstring", {}, "txt")),
            "This is a verbatim\nstring\n");
}

TEST(FormatHumanTest, EmptyAggregates) {
  EXPECT_EQ(format_human(array({})), "(empty array)\n");
  EXPECT_EQ(format_human(map({})), "(empty hash)\n");
  EXPECT_EQ(format_human(Reply(ReplyType::Set, "")), "(empty set)\n");
}

TEST(FormatHumanTest, NestedArraysIndentUnderTheirIndex) {
  // EVAL "return {1,{2,{3,'x'}},'y'}" 0
  const Reply reply =
      array({integer(1), array({integer(2), array({integer(3), str("x")})}), str("y")});
  EXPECT_EQ(format_human(reply),
            "1) (integer) 1\n"
            "2) 1) (integer) 2\n"
            "   2) 1) (integer) 3\n"
            "      2) \"x\"\n"
            "3) \"y\"\n");
}

TEST(FormatHumanTest, IndexesArePaddedToTheWidestIndex) {
  std::vector<Reply> elements;
  for (int i = 1; i <= 10; ++i) elements.push_back(integer(i));
  elements.push_back(array({integer(1), integer(2)}));
  const std::string out = format_human(array(std::move(elements)));
  EXPECT_EQ(out.substr(0, 15), " 1) (integer) 1");
  EXPECT_NE(out.find("\n10) (integer) 10\n11) 1) (integer) 1\n    2) (integer) 2\n"),
            std::string::npos)
      << out;
}

TEST(FormatHumanTest, MapsSetsAndMixedTypes) {
  // DEBUG PROTOCOL map / set under RESP3
  EXPECT_EQ(format_human(map({integer(0), boolean(false), integer(1), boolean(true)})),
            "1# (integer) 0 => (false)\n2# (integer) 1 => (true)\n");
  EXPECT_EQ(format_human(Reply(ReplyType::Set, "", {integer(0), integer(1)})),
            "1~ (integer) 0\n2~ (integer) 1\n");
  // HELLO 3's "modules" => (empty array), a map value that is an aggregate
  EXPECT_EQ(format_human(map({str("proto"), integer(3), str("modules"), array({})})),
            "1# \"proto\" => (integer) 3\n2# \"modules\" => (empty array)\n");
  EXPECT_EQ(format_human(map({str("k"), array({str("a"), str("b")})})),
            "1# \"k\" => \n   1) \"a\"\n   2) \"b\"\n");
  // COMMAND DOCS get under RESP3: a map inside a map inside an array inside a map.
  const Reply docs =
      map({str("get"), map({str("summary"), str("Get"), str("arguments"),
                            array({map({str("name"), str("key"), str("type"), str("key")})})})});
  EXPECT_EQ(format_human(docs),
            "1# \"get\" => \n"
            "   1# \"summary\" => \"Get\"\n"
            "   2# \"arguments\" => \n"
            "      1) 1# \"name\" => \"key\"\n"
            "         2# \"type\" => \"key\"\n");
}

TEST(FormatHumanTest, AMapValueOfOneLineFollowsTheArrowAsInRedisCli) {
  // redis-cli 7.0 breaks the line only before a value that spans lines; a one-element
  // aggregate (EVAL "redis.setresp(3); return {map={a={map={b=1}}}}" 0) stays on it.
  EXPECT_EQ(format_human(map({str("a"), map({str("b"), integer(1)})})),
            "1# \"a\" => 1# \"b\" => (integer) 1\n");
  EXPECT_EQ(format_human(map({str("a"), array({integer(5)})})), "1# \"a\" => 1) (integer) 5\n");
  EXPECT_EQ(format_human(map({str("a"), Reply(ReplyType::Set, "", {str("x")})})),
            "1# \"a\" => 1~ \"x\"\n");
  // One element that itself spans lines: the value starts on its own line.
  EXPECT_EQ(format_human(map({str("a"), array({array({integer(1), integer(2)})})})),
            "1# \"a\" => \n   1) 1) (integer) 1\n      2) (integer) 2\n");
}

TEST(FormatHumanTest, ErrorInsideAnArray) {
  EXPECT_EQ(format_human(array({integer(1), Reply(ReplyType::SimpleError, "boom")})),
            "1) (integer) 1\n2) (error) boom\n");
}

TEST(FormatRawTest, Scalars) {
  EXPECT_EQ(format_raw(str("Hello World")), "Hello World\n");
  EXPECT_EQ(format_raw(integer(12345)), "12345\n");
  EXPECT_EQ(format_raw(Reply()), "\n");
  EXPECT_EQ(format_raw(boolean(true)), "(true)\n");
  EXPECT_EQ(format_raw(Reply(ReplyType::Double, "3.141")), "3.141\n");
  EXPECT_EQ(format_raw(str("\x01\xff")), "\x01\xff\n");
}

TEST(FormatRawTest, AggregatesOnePerLineAndMapPairsSpaced) {
  EXPECT_EQ(format_raw(array({integer(0), integer(1), integer(2)})), "0\n1\n2\n");
  EXPECT_EQ(format_raw(map({integer(0), boolean(false), integer(1), boolean(true)})),
            "0 (false)\n1 (true)\n");
  EXPECT_EQ(format_raw(array({})), "\n");
  // EVAL "return {1, {err='boom'}}" 0
  EXPECT_EQ(format_raw(array({integer(1), Reply(ReplyType::SimpleError, "boom")})), "1\nboom\n\n");
}

TEST(FormatErrorTest, EachFormat) {
  EXPECT_EQ(format_human_error("ERR x"), "(error) ERR x\n");
  EXPECT_EQ(format_raw_error("ERR x"), "ERR x\n\n");
  EXPECT_EQ(format_json_error("ERR \"x\""), "{\"error\":\"ERR \\\"x\\\"\"}\n");
}

TEST(FormatJsonTest, ValuesAndContainers) {
  EXPECT_EQ(format_json(Reply()), "null\n");
  EXPECT_EQ(format_json(integer(-5)), "-5\n");
  EXPECT_EQ(format_json(boolean(true)), "true\n");
  EXPECT_EQ(format_json(Reply(ReplyType::Double, "1.5")), "1.5\n");
  EXPECT_EQ(format_json(Reply(ReplyType::Double, "inf")), "\"inf\"\n");
  EXPECT_EQ(format_json(Reply(ReplyType::BigNumber, "123456789012345678901234567890")),
            "\"123456789012345678901234567890\"\n");
  EXPECT_EQ(format_json(array({str("a"), integer(1), Reply()})), "[\"a\",1,null]\n");
  EXPECT_EQ(format_json(map({str("server"), str("redis"), str("proto"), integer(3)})),
            "{\"server\":\"redis\",\"proto\":3}\n");
  // Keys that are not strings or integers: pairs.
  EXPECT_EQ(format_json(map({array({}), integer(1)})), "[[[],1]]\n");
  EXPECT_EQ(format_json(array({Reply(ReplyType::SimpleError, "ERR x")})),
            "[{\"error\":\"ERR x\"}]\n");
}

TEST(FormatJsonTest, StringsAreEscapedAndNoByteIsLost) {
  EXPECT_EQ(format_json(str("a\"b\\c\n\x01")), "\"a\\\"b\\\\c\\n\\u0001\"\n");
  EXPECT_EQ(format_json(str("\xc3\xa9")), "\"\xc3\xa9\"\n");  // valid UTF-8 kept as it is
  // A byte that is not UTF-8 becomes the character U+00XX: JSON readers get every byte.
  EXPECT_EQ(utf8_text("\xff"), "\xc3\xbf");
  const Json parsed = Json::parse(format_json(str("a\xff\xc3")));
  EXPECT_EQ(parsed.get<std::string>(), "a\xc3\xbf\xc3\x83");
  EXPECT_EQ(format_json(map({str("k\xfe"), str("v")})), "{\"k\xc3\xbe\":\"v\"}\n");
}

// What UTF-8 allows is exactly Unicode's table of well-formed sequences (§3.9, table 3-7):
// surrogates, overlong forms and code points above U+10FFFF are bytes, each written as
// U+00XX, never handed to nlohmann-json (which throws on them).
TEST(FormatJsonTest, IllFormedUtf8IsWrittenByteByByte) {
  const std::pair<std::string, std::string> cases[] = {
      {"\xed\xa0\x80", "\xc3\xad\xc2\xa0\xc2\x80"},              // U+D800, a surrogate
      {"\xed\xbf\xbf", "\xc3\xad\xc2\xbf\xc2\xbf"},              // U+DFFF
      {"\xe0\x80\xab", "\xc3\xa0\xc2\x80\xc2\xab"},              // overlong 3 bytes
      {"\xf0\x80\x80\x80", "\xc3\xb0\xc2\x80\xc2\x80\xc2\x80"},  // overlong 4 bytes
      {"\xf4\x90\x80\x80", "\xc3\xb4\xc2\x90\xc2\x80\xc2\x80"},  // above U+10FFFF
      {"\xc0\xaf", "\xc3\x80\xc2\xaf"},                          // overlong 2 bytes
  };
  for (const auto& [bytes, text] : cases) {
    EXPECT_EQ(utf8_text(bytes), text);
    EXPECT_EQ(format_json(str(bytes)), "\"" + text + "\"\n");
    EXPECT_EQ(format_json(map({str(bytes), str(bytes)})), "{\"" + text + "\":\"" + text + "\"}\n");
  }
  // The edges of the table are well-formed and kept as they are.
  for (const std::string valid : {"\xed\x9f\xbf", "\xee\x80\x80", "\xe0\xa0\x80",
                                  "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\xef\xbf\xbf"}) {
    EXPECT_EQ(utf8_text(valid), valid);
  }
}

TEST(FormatJsonTest, MapsKeepTheServersOrder) {
  EXPECT_EQ(format_json(map({str("zeta"), integer(1), str("alpha"), integer(2)})),
            "{\"zeta\":1,\"alpha\":2}\n");
}

}  // namespace
}  // namespace redmux::cli
