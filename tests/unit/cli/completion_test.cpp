// Tab completion's source: command names from the server's COMMAND reply, matched by prefix
// without case, one word at a time.
#include "completion.hpp"

#include <gtest/gtest.h>

namespace redmux::cli {
namespace {

using Names = std::vector<std::string>;

Reply text(std::string s) {
  return Reply(ReplyType::BulkString, std::move(s));
}
Reply array(std::vector<Reply> elements) {
  return Reply(ReplyType::Array, "", std::move(elements));
}
// One COMMAND entry as Redis 7 sends it: [name, arity, flags, first, last, step, acl
// categories, tips, key specs, subcommands].
Reply entry(std::string name, std::vector<Reply> subcommands = {}) {
  return array({text(std::move(name)), Reply(ReplyType::Integer, "-2"), array({}),
                Reply(ReplyType::Integer, "0"), Reply(ReplyType::Integer, "0"),
                Reply(ReplyType::Integer, "0"), array({}), array({}), array({}),
                array(std::move(subcommands))});
}

TEST(CommandNamesTest, ReadsNamesAndSubcommandsFromTheCommandReply) {
  const Reply reply =
      array({entry("get"), entry("client", {entry("client|list"), entry("client|kill")}),
             entry("getex"), entry("get")});
  EXPECT_EQ(CommandNames::from_command_reply(reply).names(),
            (Names{"CLIENT", "CLIENT KILL", "CLIENT LIST", "GET", "GETEX"}));
  // Redis 6 has no subcommands field; an entry of another shape is skipped.
  const Reply older = array({array({text("ping"), Reply(ReplyType::Integer, "-1")}),
                             Reply(ReplyType::Integer, "7"), array({})});
  EXPECT_EQ(CommandNames::from_command_reply(older).names(), (Names{"PING"}));
  EXPECT_TRUE(CommandNames::from_command_reply(Reply()).names().empty());
}

TEST(CommandNamesTest, CompletesTheWholeLineWithoutCase) {
  const CommandNames names({"get", "getex", "client", "client|list", "client|kill", "set"});
  EXPECT_EQ(names.complete("ge"), (Names{"GET", "GETEX"}));
  EXPECT_EQ(names.complete("  GeT"), (Names{"GET", "GETEX"}));
  EXPECT_EQ(names.complete("client  l"), (Names{"CLIENT LIST"}));
  EXPECT_EQ(names.complete("x"), Names{});
  EXPECT_EQ(names.complete(""), Names{});
  EXPECT_EQ(names.complete("get k"), Names{});  // past the command's words: nothing
}

TEST(CommandNamesTest, OffersOneWordAtATime) {
  const CommandNames names({"get", "getex", "client", "client|list", "client|kill", "cluster"});
  EXPECT_EQ(names.complete_word("cl"), (Names{"CLIENT", "CLUSTER"}));
  EXPECT_EQ(names.complete_word("client"), (Names{"CLIENT"}));
  EXPECT_EQ(names.complete_word("client "), (Names{"KILL", "LIST"}));
  EXPECT_EQ(names.complete_word("client ki"), (Names{"KILL"}));
  EXPECT_EQ(names.complete_word("get "), Names{});
}

}  // namespace
}  // namespace redmux::cli
