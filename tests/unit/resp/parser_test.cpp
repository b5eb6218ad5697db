#include "resp/parser.hpp"

#include <gtest/gtest.h>

#include <string>

#include "support/counting_new.hpp"  // counts heap allocations in this binary
#include "unit/resp/corpus.hpp"
#include "unit/resp/parse_helpers.hpp"

namespace redmux::resp {
namespace {

using testing::kCorpus;
using testing::parse_one;
using testing::Parsed;
using testing::render;
using testing::StreamDriver;

// ---------------------------------------------------------------------------------------
// Every type, every corpus entry.

TEST(ParserTest, CorpusEntriesParseToTheirExpectedForm) {
  for (const auto& entry : kCorpus) {
    SCOPED_TRACE(std::string(entry.name));
    Parser parser;
    Parsed parsed;
    ASSERT_EQ(parse_one(parser, entry.bytes, &parsed), ParseStatus::Complete)
        << parser.error().message();
    EXPECT_EQ(parsed.reply.to_string(), entry.rendered);
    EXPECT_EQ(parsed.consumed, entry.bytes.size());
  }
}

TEST(ParserTest, NodesArePreOrderWithDepthAndSize) {
  Parser parser;
  std::string input = "*3\r\n:1\r\n%1\r\n+k\r\n*2\r\n$2\r\nab\r\n_\r\n#t\r\n";
  ASSERT_EQ(parser.parse(input), ParseStatus::Complete);
  NodeSpan n = parser.nodes();
  ASSERT_EQ(n.size(), 8u);
  EXPECT_EQ(n[0].type, ReplyType::Array);
  EXPECT_EQ(n[0].size, 3u);
  EXPECT_EQ(n[0].depth, 0u);
  EXPECT_EQ(n[1].type, ReplyType::Integer);
  EXPECT_EQ(n[1].value, "1");
  EXPECT_EQ(n[1].depth, 1u);
  EXPECT_EQ(n[2].type, ReplyType::Map);
  EXPECT_EQ(n[2].size, 1u);  // pairs
  EXPECT_EQ(n[3].type, ReplyType::SimpleString);
  EXPECT_EQ(n[3].depth, 2u);
  EXPECT_EQ(n[4].type, ReplyType::Array);
  EXPECT_EQ(n[4].depth, 2u);
  EXPECT_EQ(n[5].type, ReplyType::BulkString);
  EXPECT_EQ(n[5].value, "ab");
  EXPECT_EQ(n[5].size, 2u);
  EXPECT_EQ(n[5].depth, 3u);
  EXPECT_EQ(n[6].type, ReplyType::Null);
  EXPECT_EQ(n[7].type, ReplyType::Boolean);
  EXPECT_EQ(n[7].value, "t");
  EXPECT_EQ(n[7].depth, 1u);
  EXPECT_TRUE(parser.attributes().empty());
}

TEST(ParserTest, ValuesViewTheInputBuffer) {
  Parser parser;
  std::string input = "*2\r\n$5\r\nhello\r\n+world\r\n";
  ASSERT_EQ(parser.parse(input), ParseStatus::Complete);
  EXPECT_EQ(parser.nodes()[1].value.data(), input.data() + 8);
  EXPECT_EQ(parser.nodes()[2].value.data(), input.data() + 16);
}

TEST(ParserTest, VerbatimFormatPrecedesTheValue) {
  Parser parser;
  ASSERT_EQ(parser.parse("=15\r\ntxt:Some string\r\n"), ParseStatus::Complete);
  const Node& node = parser.nodes()[0];
  EXPECT_EQ(node.type, ReplyType::VerbatimString);
  EXPECT_EQ(node.value, "Some string");
  EXPECT_EQ(node.size, 11u);
  EXPECT_EQ(verbatim_format(node), "txt");
}

TEST(ParserTest, AttributesAreSeparateTreesAndCountInConsumed) {
  Parser parser;
  std::string input = "|1\r\n+ttl\r\n:3600\r\n:7\r\n+next\r\n";
  ASSERT_EQ(parser.parse(input), ParseStatus::Complete);
  EXPECT_EQ(parser.consumed(), input.size() - 7);
  ASSERT_EQ(parser.nodes().size(), 1u);
  EXPECT_EQ(parser.nodes()[0].value, "7");
  NodeSpan a = parser.attributes();
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[0].type, ReplyType::Attribute);
  EXPECT_EQ(a[0].depth, 0u);
  EXPECT_EQ(a[0].size, 1u);
  EXPECT_EQ(a[1].value, "ttl");
  EXPECT_EQ(a[1].depth, 1u);
  EXPECT_EQ(a[2].value, "3600");
  // The next reply starts clean: no attributes carried over.
  ASSERT_EQ(parser.parse(std::string_view(input).substr(parser.consumed())), ParseStatus::Complete);
  EXPECT_TRUE(parser.attributes().empty());
  EXPECT_EQ(parser.nodes()[0].value, "next");
}

TEST(ParserTest, AttributeInsideAnAggregateIsNotAnElement) {
  Parser parser;
  ASSERT_EQ(parser.parse("*2\r\n|1\r\n+a\r\n:1\r\n:10\r\n:20\r\n"), ParseStatus::Complete);
  ASSERT_EQ(parser.nodes().size(), 3u);
  EXPECT_EQ(parser.nodes()[0].size, 2u);
  EXPECT_EQ(parser.attributes().size(), 3u);
}

TEST(ParserTest, StreamedAggregatesGetTheirFinalSize) {
  Parser parser;
  ASSERT_EQ(parser.parse("%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n"), ParseStatus::Complete);
  EXPECT_EQ(parser.nodes()[0].type, ReplyType::Map);
  EXPECT_EQ(parser.nodes()[0].size, 2u);
  ASSERT_EQ(parser.parse("~?\r\n:1\r\n:2\r\n:3\r\n"), ParseStatus::NeedMore);
  ASSERT_EQ(parser.parse("~?\r\n:1\r\n:2\r\n:3\r\n.\r\n"), ParseStatus::Complete);
  EXPECT_EQ(parser.nodes()[0].type, ReplyType::Set);
  EXPECT_EQ(parser.nodes()[0].size, 3u);
}

TEST(ParserTest, StreamedStringIsOneContiguousValue) {
  Parser parser;
  ASSERT_EQ(parser.parse("$?\r\n;4\r\nHell\r\n;6\r\no worl\r\n;1\r\nd\r\n;0\r\n"),
            ParseStatus::Complete);
  EXPECT_EQ(parser.nodes()[0].type, ReplyType::BulkString);
  EXPECT_EQ(parser.nodes()[0].value, "Hello world");
  EXPECT_EQ(parser.nodes()[0].size, 11u);
}

TEST(ParserTest, ConsumedStopsAtTheEndOfTheReply) {
  Parser parser;
  std::string input = "+OK\r\n:1\r\n";
  ASSERT_EQ(parser.parse(input), ParseStatus::Complete);
  EXPECT_EQ(parser.consumed(), 5u);
  ASSERT_EQ(parser.parse(std::string_view(input).substr(5)), ParseStatus::Complete);
  EXPECT_EQ(parser.consumed(), 4u);
  EXPECT_EQ(parser.nodes()[0].value, "1");
  // Nothing left: a new reply waits for bytes.
  EXPECT_EQ(parser.parse(""), ParseStatus::NeedMore);
  EXPECT_FALSE(parser.close_error());
}

TEST(ParserTest, WholeCorpusInOneBufferGivesEveryReplyInOrder) {
  std::string all;
  for (const auto& entry : kCorpus) all += entry.bytes;
  Parser parser;
  std::string_view rest = all;
  std::size_t i = 0;
  for (; parser.parse(rest) == ParseStatus::Complete; ++i) {
    ASSERT_LT(i, std::size(kCorpus));
    EXPECT_EQ(Reply::from_nodes(parser.nodes(), parser.attributes()).to_string(),
              kCorpus[i].rendered)
        << kCorpus[i].name;
    rest.remove_prefix(parser.consumed());
  }
  EXPECT_EQ(i, std::size(kCorpus));
  EXPECT_TRUE(rest.empty());
}

// ---------------------------------------------------------------------------------------
// Any split of the input gives the same result.

TEST(ParserSplitTest, EveryReplySplitAtEveryBytePosition) {
  for (const auto& entry : kCorpus) {
    SCOPED_TRACE(std::string(entry.name));
    for (std::size_t cut = 0; cut <= entry.bytes.size(); ++cut) {
      SCOPED_TRACE("cut at " + std::to_string(cut));
      Parser parser;
      std::string first(entry.bytes.substr(0, cut));
      if (cut < entry.bytes.size()) {
        ASSERT_EQ(parser.parse(first), ParseStatus::NeedMore) << parser.error().message();
        EXPECT_TRUE(cut == 0 || parser.close_error()) << "a partial reply must be reported";
      }
      // The bytes move to a new buffer, as after a compaction.
      std::string whole(entry.bytes);
      ASSERT_EQ(parser.parse(whole), ParseStatus::Complete) << parser.error().message();
      EXPECT_EQ(parser.consumed(), entry.bytes.size());
      EXPECT_EQ(Reply::from_nodes(parser.nodes(), parser.attributes()).to_string(), entry.rendered);
    }
  }
}

// A new reply that is a whole `+`, `-` or `:` line or `$` bulk string takes a shorter path
// than one met in pieces (Parser::parse_whole_scalar()); both must give the same replies,
// consumed counts and error, also for the inputs that path hands on to the general one.
TEST(ParserSplitTest, WholeScalarRepliesParseAlikeWholeAndInPieces) {
  const std::string_view inputs[] = {"+OK\r\n",
                                     "+\r\n",
                                     "-ERR no\r\n",
                                     "-\r\n",
                                     ":0\r\n",
                                     ":-12\r\n",
                                     ":+5\r\n",
                                     ":x\r\n",
                                     ":\r\n",
                                     ": 1\r\n",
                                     ":-\r\n",
                                     ":1-\r\n",
                                     ":12\r\r\n",
                                     ":12\n",
                                     ":123456789012345678\r\n",
                                     ":-123456789012345678\r\n",
                                     ":1234567890123456789\r\n",
                                     ":9999999999999999999\r\n",
                                     ":-9999999999999999999\r\n",
                                     ":99999999999999999999\r\n",
                                     "+a\rb\r\n",
                                     "+OK\n",
                                     ":1\n",
                                     "+1234567\r\n",
                                     "+12345678\r\n",
                                     "-1234567\r\n",
                                     "-12345678\r\n",
                                     ":1\r\n:2\r\n",
                                     ":1\r\n:y\r\n",
                                     "+OK\r\n*1\r\n:3\r\n",
                                     "$3\r\nabc\r\n",
                                     "$0\r\n\r\n",
                                     "$03\r\nabc\r\n",
                                     "$3\r\na\r\n\r\n",
                                     "$3\r\nab\r\n",
                                     "$3\r\nabcd\r\n",
                                     "$3\r\nabc\n\r",
                                     "$5\r\nabc",
                                     "$-1\r\n",
                                     "$-2\r\n",
                                     "$\r\n",
                                     "$x\r\n",
                                     "$3\n",
                                     "$?\r\n;3\r\nabc\r\n;0\r\n",
                                     "$1234567\r\n",
                                     "$12345678\r\n",
                                     "$600000000\r\n",
                                     "$1234567890123456789\r\n",
                                     "$8\r\nabcdefgh\r\n",
                                     "$9\r\nabcdefghi\r\n",
                                     "$3\r\nabc\r\n:1\r\n$1\r\nz\r\n"};
  const auto outcome = [](StreamDriver& driver, bool ok) {
    std::string out;
    for (const std::string& reply : driver.rendered()) out += reply + "|";
    return out + (ok ? "ok" : "FAILED: " + driver.parser().error().message());
  };
  for (std::size_t max_line : {std::size_t{8}, ParserLimits{}.max_line_length}) {
    for (std::string_view input : inputs) {
      SCOPED_TRACE(std::string(input) + " max_line_length " + std::to_string(max_line));
      ParserLimits limits;
      limits.max_line_length = max_line;
      if (max_line == 8) limits.max_bulk_length = 8;
      StreamDriver whole(limits);
      const std::string at_once = outcome(whole, whole.feed(input));
      StreamDriver pieces(limits);  // one byte at a time: the general path only
      bool ok = true;
      for (std::size_t i = 0; i < input.size() && ok; ++i) ok = pieces.feed(input.substr(i, 1));
      EXPECT_EQ(at_once, outcome(pieces, ok));
    }
  }
  EXPECT_EQ(render(":-12\r\n"), "-12");
  EXPECT_EQ(render("-ERR no\r\n"), "(error) ERR no");
  EXPECT_EQ(render("$3\r\na\r\n\r\n"), R"("a\r\n")");
  // Only the bytes given count: a body whose CRLF lies just past them is still to come.
  const std::string bytes = "$3\r\nabc\r\n";
  Parser parser;
  EXPECT_EQ(parser.parse(std::string_view(bytes).substr(0, bytes.size() - 2)),
            ParseStatus::NeedMore);
  EXPECT_EQ(parser.parse(bytes), ParseStatus::Complete);
  EXPECT_EQ(parser.consumed(), bytes.size());
}

TEST(ParserSplitTest, EveryReplySplitInThreeAtEveryPairOfPositions) {
  for (const auto& entry : kCorpus) {
    if (entry.bytes.size() > 80) continue;  // quadratic in the length; short ones suffice
    SCOPED_TRACE(std::string(entry.name));
    for (std::size_t a = 0; a <= entry.bytes.size(); ++a) {
      for (std::size_t b = a; b <= entry.bytes.size(); ++b) {
        StreamDriver driver;
        ASSERT_TRUE(driver.feed(entry.bytes.substr(0, a)));
        ASSERT_TRUE(driver.feed(entry.bytes.substr(a, b - a)));
        ASSERT_TRUE(driver.feed(entry.bytes.substr(b)));
        ASSERT_EQ(driver.replies().size(), 1u);
        EXPECT_EQ(driver.replies()[0].to_string(), entry.rendered);
      }
    }
  }
}

TEST(ParserSplitTest, WholeCorpusOneByteAtATime) {
  StreamDriver driver;
  std::string all;
  for (const auto& entry : kCorpus) all += entry.bytes;
  for (char c : all) ASSERT_TRUE(driver.feed(std::string_view(&c, 1)));
  ASSERT_EQ(driver.replies().size(), std::size(kCorpus));
  for (std::size_t i = 0; i < std::size(kCorpus); ++i) {
    EXPECT_EQ(driver.replies()[i].to_string(), kCorpus[i].rendered) << kCorpus[i].name;
  }
  EXPECT_FALSE(driver.parser().close_error());
}

TEST(ParserSplitTest, LargeBulkDrippedOneByteAtATimeIsLinear) {
  // 4 MiB bulk and a 100k-element array, each grown one byte per call: a parser that
  // re-scanned from the start would take minutes here.
  std::string payload(4 << 20, 'x');
  std::string input = "$" + std::to_string(payload.size()) + "\r\n" + payload + "\r\n";
  Parser parser;
  for (std::size_t n = 1; n < input.size(); ++n) {
    ASSERT_EQ(parser.parse(std::string_view(input.data(), n)), ParseStatus::NeedMore);
  }
  ASSERT_EQ(parser.parse(input), ParseStatus::Complete);
  EXPECT_EQ(parser.nodes()[0].size, payload.size());

  std::string array = "*100000\r\n";
  for (int i = 0; i < 100000; ++i) array += ":1\r\n";
  for (std::size_t n = 1; n < array.size(); ++n) {
    ASSERT_EQ(parser.parse(std::string_view(array.data(), n)), ParseStatus::NeedMore);
  }
  ASSERT_EQ(parser.parse(array), ParseStatus::Complete);
  EXPECT_EQ(parser.nodes().size(), 100001u);
}

TEST(ParserSplitTest, LongLineDrippedIsScannedOnce) {
  std::string line = "+" + std::string(60000, 'y') + "\r\n";
  Parser parser;
  for (std::size_t n = 1; n < line.size(); ++n) {
    ASSERT_EQ(parser.parse(std::string_view(line.data(), n)), ParseStatus::NeedMore);
  }
  ASSERT_EQ(parser.parse(line), ParseStatus::Complete);
  EXPECT_EQ(parser.nodes()[0].size, 60000u);
}

// ---------------------------------------------------------------------------------------
// Limits: each one names the limit and the byte offset.

TEST(ParserLimitTest, MaxBulkLength) {
  ParserLimits limits;
  limits.max_bulk_length = 10;
  EXPECT_EQ(render("$10\r\n0123456789\r\n", limits), R"("0123456789")");
  // Refused from the header alone: no need to receive the body.
  EXPECT_EQ(render("$11\r\n", limits),
            "FAILED: RESP protocol error: bulk string length 11 exceeds max_bulk_length (10) at "
            "byte offset 0");
  EXPECT_NE(render("!11\r\n", limits).find("bulk error length 11 exceeds max_bulk_length"),
            std::string::npos);
  EXPECT_NE(render("=11\r\n", limits).find("verbatim string length 11 exceeds"), std::string::npos);
}

TEST(ParserLimitTest, MaxBulkLengthDefaultIs512MiB) {
  EXPECT_EQ(ParserLimits{}.max_bulk_length, 512u << 20);
  EXPECT_EQ(render("$536870912\r\n"), "NEEDMORE");
  EXPECT_NE(render("$536870913\r\n").find("exceeds max_bulk_length (536870912)"),
            std::string::npos);
}

TEST(ParserLimitTest, MaxBulkLengthAppliesToStreamedStrings) {
  ParserLimits limits;
  limits.max_bulk_length = 10;
  EXPECT_EQ(render("$?\r\n;5\r\n01234\r\n;5\r\n56789\r\n;0\r\n", limits), R"("0123456789")");
  EXPECT_NE(render("$?\r\n;6\r\n012345\r\n;5\r\n", limits)
                .find("streamed string of 6 bytes plus a chunk of 5 exceeds max_bulk_length "
                      "(10) at byte offset 16"),
            std::string::npos);
}

TEST(ParserLimitTest, MaxAggregateElements) {
  ParserLimits limits;
  limits.max_aggregate_elements = 4;
  EXPECT_EQ(render("*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n", limits), "[1, 2, 3, 4]");
  EXPECT_EQ(render("*5\r\n", limits),
            "FAILED: RESP protocol error: array of 5 elements exceeds max_aggregate_elements (4) "
            "at byte offset 0");
  EXPECT_EQ(render("%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", limits), R"({"a": 1, "b": 2})");
  EXPECT_NE(render("%3\r\n", limits).find("map of 3 pairs exceeds max_aggregate_elements (4)"),
            std::string::npos);
  EXPECT_NE(render("~5\r\n", limits).find("set of 5 elements"), std::string::npos);
  EXPECT_NE(render(">5\r\n", limits).find("push of 5 elements"), std::string::npos);
  EXPECT_NE(render("|3\r\n", limits).find("attribute of 3 pairs"), std::string::npos);
  EXPECT_NE(render("*?\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n", limits)
                .find("streamed aggregate of more than 4 elements exceeds "
                      "max_aggregate_elements at byte offset 24"),
            std::string::npos);
}

TEST(ParserLimitTest, HugeDeclaredCountReservesNothing) {
  // 2^30 elements declared, none sent: the parser waits without allocating for them.
  EXPECT_EQ(render("*1073741824\r\n:1\r\n"), "NEEDMORE");
  EXPECT_EQ(render("%536870912\r\n"), "NEEDMORE");
}

TEST(ParserLimitTest, MaxDepth) {
  ParserLimits limits;
  limits.max_depth = 2;
  EXPECT_EQ(render("*1\r\n*1\r\n:1\r\n", limits), "[[1]]");
  EXPECT_EQ(render("*1\r\n*1\r\n*1\r\n:1\r\n", limits),
            "FAILED: RESP protocol error: aggregates nested deeper than max_depth (2) at byte "
            "offset 8");
  EXPECT_NE(render("*1\r\n|1\r\n*1\r\n", limits).find("max_depth"), std::string::npos);
}

TEST(ParserLimitTest, MaxDepthDefaultIs128) {
  std::string ok;
  for (int i = 0; i < 128; ++i) ok += "*1\r\n";
  ok += ":1\r\n";
  Parser parser;
  ASSERT_EQ(parser.parse(ok), ParseStatus::Complete);
  EXPECT_EQ(parser.nodes().back().depth, 128u);
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "*1\r\n";  // no stack overflow: it is iterative
  EXPECT_NE(render(deep).find("nested deeper than max_depth (128) at byte offset 512"),
            std::string::npos);
}

TEST(ParserLimitTest, MaxLineLength) {
  ParserLimits limits;
  limits.max_line_length = 8;
  EXPECT_EQ(render("+1234567\r\n", limits), R"("1234567")");
  EXPECT_EQ(
      render("+12345678\r\n", limits),
      "FAILED: RESP protocol error: no CRLF within max_line_length (8) bytes of a line at byte "
      "offset 0");
  // Without CRLF it fails as soon as the line is too long, not when it ends.
  EXPECT_EQ(render("+1234567", limits), "NEEDMORE");
  EXPECT_EQ(render("+1234567\r", limits), "NEEDMORE");
  EXPECT_EQ(
      render("+12345678901", limits),
      "FAILED: RESP protocol error: no CRLF within max_line_length (8) bytes of a line at byte "
      "offset 0");
  EXPECT_NE(render("$?\r\n;123456789\r\n", limits).find("max_line_length"), std::string::npos);
}

// ---------------------------------------------------------------------------------------
// Malformed input.

struct Malformed {
  std::string_view input;
  std::string_view message;  ///< a substring of the error
};

TEST(ParserMalformedTest, EachGivesAProtocolErrorNamingTheProblem) {
  const Malformed cases[] = {
      {"?x\r\n", "unknown type byte 0x3f ('?') at byte offset 0"},
      {std::string_view("\x01\r\n", 3), "unknown type byte 0x01 at byte offset 0"},
      {"\r\n", "empty line where a type byte was expected"},
      {"+OK\n", "line ends with LF without CR"},
      {"\n", "line ends with LF without CR"},
      {"$abc\r\n", R"(invalid bulk string length "abc" (expected digits, -1 or ?))"},
      {"$\r\n", R"(invalid bulk string length "")"},
      {"$-2\r\n", R"(invalid bulk string length "-2")"},
      {"$-0\r\n", R"(invalid bulk string length "-0")"},
      {"$+5\r\n", R"(invalid bulk string length "+5")"},
      {"$ 5\r\n", R"(invalid bulk string length " 5")"},
      {"$5x\r\n", R"(invalid bulk string length "5x")"},
      {"$99999999999999999999999\r\n", "bulk string length \"99999999999999999999999\" overflows"},
      {"$9223372036854775808\r\n", "overflows"},
      {"!-1\r\n", R"(invalid bulk error length "-1" (expected digits))"},
      {"=-1\r\n", "invalid verbatim string length"},
      {"!?\r\n", "invalid bulk error length"},
      {"*-2\r\n", R"(invalid array length "-2")"},
      {"*x\r\n", R"(invalid array length "x" (expected digits, -1 or ?))"},
      {"*99999999999999999999999\r\n", "array length \"99999999999999999999999\" overflows"},
      {"%-1\r\n", R"(invalid map length "-1" (expected digits))"},
      {"~-1\r\n", "invalid set length"},
      {">-1\r\n", "invalid push length"},
      {"|-1\r\n", "invalid attribute length"},
      {"|?\r\n", "streamed (?) length is not allowed for a attribute"},
      {">?\r\n", "streamed (?) length is not allowed for a push"},
      {"$5\r\nhelloXY", "bulk string of length 5 is not followed by CRLF at byte offset 9"},
      {"!3\r\nERRxx", "bulk error of length 3 is not followed by CRLF"},
      {"=4\r\ntxt:XY", "verbatim string of length 4 is not followed by CRLF"},
      {"=3\r\n", "verbatim string length 3 is shorter than its 4-byte format prefix"},
      {"=5\r\ntxtxy\r\n", R"(verbatim string without its "fmt:" prefix: "txtx")"},
      {":abc\r\n", R"(invalid integer "abc")"},
      {":\r\n", R"(invalid integer "")"},
      {":12a\r\n", R"(invalid integer "12a")"},
      {":1.5\r\n", R"(invalid integer "1.5")"},
      {":+-1\r\n", R"(invalid integer "+-1")"},
      {":99999999999999999999\r\n", "invalid integer"},
      {",abc\r\n", R"(invalid double "abc")"},
      {",\r\n", R"(invalid double "")"},
      {",1.2.3\r\n", R"(invalid double "1.2.3")"},
      {",1e\r\n", "invalid double"},
      {"#x\r\n", R"(invalid boolean "x" (expected t or f))"},
      {"#\r\n", "invalid boolean"},
      {"#tt\r\n", "invalid boolean"},
      {"(12a\r\n", R"(invalid big number "12a")"},
      {"(\r\n", "invalid big number"},
      {"(-\r\n", "invalid big number"},
      {"_x\r\n", R"(null followed by "x")"},
      {".\r\n", "end marker '.' outside a streamed aggregate at byte offset 0"},
      {"*2\r\n:1\r\n.\r\n", "end marker '.' outside a streamed aggregate at byte offset 8"},
      {"*?\r\n.x\r\n", R"(end marker '.' followed by "x")"},
      {"%?\r\n+a\r\n.\r\n", "streamed map ended after an odd number of elements (1)"},
      {"$?\r\n+x\r\n", R"(streamed string chunk expected (';<length>'), got "+x")"},
      {"$?\r\n;\r\n", "invalid streamed string chunk length"},
      {"$?\r\n;-1\r\n", "invalid streamed string chunk length"},
      {"$?\r\n;99999999999999999999999\r\n", "streamed string chunk length"},
      {"$?\r\n;3\r\nabcXY", "streamed string chunk of length 3 is not followed by CRLF"},
      {";3\r\n", "unknown type byte 0x3b (';')"},
      {"+OK\r\n", ""},  // sanity: marks the end of the list (checked below)
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.input));
    if (c.message.empty()) continue;
    Parser parser;
    ASSERT_EQ(parser.parse(c.input), ParseStatus::Failed);
    EXPECT_EQ(parser.error().code(), errc::protocol_error);
    EXPECT_NE(parser.error().message().find(c.message), std::string::npos)
        << parser.error().message();
    EXPECT_NE(parser.error().message().find("at byte offset"), std::string::npos);
  }
}

