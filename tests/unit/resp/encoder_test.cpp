#include "resp/encoder.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "resp/parser.hpp"

namespace redmux::resp {
namespace {

TEST(EncoderTest, EncodesAnArrayOfBulkStrings) {
  std::string out;
  encode_command(out, {"SET", "key", "value"});
  EXPECT_EQ(out, "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");
}

TEST(EncoderTest, AppendsToWhatIsAlreadyThere) {
  std::string out = "prefix";
  encode_command(out, {"PING"});
  EXPECT_EQ(out, "prefix*1\r\n$4\r\nPING\r\n");
}

TEST(EncoderTest, NumbersAndBinaryAndEmptyArguments) {
  std::string out;
  const std::string binary("a\r\n\0b", 5);
  encode_command(out, {"CMD", 42, -7LL, 2.5, binary, "", std::string_view("sv")});
  EXPECT_EQ(out,
            std::string("*7\r\n$3\r\nCMD\r\n$2\r\n42\r\n$2\r\n-7\r\n$3\r\n2.5\r\n$5\r\na\r\n\0b\r\n"
                        "$0\r\n\r\n$2\r\nsv\r\n",
                        63));
}

// Floating-point arguments in the shortest form of their own type: a float's 0.1 is "0.1",
// not its double's "0.10000000149011612"; infinities as Redis spells them.
TEST(EncoderTest, FloatingPointArgumentsAreShortestForTheirType) {
  EXPECT_EQ(Arg(0.1f).bytes(), "0.1");
  EXPECT_EQ(Arg(1.5f).bytes(), "1.5");
  EXPECT_EQ(Arg(0.1).bytes(), "0.1");
  EXPECT_EQ(Arg(1e21).bytes(), "1e+21");
  EXPECT_EQ(Arg(0.1L).bytes(), "0.1");
  EXPECT_EQ(Arg(-std::numeric_limits<double>::infinity()).bytes(), "-inf");
  EXPECT_EQ(Arg(std::numeric_limits<float>::infinity()).bytes(), "inf");
  EXPECT_EQ(Arg(-std::numeric_limits<long double>::max()).bytes(), "-1.189731495357231765e+4932");
}

// Every argument length and count through both ways of writing (the one pass on the stack
// for small commands, sizing then resizing for the rest), each byte in its place.
TEST(EncoderTest, EveryShortLengthAndTheSmallBufferEdgeWriteEachByte) {
  const auto expected = [](const std::vector<std::string>& words) {
    std::string text = "*" + std::to_string(words.size()) + "\r\n";
    for (const std::string& w : words) text += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
    return text;
  };
  for (std::size_t count = 1; count <= 12; ++count) {
    for (std::size_t length = 0; length <= 240; ++length) {
      std::vector<std::string> words;
      for (std::size_t i = 0; i < count; ++i) {
        std::string word(length, '\0');
        for (std::size_t j = 0; j < length; ++j) word[j] = static_cast<char>('a' + (i + j) % 26);
        words.push_back(std::move(word));
      }
      const std::vector<Arg> args(words.begin(), words.end());
      std::string out = "before";
      encode_command(out, args);
      ASSERT_EQ(out, "before" + expected(words)) << count << " arguments of " << length;
    }
  }
}

// Long arguments take a third way (room reserved, then appended, no zero-fill): each byte in
// its place on both sides of the switch, long and short arguments mixed, in both forms.
TEST(EncoderTest, LongArgumentsAroundTheAppendSwitchWriteEachByte) {
  const auto word = [](std::size_t length, std::size_t seed) {
    std::string w(length, '\0');
    for (std::size_t j = 0; j < length; ++j) w[j] = static_cast<char>('A' + (seed + j) % 50);
    return w;
  };
  for (std::size_t count = 1; count <= 5; ++count) {
    for (const std::size_t length :
         {255u, 1023u, 1024u, 1025u, 4095u, 8191u, 8192u, 8193u, 16384u, 65536u, 1048577u}) {
      std::vector<std::string> words = {"SET"};
      for (std::size_t i = 1; i < count; ++i) words.push_back(word(i % 2 ? length : 3, i));
      words.push_back(word(length, 7));
      std::string expected = "before*" + std::to_string(words.size()) + "\r\n";
      for (const std::string& w : words) {
        expected += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
      }
      const std::vector<Arg> args(words.begin(), words.end());
      std::string out = "before";
      encode_command(out, args);
      ASSERT_EQ(out, expected) << count << " arguments, the long ones of " << length;
      std::string incremental = "before";
      begin_command(incremental, words.size());
      for (const std::string& w : words) append_arg(incremental, w);
      ASSERT_EQ(incremental, expected) << count << " arguments, the long ones of " << length;
    }
  }
}

TEST(EncoderTest, EncodedSizeIsExact) {
  std::vector<Arg> args = {"MSET"};
  std::vector<std::string> values;
  for (int i = 0; i < 100; ++i) values.push_back(std::string(static_cast<std::size_t>(i), 'v'));
  for (const auto& v : values) {
    args.emplace_back("key");
    args.emplace_back(v);
  }
  std::string out;
  encode_command(out, args);
  EXPECT_EQ(out.size(), encoded_size(args));
  EXPECT_EQ(out.substr(0, 6), "*201\r\n");
}

TEST(EncoderTest, NoArgumentsIsAnEmptyArray) {
  std::string out;
  encode_command(out, std::span<const Arg>());
  EXPECT_EQ(out, "*0\r\n");
}

TEST(EncoderTest, LongArgumentLengthHasAllItsDigits) {
  std::string big(123456, 'x');
  std::string out;
  encode_command(out, {"SET", "k", big});
  EXPECT_EQ(out.find("$123456\r\n"), 20u);  // after "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n"
  EXPECT_EQ(out.size(), encoded_size(std::vector<Arg>{"SET", "k", big}));
}

TEST(EncoderTest, IncrementalFormMatchesTheSpanForm) {
  std::vector<std::pair<std::string, long long>> pairs = {{"a", 1}, {"b", -20}, {"c", 300}};
  std::string incremental;
  begin_command(incremental, 1 + 2 * pairs.size());
  append_arg(incremental, "MSET");
  for (const auto& [k, v] : pairs) {
    append_arg(incremental, k);
    append_arg(incremental, Arg(v));
  }
  std::string whole;
  encode_command(whole, {"MSET", "a", 1, "b", -20, "c", 300});
  EXPECT_EQ(incremental, whole);
}

TEST(EncoderTest, RangeArgumentsAndPairsFlatten) {
  const std::map<std::string, int> pairs = {{"a", 1}, {"b", 2}};
  const std::vector<std::string> keys = {"k1", "k2"};
  std::string out;
  encode_args(out, "MSET", pairs);
  std::string expected;
  encode_command(expected, {"MSET", "a", 1, "b", 2});
  EXPECT_EQ(out, expected);

  out.clear();
  encode_args(out, "DEL", keys, std::string("k3"), 4.5, std::vector<long long>{});
  expected.clear();
  encode_command(expected, {"DEL", "k1", "k2", "k3", 4.5});
  EXPECT_EQ(out, expected);
}

TEST(EncoderTest, OutputParsesBackAsTheSameArguments) {
  // The server reads exactly what the parser would: an array of bulk strings.
  std::string out;
  encode_command(out, {"HSET", "h", "f", 1.5, "g", ""});
  Parser parser;
  ASSERT_EQ(parser.parse(out), ParseStatus::Complete);
  EXPECT_EQ(parser.consumed(), out.size());
  EXPECT_EQ(Reply::from_nodes(parser.nodes()).as<std::vector<std::string>>(),
            (std::vector<std::string>{"HSET", "h", "f", "1.5", "g", ""}));
}

}  // namespace
}  // namespace redmux::resp
