// How the groups of a Sentinel multiplexer follow what the Sentinels say, without sockets:
// +selected-slave and +switch-master move group 0 (a promoted replica's group swaps with it),
// the holds that ignore late answers naming an old primary, an aborted failover, an old
// primary converted to a replica, and answers that move the replica groups.
#include "topology/sentinel_follow.hpp"

#include <gtest/gtest.h>

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;
using Clock = SentinelFollow::Clock;

Endpoint at(std::uint16_t port) {
  return Endpoint{"10.0.0.1", port, {}};
}

SentinelEvent event(SentinelEvent::Kind kind, Endpoint from, Endpoint to) {
  SentinelEvent e;
  e.kind = kind;
  e.service = "svc";
  e.from = std::move(from);
  e.to = std::move(to);
  return e;
}

TEST(SentinelFollowTest, SelectedReplicaMovesGroupZeroAtOnceAndSwapsWithThePromotedGroup) {
  SentinelFollow follow({at(1), at(2), at(3)});
  const auto now = Clock::now();
  const SentinelFollow::Reaction reaction =
      follow.on_event(event(SentinelEvent::Kind::SelectedReplica, at(1), at(3)), now);
  const std::vector<Retarget> expected = {{0, at(3)}, {2, at(1)}};
  EXPECT_EQ(reaction.moves, expected);
  EXPECT_FALSE(reaction.ask);
  EXPECT_EQ(follow.targets(), (std::vector<Endpoint>{at(3), at(2), at(1)}));
  // +switch-master for the same failover then finds group 0 in place: nothing moves.
  EXPECT_TRUE(
      follow.on_event(event(SentinelEvent::Kind::SwitchMaster, at(1), at(3)), now).moves.empty());
}

TEST(SentinelFollowTest, SwitchMasterToAServerNoGroupHasMovesGroupZeroAlone) {
  SentinelFollow follow({at(1), at(2)});
  const SentinelFollow::Reaction reaction =
      follow.on_event(event(SentinelEvent::Kind::SwitchMaster, at(1), at(9)), Clock::now());
  EXPECT_EQ(reaction.moves, (std::vector<Retarget>{{0, at(9)}}));
  EXPECT_EQ(follow.targets(), (std::vector<Endpoint>{at(9), at(2)}));
}

TEST(SentinelFollowTest, AnswersNamingTheOldPrimaryAreIgnoredUntilTheHoldEnds) {
  SentinelFollow follow({at(1), at(2)});
  const auto now = Clock::now();
  follow.on_event(event(SentinelEvent::Kind::SwitchMaster, at(1), at(2)), now);
  // A Sentinel that has not learnt of the failover yet still names the old primary.
  EXPECT_TRUE(follow.on_answer(at(1), {at(2)}, now + 1s).empty());
  EXPECT_EQ(follow.targets().front(), at(2));
  EXPECT_FALSE(follow.hold_ended(now + SentinelFollow::kFailoverHold - 1ms));
  // An answer naming another server is followed during the hold.
  EXPECT_EQ(follow.on_answer(at(5), {}, now + 2s).front(), (Retarget{0, at(5)}));
  EXPECT_TRUE(follow.hold_ended(now + SentinelFollow::kFailoverHold));
  EXPECT_FALSE(follow.hold_ended(now + SentinelFollow::kFailoverHold + 1s));  // once
  // After the hold, the old primary named again is followed.
  EXPECT_FALSE(follow.on_answer(at(1), {}, now + SentinelFollow::kFailoverHold + 1s).empty());
  EXPECT_EQ(follow.targets().front(), at(1));
}

