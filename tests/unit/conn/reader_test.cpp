#include "conn/reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace redmux::detail {
namespace {

void put(Reader& reader, std::string_view bytes) {
  std::span<char> space = reader.free_space();
  ASSERT_LE(bytes.size(), space.size());
  std::copy(bytes.begin(), bytes.end(), space.begin());
  reader.commit(bytes.size());
}

// Feeds `stream` as the connection reads it: reads of at most `read_size` bytes (what one
// socket read returns when the kernel holds that much) into free_space(), every whole frame
// parsed after each read and handed to `on_frame` (its views last until the next read),
// then settle(). Returns the largest capacity the buffer had.
std::size_t feed(Reader& reader, std::string_view stream, std::size_t read_size,
                 const std::function<void(NodeSpan)>& on_frame) {
  std::size_t largest = reader.capacity();
  for (std::size_t at = 0; at < stream.size();) {
    std::span<char> space = reader.free_space();
    largest = std::max(largest, reader.capacity());
    const std::size_t n = std::min({space.size(), read_size, stream.size() - at});
    EXPECT_GT(n, 0u) << "free_space() offered no room at byte " << at;
    if (n == 0) break;
    std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(at), n, space.begin());
    reader.commit(n);
    at += n;
    for (Reader::Frame frame = reader.next(); frame != Reader::Frame::NeedMore;
         frame = reader.next()) {
      EXPECT_EQ(frame, Reader::Frame::Reply) << reader.error().message();
      if (frame != Reader::Frame::Reply) return largest;
      on_frame(reader.frame());
    }
    reader.settle();
  }
  return largest;
}

std::string bulk(std::string_view value) {
  return "$" + std::to_string(value.size()) + "\r\n" + std::string(value) + "\r\n";
}

// A value no byte of which repeats at the same place of a shifted copy: a value put
// together from misplaced pieces cannot compare equal.
std::string distinct_value(std::size_t size) {
  std::string value(size, '\0');
  for (std::size_t i = 0; i < size; ++i) value[i] = static_cast<char>('a' + (i * 7 + i / 26) % 26);
  return value;
}

constexpr std::size_t kSocketRead = 64 * 1024;

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

// A large reply grows the buffer; the buffer is kept while replies that large keep coming
// (given back after each one, the next was read into memory allocated and faulted in again)
// and given back after a health tick's worth of smaller ones: by the first settle() after
// the tick, never by the tick itself, whose buffer is lent to the read in progress.
TEST(ReaderTest, AGrownBufferIsKeptWhileLargeRepliesComeAndGivenBackAfterAQuietTick) {
  Reader reader;
  const std::size_t at_rest = reader.free_space().size();
  const std::string value(3 * 1024 * 1024, 'v');
  const std::string reply = bulk(value);
  std::size_t whole = 0;
  const auto count_whole = [&](NodeSpan n) { whole += n[0].size == value.size(); };
  feed(reader, reply, kSocketRead, count_whole);
  const std::size_t grown = reader.capacity();
  EXPECT_GE(grown, reply.size());
  // A tick after it, then another reply as large: the buffer it needs is the one it has.
  reader.on_tick();
  feed(reader, reply, kSocketRead, count_whole);
  EXPECT_EQ(whole, 2u);
  EXPECT_EQ(reader.capacity(), grown);
  EXPECT_EQ(reader.growths(), 1u);
  // That tick saw a large reply: small ones after it leave the buffer as it is.
  reader.on_tick();
  feed(reader, "+OK\r\n", kSocketRead, [](NodeSpan) {});
  EXPECT_EQ(reader.capacity(), grown);
  // A tick that saw only small ones: the read in progress keeps its room ...
  const std::span<char> lent = reader.free_space();
  reader.on_tick();
  reader.on_tick();
  EXPECT_EQ(reader.capacity(), grown);
  EXPECT_EQ(reader.free_space().data(), lent.data());
  // ... and the settle() after it gives the memory back.
  feed(reader, "+OK\r\n", kSocketRead, [](NodeSpan) {});
  EXPECT_EQ(reader.capacity(), Reader::kReadChunk);
  EXPECT_EQ(reader.free_space().size(), at_rest);
}

