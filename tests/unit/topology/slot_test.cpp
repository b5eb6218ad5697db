#include "topology/slot.hpp"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace redmux::detail {
namespace {

TEST(SlotTest, Crc16MatchesTheXmodemCheckValue) {
  // The standard check value of CRC-16/XMODEM over "123456789".
  EXPECT_EQ(crc16("123456789"), 0x31C3);
}

// The CRC by its definition: polynomial division, one bit at a time.
std::uint16_t crc16_by_bits(std::string_view bytes) {
  std::uint16_t crc = 0;
  for (unsigned char byte : bytes) {
    crc = static_cast<std::uint16_t>(crc ^ (byte << 8));
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<std::uint16_t>(crc << 1);
    }
  }
  return crc;
}

TEST(SlotTest, Crc16MatchesTheDefinitionAtEveryLengthAndAlignment) {
  // Every length around the eight-byte steps, from every start within a step, and every
  // byte value.
  std::string text;
  for (int i = 0; i < 96; ++i) text.push_back(static_cast<char>(i * 37 + 11));
  for (std::size_t start = 0; start < 8; ++start) {
    for (std::size_t length = 0; start + length <= text.size(); ++length) {
      const std::string_view part = std::string_view(text).substr(start, length);
      ASSERT_EQ(crc16(part), crc16_by_bits(part)) << "start " << start << " length " << length;
    }
  }
  std::string every(256, '\0');
  for (int i = 0; i < 256; ++i) every[static_cast<std::size_t>(i)] = static_cast<char>(i);
  EXPECT_EQ(crc16(every), crc16_by_bits(every));
}

TEST(SlotTest, SlotsMatchRedisClusterKeyslot) {
  // Values as `CLUSTER KEYSLOT` reports them on Redis 7.
  EXPECT_EQ(slot_of("foo"), 12182);
  EXPECT_EQ(slot_of("bar"), 5061);
  EXPECT_EQ(slot_of(""), 0);
}

TEST(SlotTest, HashTagsPickTheBracedPart) {
  EXPECT_EQ(hash_tag("{user1000}.following"), "user1000");
  EXPECT_EQ(slot_of("{user1000}.following"), slot_of("{user1000}.followers"));
  EXPECT_EQ(hash_tag("foo{}{bar}"), "foo{}{bar}");  // empty first tag: whole key
  EXPECT_EQ(hash_tag("foo{{bar}}zap"), "{bar");
  EXPECT_EQ(hash_tag("foo{bar"), "foo{bar");
}

}  // namespace
}  // namespace redmux::detail
