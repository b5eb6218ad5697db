// The rules about commands beyond their flags: the blocking time each command's timeout
// argument gives, and how each command runs in a Redis Cluster.
#include "commands/command_rules.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace redmux::detail {
namespace {

using std::chrono::milliseconds;

std::optional<milliseconds> time_of(std::vector<Arg> args) {
  return blocking_time(command_info(args), args);
}

TEST(BlockingTime, SecondsForTheListAndSortedSetFamily) {
  EXPECT_EQ(time_of({"BLPOP", "a", "b", "2"}), milliseconds(2000));
  EXPECT_EQ(time_of({"brpop", "a", "0.25"}), milliseconds(250));
  EXPECT_EQ(time_of({"BZPOPMIN", "z", "1.0001"}), milliseconds(1001));  // rounded up
  EXPECT_EQ(time_of({"BLMOVE", "s", "d", "LEFT", "RIGHT", "3"}), milliseconds(3000));
  EXPECT_EQ(time_of({"BRPOPLPUSH", "s", "d", "4"}), milliseconds(4000));
  EXPECT_EQ(time_of({"BLMPOP", "5", "1", "k", "LEFT"}), milliseconds(5000));
  EXPECT_EQ(time_of({"BZMPOP", "0.5", "1", "z", "MIN"}), milliseconds(500));
}

TEST(BlockingTime, MillisecondsForXreadAndWait) {
  EXPECT_EQ(time_of({"XREAD", "COUNT", "2", "BLOCK", "1500", "STREAMS", "s", "$"}),
            milliseconds(1500));
  EXPECT_EQ(time_of({"XREADGROUP", "GROUP", "g", "c", "block", "20", "STREAMS", "s", ">"}),
            milliseconds(20));
  // The option's value, not a group or consumer called BLOCK followed by another word.
  EXPECT_EQ(
      time_of({"XREADGROUP", "GROUP", "BLOCK", "BLOCK", "BLOCK", "0", "STREAMS", "BLOCK", ">"}),
      std::nullopt);
  EXPECT_EQ(time_of({"XREADGROUP", "GROUP", "g", "BLOCK", "COUNT", "5", "BLOCK", "250", "NOACK",
                     "STREAMS", "s", ">"}),
            milliseconds(250));
  EXPECT_EQ(time_of({"WAIT", "1", "300"}), milliseconds(300));
  EXPECT_EQ(time_of({"WAITAOF", "1", "0", "700"}), milliseconds(700));
}

TEST(BlockingTime, ZeroIsForever) {
  EXPECT_EQ(time_of({"BLPOP", "a", "0"}), std::nullopt);
  EXPECT_EQ(time_of({"XREAD", "BLOCK", "0", "STREAMS", "s", "$"}), std::nullopt);
  EXPECT_EQ(time_of({"WAIT", "1", "0"}), std::nullopt);
}

TEST(BlockingTime, MalformedOrMissingIsNoBlockingTime) {
  // The server refuses these at once; redmux then adds only the call's timeout.
  EXPECT_EQ(time_of({"BLPOP", "a", "soon"}), milliseconds(0));
  EXPECT_EQ(time_of({"BLPOP", "a", "-1"}), milliseconds(0));
  EXPECT_EQ(time_of({"BLPOP", "a"}), milliseconds(0));
  EXPECT_EQ(time_of({"WAIT", "1"}), milliseconds(0));
  EXPECT_EQ(time_of({"XREAD", "BLOCK"}), milliseconds(0));
}

ClusterRule rule_of(std::string_view name) {
  return command_info(std::vector<Arg>{Arg(name)}).cluster;
}

TEST(ClusterRuleTest, MultiKeyCommandsThatCanBeSplitSayHowTheirRepliesCombine) {
  EXPECT_EQ(rule_of("MGET").plan, ClusterRule::Plan::Split);
  EXPECT_EQ(rule_of("MGET").reduce, ClusterRule::Reduce::Values);
  EXPECT_EQ(rule_of("MSET").reduce, ClusterRule::Reduce::AllOk);
  EXPECT_EQ(rule_of("MSET").key_step, 2);
  for (const char* name : {"DEL", "unlink", "EXISTS", "TOUCH"}) {
    EXPECT_EQ(rule_of(name).plan, ClusterRule::Plan::Split) << name;
    EXPECT_EQ(rule_of(name).reduce, ClusterRule::Reduce::Sum) << name;
    EXPECT_EQ(rule_of(name).key_step, 1) << name;
  }
}

TEST(ClusterRuleTest, WholeClusterCommandsGoToEveryPrimary) {
  EXPECT_EQ(rule_of("DBSIZE").plan, ClusterRule::Plan::EveryPrimary);
  EXPECT_EQ(rule_of("DBSIZE").reduce, ClusterRule::Reduce::Sum);
  EXPECT_EQ(rule_of("FLUSHALL").reduce, ClusterRule::Reduce::AllOk);
  const ClusterRule load = command_info(std::vector<Arg>{"FUNCTION", "LOAD", "x"}).cluster;
  EXPECT_EQ(load.plan, ClusterRule::Plan::EveryPrimary);
  EXPECT_EQ(load.reduce, ClusterRule::Reduce::FirstReply);
  const ClusterRule flush = command_info(std::vector<Arg>{"SCRIPT", "FLUSH"}).cluster;
  EXPECT_EQ(flush.plan, ClusterRule::Plan::EveryPrimary);
  EXPECT_EQ(rule_of("SCAN").plan, ClusterRule::Plan::ScanEveryPrimary);
}

TEST(ClusterRuleTest, EverythingElseRunsOnOneNode) {
  for (const char* name : {"GET", "SET", "SUNIONSTORE", "EVAL", "NOSUCHCOMMAND"})
    EXPECT_EQ(rule_of(name).plan, ClusterRule::Plan::OneNode) << name;
  const ClusterRule list = command_info(std::vector<Arg>{"FUNCTION", "LIST"}).cluster;
  EXPECT_EQ(list.plan, ClusterRule::Plan::OneNode);
}

}  // namespace
}  // namespace redmux::detail