TEST(SentinelFollowTest, AHoldOutlivesALaterFailover) {
  // The Sentinels fail over again seconds after a crash (a loaded machine delayed the new
  // primary's answers). A Sentinel still behind by both failovers names the crashed primary,
  // which may be back by then saying it is a primary, with old data: not followed.
  SentinelFollow follow({at(1), at(2), at(3)});
  const auto now = Clock::now();
  follow.on_event(event(SentinelEvent::Kind::SwitchMaster, at(1), at(2)), now);
  follow.on_event(event(SentinelEvent::Kind::SwitchMaster, at(2), at(3)), now + 2s);
  EXPECT_TRUE(follow.on_answer(at(1), {at(2)}, now + 3s).empty());
  EXPECT_TRUE(follow.on_answer(at(2), {at(1)}, now + 3s).empty());
  EXPECT_EQ(follow.targets().front(), at(3));
  // Each hold ends on its own clock, and each end asks again.
  EXPECT_TRUE(follow.hold_ended(now + SentinelFollow::kFailoverHold));
  EXPECT_TRUE(follow.on_answer(at(2), {at(1)}, now + SentinelFollow::kFailoverHold).empty());
  EXPECT_TRUE(follow.hold_ended(now + 2s + SentinelFollow::kFailoverHold));
  EXPECT_FALSE(follow.hold_ended(now + 3s + SentinelFollow::kFailoverHold));
}

TEST(SentinelFollowTest, AFailoverBackToAServerEndsItsHold) {
  SentinelFollow follow({at(1), at(2)});
  const auto now = Clock::now();
  follow.on_event(event(SentinelEvent::Kind::SwitchMaster, at(1), at(2)), now);
  follow.on_event(event(SentinelEvent::Kind::SwitchMaster, at(2), at(1)), now + 12s);
  // Server 1 is the primary again: an answer naming it is the truth, not a Sentinel behind.
  EXPECT_EQ(follow.on_answer(at(5), {}, now + 13s), (std::vector<Retarget>{{0, at(5)}}));
  EXPECT_EQ(follow.on_answer(at(1), {}, now + 14s), (std::vector<Retarget>{{0, at(1)}}));
  // Moved away from it again: held again.
  follow.on_event(event(SentinelEvent::Kind::SwitchMaster, at(1), at(2)), now + 15s);
  EXPECT_TRUE(follow.on_answer(at(1), {}, now + 16s).empty());
}

TEST(SentinelFollowTest, AnAbortedFailoverAsksAgainAndEndsTheHold) {
  SentinelFollow follow({at(1), at(2)});
  const auto now = Clock::now();
  follow.on_event(event(SentinelEvent::Kind::SelectedReplica, at(1), at(2)), now);
  const SentinelFollow::Reaction reaction =
      follow.on_event(event(SentinelEvent::Kind::FailoverAborted, at(1), {}), now + 1s);
  EXPECT_TRUE(reaction.ask);
  EXPECT_TRUE(reaction.moves.empty());
  // The hold is gone: the old primary, named again, gets group 0 back.
  EXPECT_EQ(follow.on_answer(at(1), {at(2)}, now + 2s),
            (std::vector<Retarget>{{0, at(1)}, {1, at(2)}}));
}

TEST(SentinelFollowTest, AConvertedOldPrimaryHasItsGroupsAskTheirRole) {
  SentinelFollow follow({at(2), at(1), at(3)});
  const SentinelFollow::Reaction reaction =
      follow.on_event(event(SentinelEvent::Kind::ConvertedToReplica, at(1), at(2)), Clock::now());
  EXPECT_EQ(reaction.check_roles, (std::vector<std::size_t>{1}));
  EXPECT_TRUE(reaction.moves.empty());
  EXPECT_FALSE(reaction.ask);
}

TEST(SentinelFollowTest, AnAnswerMovesReplicaGroupsToListedReplicasNoGroupHas) {
  SentinelFollow follow({at(1), at(2), at(3)});
  // Replica 3 is gone (not listed), replica 4 is new.
  const std::vector<Retarget> moves = follow.on_answer(at(1), {at(2), at(4)}, Clock::now());
  EXPECT_EQ(moves, (std::vector<Retarget>{{2, at(4)}}));
  EXPECT_EQ(follow.targets(), (std::vector<Endpoint>{at(1), at(2), at(4)}));
  EXPECT_TRUE(follow.on_answer(at(1), {at(2), at(4)}, Clock::now()).empty());  // in place
}

}  // namespace
}  // namespace redmux::detail