TEST(ParserMalformedTest, ErrorOffsetCountsFromTheStartOfTheStream) {
  Parser parser;
  std::string stream = "+OK\r\n:1\r\n?bad\r\n";
  ASSERT_EQ(parser.parse(stream), ParseStatus::Complete);
  ASSERT_EQ(parser.parse(std::string_view(stream).substr(5)), ParseStatus::Complete);
  ASSERT_EQ(parser.parse(std::string_view(stream).substr(9)), ParseStatus::Failed);
  EXPECT_NE(parser.error().message().find("at byte offset 9"), std::string::npos)
      << parser.error().message();
}

TEST(ParserMalformedTest, FailedStateIsStickyUntilReset) {
  Parser parser;
  ASSERT_EQ(parser.parse("*2\r\n:x\r\n"), ParseStatus::Failed);
  const std::string message = parser.error().message();
  EXPECT_EQ(parser.parse("+OK\r\n"), ParseStatus::Failed);
  EXPECT_EQ(parser.parse(""), ParseStatus::Failed);
  EXPECT_EQ(parser.error().message(), message);
  EXPECT_EQ(parser.close_error().message(), message);
  parser.reset();
  EXPECT_FALSE(parser.error());
  ASSERT_EQ(parser.parse("+OK\r\n"), ParseStatus::Complete);
  EXPECT_EQ(parser.nodes()[0].value, "OK");
}

