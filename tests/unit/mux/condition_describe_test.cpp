// Condition::describe(): what each kind of transaction condition checks, without its values.
#include "redmux/transaction.hpp"

#include <gtest/gtest.h>

namespace redmux {
namespace {

TEST(ConditionDescribeTest, EveryKindSaysWhatItChecks) {
  EXPECT_EQ(Condition::key_exists("k").describe(), "key exists (EXISTS)");
  EXPECT_EQ(Condition::key_not_exists("k").describe(), "key does not exist (EXISTS)");
  EXPECT_EQ(Condition::string_equal("k", "v").describe(), "string equals (GET)");
  EXPECT_EQ(Condition::hash_equal("k", "f", "v").describe(), "hash field equals (HGET)");
  EXPECT_EQ(Condition::hash_exists("k", "f").describe(), "hash field exists (HEXISTS)");
  EXPECT_EQ(Condition::hash_not_exists("k", "f").describe(), "hash field does not exist (HEXISTS)");
  EXPECT_EQ(Condition::set_contains("k", "m").describe(), "set contains member (SISMEMBER)");
  EXPECT_EQ(Condition::set_not_contains("k", "m").describe(),
            "set does not contain member (SISMEMBER)");
  EXPECT_EQ(Condition::sorted_set_score_equal("k", "m", 1.5).describe(),
            "sorted-set score equals (ZSCORE)");
}

TEST(ConditionDescribeTest, ListLengthSaysItsComparison) {
  EXPECT_EQ(Condition::list_length("k", Comparison::Equal, 3).describe(),
            "list length equals (LLEN)");
  EXPECT_EQ(Condition::list_length("k", Comparison::Less, 3).describe(),
            "list length is less (LLEN)");
  EXPECT_EQ(Condition::list_length("k", Comparison::Greater, 3).describe(),
            "list length is greater (LLEN)");
}

}  // namespace
}  // namespace redmux
