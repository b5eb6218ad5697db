// The client-side cache (clientCache=true) in Redis Cluster, against a real 6-node cluster:
// each node connection caches the reads that node answered, with that node's
// invalidations; a slot that moves away from a node takes its entries out of that node's
// cache (a MOVED, a new map); reads cached on replicas (PreferReplica) see a write once its
// invalidation reached the replica's connection.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "redmux/redmux.hpp"
#include "support/local_cluster.hpp"
#include "support/wait.hpp"

namespace redmux {
namespace {

using namespace std::chrono_literals;
using test::ClusterSuite;
using test::LocalCluster;
using test::RedisServer;
using test::wait_until;

class CacheClusterTest : public ClusterSuite<CacheClusterTest> {
 protected:
  /// The cache of the node connection to `node` (all zero when there is none).
  static ClientCacheStatus cache_on(const Multiplexer& mux, const RedisServer& node) {
    for (const ConnectionStatus& one : mux.status().per_connection) {
      if (one.purpose == ConnectionStatus::Purpose::ClusterNode && one.endpoint == node.address())
        return one.cache;
    }
    return {};
  }
  /// Where `slot` is served, as `asked` says (CLUSTER SLOTS: start, end, ip, port per line).
  static bool serves(const RedisServer& asked, const RedisServer& node, long long slot) {
    const std::string slots = asked.cli({"CLUSTER", "SLOTS"});
    std::vector<std::string> lines;
    for (std::size_t at = 0; at <= slots.size();) {
      const std::size_t end = slots.find('\n', at);
      lines.push_back(slots.substr(at, end == std::string::npos ? std::string::npos : end - at));
      if (end == std::string::npos) break;
      at = end + 1;
    }
    for (std::size_t i = 0; i + 3 < lines.size(); ++i) {
      try {
        if (std::stoll(lines[i]) <= slot && slot <= std::stoll(lines[i + 1]) &&
            lines[i + 3] == std::to_string(node.port())) {
          return true;
        }
      } catch (const std::exception&) {
      }
    }
    return false;
  }
};

TEST_F(CacheClusterTest, ReadsAreCachedOnTheNodeThatServesTheirSlotAndSeeItsInvalidations) {
  auto mux = Multiplexer::connect(cluster_->seeds() + ",clientCache=true");
  Database db = mux->database();
  const std::string a = "{cached-a}:book", b = "{cached-b}:book";
  RedisServer& a_node = cluster_->owner_of(a);
  RedisServer& b_node = cluster_->owner_of(b);
  ASSERT_NE(&a_node, &b_node) << "the two tags should land on two primaries";
  a_node.cli({"SET", a, "a1"});
  b_node.cli({"SET", b, "b1"});
  EXPECT_EQ(db.get(a).get(), "a1");  // misses: stored on each node's connection
  EXPECT_EQ(db.get(b).get(), "b1");
  const long long gets = a_node.command_calls("get");
  for (int i = 0; i < 10; ++i) EXPECT_EQ(db.get(a).get(), "a1");
  EXPECT_EQ(a_node.command_calls("get"), gets);  // hits: nothing sent
  EXPECT_EQ(cache_on(*mux, a_node).entries, 1u);
  EXPECT_EQ(cache_on(*mux, b_node).entries, 1u);
  EXPECT_GE(cache_on(*mux, a_node).hits, 10u);

  // Another client's write: its node's invalidation reaches that node's connection.
  // Once any later reply from that node has come (a fence), the cached read sees it.
  a_node.cli({"SET", a, "a2"});
  EXPECT_EQ(db.get(a, Flags::NoCache).get(), "a2");
  EXPECT_EQ(db.get(a).get(), "a2");
  EXPECT_EQ(db.get(b).get(), "b1");  // the other node's entry stays
  // A write through the multiplexer: read back at once.
  db.set(b, "b2").get();
  EXPECT_EQ(db.get(b).get(), "b2");
  // A key the node does not hold is not cached (nothing would say when another node creates
  // it after its slot moved): each read is sent.
  const long long before = a_node.command_calls("get");
  EXPECT_EQ(db.get("{cached-a}:absent").get(), std::nullopt);
  EXPECT_EQ(db.get("{cached-a}:absent").get(), std::nullopt);
  EXPECT_EQ(a_node.command_calls("get"), before + 2);
}

// A reshard (IMPORTING / MIGRATING / MIGRATE / SETSLOT NODE) there and back, with another
// client writing the key on its new owner each time: every read returns what the owner holds.
TEST_F(CacheClusterTest, AReshardedSlotsReadsFollowItAndSeeTheNewOwnersWrites) {
  auto mux = Multiplexer::connect(cluster_->seeds() + ",clientCache=true");
  Database db = mux->database();
  const std::string key = "{cached-reshard}:title";
  RedisServer& source = cluster_->owner_of(key);
  RedisServer* target = nullptr;
  for (RedisServer* primary : cluster_->primaries()) {
    if (primary != &source) target = primary;
  }
  ASSERT_NE(target, nullptr);
  const std::string slot = source.cli({"CLUSTER", "KEYSLOT", key});
  source.cli({"SET", key, "v1"});
  EXPECT_EQ(db.get(key).get(), "v1");
  EXPECT_EQ(db.get(key).get(), "v1");
  EXPECT_EQ(cache_on(*mux, source).entries, 1u);

  cluster_->reshard(slot, source, *target);
  target->cli({"SET", key, "v2"});
  EXPECT_TRUE(wait_until([&] { return db.get(key).get() == std::optional<std::string>("v2"); }));
  EXPECT_EQ(cache_on(*mux, source).entries, 0u);
  // Now cached on the new owner.
  EXPECT_EQ(db.get(key).get(), "v2");
  EXPECT_TRUE(wait_until([&] {
    db.get(key).get();
    return cache_on(*mux, *target).hits > 0;
  }));

  cluster_->reshard(slot, *target, source);  // and back
  source.cli({"SET", key, "v3"});
  EXPECT_TRUE(wait_until([&] { return db.get(key).get() == std::optional<std::string>("v3"); }));
  EXPECT_EQ(cache_on(*mux, *target).entries, 0u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(db.get(key).get(), "v3");
}

// The drop rule itself: a node that takes a slot over by a newer configuration epoch makes the
// old owner delete the slot's keys (Redis 7.0 tells no tracking client of that). The entry
// cached on the old owner must go when the multiplexer learns of the move (here: a MOVED), or
// it would be served again, stale, once the slot comes back to that node.
TEST_F(CacheClusterTest, ASlotThatLeavesANodeTakesItsEntriesOutOfThatNodesCache) {
  auto mux = Multiplexer::connect(cluster_->seeds() + ",clientCache=true");
  Database db = mux->database();
  const std::string key = "{cached-epoch}:title";
  const std::string probe = "{cached-epoch}:probe";
  RedisServer& home = cluster_->owner_of(key);
  RedisServer* other = nullptr;
  for (RedisServer* primary : cluster_->primaries()) {
    if (primary != &home) other = primary;
  }
  ASSERT_NE(other, nullptr);
  const std::string slot = home.cli({"CLUSTER", "KEYSLOT", key});
  const long long slot_number = std::stoll(slot);
  home.cli({"SET", key, "v1"});
  EXPECT_EQ(db.get(key).get(), "v1");
  EXPECT_EQ(db.get(key).get(), "v1");
  ASSERT_EQ(cache_on(*mux, home).entries, 1u);

  // `to` claims the slot with a bumped epoch; `from` sees it and drops its keys of the slot.
  // The epoch goes up before the claim: claimed first, a ping from `from` (still the owner by a
  // higher epoch) arriving before the bump would hand the slot straight back to it.
  auto take_over = [&](RedisServer& to, RedisServer& from) {
    to.cli({"CLUSTER", "BUMPEPOCH"});
    to.cli({"CLUSTER", "SETSLOT", slot, "NODE", cluster_->id_of(to)});
    ASSERT_TRUE(wait_until(
        [&] {
          for (RedisServer* primary : cluster_->primaries()) {
            if (!serves(*primary, to, slot_number)) return false;
          }
          return from.cli({"CLUSTER", "COUNTKEYSINSLOT", slot}) == "0";
        },
        30s));
    // The multiplexer learns of it by a MOVED (an uncached read of the slot).
    db.get(probe, Flags::NoCache).get();
  };
  take_over(*other, home);
  other->cli({"SET", key, "v2"});
  EXPECT_EQ(db.get(key).get(), "v2");
  take_over(home, *other);
  // The key is on neither node now (each dropped it when it lost the slot).
  EXPECT_EQ(home.cli({"EXISTS", key}), "0");
  EXPECT_EQ(db.get(key).get(), std::nullopt);
  EXPECT_EQ(db.get(key, Flags::NoCache).get(), std::nullopt);
}

// PreferReplica: reads cached per replica connection; a write on the primary reaches the
// replica, whose invalidation reaches the replica's cache.
TEST_F(CacheClusterTest, ReplicaReadsAreCachedPerReplicaAndSeeThePrimarysWrites) {
  auto mux = Multiplexer::connect(cluster_->seeds() + ",clientCache=true");
  Database db = mux->database();
  const std::string key = "{cached-replica}:title";
  RedisServer& primary = cluster_->owner_of(key);
  primary.cli({"SET", key, "v1"});
  primary.cli({"WAIT", "1", "5000"});
  EXPECT_TRUE(wait_until(
      [&] { return db.get(key, Flags::PreferReplica).get() == std::optional<std::string>("v1"); }));
  // Until the replica's connection is ready and has seen it in sync (INFO replication, asked
  // every second; under load, after the first reads) a PreferReplica read goes to the primary
  // (and is cached there): read until a replica's cache serves one.
  RedisServer* replica = nullptr;
  EXPECT_TRUE(wait_until([&] {
    EXPECT_EQ(db.get(key, Flags::PreferReplica).get(), "v1");
    for (RedisServer* node : cluster_->replicas()) {
      if (cache_on(*mux, *node).hits > 0) replica = node;
    }
    return replica != nullptr;
  }));
  ASSERT_NE(replica, nullptr) << "no replica connection's cache served the read";
  EXPECT_GT(cache_on(*mux, *replica).entries, 0u);
  for (int version = 2; version <= 20; ++version) {
    const std::string value = "v" + std::to_string(version);
    primary.cli({"SET", key, value});
    primary.cli({"WAIT", "1", "5000"});  // acknowledged by the replica
    // A fence on the replica's connection (the only replica of the slot): its reply comes
    // after the invalidation the replica sent when it applied the write.
    EXPECT_EQ(db.get(key, Flags::PreferReplica | Flags::NoCache).get(), value);
    EXPECT_EQ(db.get(key, Flags::PreferReplica).get(), value);
    EXPECT_EQ(db.get(key, Flags::PreferReplica).get(), value);
  }
  EXPECT_GE(cache_on(*mux, *replica).invalidations, 19u);
  // A write through the multiplexer goes to the primary and clears every cache at once: the
  // writer's next replica read asks the replica, which has the write or not yet (as an
  // uncached replica read).
  db.set(key, "mine").get();
  const std::optional<std::string> seen = db.get(key, Flags::PreferReplica).get();
  EXPECT_TRUE(seen == "mine" || seen == "v20") << seen.value_or("(nil)");
}

}  // namespace
}  // namespace redmux
