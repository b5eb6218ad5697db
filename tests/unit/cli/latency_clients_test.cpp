// The latency lines (redis-cli's shapes) and the CLIENT LIST summary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "clients.hpp"
#include "latency.hpp"

namespace redmux::cli {
namespace {

using std::chrono::microseconds;

TEST(LatencyStatsTest, MinMaxAvgLine) {
  LatencyStats stats;
  EXPECT_EQ(stats.line(), "min: 0.000, max: 0.000, avg: 0.000 (0 samples)");
  stats.add(microseconds(100));
  stats.add(microseconds(300));
  stats.add(microseconds(200));
  EXPECT_EQ(stats.line(), "min: 0.100, max: 0.300, avg: 0.200 (3 samples)");
}

TEST(LatencyStatsTest, NearestRankPercentiles) {
  LatencyStats stats;
  for (int i = 1; i <= 1000; ++i) stats.add(microseconds(i));
  EXPECT_DOUBLE_EQ(stats.percentile_ms(50), 0.5);
  EXPECT_DOUBLE_EQ(stats.percentile_ms(99), 0.99);
  EXPECT_DOUBLE_EQ(stats.percentile_ms(99.9), 0.999);
  EXPECT_DOUBLE_EQ(stats.percentile_ms(100), 1.0);
  EXPECT_EQ(stats.line({50, 99.9}),
            "min: 0.001, max: 1.000, avg: 0.500 (1000 samples), p50: 0.500, p99.9: 0.999");
  // Numbers in milliseconds, rounded to the microsecond; the keys in this order.
  EXPECT_EQ(stats.json({50}),
            "{\"min\":0.001,\"max\":1.0,\"avg\":0.5,\"samples\":1000,\"p50\":0.5}");
  stats.add(std::chrono::nanoseconds(1234567));
  EXPECT_EQ(nlohmann::json::parse(stats.json({}))["max"].get<double>(), 1.235);
}

TEST(PercentileLabelTest, Shapes) {
  EXPECT_EQ(percentile_label(50), "p50");
  EXPECT_EQ(percentile_label(99.9), "p99.9");
}

TEST(ClientsTest, GroupsByNameWithFlagsAndMemory) {
  const auto clients = ClientInfo::parse_list(
      "id=1 addr=127.0.0.1:1 name=bookstore-api flags=N omem=0 tot-mem=1000 cmd=incr\n"
      "id=2 addr=127.0.0.1:2 name=bookstore-api flags=P omem=10 tot-mem=2000 cmd=subscribe\n"
      "id=3 addr=127.0.0.1:3 name= flags=N omem=0 tot-mem=500 cmd=client|list\n");
  const auto groups = group_clients(clients);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "bookstore-api");
  EXPECT_EQ(groups[0].connections, 2);
  EXPECT_EQ(groups[0].flags, "NP");
  EXPECT_EQ(groups[0].omem, 10);
  EXPECT_EQ(groups[0].tot_mem, 3000);
  EXPECT_EQ(groups[1].name, "(unnamed)");
  const std::string text = format_clients(clients, 1024);
  EXPECT_NE(text.find("bookstore-api  2        NP      10 B        2.9 KiB"), std::string::npos)
      << text;
  EXPECT_NE(text.find("total: 3 clients"), std::string::npos);
  EXPECT_EQ(text.find("warning"), std::string::npos);
}

TEST(ClientsTest, WarnsAboutLargeOutputBuffersAndMonitors) {
  const auto clients = ClientInfo::parse_list(
      "id=830 addr=127.0.0.1:9 name=stalled-monitor flags=O omem=106292736 tot-mem=106298112 "
      "cmd=monitor\n"
      "id=831 addr=127.0.0.1:8 name=big flags=N omem=40000000 tot-mem=40000000 cmd=get\n");
  const std::string text = format_clients(clients, 32LL * 1024 * 1024);
  EXPECT_NE(text.find("warning: client id=830"), std::string::npos) << text;
  EXPECT_NE(text.find("101.4 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("MONITOR"), std::string::npos);
  EXPECT_NE(text.find("CLIENT KILL ID 830"), std::string::npos);
  EXPECT_NE(text.find("warning: client id=831"), std::string::npos);
  // The same lines, on their own (--clients --json prints them on stderr).
  const std::vector<std::string> warnings = client_warnings(clients, 32LL * 1024 * 1024);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_TRUE(warnings[0].starts_with("warning: client id=830")) << warnings[0];
  EXPECT_NE(text.find(warnings[1] + "\n"), std::string::npos);
}

TEST(HumanBytesTest, Units) {
  EXPECT_EQ(human_bytes(0), "0 B");
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(106292736), "101.4 MiB");
}

}  // namespace
}  // namespace redmux::cli