// A reply half read when the tick comes: the buffer holding it stays, whole.
TEST(ReaderTest, ATickKeepsTheBufferOfAReplyHalfRead) {
  Reader reader;
  const std::string value = distinct_value(2 * kShrinkAbove);
  const std::string reply = bulk(value);
  feed(reader, std::string_view(reply).substr(0, reply.size() / 2), kSocketRead,
       [](NodeSpan) { ADD_FAILURE() << "half a reply is not a frame"; });
  const std::size_t grown = reader.capacity();
  ASSERT_GT(grown, kShrinkAbove);
  reader.on_tick();
  reader.on_tick();
  EXPECT_EQ(reader.capacity(), grown);
  std::size_t whole = 0;
  feed(reader, std::string_view(reply).substr(reply.size() / 2), kSocketRead,
       [&](NodeSpan n) { whole += n[0].value == value; });
  EXPECT_EQ(whole, 1u);
}

// A large GET reply: once the parser has read the bulk string's length, the buffer grows
// once, to the reply's size, and what is copied again is only what had been read before
// (at most the buffer at rest) — not the value over and over as it doubles.
TEST(ReaderTest, ALargeBulkReplyGrowsTheBufferOnceAndIsCopiedOnceMoreAtMost) {
  for (const std::size_t size : {std::size_t{1} << 20, std::size_t{5} << 20}) {
    SCOPED_TRACE(size);
    Reader reader;
    const std::string value = distinct_value(size);
    const std::string reply = bulk(value);
    std::vector<std::string> got;
    std::size_t capacity_at_frame = 0;
    const std::size_t largest = feed(reader, "+OK\r\n" + reply, kSocketRead, [&](NodeSpan n) {
      got.emplace_back(n[0].value);
      capacity_at_frame = reader.capacity();
    });
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0], "OK");
    EXPECT_TRUE(got[1] == value) << "the value differs";
    EXPECT_EQ(reader.growths(), 1u);
    EXPECT_LE(reader.bytes_moved(), Reader::kReadChunk);
    EXPECT_EQ(capacity_at_frame, reply.size());  // room for the reply, no more
    EXPECT_EQ(largest, reply.size());
  }
}

// MGET of like-sized values: the first string's length and the array's count give the
// reply's likely size, and the buffer grows once to it.
TEST(ReaderTest, AnArrayOfLikeSizedBulksGrowsTheBufferOnce) {
  constexpr std::size_t kCount = 8;
  std::vector<std::string> values;
  std::string reply = "*" + std::to_string(kCount) + "\r\n";
  for (std::size_t i = 0; i < kCount; ++i) {
    values.push_back(distinct_value(100 * 1024 + i));  // lengths of as many digits
    values.back()[0] = static_cast<char>('0' + i);
    reply += bulk(values.back());
  }
  Reader reader;
  std::vector<std::string> got;
  feed(reader, reply, kSocketRead, [&](NodeSpan n) {
    ASSERT_EQ(n.size(), kCount + 1);
    for (std::size_t i = 1; i <= kCount; ++i) got.emplace_back(n[i].value);
  });
  EXPECT_TRUE(got == values) << "the values differ";
  EXPECT_EQ(reader.growths(), 1u);
  EXPECT_LE(reader.bytes_moved(), Reader::kReadChunk);
}

