// SentinelFollow: the rules by which a multiplexer's groups of connections follow a Sentinel
// service, sans-IO. It knows where each group points and answers, for each thing a Sentinel
// says, what to do: which groups move where (the retarget plan, plan_retargets()), whether to
// ask the Sentinels again, which groups should ask their server's role. The monitor
// (mux/sentinel_monitor.hpp) feeds it answers, events and the time, and performs what it
// returns on the connections.
//
//   +selected-slave  the leader chose a replica to promote: group 0 moves to it now, before
//                    the promotion (the old primary would keep taking writes that are lost).
//   +switch-master   the failover is done: group 0 moves to the new primary (if not there).
//   -failover-abort-slave-timeout   ask again (the old primary stays).
//   +convert-to-slave  the groups on that server ask its role (it resynchronises).
// After group 0 moves away from a server, answers that still name that server are ignored
// for kFailoverHold (Sentinels other than the leader learn the new primary seconds later);
// when the hold ends, ask again. Each server moved away from has its own hold: a second
// failover seconds after a crash does not end the crashed primary's (back by then, it says it
// is a primary until the Sentinels turn it into a replica, and a write there would be lost).
//
// Threads: none of its own; the monitor calls it under its lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <vector>

#include "redmux/config.hpp"
#include "topology/sentinel_reply.hpp"

namespace redmux::detail {

class SentinelFollow {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kFailoverHold{30};

  /// What to do after an event.
  struct Reaction {
    std::vector<Retarget> moves;           ///< applied to the groups (targets() says so already)
    bool ask = false;                      ///< ask the Sentinels again now
    std::vector<std::size_t> check_roles;  ///< groups whose connections ask their role now
  };

  /// The groups point at `targets` now (group 0: the primary).
  explicit SentinelFollow(std::vector<Endpoint> targets = {}) : targets_(std::move(targets)) {}

  /// Where each group points (after the moves returned so far).
  const std::vector<Endpoint>& targets() const noexcept { return targets_; }

  /// A Sentinel's answer: the primary and its replicas. The moves that follow them; none when
  /// the answer names a server a failover moved group 0 away from less than kFailoverHold
  /// ago (a hold).
  std::vector<Retarget> on_answer(const Endpoint& primary, const std::vector<Endpoint>& replicas,
                                  Clock::time_point now);

  /// A message a Sentinel published about the service.
  Reaction on_event(const SentinelEvent& event, Clock::time_point now);

  /// The periodic look: true when a hold ended by now (then ask again: the Sentinels agree
  /// by then). Clears the holds that ended.
  bool hold_ended(Clock::time_point now);

 private:
  struct Hold {
    Endpoint from;  ///< a primary group 0 moved away from
    Clock::time_point until;
  };
  /// Records `moves` in targets_ and returns them. Group 0 moving to a held server ends its
  /// hold: it is the primary again.
  std::vector<Retarget> apply(std::vector<Retarget> moves);

  std::vector<Endpoint> targets_;
  std::vector<Hold> holds_;  ///< at most one per server
};

}  // namespace redmux::detail
