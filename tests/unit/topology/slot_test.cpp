#include "topology/slot.hpp"

#include <gtest/gtest.h>

namespace redmux::detail {
namespace {

TEST(SlotTest, Crc16MatchesTheXmodemCheckValue) {
  // The standard check value of CRC-16/XMODEM over "123456789".
  EXPECT_EQ(crc16("123456789"), 0x31C3);
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
