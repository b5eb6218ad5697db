#include "redmux/convert.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "resp/parser.hpp"

namespace redmux {
namespace {

/// Parses `wire` (one whole reply) and converts it to T.
template <class T>
Result<T> convert(std::string_view wire) {
  resp::Parser parser;
  if (parser.parse(wire) != resp::ParseStatus::Complete) {
    return Error(errc::protocol_error, "test input did not parse: " + parser.error().message());
  }
  return from_nodes<T>(parser.nodes());
}

template <class T>
std::string error_of(std::string_view wire) {
  Result<T> r = convert<T>(wire);
  if (r) return "no error";
  return (r.error().code() == errc::server_error ? "server_error: " : "") + r.error().message();
}

TEST(ConvertTest, IntegersFromIntegerAndNumericStrings) {
  EXPECT_EQ(*convert<long long>(":42\r\n"), 42);
  EXPECT_EQ(*convert<long long>(":-9223372036854775808\r\n"), INT64_MIN);
  EXPECT_EQ(*convert<long long>(":+7\r\n"), 7);
  EXPECT_EQ(*convert<long long>("$3\r\n123\r\n"), 123);
  EXPECT_EQ(*convert<long long>("+-5\r\n"), -5);
  EXPECT_EQ(*convert<long long>("=7\r\ntxt:101\r\n"), 101);
  EXPECT_EQ(*convert<long long>("(12345\r\n"), 12345);
  EXPECT_EQ(*convert<long long>("#t\r\n"), 1);
  EXPECT_EQ(*convert<int>(":-3\r\n"), -3);
  EXPECT_EQ(*convert<long>(":3\r\n"), 3L);
  EXPECT_EQ(*convert<std::int64_t>(":3\r\n"), 3);
  EXPECT_EQ(*convert<unsigned>(":4000000000\r\n"), 4000000000u);
  EXPECT_EQ(*convert<std::uint64_t>(":-0\r\n"), 0u);
  EXPECT_EQ(*convert<short>(":-32768\r\n"), -32768);
}

// Up to 18 plain digits take a shorter path than longer or signed numbers: the edges of
// both, and of each type's range on the short path.
TEST(ConvertTest, IntegersAtTheEdgesOfTheShortPath) {
  EXPECT_EQ(*convert<long long>(":0\r\n"), 0);
  EXPECT_EQ(*convert<long long>(":999999999999999999\r\n"), 999999999999999999LL);    // 18
  EXPECT_EQ(*convert<long long>(":9223372036854775807\r\n"), INT64_MAX);              // 19
  EXPECT_EQ(*convert<std::uint64_t>("$20\r\n18446744073709551615\r\n"), UINT64_MAX);  // 20
  EXPECT_EQ(*convert<long long>(":000000000000000042\r\n"), 42);
  EXPECT_EQ(*convert<std::uint8_t>(":255\r\n"), 255);
  EXPECT_EQ(*convert<short>(":32767\r\n"), 32767);
  EXPECT_EQ(*convert<int>(":2147483647\r\n"), INT32_MAX);
  EXPECT_EQ(*convert<unsigned>(":4294967295\r\n"), UINT32_MAX);
  EXPECT_EQ(error_of<std::uint8_t>(":256\r\n"),
            "expected integer, got integer 256, out of range for a 8-bit unsigned integer");
  EXPECT_EQ(error_of<short>(":32768\r\n"),
            "expected integer, got integer 32768, out of range for a 16-bit signed integer");
  EXPECT_EQ(error_of<int>(":2147483648\r\n"),
            "expected integer, got integer 2147483648, out of range for a 32-bit signed integer");
  EXPECT_EQ(error_of<long long>("$19\r\n9223372036854775808\r\n"),
            "expected integer, got bulk string \"9223372036854775808\", out of range for a "
            "64-bit signed integer");
  EXPECT_EQ(error_of<long long>("$3\r\n12x\r\n"), R"(expected integer, got bulk string "12x")");
  EXPECT_EQ(error_of<long long>("$2\r\n1/\r\n"), R"(expected integer, got bulk string "1/")");
  EXPECT_EQ(error_of<long long>("$0\r\n\r\n"), R"(expected integer, got bulk string "")");
}

// Up to eight digits are checked and summed a word at a time: every length, every position
// of a byte that is not a digit (the bytes next to '0' and '9', and with the high bit set).
TEST(ConvertTest, ShortIntegersAreReadAWordAtATime) {
  for (std::size_t length = 1; length <= 9; ++length) {
    for (const char* digits : {"12345678", "90817263", "00000001", "99999999", "50000000"}) {
      const std::string text = (std::string(digits) + "9").substr(0, length);
      long long value = -1;
      ASSERT_EQ(detail::parse_integral(text, value), detail::NumberStatus::Ok) << text;
      EXPECT_EQ(value, std::stoll(text)) << text;
      for (std::size_t at = 0; at < length; ++at) {
        for (const char bad : {'/', ':', ' ', '+', '\0', static_cast<char>(0xB0),
                               static_cast<char>(0xB9), static_cast<char>(0xFF)}) {
          std::string broken = text;
          broken[at] = bad;
          if (at == 0 && bad == '+' && length > 1) continue;  // "+123" is a number
          EXPECT_EQ(detail::parse_integral(broken, value), detail::NumberStatus::Invalid)
              << length << " bytes, " << static_cast<int>(bad) << " at " << at;
        }
      }
    }
  }
  std::uint8_t small = 0;
  EXPECT_EQ(detail::parse_integral("256", small), detail::NumberStatus::OutOfRange);
  EXPECT_EQ(detail::parse_integral("255", small), detail::NumberStatus::Ok);
  EXPECT_EQ(small, 255);
}

TEST(ConvertTest, IntegerMismatchesAreExplained) {
  EXPECT_EQ(error_of<long long>("$3\r\nabc\r\n"), R"(expected integer, got bulk string "abc")");
  EXPECT_EQ(error_of<long long>("+OK\r\n"), R"(expected integer, got simple string "OK")");
  EXPECT_EQ(error_of<long long>("_\r\n"), "expected integer, got null");
  EXPECT_EQ(error_of<long long>("*2\r\n:1\r\n:2\r\n"), "expected integer, got array of 2 elements");
  EXPECT_EQ(error_of<long long>(",1.5\r\n"), "expected integer, got double 1.5");
  EXPECT_EQ(error_of<long long>("$2\r\n1 \r\n"), R"(expected integer, got bulk string "1 ")");
  EXPECT_EQ(error_of<int>(":3000000000\r\n"),
            "expected integer, got integer 3000000000, out of range for a 32-bit signed integer");
  EXPECT_EQ(error_of<unsigned>(":-1\r\n"),
            "expected integer, got integer -1, out of range for a 32-bit unsigned integer");
  EXPECT_EQ(error_of<long long>("(123456789012345678901234567890\r\n"),
            "expected integer, got big number 123456789012345678901234567890, out of range for "
            "a 64-bit signed integer");
  // Long values are quoted up to 40 bytes.
  EXPECT_EQ(error_of<long long>("$50\r\n" + std::string(50, 'z') + "\r\n"),
            "expected integer, got bulk string \"" + std::string(40, 'z') + "...\"");
  EXPECT_EQ(error_of<long long>("$3\r\na\nb\r\n"), R"(expected integer, got bulk string "a\x0ab")");
}

TEST(ConvertTest, ErrorRepliesAreServerErrors) {
  EXPECT_EQ(error_of<long long>("-WRONGTYPE Operation against a key\r\n"),
            "server_error: WRONGTYPE Operation against a key");
  EXPECT_EQ(error_of<std::string>("!21\r\nSYNTAX invalid syntax\r\n"),
            "server_error: SYNTAX invalid syntax");
  EXPECT_EQ(error_of<std::vector<int>>("-ERR x\r\n"), "server_error: ERR x");
  EXPECT_EQ(error_of<std::optional<int>>("-ERR x\r\n"), "server_error: ERR x");
  EXPECT_EQ(error_of<void>("-ERR x\r\n"), "server_error: ERR x");
  EXPECT_EQ(error_of<Reply>("-ERR x\r\n"), "server_error: ERR x");
  EXPECT_EQ(error_of<bool>("-ERR x\r\n"), "server_error: ERR x");
  // Inside a container too (an EXEC whose second command failed): the server's text first,
  // then where it was.
  EXPECT_EQ(error_of<std::vector<long long>>("*2\r\n:1\r\n-ERR bad\r\n"),
            "server_error: ERR bad (element 1)");
}

TEST(ConvertTest, Doubles) {
  EXPECT_EQ(*convert<double>(",1.23\r\n"), 1.23);
  EXPECT_EQ(*convert<double>(",10\r\n"), 10.0);
  EXPECT_EQ(*convert<double>(",+2E+2\r\n"), 200.0);
  EXPECT_EQ(*convert<double>(",-1.5e-3\r\n"), -0.0015);
  EXPECT_EQ(*convert<double>(",inf\r\n"), INFINITY);
  EXPECT_EQ(*convert<double>(",-inf\r\n"), -INFINITY);
  EXPECT_TRUE(std::isnan(*convert<double>(",nan\r\n")));
  EXPECT_TRUE(std::isnan(*convert<double>(",-nan\r\n")));
  EXPECT_EQ(*convert<double>(":7\r\n"), 7.0);
  EXPECT_EQ(*convert<double>("$4\r\n3.25\r\n"), 3.25);  // RESP2 ZSCORE
  EXPECT_EQ(*convert<double>("$4\r\n-inf\r\n"), -INFINITY);
  EXPECT_EQ(*convert<double>("(100\r\n"), 100.0);
  EXPECT_EQ(error_of<double>("$3\r\nabc\r\n"), R"(expected double, got bulk string "abc")");
  EXPECT_EQ(error_of<double>("#t\r\n"), "expected double, got boolean true");
  EXPECT_EQ(error_of<double>(",1e999\r\n"),
            "expected double, got double 1e999, out of range for a double; ask for std::string "
            "to read it whole");
}

TEST(ConvertTest, Booleans) {
  EXPECT_TRUE(*convert<bool>("#t\r\n"));
  EXPECT_FALSE(*convert<bool>("#f\r\n"));
  EXPECT_TRUE(*convert<bool>(":1\r\n"));
  EXPECT_FALSE(*convert<bool>(":0\r\n"));
  EXPECT_TRUE(*convert<bool>("+OK\r\n"));
  EXPECT_FALSE(*convert<bool>("_\r\n"));
  EXPECT_FALSE(*convert<bool>("$-1\r\n"));
  EXPECT_EQ(error_of<bool>(":2\r\n"), "expected boolean, got integer 2");
  EXPECT_EQ(error_of<bool>("+QUEUED\r\n"), R"(expected boolean, got simple string "QUEUED")");
  EXPECT_EQ(error_of<bool>("$2\r\nOK\r\n"), R"(expected boolean, got bulk string "OK")");
}

TEST(ConvertTest, Strings) {
  EXPECT_EQ(*convert<std::string>("+OK\r\n"), "OK");
  EXPECT_EQ(*convert<std::string>("$5\r\nhello\r\n"), "hello");
  EXPECT_EQ(*convert<std::string>(std::string_view("$3\r\na\0b\r\n", 10)), std::string("a\0b", 3));
  EXPECT_EQ(*convert<std::string>("=15\r\ntxt:Some string\r\n"), "Some string");
  EXPECT_EQ(*convert<std::string>("(3492890328409238509324850943850943825024385\r\n"),
            "3492890328409238509324850943850943825024385");
  EXPECT_EQ(*convert<std::string>(":-12\r\n"), "-12");
  EXPECT_EQ(*convert<std::string>(",3.5\r\n"), "3.5");
  EXPECT_EQ(*convert<std::string>("$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n"), "abc");
  EXPECT_EQ(error_of<std::string>("_\r\n"), "expected string, got null");
  EXPECT_EQ(error_of<std::string>("$-1\r\n"), "expected string, got null");
  EXPECT_EQ(error_of<std::string>("#f\r\n"), "expected string, got boolean false");
  EXPECT_EQ(error_of<std::string>("%1\r\n+a\r\n:1\r\n"), "expected string, got map of 1 pair");
}

TEST(ConvertTest, OptionalMapsNullToNullopt) {
  EXPECT_EQ(*convert<std::optional<std::string>>("$-1\r\n"), std::nullopt);
  EXPECT_EQ(*convert<std::optional<std::string>>("_\r\n"), std::nullopt);
  EXPECT_EQ(*convert<std::optional<std::string>>("$1\r\nv\r\n"), "v");
  EXPECT_EQ(*convert<std::optional<long long>>(":5\r\n"), 5);
  EXPECT_EQ(*convert<std::optional<std::vector<int>>>("*-1\r\n"), std::nullopt);
  EXPECT_EQ(error_of<std::optional<long long>>("+x\r\n"),
            R"(expected integer, got simple string "x")");
}

TEST(ConvertTest, Vectors) {
  using Strings = std::vector<std::string>;
  EXPECT_EQ(*convert<Strings>("*2\r\n$1\r\na\r\n+b\r\n"), (Strings{"a", "b"}));
  EXPECT_EQ(*convert<Strings>("*0\r\n"), Strings{});
  EXPECT_EQ(*convert<Strings>("~2\r\n+x\r\n+y\r\n"), (Strings{"x", "y"}));
  EXPECT_EQ(*convert<Strings>(">2\r\n+message\r\n+hi\r\n"), (Strings{"message", "hi"}));
  EXPECT_EQ(*convert<Strings>("*?\r\n+s\r\n.\r\n"), (Strings{"s"}));
  // A RESP3 map flattens to the RESP2 shape of HGETALL.
  EXPECT_EQ(*convert<Strings>("%2\r\n+f1\r\n+v1\r\n+f2\r\n+v2\r\n"),
            (Strings{"f1", "v1", "f2", "v2"}));
  // MGET: some keys missing.
  EXPECT_EQ(*convert<std::vector<std::optional<std::string>>>("*3\r\n$1\r\na\r\n$-1\r\n_\r\n"),
            (std::vector<std::optional<std::string>>{"a", std::nullopt, std::nullopt}));
  EXPECT_EQ(*convert<std::vector<std::vector<int>>>("*2\r\n*2\r\n:1\r\n:2\r\n*0\r\n"),
            (std::vector<std::vector<int>>{{1, 2}, {}}));
  EXPECT_EQ(error_of<Strings>("*-1\r\n"), "expected array, got null");
  EXPECT_EQ(error_of<Strings>("+OK\r\n"), R"(expected array, got simple string "OK")");
  EXPECT_EQ(error_of<std::vector<long long>>("*3\r\n:1\r\n:2\r\n$1\r\nx\r\n"),
            R"(element 2: expected integer, got bulk string "x")");
  EXPECT_EQ(error_of<std::vector<std::vector<long long>>>("*2\r\n*0\r\n*2\r\n:1\r\n+y\r\n"),
            R"(element 1: element 1: expected integer, got simple string "y")");
}

TEST(ConvertTest, Pairs) {
  using P = std::pair<std::string, double>;
  EXPECT_EQ(*convert<P>("*2\r\n+m\r\n,1.5\r\n"), (P{"m", 1.5}));
  EXPECT_EQ(*convert<P>("%1\r\n+m\r\n,1.5\r\n"), (P{"m", 1.5}));
  EXPECT_EQ(error_of<P>("*3\r\n:1\r\n:2\r\n:3\r\n"),
            "expected array of 2 elements, got array of 3 elements");
}

TEST(ConvertTest, MapsFromResp3MapsAndResp2FlatArraysAlike) {
  using Map = std::unordered_map<std::string, std::string>;
  const Map expected{{"name", "redmux"}, {"lang", "c++"}};
  EXPECT_EQ(*convert<Map>("%2\r\n$4\r\nname\r\n$6\r\nredmux\r\n$4\r\nlang\r\n$3\r\nc++\r\n"),
            expected);
  EXPECT_EQ(*convert<Map>("*4\r\n$4\r\nname\r\n$6\r\nredmux\r\n$4\r\nlang\r\n$3\r\nc++\r\n"),
            expected);
  EXPECT_EQ(*convert<Map>("%0\r\n"), Map{});
  EXPECT_EQ(*convert<Map>("*0\r\n"), Map{});

  using Ordered = std::map<std::string, long long>;
  EXPECT_EQ(*convert<Ordered>("%2\r\n+b\r\n:2\r\n+a\r\n:1\r\n"), (Ordered{{"a", 1}, {"b", 2}}));
  EXPECT_EQ(*convert<Ordered>("*4\r\n+a\r\n:1\r\n+a\r\n:9\r\n"), (Ordered{{"a", 9}}));  // last wins

  using Pairs = std::vector<std::pair<std::string, double>>;
  const Pairs scores{{"a", 1}, {"b", 2.5}};
  EXPECT_EQ(*convert<Pairs>("*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$3\r\n2.5\r\n"),
            scores);  // RESP2
  EXPECT_EQ(*convert<Pairs>("*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,2.5\r\n"),
            scores);  // RESP3 ZRANGE … WITHSCORES
  EXPECT_EQ(*convert<Pairs>("%2\r\n+a\r\n,1\r\n+b\r\n,2.5\r\n"), scores);

  EXPECT_EQ(error_of<Map>("*3\r\n+a\r\n+b\r\n+c\r\n"),
            "expected map, got array of 3 elements (odd, so not key/value pairs)");
  EXPECT_EQ(error_of<Map>(":1\r\n"), "expected map, got integer 1");
  EXPECT_EQ(error_of<Ordered>("%1\r\n+a\r\n+x\r\n"),
            R"(element 0: expected integer, got simple string "x")");
  EXPECT_EQ(error_of<Pairs>("*2\r\n*2\r\n+a\r\n,1\r\n:5\r\n"),
            "element 1: expected array of 2 elements, got integer 5");
}

TEST(ConvertTest, NestedMapOfVectors) {
  using Nested = std::map<std::string, std::vector<std::optional<long long>>>;
  EXPECT_EQ(*convert<Nested>("%2\r\n+x\r\n*2\r\n:1\r\n_\r\n+y\r\n*0\r\n"),
            (Nested{{"x", {1, std::nullopt}}, {"y", {}}}));
}

TEST(ConvertTest, VoidAcceptsAnyNonError) {
  EXPECT_TRUE(convert<void>("+OK\r\n").has_value());
  EXPECT_TRUE(convert<void>("_\r\n").has_value());
  EXPECT_TRUE(convert<void>("*1\r\n-ERR inside is fine\r\n").has_value());
}

TEST(ConvertTest, ReplyKeepsNestedErrorsAsValues) {
  Result<std::vector<Reply>> r = convert<std::vector<Reply>>("*2\r\n+OK\r\n-ERR no\r\n");
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE((*r)[1].is_error());
  EXPECT_EQ((*r)[1].error_message(), "ERR no");
  Result<Reply> whole = convert<Reply>("*2\r\n+OK\r\n-ERR no\r\n");
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->to_string(), R"(["OK", (error) ERR no])");
}

TEST(ConvertTest, SubtreesWithNonZeroRootDepthConvert) {
  resp::Parser parser;
  ASSERT_EQ(parser.parse("*2\r\n*2\r\n:1\r\n:2\r\n:3\r\n"), resp::ParseStatus::Complete);
  NodeSpan inner = parser.nodes().subspan(1);  // [1, 2] at depth 1, then a sibling
  EXPECT_EQ(*from_nodes<std::vector<int>>(inner), (std::vector<int>{1, 2}));
}

TEST(ConvertTest, EmptySpanIsAnError) {
  EXPECT_EQ(from_nodes<long long>(NodeSpan()).error().message(), "expected a reply, got none");
}

}  // namespace
}  // namespace redmux