TEST(ParserMalformedTest, ShrinkingInputIsRefused) {
  Parser parser;
  ASSERT_EQ(parser.parse("$5\r\nhel"), ParseStatus::NeedMore);
  EXPECT_EQ(parser.parse("$5"), ParseStatus::Failed);
  EXPECT_NE(parser.error().message().find("must be passed again"), std::string::npos);
}

TEST(ParserCloseTest, TruncatedInputIsReportedAtClose) {
  Parser parser;
  EXPECT_FALSE(parser.close_error());  // nothing seen
  ASSERT_EQ(parser.parse("*2\r\n:1\r\n$5\r\nhel"), ParseStatus::NeedMore);
  Error error = parser.close_error();
  EXPECT_EQ(error.code(), errc::protocol_error);
  EXPECT_NE(error.message().find("input truncated at close"), std::string::npos);
  EXPECT_NE(error.message().find("after 15 of its bytes"), std::string::npos) << error.message();

  Parser line;
  ASSERT_EQ(line.parse("+O"), ParseStatus::NeedMore);
  EXPECT_TRUE(line.close_error());
}

TEST(ParserCloseTest, CompleteReplyIsNotTruncated) {
  Parser parser;
  ASSERT_EQ(parser.parse("+OK\r\n"), ParseStatus::Complete);
  EXPECT_FALSE(parser.close_error());
}

