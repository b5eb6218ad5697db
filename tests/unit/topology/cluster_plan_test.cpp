// How a command is laid out over a cluster: the split per slot, the SCAN cursor packing, the
// replica wish and the pick among connected replicas.
#include "topology/cluster_plan.hpp"

#include <gtest/gtest.h>

#include <string>

#include "topology/slot.hpp"

namespace redmux::detail {
namespace {

/// Two keys in different slots, and one sharing the first's slot (a hash tag).
constexpr std::string_view kA = "{a}1", kB = "{b}1", kA2 = "{a}2";

TEST(ClusterPlanTest, KeySlotsSaysWhetherEveryKeySharesTheFirstOnesSlot) {
  const Arg same[] = {"MGET", kA, kA2};
  const std::size_t keys[] = {1, 2};
  EXPECT_TRUE(key_slots(same, keys).one_slot);
  EXPECT_EQ(key_slots(same, keys).first, slot_of(kA));
  const Arg differ[] = {"MGET", kA, kB};
  EXPECT_FALSE(key_slots(differ, keys).one_slot);
  EXPECT_EQ(key_slots(differ, keys).other, slot_of(kB));  // for the CROSSSLOT message
  EXPECT_TRUE(key_slots(differ, {}).one_slot);
  const Arg third[] = {"MGET", kA, kA2, kB};
  const std::size_t three[] = {1, 2, 3};
  EXPECT_FALSE(key_slots(third, three).one_slot);
  EXPECT_EQ(key_slots(third, three).other, slot_of(kB));
}

TEST(ClusterPlanTest, ASplitHasOnePartPerSlotInFirstSeenOrderAndRemembersPositions) {
  const Arg args[] = {"MGET", kB, kA, kB, kA2};
  const std::size_t keys[] = {1, 2, 3, 4};
  const std::vector<SplitPart> parts = plan_split(args, keys, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].slot, slot_of(kB));
  EXPECT_EQ(parts[0].args, (std::vector<std::size_t>{0, 1, 3}));
  EXPECT_EQ(parts[0].positions, (std::vector<std::size_t>{0, 2}));
  EXPECT_EQ(parts[1].slot, slot_of(kA));
  EXPECT_EQ(parts[1].args, (std::vector<std::size_t>{0, 2, 4}));
  EXPECT_EQ(parts[1].positions, (std::vector<std::size_t>{1, 3}));
}

TEST(ClusterPlanTest, ASplitWithAStepCarriesEachKeysValuesAndStopsAtAnIncompleteOne) {
  const Arg args[] = {"MSET", kA, "1", kB, "2", kA2};  // the last key has no value
  const std::size_t keys[] = {1, 3, 5};
  const std::vector<SplitPart> parts = plan_split(args, keys, 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].args, (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_EQ(parts[1].args, (std::vector<std::size_t>{0, 3, 4}));
}

TEST(ClusterPlanTest, TheScanCursorWalksEveryPrimaryInTurn) {
  // Node 0 has more: the same node, its cursor below the node bits.
  const std::uint64_t more = next_scan_cursor(0, 3, 17);
  EXPECT_EQ(more, 17u);
  // Node 1 is done: the next node from its start.
  const std::uint64_t next = next_scan_cursor(1, 3, 0);
  EXPECT_EQ(next, std::uint64_t{2} << ScanCursor::kNodeShift);
  // The last node is done: 0, the walk is over.
  EXPECT_EQ(next_scan_cursor(2, 3, 0), 0u);
  // A node's cursor mid-walk on node 2 round-trips.
  const std::uint64_t mid = next_scan_cursor(2, 3, 12345);
  const std::optional<ScanCursor> back = unpack_scan_cursor(std::to_string(mid), 3);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->node, 2u);
  EXPECT_EQ(back->node_cursor, 12345u);
  const std::optional<ScanCursor> start = unpack_scan_cursor("0", 3);
  ASSERT_TRUE(start);
  EXPECT_EQ(start->node, 0u);
  EXPECT_EQ(start->node_cursor, 0u);
}

TEST(ClusterPlanTest, AScanCursorNamingNoPrimaryOrNotANumberIsRefused) {
  EXPECT_FALSE(unpack_scan_cursor(std::to_string(std::uint64_t{3} << ScanCursor::kNodeShift), 3));
  EXPECT_FALSE(unpack_scan_cursor("abc", 3));
  EXPECT_FALSE(unpack_scan_cursor("0", 0));
}

TEST(ClusterPlanTest, AReplicaOnlyForAReadTheFlagsAllow) {
  EXPECT_FALSE(replica_wish(true, Flags::None).replica);
  EXPECT_TRUE(replica_wish(true, Flags::PreferReplica).replica);
  EXPECT_FALSE(replica_wish(true, Flags::PreferReplica).demand);
  EXPECT_TRUE(replica_wish(true, Flags::DemandReplica).replica);
  EXPECT_TRUE(replica_wish(true, Flags::DemandReplica).demand);
  EXPECT_FALSE(replica_wish(false, Flags::PreferReplica).replica);  // a write
  EXPECT_TRUE(replica_wish(false, Flags::DemandReplica).demand);    // refused by the router
}

TEST(ClusterPlanTest, AReplicaWhoseLinkIsDownIsSkipped) {
  const bool ready[] = {false, true, false, true};
  std::size_t turns = 0;
  auto turn = [&] { return turns++; };
  auto up = [&](std::size_t i) { return ready[i]; };
  EXPECT_EQ(pick_ready(4, up, turn), 1u);
  EXPECT_EQ(pick_ready(4, up, turn), 3u);
  EXPECT_EQ(pick_ready(4, up, turn), 1u);  // round-robin over the two that are up
  const bool none[] = {false, false};
  const std::size_t before = turns;
  EXPECT_FALSE(pick_ready(
      2, [&](std::size_t i) { return none[i]; }, turn));
  EXPECT_EQ(turns, before);  // no turn taken when none is up
}

}  // namespace
}  // namespace redmux::detail
