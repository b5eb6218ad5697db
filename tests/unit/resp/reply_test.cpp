#include "redmux/reply.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "resp/parser.hpp"
#include "unit/resp/corpus.hpp"

namespace redmux {
namespace {

Reply parse(std::string_view wire) {
  resp::Parser parser;
  EXPECT_EQ(parser.parse(wire), resp::ParseStatus::Complete) << parser.error().message();
  return Reply::from_nodes(parser.nodes(), parser.attributes());
}

TEST(ReplyTest, DefaultIsNull) {
  Reply r;
  EXPECT_TRUE(r.is_null());
  EXPECT_EQ(r.to_string(), "nil");
  EXPECT_EQ(Reply::from_nodes({}).type(), ReplyType::Null);
}

TEST(ReplyTest, ScalarAccessors) {
  EXPECT_EQ(parse("+OK\r\n").string(), "OK");
  EXPECT_EQ(parse("$3\r\nabc\r\n").string(), "abc");
  EXPECT_EQ(parse(":-7\r\n").integer(), -7);
  EXPECT_EQ(parse(",2.5\r\n").double_value(), 2.5);
  EXPECT_EQ(parse(",-inf\r\n").double_value(), -INFINITY);
  EXPECT_TRUE(std::isnan(parse(",nan\r\n").double_value()));
  EXPECT_TRUE(parse("#t\r\n").boolean());
  EXPECT_FALSE(parse("#f\r\n").boolean());
  EXPECT_EQ(parse("(-123456789012345678901234567890\r\n").big_number(),
            "-123456789012345678901234567890");
  Reply verbatim = parse("=15\r\nmkd:Some string\r\n");
  EXPECT_TRUE(verbatim.is_string());
  EXPECT_EQ(verbatim.string(), "Some string");
  EXPECT_EQ(verbatim.text(), "Some string");
  EXPECT_EQ(verbatim.verbatim_format(), "mkd");
  Reply error = parse("!21\r\nSYNTAX invalid syntax\r\n");
  EXPECT_TRUE(error.is_error());
  EXPECT_EQ(error.type(), ReplyType::BulkError);
  EXPECT_EQ(error.error_message(), "SYNTAX invalid syntax");
  EXPECT_EQ(parse("-ERR x\r\n").error_message(), "ERR x");
}

TEST(ReplyTest, WrongAccessorThrowsAClearError) {
  Reply r = parse("$3\r\nabc\r\n");
  try {
    (void)r.integer();
    FAIL() << "no exception";
  } catch (const UnexpectedReplyError& e) {
    EXPECT_STREQ(e.what(), R"(expected integer, got bulk string "abc")");
  }
  EXPECT_THROW((void)r.boolean(), UnexpectedReplyError);
  EXPECT_THROW((void)r.double_value(), UnexpectedReplyError);
  EXPECT_THROW((void)r.big_number(), UnexpectedReplyError);
  EXPECT_THROW((void)r.verbatim_format(), UnexpectedReplyError);
  EXPECT_THROW((void)r.error_message(), UnexpectedReplyError);
  EXPECT_THROW((void)parse(":1\r\n").string(), UnexpectedReplyError);
  // An error reply asked for a value throws ServerError.
  EXPECT_THROW((void)parse("-ERR x\r\n").integer(), ServerError);
}

TEST(ReplyTest, Aggregates) {
  Reply r = parse("*3\r\n:1\r\n$1\r\nb\r\n*0\r\n");
  EXPECT_TRUE(r.is_aggregate());
  EXPECT_EQ(r.size(), 3u);
  ASSERT_EQ(r.elements().size(), 3u);
  EXPECT_EQ(r[0].integer(), 1);
  EXPECT_EQ(r[1].string(), "b");
  EXPECT_EQ(r[2].size(), 0u);
  EXPECT_THROW((void)r[3], std::out_of_range);

  Reply map = parse("%2\r\n+first\r\n:1\r\n+second\r\n*1\r\n#t\r\n");
  EXPECT_EQ(map.type(), ReplyType::Map);
  EXPECT_EQ(map.size(), 2u);
  EXPECT_EQ(map.elements().size(), 4u);
  EXPECT_EQ(map.key(1).string(), "second");
  EXPECT_TRUE(map.value(1)[0].boolean());
  ASSERT_NE(map.find("first"), nullptr);
  EXPECT_EQ(map.find("first")->integer(), 1);
  EXPECT_EQ(map.find("third"), nullptr);
  EXPECT_EQ(r.find("first"), nullptr);  // not a map

  EXPECT_EQ(parse("~1\r\n+x\r\n").type(), ReplyType::Set);
  EXPECT_EQ(parse(">1\r\n+x\r\n").type(), ReplyType::Push);
}

TEST(ReplyTest, AttributesTravelWithTheReply) {
  Reply r = parse(
      "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
      "*2\r\n:2039123\r\n:9543892\r\n");
  EXPECT_EQ(r.type(), ReplyType::Array);
  EXPECT_EQ(r.as<std::vector<long long>>(), (std::vector<long long>{2039123, 9543892}));
  ASSERT_NE(r.attributes(), nullptr);
  EXPECT_EQ(r.attributes()->type(), ReplyType::Attribute);
  const Reply* popularity = r.attributes()->find("key-popularity");
  ASSERT_NE(popularity, nullptr);
  EXPECT_EQ(popularity->find("a")->double_value(), 0.1923);
  EXPECT_EQ(parse(":1\r\n").attributes(), nullptr);
}

TEST(ReplyTest, ToAndAsConvertLikeTypedResults) {
  Reply r = parse("%1\r\n+k\r\n$2\r\n42\r\n");
  auto map = r.to<std::map<std::string, long long>>();
  ASSERT_TRUE(map.has_value());
  EXPECT_EQ(map->at("k"), 42);
  EXPECT_EQ(parse("=7\r\ntxt:abc\r\n").as<std::string>(), "abc");
  Result<long long> bad = r.to<long long>();
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().message(), "expected integer, got map of 1 pair");
  EXPECT_THROW(r.as<long long>(), UnexpectedReplyError);
  EXPECT_NO_THROW(r.as<void>());
  EXPECT_EQ(r.as<Reply>(), r);
}

TEST(ReplyTest, NodesRoundTripThroughFromNodes) {
  for (const auto& entry : resp::testing::kCorpus) {
    SCOPED_TRACE(std::string(entry.name));
    resp::Parser parser;
    ASSERT_EQ(parser.parse(entry.bytes), resp::ParseStatus::Complete);
    Reply r = Reply::from_nodes(parser.nodes());  // without attributes: nodes() has none
    std::vector<Node> nodes = r.nodes();
    ASSERT_EQ(nodes.size(), parser.nodes().size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      EXPECT_EQ(nodes[i].type, parser.nodes()[i].type);
      EXPECT_EQ(nodes[i].depth, parser.nodes()[i].depth);
      EXPECT_EQ(nodes[i].size, parser.nodes()[i].size);
      EXPECT_EQ(nodes[i].value, parser.nodes()[i].value);
    }
    EXPECT_EQ(Reply::from_nodes(nodes), r);
  }
}

TEST(ReplyTest, CopiesAreIndependentAndComparable) {
  Reply a = parse("*2\r\n$5\r\nhello\r\n%1\r\n+k\r\n:1\r\n");
  Reply b = a;
  EXPECT_EQ(a, b);
  Reply c = parse("*2\r\n$5\r\nhello\r\n%1\r\n+k\r\n:2\r\n");
  EXPECT_FALSE(a == c);
  Reply moved = std::move(b);
  EXPECT_EQ(moved, a);
}

TEST(ReplyTest, BuiltByHandAndPrinted) {
  Reply r(ReplyType::Array, {},
          {Reply(ReplyType::Integer, "1"), Reply(ReplyType::BulkString, "two\n"),
           Reply(ReplyType::Map, {}, {Reply(ReplyType::SimpleString, "k"), Reply()}),
           Reply(ReplyType::VerbatimString, "hi", {}, "txt")});
  EXPECT_EQ(r.to_string(), R"([1, "two\n", {"k": nil}, (verbatim txt) "hi"])");
  std::ostringstream os;
  os << r;
  EXPECT_EQ(os.str(), r.to_string());
  EXPECT_EQ(r[3].verbatim_format(), "txt");
  EXPECT_EQ(r.as<std::vector<Reply>>().size(), 4u);
  std::vector<Node> nodes = r.nodes();
  EXPECT_EQ(verbatim_format(nodes.back()), "txt");
}

}  // namespace
}  // namespace redmux