TEST(ParserCloseTest, ResetStartsAFreshStream) {
  Parser parser;
  ASSERT_EQ(parser.parse("*3\r\n:1\r\n"), ParseStatus::NeedMore);
  parser.reset();
  EXPECT_FALSE(parser.close_error());
  ASSERT_EQ(parser.parse(":5\r\n"), ParseStatus::Complete);
  EXPECT_EQ(parser.nodes().size(), 1u);
  EXPECT_EQ(parser.nodes()[0].value, "5");
}

/// Parses every reply of `stream`, revealing it `step` bytes at a time; returns the count.
std::size_t parse_stream(Parser& parser, std::string_view stream, std::size_t step) {
  std::size_t replies = 0;
  std::size_t shown = 0;
  while (!stream.empty()) {
    shown = std::min(stream.size(), shown + step);
    ParseStatus status = parser.parse(stream.substr(0, shown));
    if (status == ParseStatus::Failed) return 0;
    if (status == ParseStatus::Complete) {
      ++replies;
      stream.remove_prefix(parser.consumed());
      shown = 0;
    }
  }
  return replies;
}

TEST(ParserTest, NoHeapAllocationInSteadyState) {
  std::string all;
  for (const auto& entry : kCorpus) all += entry.bytes;
  std::string array = "*1000\r\n";
  for (int i = 0; i < 1000; ++i) array += "$5\r\nvalue\r\n";
  Parser parser;
  for (std::size_t step : {std::size_t{1}, std::size_t{7}, all.size()}) {  // warm-up
    ASSERT_EQ(parse_stream(parser, all, step), std::size(kCorpus));
    ASSERT_EQ(parse_stream(parser, array, step), 1u);
  }
  const long before = test::allocations();
  for (std::size_t step : {std::size_t{1}, std::size_t{7}, all.size()}) {
    EXPECT_EQ(parse_stream(parser, all, step), std::size(kCorpus));
    EXPECT_EQ(parse_stream(parser, array, step), 1u);
  }
  EXPECT_EQ(test::allocations() - before, 0) << "allocations while parsing warmed-up replies";
}

