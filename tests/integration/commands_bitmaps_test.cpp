// Bitmap commands against a real redis-server, under RESP3 and RESP2.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "protocol_fixture.hpp"
#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"

namespace redmux {
namespace {

using test::RedisServer;

class BitmapsTest : public test::ProtocolTest<BitmapsTest> {
 protected:
  BitmapsTest() : ProtocolTest("bitmaps-test") {}
};

using Values = std::vector<std::optional<long long>>;

TEST_P(BitmapsTest, SetGetCountPosition) {
  EXPECT_FALSE(db_.setbit("b", 7, true).get());  // previous value
  EXPECT_TRUE(db_.setbit("b", 7, true).get());
  EXPECT_FALSE(db_.setbit("b", 9, true).get());
  EXPECT_EQ(db_.get("b").get(), std::optional<std::string>(std::string("\x01\x40", 2)));
  EXPECT_TRUE(db_.getbit("b", 7).get());
  EXPECT_FALSE(db_.getbit("b", 8).get());
  EXPECT_FALSE(db_.getbit("b", 100000).get());
  EXPECT_FALSE(db_.getbit("missing", 3).get());

  db_.set("s", "foobar").get();
  EXPECT_EQ(db_.bitcount("s").get(), 26);
  EXPECT_EQ(db_.bitcount("s", 0, 0).get(), 4);
  EXPECT_EQ(db_.bitcount("s", 1, 1).get(), 6);
  EXPECT_EQ(db_.bitcount("s", 5, 30, BitUnit::Bit).get(), 17);
  EXPECT_EQ(db_.bitcount("missing").get(), 0);

  db_.set("p", std::string("\xff\xf0\x00", 3)).get();
  EXPECT_EQ(db_.bitpos("p", false).get(), 12);
  EXPECT_EQ(db_.bitpos("p", true).get(), 0);
  EXPECT_EQ(db_.bitpos("p", true, 2).get(), -1);
  EXPECT_EQ(db_.bitpos("p", false, 0, 0).get(), -1);  // end given: no implicit clear bit
  EXPECT_EQ(db_.bitpos("p", true, 7, 15, BitUnit::Bit).get(), 7);
  EXPECT_EQ(db_.bitpos("missing", true).get(), -1);
}

TEST_P(BitmapsTest, BitOperations) {
  db_.set("a", "\x0f").get();
  db_.set("b", "\x3c").get();
  EXPECT_EQ(db_.bitop(BitOperation::And, "and", {"a", "b"}).get(), 1);
  EXPECT_EQ(db_.get("and").get(), std::optional<std::string>("\x0c"));
  EXPECT_EQ(db_.bitop(BitOperation::Or, "or", {"a", "b"}).get(), 1);
  EXPECT_EQ(db_.get("or").get(), std::optional<std::string>("\x3f"));
  std::vector<std::string> keys{"a", "b"};
  EXPECT_EQ(db_.bitop(BitOperation::Xor, "xor", keys).get(), 1);
  EXPECT_EQ(db_.get("xor").get(), std::optional<std::string>("\x33"));
  EXPECT_EQ(db_.bitop(BitOperation::Not, "not", {"a"}).get(), 1);
  EXPECT_EQ(db_.get("not").get(), std::optional<std::string>("\xf0"));
  EXPECT_THROW(db_.bitop(BitOperation::Not, "not", {"a", "b"}).get(), ServerError);
}

TEST_P(BitmapsTest, BitFieldWithOverflow) {
  const auto u8 = BitFieldType::unsigned_bits(8);
  const auto i8 = BitFieldType::signed_bits(8);
  BitFieldOps ops;
  ops.set(u8, 0, 200).get(u8, 0).incrby(u8, 0, 100);  // default WRAP: (200 + 100) % 256
  EXPECT_EQ(db_.bitfield("f", ops).get(), (Values{0, 200, 44}));

  BitFieldOps sat;
  sat.overflow(BitOverflow::Sat).incrby(u8, 0, 250).incrby(i8, 8, -200);
  EXPECT_EQ(db_.bitfield("f", sat).get(), (Values{255, -128}));

  BitFieldOps fail;
  fail.overflow(BitOverflow::Fail).incrby(u8, 0, 1).incrby(u8, 0, -5);
  EXPECT_EQ(db_.bitfield("f", fail).get(), (Values{std::nullopt, 250}));

  // "#n" offsets: the n-th field of the type's width.
  BitFieldOps array;
  array.set(BitFieldType::unsigned_bits(4), BitFieldOffset::fields(3), 9)
      .get(BitFieldType::unsigned_bits(4), 12);
  EXPECT_EQ(db_.bitfield("arr", array).get(), (Values{0, 9}));

  BitFieldOps reads;
  reads.get(u8, 0).get(i8, 8);
  EXPECT_EQ(db_.bitfield_ro("f", reads).get(), (std::vector<long long>{250, -128}));
  EXPECT_EQ(db_.bitfield_ro("missing", reads).get(), (std::vector<long long>{0, 0}));
}

TEST_P(BitmapsTest, Errors) {
  db_.rpush("list", {"x"}).get();
  EXPECT_THROW(db_.setbit("list", 1, true).get(), ServerError);  // WRONGTYPE
  EXPECT_THROW(db_.bitcount("list").get(), ServerError);
  EXPECT_THROW(db_.setbit("b", -1, true).get(), ServerError);  // offset out of range
  BitFieldOps bad_type;
  bad_type.get(BitFieldType::unsigned_bits(64), 0);  // u64 is not supported
  EXPECT_THROW(db_.bitfield("b", bad_type).get(), ServerError);
  BitFieldOps writes;
  writes.set(BitFieldType::unsigned_bits(8), 0, 1);
  try {
    db_.bitfield_ro("b", writes).get();
    FAIL() << "BITFIELD_RO with SET must fail";
  } catch (const ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("BITFIELD_RO"), std::string::npos) << e.what();
  }
}

TEST_P(BitmapsTest, BatchAndDeferred) {
  auto batch = db_.batch();
  auto set = batch.setbit("k", 3, true);
  auto count = batch.bitcount("k");
  batch.execute();
  EXPECT_FALSE(set.get());
  EXPECT_EQ(count.get(), 1);
  Future<bool> bit = db_.getbit("k", 3);
  EXPECT_TRUE(bit.get());
}

INSTANTIATE_TEST_SUITE_P(Protocols, BitmapsTest, ::testing::Values("resp3", "resp2"));

}  // namespace
}  // namespace redmux
