// A primary with two replicas, all real redis-server processes: roles discovered from the
// endpoint list, reads spread over replicas under PreferReplica, writes only on the primary,
// and roles rediscovered after a failover.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "redmux/redmux.hpp"
#include "support/redis_server.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::RedisServer;
using test::wait_until;

void replicate(const RedisServer& replica, const RedisServer& primary) {
  replica.cli({"REPLICAOF", "127.0.0.1", std::to_string(primary.port())});
}

bool in_sync(const RedisServer& replica) {
  return replica.info_field("master_link_status") == "up";
}

struct ReplicaSet {
  RedisServer primary;
  RedisServer replica1;
  RedisServer replica2;
  ReplicaSet() {
    replicate(replica1, primary);
    replicate(replica2, primary);
    EXPECT_TRUE(wait_until([&] { return in_sync(replica1) && in_sync(replica2); }, 20s));
  }
  /// Replicas first: the first endpoint listed is not assumed to be the primary.
  std::string config() const {
    return replica1.address() + "," + primary.address() + "," + replica2.address();
  }
};

TEST(ReplicasTest, RolesAreDiscoveredAndWritesGoToThePrimaryOnly) {
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(db.set("k" + std::to_string(i), std::to_string(i)).get()) << i;
  }
  // Writes and plain reads (PreferMaster, the default) ran on the primary only.
  EXPECT_EQ(db.get("k7").get(), std::optional<std::string>("7"));
  EXPECT_EQ(set.primary.command_calls("set"), 50);
  EXPECT_EQ(set.primary.command_calls("get"), 1);
  EXPECT_EQ(set.replica1.command_calls("get"), 0);
  EXPECT_EQ(set.replica2.command_calls("get"), 0);
  // A write with PreferReplica still goes to the primary (never to a replica).
  EXPECT_TRUE(db.set("pr", "x", {}, Flags::PreferReplica).get());
  EXPECT_EQ(set.primary.command_calls("set"), 51);
}

TEST(ReplicasTest, PreferReplicaSpreadsReadsRoundRobinOverReplicas) {
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config());
  Database db = mux->database();
  ASSERT_TRUE(db.set("shared", "v").get());
  ASSERT_TRUE(wait_until([&] { return set.replica1.cli({"GET", "shared"}) == "v"; }));
  ASSERT_TRUE(wait_until([&] { return set.replica2.cli({"GET", "shared"}) == "v"; }));
  const long long before1 = set.replica1.command_calls("get");  // the wait_until GETs above
  const long long before2 = set.replica2.command_calls("get");
  constexpr int kReads = 100;
  for (int i = 0; i < kReads; ++i) {
    EXPECT_EQ(db.get("shared", Flags::PreferReplica).get(), std::optional<std::string>("v"));
  }
  const long long on1 = set.replica1.command_calls("get") - before1;
  const long long on2 = set.replica2.command_calls("get") - before2;
  EXPECT_EQ(on1 + on2, kReads);
  EXPECT_EQ(on1, kReads / 2);  // strict round-robin, one caller
  EXPECT_EQ(on2, kReads / 2);
  EXPECT_EQ(set.primary.command_calls("get"), 0);
  // DemandReplica reads go to replicas too; DemandMaster reads to the primary.
  EXPECT_EQ(db.get("shared", Flags::DemandReplica).get(), std::optional<std::string>("v"));
  EXPECT_EQ(db.get("shared", Flags::DemandMaster).get(), std::optional<std::string>("v"));
  EXPECT_EQ(set.primary.command_calls("get"), 1);
}

