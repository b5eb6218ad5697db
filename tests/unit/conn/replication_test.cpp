// conn/replication.cpp: what INFO replication says about a replica's health.
#include "conn/replication.hpp"

#include <gtest/gtest.h>

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

constexpr std::string_view kInSync =
    "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:7001\r\n"
    "master_link_status:up\r\nmaster_last_io_seconds_ago:3\r\nmaster_sync_in_progress:0\r\n"
    "slave_read_repl_offset:1234\r\nslave_repl_offset:1234\r\nslave_priority:100\r\n";

ReplicationInfo parsed(std::string_view text) {
  const std::optional<ReplicationInfo> info = parse_replication_info(text);
  EXPECT_TRUE(info) << text;
  return info.value_or(ReplicationInfo{});
}

TEST(ReplicationTest, AReplicaInSyncServesReads) {
  const ReplicationInfo info = parsed(kInSync);
  EXPECT_EQ(info.role, "slave");
  EXPECT_EQ(info.master_link_status, "up");
  EXPECT_FALSE(info.sync_in_progress);
  EXPECT_EQ(info.last_io_seconds, 3);
  for (const auto limit : {0s, 5s}) {
    const ReplicaVerdict verdict = judge_replica(info, limit);
    EXPECT_EQ(verdict.health, ReplicaHealth::InSync);
    EXPECT_EQ(verdict.reason, "");
  }
}

TEST(ReplicationTest, ALinkLostAMomentAgoMeansThePrimaryIsLost) {
  const ReplicaVerdict verdict = judge_replica(
      parsed("# Replication\nrole:slave\nmaster_link_status:down\nmaster_last_io_seconds_ago:-1\n"
             "master_sync_in_progress:0\nmaster_link_down_since_seconds:4\n"),
      0s);
  EXPECT_EQ(verdict.health, ReplicaHealth::PrimaryLost);
  EXPECT_EQ(verdict.reason, "master_link_status:down for 4 s");
}

TEST(ReplicationTest, ALinkDownSinceItStartedOrLongerThanTheLimitIsUnfit) {
  // A restarted server, or one just pointed at a primary: its data is whatever it had.
  const ReplicaVerdict never = judge_replica(
      parsed("role:slave\nmaster_link_status:down\nmaster_link_down_since_seconds:-1\n"), 0s);
  EXPECT_EQ(never.health, ReplicaHealth::Unfit);
  EXPECT_EQ(never.reason,
            "master_link_status:down (not in sync since it started or changed primary)");
  const ReplicaVerdict long_ago = judge_replica(
      parsed("role:slave\nmaster_link_status:down\nmaster_link_down_since_seconds:30\n"), 10s);
  EXPECT_EQ(long_ago.health, ReplicaHealth::Unfit);
  EXPECT_EQ(long_ago.reason, "master_link_status:down for 30 s, more than replicaMaxLag=10 s");
}

TEST(ReplicationTest, AFullResynchronisationIsUnfit) {
  const ReplicationInfo info = parsed(
      "role:slave\r\nmaster_link_status:down\r\nmaster_sync_in_progress:1\r\n"
      "master_link_down_since_seconds:2\r\n");
  EXPECT_TRUE(info.sync_in_progress);
  const ReplicaVerdict verdict = judge_replica(info, 0s);
  EXPECT_EQ(verdict.health, ReplicaHealth::Unfit);
  EXPECT_EQ(verdict.reason.rfind("master_sync_in_progress:1", 0), 0u) << verdict.reason;
}

TEST(ReplicationTest, NotHearingFromThePrimaryBeyondTheLimitIsUnfit) {
  ReplicationInfo info = parsed(kInSync);
  info.last_io_seconds = 12;
  EXPECT_EQ(judge_replica(info, 0s).health, ReplicaHealth::InSync);  // no limit
  EXPECT_EQ(judge_replica(info, 12s).health, ReplicaHealth::InSync);
  const ReplicaVerdict verdict = judge_replica(info, 10s);
  EXPECT_EQ(verdict.health, ReplicaHealth::Unfit);
  EXPECT_EQ(verdict.reason, "master_last_io_seconds_ago:12 is more than replicaMaxLag=10 s");
}

TEST(ReplicationTest, APrimaryAndTextThatIsNotInfo) {
  EXPECT_EQ(parsed("# Replication\r\nrole:master\r\nconnected_slaves:2\r\n").role, "master");
  EXPECT_FALSE(parse_replication_info(""));
  EXPECT_FALSE(parse_replication_info("OK"));
  EXPECT_FALSE(parse_replication_info("# Replication\r\nconnected_slaves:2\r\n"));
  // A line without a value, or a number that is not one, is no crash.
  const ReplicationInfo odd =
      parsed("role:slave\nmaster_link_status\nmaster_last_io_seconds_ago:x\n");
  EXPECT_EQ(odd.last_io_seconds, -1);
  const ReplicaVerdict verdict = judge_replica(odd, 0s);
  EXPECT_EQ(verdict.health, ReplicaHealth::Unfit);
  EXPECT_EQ(verdict.reason.rfind("master_link_status:unknown", 0), 0u) << verdict.reason;
}

}  // namespace
}  // namespace redmux::detail
