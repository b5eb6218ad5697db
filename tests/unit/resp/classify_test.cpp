#include "resp/classify.hpp"

#include <gtest/gtest.h>

#include <string>

#include "resp/parser.hpp"
#include "support/resp_text.hpp"

namespace redmux::resp {
namespace {

/// One parsed frame; its nodes view `bytes`.
struct Frame {
  explicit Frame(std::string text) : bytes(std::move(text)) {
    EXPECT_EQ(parser.parse(bytes), ParseStatus::Complete) << bytes;
  }
  NodeSpan nodes() const { return parser.nodes(); }
  std::string bytes;
  Parser parser;
};

using test::bulk;

TEST(ClassifyTest, EveryPubSubKindIsNamedByItsLeadingBulkString) {
  const std::pair<std::string_view, PushKind> kinds[] = {
      {"message", PushKind::Message},
      {"pmessage", PushKind::PatternMessage},
      {"smessage", PushKind::ShardMessage},
      {"subscribe", PushKind::Subscribe},
      {"psubscribe", PushKind::PatternSubscribe},
      {"ssubscribe", PushKind::ShardSubscribe},
      {"unsubscribe", PushKind::Unsubscribe},
      {"punsubscribe", PushKind::PatternUnsubscribe},
      {"sunsubscribe", PushKind::ShardUnsubscribe},
  };
  for (const auto& [name, kind] : kinds) {
    EXPECT_EQ(push_kind(Frame(">2\r\n" + bulk(name) + bulk("x")).nodes()), kind) << name;
    EXPECT_EQ(push_kind(Frame("*2\r\n" + bulk(name) + bulk("x")).nodes()), kind) << name;
    EXPECT_EQ(is_confirmation(kind), name.ends_with("subscribe")) << name;
  }
  EXPECT_EQ(push_kind(Frame(">2\r\n" + bulk("invalidate") + "*0\r\n").nodes()), PushKind::Other);
  EXPECT_EQ(push_kind(Frame(">2\r\n+message\r\n" + bulk("x")).nodes()), PushKind::Other);
  EXPECT_EQ(push_kind(Frame(bulk("message")).nodes()), PushKind::Other);
  EXPECT_EQ(push_kind(Frame("*0\r\n").nodes()), PushKind::Other);
  EXPECT_EQ(push_kind(Frame(">2\r\n" + bulk("MESSAGE") + bulk("x")).nodes()), PushKind::Other);
}

TEST(ClassifyTest, AResp2PubSubFrameIsAnArrayOfThreeOrMoreLedByAKind) {
  EXPECT_TRUE(is_resp2_pubsub(Frame("*3\r\n" + bulk("message") + bulk("c") + bulk("p")).nodes()));
  EXPECT_TRUE(
      is_resp2_pubsub(Frame("*3\r\n" + bulk("unsubscribe") + bulk("c") + ":0\r\n").nodes()));
  EXPECT_FALSE(is_resp2_pubsub(Frame("*2\r\n" + bulk("message") + bulk("c")).nodes()));
  EXPECT_FALSE(is_resp2_pubsub(Frame("*3\r\n" + bulk("other") + bulk("c") + bulk("p")).nodes()));
  EXPECT_FALSE(is_resp2_pubsub(Frame(">3\r\n" + bulk("message") + bulk("c") + bulk("p")).nodes()));
}

TEST(ClassifyTest, ATrackingInvalidationIsAPushOfInvalidateAndKeysOrNull) {
  EXPECT_TRUE(is_invalidation(Frame(">2\r\n" + bulk("invalidate") + "*1\r\n" + bulk("k")).nodes()));
  EXPECT_TRUE(is_invalidation(Frame(">2\r\n" + bulk("invalidate") + "_\r\n").nodes()));
  // Not a push, another kind, or not keys: not an invalidation.
  EXPECT_FALSE(
      is_invalidation(Frame("*2\r\n" + bulk("invalidate") + "*1\r\n" + bulk("k")).nodes()));
  EXPECT_FALSE(is_invalidation(Frame(">3\r\n" + bulk("message") + bulk("c") + bulk("p")).nodes()));
  EXPECT_FALSE(is_invalidation(Frame(">2\r\n" + bulk("invalidate") + bulk("k")).nodes()));
  EXPECT_FALSE(is_invalidation(Frame(">2\r\n+invalidate\r\n_\r\n").nodes()));
}

TEST(ClassifyTest, ReadOnlyAndMasterDownErrorsSayTheRoleMayHaveChanged) {
  EXPECT_TRUE(says_role_changed(
      Frame("-READONLY You can't write against a read only replica.\r\n").nodes()));
  EXPECT_TRUE(says_role_changed(Frame("-MASTERDOWN Link with MASTER is down\r\n").nodes()));
  EXPECT_TRUE(says_role_changed(Frame("!10\r\nREADONLY x\r\n").nodes()));
  EXPECT_FALSE(says_role_changed(Frame("-ERR READONLY\r\n").nodes()));
  EXPECT_FALSE(says_role_changed(Frame("+READONLY\r\n").nodes()));
  EXPECT_FALSE(says_role_changed(Frame("-LOADING Redis is loading\r\n").nodes()));
  // Valkey 8 to a client with CLIENT CAPA redirect: a write (or a read without READONLY)
  // reached a replica, which names its primary.
  EXPECT_TRUE(says_role_changed(Frame("-REDIRECT 10.0.0.5:6379\r\n").nodes()));
  EXPECT_FALSE(says_role_changed(Frame("-ERR REDIRECT\r\n").nodes()));
}

}  // namespace
}  // namespace redmux::resp