TEST(ReplicasTest, PreferReplicaFallsBackToThePrimaryAndDemandReplicaFails) {
  RedisServer primary;
  RedisServer replica;
  replicate(replica, primary);
  ASSERT_TRUE(wait_until([&] { return in_sync(replica); }, 20s));
  auto mux = Multiplexer::connect(primary.address() + "," + replica.address() +
                                  ",abortConnect=false,connectTimeout=500");
  Database db = mux->database();
  ASSERT_TRUE(db.set("k", "v").get());
  ASSERT_TRUE(wait_until([&] { return db.get("k", Flags::DemandReplica).result().has_value(); }));
  replica.kill();
  // The replica is gone: PreferReplica falls back to the primary; DemandReplica says why.
  ASSERT_TRUE(wait_until([&] {
    Result<std::optional<std::string>> r = db.get("k", Flags::DemandReplica).result();
    return !r.has_value() && r.error().code() == errc::not_allowed;
  }));
  Result<std::optional<std::string>> demanded = db.get("k", Flags::DemandReplica).result();
  ASSERT_FALSE(demanded.has_value());
  EXPECT_NE(demanded.error().message().find("DemandReplica"), std::string::npos)
      << demanded.error().message();
  const long long before = primary.command_calls("get");
  EXPECT_EQ(db.get("k", Flags::PreferReplica).get(), std::optional<std::string>("v"));
  EXPECT_EQ(primary.command_calls("get"), before + 1);
  // A write demanding a replica is refused before it is sent.
  Result<bool> write = db.set("w", "x", {}, Flags::DemandReplica).result();
  ASSERT_FALSE(write.has_value());
  EXPECT_EQ(write.error().code(), errc::not_allowed);
}

TEST(ReplicasTest, WritesFollowAFailoverWithoutAcknowledgedWritesLost) {
  ReplicaSet set;
  auto mux = Multiplexer::connect(set.config() + ",heartbeatInterval=200");
  Database db = mux->database();
  long long acknowledged = 0;
  for (int i = 0; i < 100; ++i) acknowledged = db.incr("counter").get();
  ASSERT_EQ(acknowledged, 100);
  // Let replica1 catch up, then promote it by hand, as a failover would: the old primary and
  // replica2 follow it.
  ASSERT_TRUE(wait_until([&] { return set.replica1.cli({"GET", "counter"}) == "100"; }));
  set.replica1.cli({"REPLICAOF", "NO", "ONE"});
  replicate(set.primary, set.replica1);
  replicate(set.replica2, set.replica1);
  // Writes succeed again once the new roles are seen (a READONLY reply from the old primary
  // is typed and safe to retry; the role probes follow the promotion).
  ASSERT_TRUE(wait_until(
      [&] {
        Result<long long> r = db.incr("counter").result();
        if (r.has_value()) {
          acknowledged = *r;
          return true;
        }
        EXPECT_TRUE(r.error().safe_to_retry()) << r.error().message();
        return false;
      },
      15s));
  // From now on every write lands on the new primary, and none was lost.
  for (int i = 0; i < 50; ++i) {
    Result<long long> r = db.incr("counter").result();
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(*r, acknowledged + 1);
    acknowledged = *r;
  }
  EXPECT_EQ(std::stoll(set.replica1.cli({"GET", "counter"})), acknowledged);
  EXPECT_GE(acknowledged, 151);
  EXPECT_EQ(set.primary.info_field("role"), "slave");
}

TEST(ReplicasTest, WritesAreRefusedWhenEveryEndpointIsAReplica) {
  RedisServer primary;
  RedisServer replica1;
  RedisServer replica2;
  replicate(replica1, primary);
  replicate(replica2, primary);
  auto mux = Multiplexer::connect(replica1.address() + "," + replica2.address());
  Database db = mux->database();
  Result<bool> write = db.set("k", "v").result();
  ASSERT_FALSE(write.has_value());
  EXPECT_EQ(write.error().code(), errc::not_sent);
  EXPECT_TRUE(write.error().safe_to_retry());
  EXPECT_NE(write.error().message().find("no primary"), std::string::npos)
      << write.error().message();
  EXPECT_EQ(replica1.command_calls("set") + replica2.command_calls("set"), 0);  // never sent
  // Reads still work (from a replica: there is no primary to prefer).
  EXPECT_TRUE(db.get("k").result().has_value());
}

}  // namespace
}  // namespace redmux
