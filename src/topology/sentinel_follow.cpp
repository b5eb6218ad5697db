#include "topology/sentinel_follow.hpp"

#include <algorithm>

namespace redmux::detail {

std::vector<Retarget> SentinelFollow::apply(std::vector<Retarget> moves) {
  for (const Retarget& move : moves) {
    targets_[move.group] = move.to;
    if (move.group == 0) {
      std::erase_if(holds_, [&](const Hold& hold) { return hold.from == move.to; });
    }
  }
  return moves;
}

bool SentinelFollow::hold_ended(Clock::time_point now) {
  return std::erase_if(holds_, [&](const Hold& hold) { return now >= hold.until; }) > 0;
}

std::vector<Retarget> SentinelFollow::on_answer(const Endpoint& primary,
                                                const std::vector<Endpoint>& replicas,
                                                Clock::time_point now) {
  hold_ended(now);
  // A Sentinel that has not caught up with a failover yet (the leader announced it).
  if (std::any_of(holds_.begin(), holds_.end(),
                  [&](const Hold& hold) { return hold.from == primary; })) {
    return {};
  }
  return apply(plan_retargets(targets_, primary, &replicas));
}

SentinelFollow::Reaction SentinelFollow::on_event(const SentinelEvent& event,
                                                  Clock::time_point now) {
  Reaction reaction;
  switch (event.kind) {
    case SentinelEvent::Kind::SelectedReplica:
    case SentinelEvent::Kind::SwitchMaster:
      if (event.to != event.from) {
        std::erase_if(holds_, [&](const Hold& hold) { return hold.from == event.from; });
        holds_.push_back(Hold{event.from, now + kFailoverHold});
      }
      reaction.moves = apply(plan_retargets(targets_, event.to, nullptr));
      break;
    case SentinelEvent::Kind::FailoverAborted:
      // `from` stays the primary: answers naming it are the truth.
      std::erase_if(holds_, [&](const Hold& hold) { return hold.from == event.from; });
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

}  // namespace redmux::detail
