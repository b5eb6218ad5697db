// The cluster slot map over node identities: built from shards, changed by MOVED.
#include "topology/slot_table.hpp"

#include <gtest/gtest.h>

namespace redmux::detail {
namespace {

Endpoint at(std::uint16_t port) {
  return Endpoint{"10.0.0.1", port, {}};
}

ClusterShard shard(std::uint16_t primary, std::uint16_t start, std::uint16_t end,
                   std::vector<Endpoint> replicas = {}, bool failed = false) {
  ClusterShard out;
  out.primary = at(primary);
  out.ranges.push_back({start, end});
  out.replicas = std::move(replicas);
  out.primary_failed = failed;
  return out;
}

TEST(SlotTableTest, ShardsGiveEachSlotItsPrimaryAndEachPrimaryItsReplicas) {
  const std::vector<ClusterShard> shards = {shard(1, 0, 8191, {at(11)}),
                                            shard(2, 8192, 16383, {}, /*failed=*/true)};
  const SlotTable table = SlotTable::from_shards(shards);
  ASSERT_EQ(table.nodes, (std::vector<Endpoint>{at(1), at(11), at(2)}));
  EXPECT_EQ(table.owner(0), 0);
  EXPECT_EQ(table.owner(8191), 0);
  EXPECT_EQ(table.owner(8192), 2);
  EXPECT_EQ(table.replicas[0], (std::vector<std::int16_t>{1}));
  EXPECT_EQ(table.slots, (std::vector<std::size_t>{8192, 0, 8192}));
  EXPECT_EQ(table.failed, (std::vector<bool>{false, false, true}));
  EXPECT_TRUE(table.is_replica(1));
  EXPECT_FALSE(table.is_replica(0));
  EXPECT_EQ(table.slots_covered(), kSlotCount);
  const std::vector<SlotTable::Slots> served = table.served();
  EXPECT_EQ(served[1].count(), 8192u);  // a replica serves its primary's slots (reads)
  EXPECT_TRUE(served[1].test(100));
  EXPECT_FALSE(served[1].test(9000));
}

TEST(SlotTableTest, AnUncoveredSlotHasNoOwner) {
  const std::vector<ClusterShard> shards = {shard(1, 0, 99)};
  const SlotTable table = SlotTable::from_shards(shards);
  EXPECT_EQ(table.owner(100), SlotTable::kNoNode);
  EXPECT_EQ(table.slots_covered(), 100u);
  EXPECT_EQ(table.covered().count(), 100u);
}

TEST(SlotTableTest, MovedGivesTheSlotToTheNodeNamedAddingItWhenNew) {
  const std::vector<ClusterShard> shards = {shard(1, 0, 16383)};
  SlotTable table = SlotTable::from_shards(shards);
  table.moved(42, at(3));
  ASSERT_EQ(table.nodes.size(), 2u);
  EXPECT_EQ(table.owner(42), 1);
  EXPECT_EQ(table.owner(41), 0);
  // Every per-node list grows with the node (status() and the reroute read them by index).
  EXPECT_EQ(table.replicas.size(), 2u);
  EXPECT_EQ(table.failed.size(), 2u);
  EXPECT_EQ(table.slots.size(), 2u);
  table.moved(43, at(3));  // a node already known keeps its index
  EXPECT_EQ(table.nodes.size(), 2u);
  EXPECT_EQ(table.owner(43), 1);
}

}  // namespace
}  // namespace redmux::detail
