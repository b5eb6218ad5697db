#include "topology/sentinel_follow.hpp"

namespace redmux::detail {

std::vector<Retarget> SentinelFollow::apply(std::vector<Retarget> moves) {
  for (const Retarget& move : moves) targets_[move.group] = move.to;
  return moves;
}

std::vector<Retarget> SentinelFollow::on_answer(const Endpoint& primary,
                                                const std::vector<Endpoint>& replicas,
                                                Clock::time_point now) {
  if (hold_ && now >= hold_->until) hold_.reset();
  // A Sentinel that has not caught up with the failover yet (the leader announced it).
  if (hold_ && primary == hold_->from) return {};
  return apply(plan_retargets(targets_, primary, &replicas));
}

SentinelFollow::Reaction SentinelFollow::on_event(const SentinelEvent& event,
                                                  Clock::time_point now) {
  Reaction reaction;
  switch (event.kind) {
    case SentinelEvent::Kind::SelectedReplica:
    case SentinelEvent::Kind::SwitchMaster:
      if (event.to != event.from) hold_ = Hold{event.from, now + kFailoverHold};
      reaction.moves = apply(plan_retargets(targets_, event.to, nullptr));
      break;
    case SentinelEvent::Kind::FailoverAborted:
      hold_.reset();
      reaction.ask = true;
      break;
    case SentinelEvent::Kind::ConvertedToReplica:
      // A primary that came back after a failover: it still says "master" until asked, and
      // it resynchronises now (its reads are old data).
      for (std::size_t g = 0; g < targets_.size(); ++g) {
        if (targets_[g] == event.from) reaction.check_roles.push_back(g);
      }
      break;
  }
  return reaction;
}

bool SentinelFollow::hold_ended(Clock::time_point now) {
  if (!hold_ || now < hold_->until) return false;
  hold_.reset();
  return true;
}

}  // namespace redmux::detail
