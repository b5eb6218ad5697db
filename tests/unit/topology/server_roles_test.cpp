// The primary and the replica for a read among standalone or Sentinel servers, from what is
// known of each: a replica whose link is down, or that is not in sync, serves no reads.
#include "topology/server_roles.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace redmux::detail {
namespace {

ServerView primary(bool ready = true) {
  return ServerView{false, ready, false, false};
}
ServerView replica(bool ready, bool in_sync, bool primary_lost = false) {
  return ServerView{true, ready, in_sync, primary_lost};
}

Roles roles_of(const std::vector<ServerView>& servers, bool want_replica, bool sentinel = false,
               std::size_t exclude = 99) {
  std::size_t turn = 0;
  return choose_roles(
      servers.size(), [&](std::size_t i) { return servers[i]; }, sentinel, want_replica, exclude,
      [&] { return turn++; });
}

TEST(ServerRolesTest, AReplicaWhoseLinkIsDownOrNotInSyncIsSkipped) {
  const std::vector<ServerView> servers = {primary(), replica(false, true), replica(true, false),
                                           replica(true, true)};
  const Roles roles = roles_of(servers, true);
  EXPECT_EQ(roles.primary, 0u);
  EXPECT_TRUE(roles.primary_ready);
  EXPECT_EQ(roles.replica, 3u);  // 1 is not connected, 2 is not in sync
  EXPECT_EQ(roles.unsynced, 1u);
}

TEST(ServerRolesTest, ReadsGoRoundRobinOverTheReplicasThatMayServeThem) {
  const std::vector<ServerView> servers = {primary(), replica(true, true), replica(true, true)};
  std::size_t turn = 0;
  auto view = [&](std::size_t i) { return servers[i]; };
  auto next = [&] { return turn++; };
  EXPECT_EQ(choose_roles(3, view, false, true, 3, next).replica, 1u);
  EXPECT_EQ(choose_roles(3, view, false, true, 3, next).replica, 2u);
  EXPECT_EQ(choose_roles(3, view, false, true, 1, next).replica, 2u);   // 1 excluded
  EXPECT_EQ(choose_roles(3, view, false, false, 3, next).replica, 3u);  // no read wanted
}

TEST(ServerRolesTest, AReplicaThatLostItsPrimaryServesReadsOnlyWhileNoPrimaryIsReachable) {
  const std::vector<ServerView> down = {primary(/*ready=*/false), replica(true, false, true)};
  EXPECT_EQ(roles_of(down, true).replica, 1u);
  const std::vector<ServerView> up = {primary(), replica(true, false, true)};
  EXPECT_EQ(roles_of(up, true).replica, 2u);  // none
}

TEST(ServerRolesTest, AReplicaOfAnotherPrimaryThanTheOneWrittenToServesNoReads) {
  // 0 is written to (the Sentinels name it); 1 still says it is a primary (demoted by a
  // graceful failover, not yet a replica); 2 follows 1, 3 follows 0, 4 follows 5, a replica
  // of 0 (a chain), 6 follows a server not among these.
  auto following = [](std::size_t primary) {
    ServerView view = replica(true, true);
    view.follows = primary;
    return view;
  };
  std::vector<ServerView> servers = {primary(),
                                     primary(),
                                     following(1),
                                     following(0),
                                     following(5),
                                     following(0),
                                     following(ServerView::kNotAmong)};
  std::vector<std::size_t> chosen;
  for (int i = 0; i < 8; ++i) chosen.push_back(roles_of(servers, true, true).replica);
  for (std::size_t replica : chosen) EXPECT_NE(replica, 2u);
  const Roles roles = roles_of(servers, true, true);
  EXPECT_EQ(roles.unsynced, 1u);  // 2
  EXPECT_TRUE(follows_another_primary(servers[2], 0, servers.size(),
                                      [&](std::size_t i) { return servers[i]; }));
  EXPECT_FALSE(follows_another_primary(servers[4], 0, servers.size(),
                                       [&](std::size_t i) { return servers[i]; }));
  // Once 1 says it is a replica (of 0), 2 is a chain through it and serves reads again.
  servers[1] = following(0);
  EXPECT_EQ(roles_of(servers, true, true).unsynced, 0u);
}

TEST(ServerRolesTest, TheConnectedNonReplicaIsThePrimaryExceptUnderSentinel) {
  // After a failover the old primary may be down while the promoted one is up.
  const std::vector<ServerView> servers = {primary(false), primary(true)};
  EXPECT_EQ(roles_of(servers, false).primary, 1u);
  // Under Sentinel only server 0, the one the Sentinels name.
  EXPECT_EQ(roles_of(servers, false, /*sentinel=*/true).primary, 0u);
  EXPECT_FALSE(roles_of(servers, false, true).primary_ready);
  // Server 0 saying it is a replica: no primary (writes wait or fail as not sent).
  const std::vector<ServerView> promoted_not_yet = {replica(true, true), primary()};
  EXPECT_EQ(roles_of(promoted_not_yet, false, true).primary, 2u);
}

}  // namespace
}  // namespace redmux::detail

namespace redmux::detail {
namespace {

ServerView zoned(bool ready, bool in_sync, bool in_zone) {
  ServerView view{true, ready, in_sync, false};
  view.in_zone = in_zone;
  return view;
}

// availabilityZone=: reads go round-robin over the replicas in the client's zone while one
// of them may serve, over every fit replica otherwise.
TEST(ServerRolesTest, ReadsPreferReplicasInTheClientsAvailabilityZone) {
  const std::vector<ServerView> servers = {primary(), zoned(true, true, false),
                                           zoned(true, true, true), zoned(true, true, false),
                                           zoned(true, true, true)};
  std::size_t turn = 0;
  auto view = [&](std::size_t i) { return servers[i]; };
  auto next = [&] { return turn++; };
  EXPECT_EQ(choose_roles(5, view, false, true, 5, next).replica, 2u);
  EXPECT_EQ(choose_roles(5, view, false, true, 5, next).replica, 4u);
  EXPECT_EQ(choose_roles(5, view, false, true, 5, next).replica, 2u);
  EXPECT_EQ(choose_roles(5, view, false, true, 2, next).replica, 4u);  // 2 excluded

  // The in-zone replicas cannot serve (one down, one out of sync): any fit replica does.
  const std::vector<ServerView> unfit = {primary(), zoned(true, true, false),
                                         zoned(false, true, true), zoned(true, false, true)};
  auto unfit_view = [&](std::size_t i) { return unfit[i]; };
  EXPECT_EQ(choose_roles(4, unfit_view, false, true, 4, next).replica, 1u);
}

}  // namespace
}  // namespace redmux::detail
