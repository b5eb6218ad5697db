// Pipeline: the in-flight side of one connection, run on its I/O thread only (sans-IO).
// Commands enter in the order their bytes are written; each complete reply completes the
// oldest one (RESP replies come back in order). Deadlines are enforced precisely: a timer
// armed at next_deadline() calls expire(now).
//
// Invariant: a command that timed out (or whose caller otherwise stopped waiting) stays in
// flight until its reply arrives; the reply is parsed and dropped. Removing it early would
// hand every later reply to the wrong caller.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "conn/pending_command.hpp"
#include "conn/ring_queue.hpp"
#include "redmux/reply.hpp"

namespace redmux::detail {

class Pipeline {
 public:
  /// Called for error replies that nobody waits for: (the command, the reply).
  using ErrorReport = std::function<void(const PendingCommand& command, NodeSpan reply)>;
  /// Builds the timeout error for one command (the connection knows the diagnostics).
  using TimeoutError = std::function<Error(const PendingCommand&, Clock::time_point now)>;

  Pipeline() = default;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline();

  /// The commands whose bytes are about to be written, in write order.
  void push(std::span<const PendingCommand> commands);

  /// InternalFailed: one of redmux's own commands (a SELECT for a database switch) failed;
  /// the commands written behind it would run in the wrong context, so the connection must
  /// be reset.
  enum class ReplyOutcome { Delivered, Unexpected, InternalFailed };
  /// Gives back one slot of maxQueuedCommands.
  using SlotRelease = std::function<void()>;
  /// A complete reply arrived: completes the oldest command. Its queue slot is given back
  /// *before* its future completes, so a caller woken by the reply always finds room for its
  /// next command. Unexpected: nothing was waiting (the stream is out of sync).
  ReplyOutcome on_reply(NodeSpan reply, const ErrorReport& report, const SlotRelease& release);
  /// A subscribe-family confirmation push (`kind`: Subscribe, PatternUnsubscribe …) arrived:
  /// it answers one name of the oldest command when that is a PubSub command confirmed by
  /// this kind, which leaves once all its names are confirmed. False when it answers nothing
  /// in flight (an unsolicited one, e.g. sunsubscribe after a slot moved).
  bool on_confirmation(resp::PushKind kind);

  /// Fails every command whose deadline is <= now (they stay in flight). Returns how many.
  std::size_t expire(Clock::time_point now, const TimeoutError& make_error);
  /// The earliest deadline of a command not yet failed, or time_point::max().
  Clock::time_point next_deadline() const;

  /// The connection broke: fails every command in flight with `error` (built per command),
  /// releases them all. Returns how many slots of maxQueuedCommands were given back.
  std::size_t fail_all(const std::function<Error(const PendingCommand&)>& make_error);

  /// The connection broke: moves every command in flight to `out`, in write order, each
  /// with its reference (the caller completes, resends or releases them).
  void take_all(std::vector<PendingCommand>& out);
  /// The oldest command awaiting its reply. REQUIRES: !empty().
  const PendingCommand& front() const { return in_flight_.front(); }

  std::size_t size() const noexcept { return in_flight_.size(); }
  bool empty() const noexcept { return in_flight_.empty(); }
  void shrink() { in_flight_.shrink_to(1024); }

 private:
  /// A command whose deadline is earlier than one queued before it: a copy of its entry (for
  /// the timeout error) holding one more reference to its state.
  struct Early {
    PendingCommand command;
    bool operator>(const Early& other) const noexcept {
      return command.deadline > other.command.deadline;
    }
  };

  void pop_front(std::size_t& released);

  RingQueue<PendingCommand> in_flight_;
  std::size_t first_unexpired_ = 0;  ///< callers before this index have been failed
  Clock::time_point latest_deadline_ = Clock::time_point::min();
  std::vector<Early> early_;  ///< min-heap on deadline; each holds a reference
};

}  // namespace redmux::detail
