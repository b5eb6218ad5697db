#include "topology/cluster_map.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "resp/parser.hpp"
#include "support/resp_text.hpp"

namespace redmux::detail {
namespace {

/// Parses one complete RESP reply; the parser owns the nodes (keep it alive while used).
NodeSpan parse(resp::Parser& parser, const std::string& bytes) {
  EXPECT_EQ(parser.parse(bytes), resp::ParseStatus::Complete) << bytes;
  return parser.nodes();
}

using test::bulk;

/// One CLUSTER SHARDS node as a RESP3 map (or a RESP2 flat array).
std::string shard_node(bool resp3, std::string_view ip, int port, std::string_view role,
                       std::string_view health) {
  std::string out = resp3 ? "%5\r\n" : "*10\r\n";
  out += bulk("id") + bulk("0123456789abcdef");
  out += bulk("port") + ":" + std::to_string(port) + "\r\n";
  out += bulk("ip") + bulk(ip);
  out += bulk("role") + bulk(role);
  out += bulk("health") + bulk(health);
  return out;
}

std::string shard(bool resp3, std::string slots, std::string nodes, int node_count) {
  std::string out = resp3 ? "%2\r\n" : "*4\r\n";
  out += bulk("slots") + slots;
  out += bulk("nodes") + "*" + std::to_string(node_count) + "\r\n" + nodes;
  return out;
}

TEST(ClusterMapTest, ShardsGivePrimariesRangesAndHealthyReplicas) {
  for (bool resp3 : {true, false}) {
    const std::string reply =
        "*2\r\n" +
        shard(resp3, "*4\r\n:0\r\n:100\r\n:200\r\n:300\r\n",
              shard_node(resp3, "10.0.0.1", 7000, "master", "online") +
                  shard_node(resp3, "10.0.0.2", 7001, "replica", "online") +
                  shard_node(resp3, "10.0.0.3", 7002, "replica", "failed"),
              3) +
        shard(resp3, "*2\r\n:101\r\n:199\r\n", shard_node(resp3, "", 7003, "master", "online"), 1);
    resp::Parser parser;
    Result<std::vector<ClusterShard>> shards = parse_cluster_shards(parse(parser, reply), "seed");
    ASSERT_TRUE(shards.has_value()) << shards.error().message();
    ASSERT_EQ(shards->size(), 2u);
    const ClusterShard& first = (*shards)[0];
    EXPECT_EQ(first.primary.to_string(), "10.0.0.1:7000");
    ASSERT_EQ(first.ranges.size(), 2u);
    EXPECT_EQ(first.ranges[0], (std::pair<std::uint16_t, std::uint16_t>(0, 100)));
    EXPECT_EQ(first.ranges[1], (std::pair<std::uint16_t, std::uint16_t>(200, 300)));
    ASSERT_EQ(first.replicas.size(), 1u);  // the failed one is left out
    EXPECT_EQ(first.replicas[0].to_string(), "10.0.0.2:7001");
    EXPECT_EQ((*shards)[1].primary.to_string(), "seed:7003");  // empty ip: the node we asked
  }
}

TEST(ClusterMapTest, ATlsClientDialsTheTlsPortsOfTheShards) {
  // Nodes with both ports list "port" and "tls-port"; TLS-only nodes only "tls-port".
  const auto node = [](std::string_view ip, std::optional<int> port, int tls_port,
                       std::string_view role) {
    std::string out = port ? "%4\r\n" : "%3\r\n";
    if (port) out += bulk("port") + ":" + std::to_string(*port) + "\r\n";
    out += bulk("tls-port") + ":" + std::to_string(tls_port) + "\r\n";
    out += bulk("ip") + bulk(ip);
    out += bulk("role") + bulk(role);
    return out;
  };
  const std::string both =
      "*1\r\n" +
      shard(true, "*2\r\n:0\r\n:16383\r\n",
            node("10.0.0.1", 7000, 7100, "master") + node("10.0.0.2", 7001, 7101, "replica"), 2);
  const std::string tls_only =
      "*1\r\n" + shard(true, "*2\r\n:0\r\n:16383\r\n", node("10.0.0.1", {}, 7100, "master"), 1);
  resp::Parser a, b, c, d;
  Result<std::vector<ClusterShard>> plain = parse_cluster_shards(parse(a, both), "s");
  ASSERT_TRUE(plain.has_value()) << plain.error().message();
  EXPECT_EQ((*plain)[0].primary.to_string(), "10.0.0.1:7000");
  Result<std::vector<ClusterShard>> tls = parse_cluster_shards(parse(b, both), "s", true);
  ASSERT_TRUE(tls.has_value()) << tls.error().message();
  EXPECT_EQ((*tls)[0].primary.to_string(), "10.0.0.1:7100");
  ASSERT_EQ((*tls)[0].replicas.size(), 1u);
  EXPECT_EQ((*tls)[0].replicas[0].to_string(), "10.0.0.2:7101");
  Result<std::vector<ClusterShard>> only = parse_cluster_shards(parse(c, tls_only), "s", true);
  ASSERT_TRUE(only.has_value()) << only.error().message();
  EXPECT_EQ((*only)[0].primary.to_string(), "10.0.0.1:7100");
  // A plain-text client finds no primary it can dial there: an error, not a wrong port.
  EXPECT_FALSE(parse_cluster_shards(parse(d, tls_only), "s").has_value());
}

TEST(ClusterMapTest, ShardsWithoutSlotsAreLeftOutAndBadShapesAreErrors) {
  resp::Parser parser;
  const std::string empty_shard =
      "*1\r\n" + shard(true, "*0\r\n", shard_node(true, "10.0.0.9", 7009, "master", "online"), 1);
  Result<std::vector<ClusterShard>> none = parse_cluster_shards(parse(parser, empty_shard), "s");
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->empty());