// Unlike strings: the guess falls short and the buffer grows again, but by at least doubling,
// so that what is moved stays below the reply's own size.
TEST(ReaderTest, AnArrayOfUnlikeBulksMovesLessThanItsOwnSize) {
  const std::vector<std::string> values = {distinct_value(10), distinct_value(100 * 1024),
                                           distinct_value(300 * 1024), distinct_value(3 << 20),
                                           distinct_value(5)};
  std::string reply = "*" + std::to_string(values.size()) + "\r\n";
  for (const std::string& value : values) reply += bulk(value);
  Reader reader;
  std::vector<std::string> got;
  feed(reader, reply, kSocketRead, [&](NodeSpan n) {
    for (std::size_t i = 1; i < n.size(); ++i) got.emplace_back(n[i].value);
  });
  EXPECT_TRUE(got == values) << "the values differ";
  EXPECT_LE(reader.growths(), 3u);
  EXPECT_LT(reader.bytes_moved(), reply.size());
}

// A server that declares a huge string and sends little of it: the buffer grows with what
// arrives (at most about twice it), not to the declared size.
TEST(ReaderTest, AHugeDeclaredLengthDoesNotTakeItsSizeBeforeTheBytesArrive) {
  constexpr std::size_t kDeclared = std::size_t{500} << 20;  // within max_bulk_length
  Reader reader;
  const std::string header = "$" + std::to_string(kDeclared) + "\r\n";
  const std::string sent = header + distinct_value((std::size_t{3} << 20) - header.size());
  std::size_t read = 0;
  for (std::size_t at = 0; at < sent.size();) {
    std::span<char> space = reader.free_space();
    EXPECT_LE(reader.capacity(), 2 * read + Reader::kReadChunk) << "after " << read << " bytes";
    const std::size_t n = std::min({space.size(), kSocketRead, sent.size() - at});
    std::copy_n(sent.begin() + static_cast<std::ptrdiff_t>(at), n, space.begin());
    reader.commit(n);
    at += n;
    read += n;
    ASSERT_EQ(reader.next(), Reader::Frame::NeedMore);
  }
  reader.free_space();
  EXPECT_LE(reader.capacity(), 2 * read + Reader::kReadChunk);
  EXPECT_LT(reader.bytes_moved(), 2 * read);  // doubling: each byte moved about once

  // A length past max_bulk_length fails at once, and takes nothing.
  Reader refused;
  put(refused, "$" + std::to_string(std::size_t{600} << 20) + "\r\nabc");
  EXPECT_EQ(refused.next(), Reader::Frame::Malformed);
  EXPECT_NE(refused.error().message().find("exceeds max_bulk_length"), std::string::npos)
      << refused.error().message();
  refused.free_space();
  EXPECT_EQ(refused.capacity(), Reader::kReadChunk);
}

// The stream goes bad after the buffer grew for a large string: the error is the parser's,
// at the right offset, as it would be in a buffer that never grew.
TEST(ReaderTest, AStreamThatGoesBadAfterTheBufferGrewFailsClearly) {
  const std::string value = distinct_value(std::size_t{1} << 20);
  const std::string stream = "+OK\r\n$" + std::to_string(value.size()) + "\r\n" + value + "XX";
  Reader reader;
  std::size_t at = 0;
  Reader::Frame frame = Reader::Frame::NeedMore;
  while (at < stream.size() && frame == Reader::Frame::NeedMore) {
    std::span<char> space = reader.free_space();
    const std::size_t n = std::min({space.size(), kSocketRead, stream.size() - at});
    std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(at), n, space.begin());
    reader.commit(n);
    at += n;
    while ((frame = reader.next()) == Reader::Frame::Reply) reader.settle();
  }
  ASSERT_EQ(frame, Reader::Frame::Malformed);
  EXPECT_EQ(reader.growths(), 1u);
  EXPECT_EQ(reader.error().code(), errc::protocol_error);
  const std::string offset = std::to_string(stream.size() - 2);  // where the CRLF belongs
  EXPECT_EQ(reader.error().message(), "RESP protocol error: bulk string of length " +
                                          std::to_string(value.size()) +
                                          " is not followed by CRLF at byte offset " + offset);
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
