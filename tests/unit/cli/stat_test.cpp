// --stat's pieces: INFO's fields, an interval's histogram from two snapshots, the line.
#include <gtest/gtest.h>

#include "stat.hpp"

namespace redmux::cli {
namespace {

using namespace std::chrono_literals;

TEST(StatTest, ReadsTheServersFieldsFromInfo) {
  const std::string info =
      "# Server\r\nredis_version:7.0.15\r\n# Clients\r\nconnected_clients:4\r\n"
      "# Memory\r\nused_memory:1120000\r\nused_memory_human:1.07M\r\n"
      "# Stats\r\ntotal_commands_processed:53211\r\n"
      "# Keyspace\r\ndb0:keys=1000,expires=0,avg_ttl=0\r\ndb3:keys=3,expires=1,avg_ttl=9\r\n";
  StatSample sample;
  parse_info(info, sample);
  EXPECT_EQ(sample.keys, 1003);
  EXPECT_EQ(sample.memory, "1.07M");
  EXPECT_EQ(sample.clients, 4);
  EXPECT_EQ(sample.requests, 53211);
}

TEST(StatTest, OneLineUnderTheHeader) {
  StatSample sample;
  sample.keys = 1003;
  sample.memory = "1.07M";
  sample.clients = 3;
  sample.requests = 53211;
  sample.new_requests = 9920;
  sample.ops_per_second = 9920;
  sample.commands = 100;
  sample.p50 = 61us;
  sample.p99 = 180us;
  sample.commands_per_write = 1;
  EXPECT_EQ(
      stat_line(sample),
      "1003       1.07M    3       53211 (+9920)   9920   0.061ms   0.180ms   0         1.00");
  EXPECT_NE(stat_header().find("\nkeys       mem      clients requests"), std::string::npos);
  sample.commands = 0;  // nothing measured in the interval: no percentiles
  EXPECT_NE(stat_line(sample).find(" -         -         0"), std::string::npos)
      << stat_line(sample);
  EXPECT_NE(stat_json(sample).find("\"new_requests\":9920"), std::string::npos);
  // A long tail keeps the columns in line: fewer decimals as the value grows.
  sample.commands = 100;
  sample.p50 = 12345us;
  sample.p99 = 3348034us;
  EXPECT_NE(stat_line(sample).find(" 12.35ms   3348ms    0 "), std::string::npos)
      << stat_line(sample);
}

}  // namespace
}  // namespace redmux::cli
