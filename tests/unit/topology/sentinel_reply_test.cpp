// The Sentinel replies and messages redmux reads, as Redis 7 Sentinels send them (RESP2 and
// RESP3), and how groups of connections are moved to follow a failover.
#include "topology/sentinel_reply.hpp"

#include <gtest/gtest.h>

#include <string>

#include "resp/parser.hpp"
#include "support/resp_text.hpp"

namespace redmux::detail {
namespace {

Endpoint at(std::string host, std::uint16_t port) {
  return Endpoint{std::move(host), port, {}};
}

/// Parses one whole reply, keeping the bytes its nodes view.
class OneReply {
 public:
  explicit OneReply(std::string bytes) : bytes_(std::move(bytes)) {
    EXPECT_EQ(parser_.parse(bytes_), resp::ParseStatus::Complete) << bytes_;
  }
  NodeSpan nodes() const { return parser_.nodes(); }

 private:
  std::string bytes_;
  resp::Parser parser_;
};

using test::bulk;

/// A SENTINEL REPLICAS entry: a RESP3 map or a RESP2 flat array of these fields.
std::string replica_entry(bool resp3, std::string_view ip, std::string_view port,
                          std::string_view flags) {
  const std::string fields = bulk("name") + bulk(std::string(ip) + ":" + std::string(port)) +
                             bulk("ip") + bulk(ip) + bulk("port") + bulk(port) + bulk("flags") +
                             bulk(flags) + bulk("master-link-status") + bulk("ok");
  return (resp3 ? "%5\r\n" : "*10\r\n") + fields;
}

TEST(SentinelReplyTest, MasterAddressIsIpAndPort) {
  const std::string bytes = "*2\r\n" + bulk("127.0.0.1") + bulk("7420");
  OneReply reply(bytes);
  Result<Endpoint> primary = parse_master_address(reply.nodes(), "mymaster");
  ASSERT_TRUE(primary) << primary.error().message();
  EXPECT_EQ(*primary, at("127.0.0.1", 7420));
}

TEST(SentinelReplyTest, UnknownServiceSaysSo) {
  for (const char* bytes : {"_\r\n", "*-1\r\n"}) {  // RESP3 null, RESP2 null array
    OneReply reply(bytes);
    Result<Endpoint> primary = parse_master_address(reply.nodes(), "nosuch");
    ASSERT_FALSE(primary);
    EXPECT_NE(primary.error().message().find("does not know a service named \"nosuch\""),
              std::string::npos)
        << primary.error().message();
  }
}

TEST(SentinelReplyTest, RefusalsAndOddShapesAreErrorsNotCrashes) {
  {
    OneReply reply("-NOPERM this user has no permissions to run the 'sentinel' command\r\n");
    Result<Endpoint> primary = parse_master_address(reply.nodes(), "m");
    ASSERT_FALSE(primary);
    EXPECT_NE(primary.error().message().find("NOPERM"), std::string::npos);
  }
  for (const std::string& bytes :
       {std::string(":1\r\n"), "*1\r\n" + bulk("127.0.0.1"), "*2\r\n" + bulk("h") + bulk("0"),
        "*2\r\n" + bulk("h") + bulk("70000"), "*2\r\n" + bulk("") + bulk("1"),
        "*2\r\n" + bulk("h") + bulk("12x"), "*2\r\n*0\r\n" + bulk("1")}) {
    OneReply reply(bytes);
    EXPECT_FALSE(parse_master_address(reply.nodes(), "m")) << bytes;
  }
  OneReply not_array(":3\r\n");
  EXPECT_FALSE(parse_replicas(not_array.nodes(), "m"));
  OneReply refused("-ERR No such master with that name\r\n");
  Result<std::vector<Endpoint>> replicas = parse_replicas(refused.nodes(), "m");
  ASSERT_FALSE(replicas);
  EXPECT_NE(replicas.error().message().find("No such master"), std::string::npos);
}

TEST(SentinelReplyTest, ReplicasSkipThoseFlaggedDownInBothProtocols) {
  for (bool resp3 : {true, false}) {
    const std::string bytes = "*4\r\n" + replica_entry(resp3, "10.0.0.2", "6380", "slave") +
                              replica_entry(resp3, "10.0.0.3", "6381", "s_down,slave") +
                              replica_entry(resp3, "10.0.0.4", "6382", "slave,disconnected") +
                              replica_entry(resp3, "::1", "6383", "slave,o_down");
    OneReply reply(bytes);
    Result<std::vector<Endpoint>> replicas = parse_replicas(reply.nodes(), "m");
    ASSERT_TRUE(replicas) << replicas.error().message();
    ASSERT_EQ(replicas->size(), 1u) << resp3;
    EXPECT_EQ(replicas->front(), at("10.0.0.2", 6380));
  }
  OneReply none("*0\r\n");
  Result<std::vector<Endpoint>> empty = parse_replicas(none.nodes(), "m");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(SentinelReplyTest, ReplicaEntriesWithoutAnAddressAreLeftOut) {
  const std::string bytes = "*2\r\n%1\r\n" + bulk("flags") + bulk("slave") +
                            replica_entry(true, "10.0.0.9", "7000", "slave");
  OneReply reply(bytes);
  Result<std::vector<Endpoint>> replicas = parse_replicas(reply.nodes(), "m");
  ASSERT_TRUE(replicas);
  ASSERT_EQ(replicas->size(), 1u);
  EXPECT_EQ(replicas->front(), at("10.0.0.9", 7000));
}

TEST(SentinelReplyTest, FailoverMessagesParse) {
  std::optional<SentinelEvent> selected = parse_sentinel_event(
      "+selected-slave", "slave 127.0.0.1:7421 127.0.0.1 7421 @ mymaster 127.0.0.1 7420");
  ASSERT_TRUE(selected);
  EXPECT_EQ(selected->kind, SentinelEvent::Kind::SelectedReplica);
  EXPECT_EQ(selected->service, "mymaster");
  EXPECT_EQ(selected->from, at("127.0.0.1", 7420));
  EXPECT_EQ(selected->to, at("127.0.0.1", 7421));

  std::optional<SentinelEvent> switched =
      parse_sentinel_event("+switch-master", "mymaster 127.0.0.1 7420 127.0.0.1 7421");
  ASSERT_TRUE(switched);
  EXPECT_EQ(switched->kind, SentinelEvent::Kind::SwitchMaster);
  EXPECT_EQ(switched->from, at("127.0.0.1", 7420));
  EXPECT_EQ(switched->to, at("127.0.0.1", 7421));

  std::optional<SentinelEvent> aborted =
      parse_sentinel_event("-failover-abort-slave-timeout", "master mymaster 127.0.0.1 7420");
  ASSERT_TRUE(aborted);
  EXPECT_EQ(aborted->kind, SentinelEvent::Kind::FailoverAborted);
  EXPECT_EQ(aborted->from, at("127.0.0.1", 7420));

  // An old primary back after the failover, turned into a replica of the new one.
  std::optional<SentinelEvent> converted = parse_sentinel_event(
      "+convert-to-slave", "slave 127.0.0.1:7420 127.0.0.1 7420 @ mymaster 127.0.0.1 7421");
  ASSERT_TRUE(converted);
  EXPECT_EQ(converted->kind, SentinelEvent::Kind::ConvertedToReplica);
  EXPECT_EQ(converted->service, "mymaster");
  EXPECT_EQ(converted->from, at("127.0.0.1", 7420));
  EXPECT_EQ(converted->to, at("127.0.0.1", 7421));
  EXPECT_FALSE(parse_sentinel_event("+convert-to-slave", "master mymaster 127.0.0.1 7420"));

  EXPECT_FALSE(parse_sentinel_event("+switch-master", "mymaster 127.0.0.1 7420 127.0.0.1"));
  EXPECT_FALSE(parse_sentinel_event("+switch-master", "m h x h 1"));
  EXPECT_FALSE(parse_sentinel_event("+selected-slave", "master mymaster 127.0.0.1 7420"));
  EXPECT_FALSE(parse_sentinel_event("+sdown", "master mymaster 127.0.0.1 7420"));
  EXPECT_FALSE(parse_sentinel_event("+switch-master", ""));
}

TEST(SentinelReplyTest, APromotedReplicaSwapsWithTheOldPrimary) {
  const std::vector<Endpoint> targets = {at("a", 1), at("b", 2), at("c", 3)};
  const std::vector<Retarget> moves = plan_retargets(targets, at("b", 2), nullptr);
  const std::vector<Retarget> expected = {{0, at("b", 2)}, {1, at("a", 1)}};
  EXPECT_EQ(moves, expected);
  EXPECT_TRUE(plan_retargets(targets, at("a", 1), nullptr).empty());  // already in place
}

TEST(SentinelReplyTest, AnUnknownPrimaryTakesGroupZeroAlone) {
  const std::vector<Endpoint> targets = {at("a", 1), at("b", 2)};
  const std::vector<Retarget> expected = {{0, at("z", 9)}};
  EXPECT_EQ(plan_retargets(targets, at("z", 9), nullptr), expected);
}

TEST(SentinelReplyTest, StaleReplicaGroupsMoveToReplicasNoGroupHas) {
  const std::vector<Endpoint> targets = {at("a", 1), at("b", 2), at("c", 3)};
  // c is gone, d is new; b stays where it is.
  const std::vector<Endpoint> replicas = {at("b", 2), at("d", 4)};
  const std::vector<Retarget> expected = {{2, at("d", 4)}};
  EXPECT_EQ(plan_retargets(targets, at("a", 1), &replicas), expected);
  // More replicas than groups: the groups are fixed, so the extra ones are not used.
  const std::vector<Endpoint> many = {at("b", 2), at("c", 3), at("d", 4)};
  EXPECT_TRUE(plan_retargets(targets, at("a", 1), &many).empty());
  // A stale group with nothing to move to stays (its server may come back).
  const std::vector<Endpoint> fewer = {at("b", 2)};
  EXPECT_TRUE(plan_retargets(targets, at("a", 1), &fewer).empty());
}

TEST(SentinelReplyTest, FailoverWithReplicasSwapsThenFillsGaps) {
  const std::vector<Endpoint> targets = {at("a", 1), at("b", 2), at("c", 3)};
  // b promoted; a is down (not listed); c and e are replicas now.
  const std::vector<Endpoint> replicas = {at("c", 3), at("e", 5)};
  const std::vector<Retarget> expected = {{0, at("b", 2)}, {1, at("e", 5)}};
  EXPECT_EQ(plan_retargets(targets, at("b", 2), &replicas), expected);
  EXPECT_TRUE(plan_retargets({}, at("b", 2), &replicas).empty());
}

}  // namespace
}  // namespace redmux::detail

namespace redmux::detail {
namespace {

// Valkey 8 renamed the Sentinel subcommands that said "master" (GET-PRIMARY-ADDR-BY-NAME,
// PRIMARY, PRIMARIES …; valkey.io's SENTINEL docs), keeping the old names as aliases.
TEST(SentinelReplyTest, ValkeyEightSentinelsAreAskedByTheNewerName) {
  ServerIdentity sentinel;
  sentinel.product = "valkey";
  sentinel.version = "8.0.1";
  EXPECT_EQ(primary_address_subcommand(sentinel), "GET-PRIMARY-ADDR-BY-NAME");
  sentinel.version = "7.2.5";  // Valkey 7.2: Redis's names only
  EXPECT_EQ(primary_address_subcommand(sentinel), "GET-MASTER-ADDR-BY-NAME");
  sentinel.product = "redis";
  sentinel.version = "8.0.0";
  EXPECT_EQ(primary_address_subcommand(sentinel), "GET-MASTER-ADDR-BY-NAME");
  EXPECT_EQ(primary_address_subcommand(ServerIdentity{}), "GET-MASTER-ADDR-BY-NAME");
}

}  // namespace
}  // namespace redmux::detail
