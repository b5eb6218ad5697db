#include "conn/reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace redmux::detail {
namespace {

void put(Reader& reader, std::string_view bytes) {
  std::span<char> space = reader.free_space();
  ASSERT_LE(bytes.size(), space.size());
  std::copy(bytes.begin(), bytes.end(), space.begin());
  reader.commit(bytes.size());
}

TEST(ReaderTest, RepliesAndResp3PushesAreToldApart) {
  Reader reader;
  put(reader, ">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n*1\r\n$1\r\na\r\n");
  EXPECT_EQ(reader.next(), Reader::Frame::Push);
  EXPECT_EQ(reader.frame()[1].value, "message");
  EXPECT_EQ(reader.next(), Reader::Frame::Reply);
  EXPECT_EQ(reader.frame()[1].value, "a");
  EXPECT_EQ(reader.next(), Reader::Frame::NeedMore);
}

// RESP2 has no push type: only on a subscribed connection is an array led by a pub/sub kind
// a push; elsewhere (a caller's LRANGE of ["message", …]) it is a reply.
TEST(ReaderTest, InSubscriberModeAResp2PubSubArrayIsAPush) {
  const std::string message = "*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n";
  const std::string short_array = "*2\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n";
  Reader plain;
  put(plain, message);
  EXPECT_EQ(plain.next(), Reader::Frame::Reply);
  Reader subscribed;
  subscribed.set_subscriber_mode(true);
  put(subscribed, message + short_array + "*3\r\n$5\r\nother\r\n$1\r\nc\r\n$1\r\np\r\n");
  EXPECT_EQ(subscribed.next(), Reader::Frame::Push);
  EXPECT_EQ(subscribed.next(), Reader::Frame::Reply);  // fewer than 3 elements
  EXPECT_EQ(subscribed.next(), Reader::Frame::Reply);  // not a pub/sub kind
}

TEST(ReaderTest, AReplySplitAcrossReadsIsDeliveredOnceWhole) {
  Reader reader;
  put(reader, "$10\r\nhello");
  EXPECT_EQ(reader.next(), Reader::Frame::NeedMore);
  EXPECT_EQ(reader.unparsed(), 10u);
  put(reader, "world\r\n");
  EXPECT_EQ(reader.next(), Reader::Frame::Reply);
  EXPECT_EQ(reader.frame()[0].value, "helloworld");
  EXPECT_EQ(reader.unparsed(), 0u);
}

TEST(ReaderTest, AReplyLargerThanTheBufferGrowsItAndSettleGivesTheMemoryBack) {
  Reader reader;
  const std::size_t at_rest = reader.free_space().size();
  const std::string value(3 * 1024 * 1024, 'v');
  const std::string reply = "$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
  for (std::size_t at = 0; at < reply.size();) {
    std::span<char> space = reader.free_space();
    const std::size_t n = std::min(space.size(), reply.size() - at);
    std::copy_n(reply.begin() + static_cast<std::ptrdiff_t>(at), n, space.begin());
    reader.commit(n);
    at += n;
    if (at < reply.size()) {
      EXPECT_EQ(reader.next(), Reader::Frame::NeedMore);
    }
  }
  EXPECT_EQ(reader.next(), Reader::Frame::Reply);
  EXPECT_EQ(reader.frame()[0].size, value.size());
  reader.settle();
  EXPECT_EQ(reader.free_space().size(), at_rest);
}

TEST(ReaderTest, BytesThatAreNotRespAreMalformedWithTheParsersReason) {
  Reader reader;
  put(reader, "+OK\r\n?what\r\n");
  EXPECT_EQ(reader.next(), Reader::Frame::Reply);
  EXPECT_EQ(reader.next(), Reader::Frame::Malformed);
  EXPECT_EQ(reader.error().code(), errc::protocol_error);
  reader.reset();
  put(reader, "+OK\r\n");
  EXPECT_EQ(reader.next(), Reader::Frame::Reply);  // a new connection parses afresh
}

}  // namespace
}  // namespace redmux::detail
