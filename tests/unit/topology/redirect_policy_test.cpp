// A cluster command's redirect state, fed error replies and the time: MOVED and ASK followed
// with growing pauses up to the hop limit, CLUSTERDOWN and TRYAGAIN waited out while the
// deadline leaves time for the pause, then given up with what was tried.
#include "topology/redirect_policy.hpp"

#include <gtest/gtest.h>

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;
using Clock = RedirectPolicy::Clock;
using Kind = RedirectPolicy::Step::Kind;

RedirectPolicy policy(Clock::time_point now, std::chrono::milliseconds timeout, bool retry = true) {
  return RedirectPolicy(
      {"INCR", now + timeout, static_cast<std::uint32_t>(timeout.count()), retry});
}

TEST(RedirectPolicyTest, MovedIsFollowedAtOnceThenWithGrowingPausesUpToTheHopLimit) {
  const auto now = Clock::now();
  RedirectPolicy redirects = policy(now, 5s);
  EXPECT_TRUE(redirects.first_send());
  for (int hop = 1; hop <= RedirectPolicy::kMaxHops; ++hop) {
    const RedirectPolicy::Step step = redirects.on_error("MOVED 42 10.0.0.2:7001", "10.0.0.1", now);
    ASSERT_EQ(step.kind, Kind::Follow) << hop;
    EXPECT_FALSE(step.redirect.ask);
    EXPECT_EQ(step.redirect.slot, 42);
    EXPECT_EQ(step.redirect.endpoint.port, 7001);
    EXPECT_EQ(step.pause, RedirectPolicy::kHopPause * (hop - 1));
    EXPECT_FALSE(redirects.first_send());
  }
  // One more: the caller gets the MOVED as the reply.
  EXPECT_EQ(redirects.on_error("MOVED 42 10.0.0.2:7001", "10.0.0.1", now).kind, Kind::Reply);
  EXPECT_EQ(redirects.hops(), RedirectPolicy::kMaxHops);
}

TEST(RedirectPolicyTest, AskIsFollowedAndAnEmptyHostIsTheCurrentNodes) {
  RedirectPolicy redirects = policy(Clock::now(), 5s);
  const RedirectPolicy::Step step = redirects.on_error("ASK 7 :7002", "10.0.0.9", Clock::now());
  ASSERT_EQ(step.kind, Kind::Follow);
  EXPECT_TRUE(step.redirect.ask);
  EXPECT_EQ(step.redirect.endpoint.host, "10.0.0.9");
}

TEST(RedirectPolicyTest, ClusterDownIsWaitedOutWithinTheDeadlineThenGivenUp) {
  const auto start = Clock::now();
  RedirectPolicy redirects = policy(start, 200ms);
  auto now = start;
  std::vector<std::chrono::milliseconds> pauses;
  RedirectPolicy::Step step;
  for (;;) {
    step = redirects.on_error("CLUSTERDOWN The cluster is down", "h", now);
    EXPECT_TRUE(step.refresh);  // every CLUSTERDOWN asks for the map
    if (step.kind != Kind::Wait) break;
    EXPECT_FALSE(step.same_node);  // the slot's owner by then
    pauses.push_back(step.pause);
    now += step.pause;
  }
  // 25, 50, 100 ms fit in 200 ms (at 175 ms, another 200 ms would not).
  EXPECT_EQ(pauses, (std::vector<std::chrono::milliseconds>{25ms, 50ms, 100ms}));
  ASSERT_EQ(step.kind, Kind::GiveUp);
  EXPECT_EQ(step.message,
            "CLUSTERDOWN The cluster is down (reply to INCR; sent 4 times over 175 ms, "
            "retryClusterDown=true, until its 200 ms timeout left no time for another try; it "
            "did not run)");
}

TEST(RedirectPolicyTest, TryAgainGoesBackToTheSameNodeAndAsksNoMap) {
  RedirectPolicy redirects = policy(Clock::now(), 5s);
  const RedirectPolicy::Step step = redirects.on_error(
      "TRYAGAIN Multiple keys request during rehashing of slot", "h", Clock::now());
  ASSERT_EQ(step.kind, Kind::Wait);
  EXPECT_TRUE(step.same_node);
  EXPECT_FALSE(step.refresh);
  EXPECT_EQ(step.pause, RedirectPolicy::kRetryPause);
}

TEST(RedirectPolicyTest, WithoutRetryClusterDownOrTimeTheRefusalIsTheReply) {
  RedirectPolicy off = policy(Clock::now(), 5s, /*retry=*/false);
  const RedirectPolicy::Step step = off.on_error("CLUSTERDOWN down", "h", Clock::now());
  EXPECT_EQ(step.kind, Kind::Reply);
  EXPECT_TRUE(step.refresh);
  RedirectPolicy short_deadline = policy(Clock::now(), 10ms);
  EXPECT_EQ(short_deadline.on_error("TRYAGAIN x", "h", Clock::now()).kind, Kind::Reply);
  EXPECT_TRUE(short_deadline.first_send());
}

TEST(RedirectPolicyTest, AScriptsOwnTryAgainOrClusterDownIsItsReplyNotARefusal) {
  // redis.error_reply("TRYAGAIN later") after a write: sending the script again would write
  // again. Only the server's own words are waited out.
  const Clock::time_point now = Clock::now();
  RedirectPolicy script({"EVAL", now + 5s, 5000, true, /*script=*/true});
  EXPECT_EQ(script.on_error("TRYAGAIN later", "h", now).kind, Kind::Reply);
  EXPECT_EQ(script.on_error("CLUSTERDOWN mine", "h", now).kind, Kind::Reply);
  EXPECT_EQ(
      script.on_error("TRYAGAIN Multiple keys request during rehashing of slot", "h", now).kind,
      Kind::Wait);
  RedirectPolicy down({"FCALL", now + 5s, 5000, true, /*script=*/true});
  EXPECT_EQ(down.on_error("CLUSTERDOWN The cluster is down", "h", now).kind, Kind::Wait);
  // Any other command's TRYAGAIN is the server's.
  EXPECT_EQ(policy(now, 5s).on_error("TRYAGAIN later", "h", now).kind, Kind::Wait);
}

TEST(RedirectPolicyTest, AnotherErrorIsTheReply) {
  RedirectPolicy redirects = policy(Clock::now(), 5s);
  const RedirectPolicy::Step step = redirects.on_error("WRONGTYPE Operation", "h", Clock::now());
  EXPECT_EQ(step.kind, Kind::Reply);
  EXPECT_FALSE(step.refresh);
}

}  // namespace
}  // namespace redmux::detail
