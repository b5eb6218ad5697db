// type_name(): the name of every ReplyType, at compile time too, and of a value past them.
#include "redmux/reply_node.hpp"

#include <gtest/gtest.h>

namespace redmux {
namespace {

static_assert(type_name(ReplyType::VerbatimString) == "verbatim string");

TEST(TypeNameTest, EveryTypeHasItsName) {
  EXPECT_EQ(type_name(ReplyType::SimpleString), "simple string");
  EXPECT_EQ(type_name(ReplyType::SimpleError), "simple error");
  EXPECT_EQ(type_name(ReplyType::Integer), "integer");
  EXPECT_EQ(type_name(ReplyType::BulkString), "bulk string");
  EXPECT_EQ(type_name(ReplyType::Array), "array");
  EXPECT_EQ(type_name(ReplyType::Null), "null");
  EXPECT_EQ(type_name(ReplyType::Boolean), "boolean");
  EXPECT_EQ(type_name(ReplyType::Double), "double");
  EXPECT_EQ(type_name(ReplyType::BigNumber), "big number");
  EXPECT_EQ(type_name(ReplyType::BulkError), "bulk error");
  EXPECT_EQ(type_name(ReplyType::VerbatimString), "verbatim string");
  EXPECT_EQ(type_name(ReplyType::Map), "map");
  EXPECT_EQ(type_name(ReplyType::Set), "set");
  EXPECT_EQ(type_name(ReplyType::Attribute), "attribute");
  EXPECT_EQ(type_name(ReplyType::Push), "push");
  EXPECT_EQ(type_name(static_cast<ReplyType>(15)), "unknown type");
  EXPECT_EQ(type_name(static_cast<ReplyType>(255)), "unknown type");
}

}  // namespace
}  // namespace redmux
