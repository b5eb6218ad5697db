#include "conn/pipeline.hpp"

#include <algorithm>

namespace redmux::detail {

Pipeline::~Pipeline() {
  while (!in_flight_.empty()) {
    if (in_flight_.front().state) in_flight_.front().state->release();
    in_flight_.pop_front();
  }
}

void Pipeline::push(std::span<const PendingCommand> commands) {
  std::ptrdiff_t awaited = 0;
  for (const PendingCommand& command : commands) {
    if (command.kind == PendingKind::Caller) {
      if (command.deadline < latest_deadline_) {
        // Out of order (a shorter per-call timeout): track it in the heap as well, since the
        // in-order scan in expire() stops at the first deadline in the future.
        early_.push_back({command.deadline, pushed_ + (&command - commands.data())});
        std::push_heap(early_.begin(), early_.end(), std::greater<>());
      } else {
        latest_deadline_ = command.deadline;
      }
    }
    // By the flags alone, so that every entry counted here is uncounted exactly once (when
    // it leaves, or when it times out and its flags are cleared).
    awaited += command.counted || command.tallied;
    in_flight_.push_back(command);
  }
  pushed_ += commands.size();
  if (awaited != 0) note_awaited(awaited);
}

void Pipeline::push(std::span<const PendingCommand> commands, Clock::time_point written) {
  push(commands);
  marks_.push_back({pushed_, written});
}

Clock::time_point Pipeline::front_written() {
  const std::uint64_t position = popped();
  while (!marks_.empty() && marks_.front().end <= position) marks_.pop_front();
  return marks_.empty() ? Clock::time_point{} : marks_.front().at;
}

Clock::time_point Pipeline::written_at(std::uint64_t position) const {
  for (std::size_t i = 0; i < marks_.size(); ++i) {
    if (marks_[i].end > position) return marks_[i].at;
  }
  return Clock::time_point{};
}

void Pipeline::pop_front(std::size_t& released) {
  PendingCommand& front = in_flight_.front();
  if (front.counted || front.tallied) note_awaited(-1);
  if (front.state) front.state->release();
  if (front.counted) ++released;
  in_flight_.pop_front();
  if (first_unexpired_ > 0) --first_unexpired_;
}

PendingCommand Pipeline::take_front() {
  const PendingCommand front = in_flight_.front();
  if (front.counted || front.tallied) note_awaited(-1);
  in_flight_.pop_front();
  if (first_unexpired_ > 0) --first_unexpired_;
  return front;
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
  if (front.counted || front.tallied) {
    note_awaited(-1);
    if (front.counted && release) release();
  }
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
    case PendingKind::PubSub:  // refused: none of its names was subscribed
      if (front.state) {
        front.state->deliver(reply);  // reports it, naming the channel, before any waiter
      } else if (report) {
        report(front, reply);
      }
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

void Pipeline::expire_one(PendingCommand& command, std::uint64_t position,
                          const TimeoutError& make_error, const SlotRelease& release) {
  // The entry stays (its reply must still be skipped) but stops standing for a command: its
  // slot goes back before its future completes, like a reply's (on_reply()).
  if (command.counted || command.tallied) note_awaited(-1);
  if (command.counted && release) release();
  command.counted = false;
  command.tallied = false;
  command.state->fail(make_error(command, written_at(position)));
}

std::size_t Pipeline::expire(Clock::time_point now, const TimeoutError& make_error,
                             const SlotRelease& release) {
  std::size_t failed = 0;
  while (!early_.empty() && early_.front().deadline <= now) {
    std::pop_heap(early_.begin(), early_.end(), std::greater<>());
    const std::uint64_t position = early_.back().position;
    early_.pop_back();
    if (position < popped()) continue;  // answered already
    PendingCommand& command = in_flight_[static_cast<std::size_t>(position - popped())];
    if (!command.state->claimed()) {
      expire_one(command, position, make_error, release);
      ++failed;
    }
  }
  std::size_t i = first_unexpired_;
  for (; i < in_flight_.size(); ++i) {
    PendingCommand& command = in_flight_[i];
    if (command.kind != PendingKind::Caller) continue;
    if (command.deadline > now) break;
    if (!command.state->claimed()) {
      expire_one(command, popped() + i, make_error, release);
      ++failed;
    }
  }
  first_unexpired_ = i;
  return failed;
}

Clock::time_point Pipeline::next_deadline() const {
  Clock::time_point next = early_.empty() ? Clock::time_point::max() : early_.front().deadline;
  for (std::size_t i = first_unexpired_; i < in_flight_.size(); ++i) {
    if (in_flight_[i].kind != PendingKind::Caller) continue;
    return std::min(next, in_flight_[i].deadline);
  }
  return next;
}

void Pipeline::take_all(std::vector<PendingCommand>& out, std::vector<Clock::time_point>* written) {
  if (written) written->clear();
  std::size_t mark = 0;  // marks_ and the entries are both in stream order
  while (!in_flight_.empty()) {
    if (written) {
      const std::uint64_t position = popped();
      while (mark < marks_.size() && marks_[mark].end <= position) ++mark;
      written->push_back(mark < marks_.size() ? marks_[mark].at : Clock::time_point{});
    }
    out.push_back(in_flight_.front());  // its reference moves to `out`
    in_flight_.pop_front();
  }
  first_unexpired_ = 0;
  latest_deadline_ = Clock::time_point::min();
  early_.clear();
  marks_.clear();
  awaited_.store(0, std::memory_order_relaxed);
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
  early_.clear();
  marks_.clear();
  return released;
}

}  // namespace redmux::detail