  resp::Parser parser2;
  const std::string bad_range = "*1\r\n" + shard(true, "*2\r\n:5\r\n:99999\r\n",
                                                 shard_node(true, "h", 1, "master", "online"), 1);
  Result<std::vector<ClusterShard>> bad = parse_cluster_shards(parse(parser2, bad_range), "s");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), errc::protocol_error);
  EXPECT_NE(bad.error().message().find("slot range"), std::string::npos);

  resp::Parser parser3;
  Result<std::vector<ClusterShard>> refused =
      parse_cluster_shards(parse(parser3, "-ERR unknown subcommand 'SHARDS'\r\n"), "s");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code(), errc::server_error);

  resp::Parser parser4;
  Result<std::vector<ClusterShard>> scalar = parse_cluster_shards(parse(parser4, ":1\r\n"), "s");
  ASSERT_FALSE(scalar.has_value());
  EXPECT_EQ(scalar.error().code(), errc::protocol_error);
}

TEST(ClusterMapTest, SlotsMergesRangesOfOnePrimary) {
  auto node = [](std::string_view ip, int port) {
    return "*3\r\n" + bulk(ip) + ":" + std::to_string(port) + "\r\n" + bulk("id");
  };
  const std::string reply =
      "*3\r\n"
      "*4\r\n:0\r\n:5460\r\n" +
      node("127.0.0.1", 30001) + node("127.0.0.1", 30004) + "*3\r\n:5461\r\n:10922\r\n" +
      node("127.0.0.1", 30002) + "*3\r\n:10923\r\n:16383\r\n" + node("127.0.0.1", 30001);
  resp::Parser parser;
  Result<std::vector<ClusterShard>> shards = parse_cluster_slots(parse(parser, reply), "s");
  ASSERT_TRUE(shards.has_value()) << shards.error().message();
  ASSERT_EQ(shards->size(), 2u);
  EXPECT_EQ((*shards)[0].primary.to_string(), "127.0.0.1:30001");
  ASSERT_EQ((*shards)[0].ranges.size(), 2u);
  EXPECT_EQ((*shards)[0].ranges[1].first, 10923);
  ASSERT_EQ((*shards)[0].replicas.size(), 1u);
  EXPECT_EQ((*shards)[0].replicas[0].port, 30004);
  EXPECT_EQ((*shards)[1].primary.port, 30002);
}

TEST(ClusterMapTest, RedirectionsAreParsed) {
  std::optional<ClusterRedirect> moved = parse_redirect("MOVED 3999 127.0.0.1:6381", "seed");
  ASSERT_TRUE(moved);
  EXPECT_FALSE(moved->ask);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->endpoint.to_string(), "127.0.0.1:6381");

  std::optional<ClusterRedirect> ask = parse_redirect("ASK 12182 [::1]:7000", "seed");
  ASSERT_TRUE(ask);
  EXPECT_TRUE(ask->ask);
  EXPECT_EQ(ask->endpoint.host, "::1");
  EXPECT_EQ(ask->endpoint.port, 7000);

  std::optional<ClusterRedirect> unknown = parse_redirect("MOVED 1 :7001", "10.1.1.1");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->endpoint.to_string(), "10.1.1.1:7001");

  EXPECT_FALSE(parse_redirect("ERR something", "s"));
  EXPECT_FALSE(parse_redirect("MOVED 99999 h:1", "s"));
  EXPECT_FALSE(parse_redirect("MOVED 5 h:0", "s"));
  EXPECT_FALSE(parse_redirect("MOVED 5 nohostport", "s"));
  EXPECT_FALSE(parse_redirect("MOVED", "s"));
}

}  // namespace
}  // namespace redmux::detail