TEST(ParserTest, SteadyStateReusesCapacity) {
  // Not a proof of "no allocation", but the node storage must not shrink between replies.
  Parser parser;
  std::string input = "*3\r\n:1\r\n:2\r\n:3\r\n";
  ASSERT_EQ(parser.parse(input), ParseStatus::Complete);
  const Node* first = parser.nodes().data();
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(parser.parse(input), ParseStatus::Complete);
    EXPECT_EQ(parser.nodes().data(), first);
  }
}

// ---------------------------------------------------------------------------------------
// The size hints a reader makes room by.

TEST(ParserSizeHintTest, TheSizeOfAnAwaitedStringIsKnownFromItsHeader) {
  Parser parser;
  EXPECT_EQ(parser.parse("$100"), ParseStatus::NeedMore);
  EXPECT_EQ(parser.known_reply_size(), 0u);  // the header line is not whole yet
  EXPECT_EQ(parser.parse("$100\r\nab"), ParseStatus::NeedMore);
  EXPECT_EQ(parser.known_reply_size(), 6u + 100 + 2);
  EXPECT_EQ(parser.likely_reply_size(), parser.known_reply_size());  // not in an aggregate
  // Counted from the reply's first byte, attributes and earlier elements included.
  Parser nested;
  const std::string head = "|1\r\n+a\r\n:1\r\n*2\r\n+x\r\n!20\r\n";
  EXPECT_EQ(nested.parse(head), ParseStatus::NeedMore);
  EXPECT_EQ(nested.known_reply_size(), head.size() + 20 + 2);
  EXPECT_EQ(nested.likely_reply_size(), nested.known_reply_size());  // the last element
  EXPECT_EQ(nested.parse(head + std::string(20, 'e') + "\r\n"), ParseStatus::Complete);
  EXPECT_EQ(nested.known_reply_size(), 0u);
  // A streamed string's chunk.
  Parser streamed;
  EXPECT_EQ(streamed.parse("$?\r\n;4\r\nab"), ParseStatus::NeedMore);
  EXPECT_EQ(streamed.known_reply_size(), 8u + 4 + 2);
}

TEST(ParserSizeHintTest, AnAggregatesStringsStillToComeAreGuessedAsLongAsTheAwaitedOne) {
  Parser parser;
  const std::string head = "*4\r\n$3\r\nabc\r\n$1000\r\n";
  EXPECT_EQ(parser.parse(head), ParseStatus::NeedMore);
  EXPECT_EQ(parser.known_reply_size(), head.size() + 1000 + 2);
  EXPECT_EQ(parser.likely_reply_size(), parser.known_reply_size() + 2 * (1000 + 16));
  Parser failed;
  EXPECT_EQ(failed.parse("$3\r\nabcde"), ParseStatus::Failed);
  EXPECT_EQ(failed.known_reply_size(), 0u);
  EXPECT_EQ(failed.likely_reply_size(), 0u);
}

}  // namespace
}  // namespace redmux::resp
