#include "conn/pipeline.hpp"

#include <algorithm>

namespace redmux::detail {

Pipeline::~Pipeline() {
  for (Early& early : early_) early.command.state->release();
  while (!in_flight_.empty()) {
    if (in_flight_.front().state) in_flight_.front().state->release();
    in_flight_.pop_front();
  }
}

void Pipeline::push(std::span<const PendingCommand> commands) {
  for (const PendingCommand& command : commands) {
    if (command.kind == PendingKind::Caller) {
      if (command.deadline < latest_deadline_) {
        // Out of order (a shorter per-call timeout): track it in the heap as well, since the
        // in-order scan in expire() stops at the first deadline in the future.
        command.state->add_ref();
        early_.push_back({command});
        std::push_heap(early_.begin(), early_.end(), std::greater<>());
      } else {
        latest_deadline_ = command.deadline;
      }
    }
    in_flight_.push_back(command);
  }
}

void Pipeline::pop_front(std::size_t& released) {
  PendingCommand& front = in_flight_.front();
  if (front.state) front.state->release();
  if (front.counted) ++released;
  in_flight_.pop_front();
  if (first_unexpired_ > 0) --first_unexpired_;
}

Pipeline::ReplyOutcome Pipeline::on_reply(NodeSpan reply, const ErrorReport& report,
                                          const SlotRelease& release) {
  if (in_flight_.empty()) return ReplyOutcome::Unexpected;
  // A subscribe-family command is answered by pushes; the only ordinary reply it can get is
  // its refusal (an error, e.g. NOPERM). Anything else means the stream is out of step.
  if (in_flight_.front().kind == PendingKind::PubSub && !is_error_reply(reply)) {
    return ReplyOutcome::Unexpected;
  }
  const PendingCommand front = in_flight_.front();
  in_flight_.pop_front();
  if (first_unexpired_ > 0) --first_unexpired_;
  if (front.counted && release) release();
  ReplyOutcome outcome = ReplyOutcome::Delivered;
  switch (front.kind) {
    case PendingKind::Caller:
      front.state->deliver(reply);
      break;
    case PendingKind::Internal:
      if (front.state) {
        front.state->deliver(reply);
      } else if (is_error_reply(reply)) {
        if (report) report(front, reply);
        outcome = ReplyOutcome::InternalFailed;
      }
      break;
    case PendingKind::FireAndForget:
      if (is_error_reply(reply) && report) report(front, reply);
      break;
    case PendingKind::PubSub:            // refused: none of its names was subscribed
      if (report) report(front, reply);  // before the refusal is seen by anyone waiting
      if (front.state) front.state->deliver(reply);
      break;
    case PendingKind::Heartbeat:
      break;  // any reply, even an error (LOADING, BUSY …), shows the link is alive
  }
  if (front.state) front.state->release();
  return outcome;
}

bool Pipeline::on_confirmation(resp::PushKind kind) {
  if (in_flight_.empty()) return false;
  PendingCommand& front = in_flight_.front();
  if (front.kind != PendingKind::PubSub || front.confirmations == 0) return false;
  if (front.confirmed_by != kind) return false;
  if (--front.confirmations > 0) return true;
  std::size_t released = 0;
  pop_front(released);  // PubSub commands hold no slot of maxQueuedCommands
  return true;
}

std::size_t Pipeline::expire(Clock::time_point now, const TimeoutError& make_error) {
  std::size_t failed = 0;
  while (!early_.empty() && early_.front().command.deadline <= now) {
    std::pop_heap(early_.begin(), early_.end(), std::greater<>());
    const PendingCommand early = early_.back().command;
    early_.pop_back();
    if (!early.state->claimed()) {
      early.state->fail(make_error(early, now));
      ++failed;
    }
    early.state->release();
  }
  std::size_t i = first_unexpired_;
  for (; i < in_flight_.size(); ++i) {
    PendingCommand& command = in_flight_[i];
    if (command.kind != PendingKind::Caller) continue;
    if (command.deadline > now) break;
    if (!command.state->claimed()) {
      command.state->fail(make_error(command, now));
      ++failed;
    }
  }
  first_unexpired_ = i;
  return failed;
}

Clock::time_point Pipeline::next_deadline() const {
  Clock::time_point next =
      early_.empty() ? Clock::time_point::max() : early_.front().command.deadline;
  for (std::size_t i = first_unexpired_; i < in_flight_.size(); ++i) {
    if (in_flight_[i].kind != PendingKind::Caller) continue;
    return std::min(next, in_flight_[i].deadline);
  }
  return next;
}

void Pipeline::take_all(std::vector<PendingCommand>& out) {
  while (!in_flight_.empty()) {
    out.push_back(in_flight_.front());  // its reference moves to `out`
    in_flight_.pop_front();
  }
  first_unexpired_ = 0;
  latest_deadline_ = Clock::time_point::min();
  for (Early& early : early_) early.command.state->release();
  early_.clear();
}

std::size_t Pipeline::fail_all(const std::function<Error(const PendingCommand&)>& make_error) {
  std::size_t released = 0;
  while (!in_flight_.empty()) {
    PendingCommand& front = in_flight_.front();
    if (front.kind == PendingKind::Caller && !front.state->claimed()) {
      front.state->fail(make_error(front));
    } else if (front.kind == PendingKind::Internal && front.state) {
      front.state->fail(make_error(front));
    }
    pop_front(released);
  }
  first_unexpired_ = 0;
  latest_deadline_ = Clock::time_point::min();
  for (Early& early : early_) early.command.state->release();
  early_.clear();
  return released;
}

}  // namespace redmux::detail
