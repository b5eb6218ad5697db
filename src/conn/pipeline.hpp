// Pipeline: the in-flight side of one connection, run on its I/O thread only (sans-IO).
// Commands enter in the order their bytes are written; each complete reply completes the
// oldest one (RESP replies come back in order). Deadlines are enforced precisely: a timer
// armed at next_deadline() calls expire(now).
//
// Invariant: a command that timed out (or whose caller otherwise stopped waiting) stays in
// flight until its reply arrives; the reply is parsed and dropped. Removing it early would
// hand every later reply to the wrong caller. Only its entry stays, though: its slot of
// maxQueuedCommands goes back when it times out, not when the late reply arrives.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
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
  /// Builds a timed-out command's error; `written` is when the write that carried it started
  /// (time_point{}: its caller wrote it, or the pipeline keeps no marks).
  using TimeoutError = std::function<Error(const PendingCommand&, Clock::time_point written)>;

  Pipeline() = default;
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline();

  /// The commands whose bytes are about to be written, in write order.
  void push(std::span<const PendingCommand> commands);
  /// The same, noting when the write that carries them started (observed connections:
  /// one mark per write, not per command). `written` = time_point{}: their callers wrote
  /// them themselves, as they were created.
  void push(std::span<const PendingCommand> commands, Clock::time_point written);
  /// When the write of front() started: time_point{} when its callers wrote it, or when
  /// it was pushed without a mark. REQUIRES: !empty().
  Clock::time_point front_written();

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

  /// Fails every command whose deadline is <= now (they stay in flight, holding no slot of
  /// maxQueuedCommands any more: `release` runs for each slot, before its future completes).
  /// Returns how many.
  std::size_t expire(Clock::time_point now, const TimeoutError& make_error,
                     const SlotRelease& release);
  /// The earliest deadline of a command not yet failed, or time_point::max().
  Clock::time_point next_deadline() const;

  /// The connection broke: fails every command in flight with `error` (built per command),
  /// releases them all. Returns how many slots of maxQueuedCommands were given back.
  std::size_t fail_all(const std::function<Error(const PendingCommand&)>& make_error);

  /// The connection broke: moves every command in flight to `out`, in write order, each
  /// with its reference (the caller completes, resends or releases them). With `written`,
  /// when its write started for each, as front_written() would have said (observed
  /// connections).
  void take_all(std::vector<PendingCommand>& out,
                std::vector<Clock::time_point>* written = nullptr);
  /// The oldest command awaiting its reply. REQUIRES: !empty().
  const PendingCommand& front() const { return in_flight_.front(); }
  /// Its reply arrived and says it did not run (-REDIRECT): the oldest command leaves with its
  /// reference and its slot of maxQueuedCommands, which the caller hands on or gives back.
  /// REQUIRES: !empty().
  PendingCommand take_front();

  std::size_t size() const noexcept { return in_flight_.size(); }
  /// For status(), from any thread: the entries in flight that stand for an accepted command
  /// (`counted` or `tallied`) not timed out — redmux's own commands are not counted.
  std::size_t awaited() const noexcept { return awaited_.load(std::memory_order_relaxed); }
  bool empty() const noexcept { return in_flight_.empty(); }
  void shrink() { in_flight_.shrink_to(1024); }

 private:
  /// A command whose deadline is earlier than one queued before it, by its position in the
  /// stream of entries ever pushed: still in flight when position >= popped(), at
  /// in_flight_[position - popped()].
  struct Early {
    Clock::time_point deadline;
    std::uint64_t position;
    bool operator>(const Early& other) const noexcept { return deadline > other.deadline; }
  };

  void pop_front(std::size_t& released);
  /// When the write carrying the entry at stream `position` started (see front_written()).
  Clock::time_point written_at(std::uint64_t position) const;
  /// Fails one command whose deadline passed, giving its slot back first.
  void expire_one(PendingCommand& command, std::uint64_t position, const TimeoutError& make_error,
                  const SlotRelease& release);
  void note_awaited(std::ptrdiff_t change) noexcept {
    awaited_.store(awaited_.load(std::memory_order_relaxed) + change, std::memory_order_relaxed);
  }

  /// Entries that have left in_flight_, ever: counted as pushed minus present, so that a
  /// reply costs no count of its own.
  std::uint64_t popped() const noexcept { return pushed_ - in_flight_.size(); }

  /// When a write started, for the entries pushed before `end` (a stream position).
  struct WriteMark {
    std::uint64_t end;
    Clock::time_point at;
  };

  RingQueue<PendingCommand> in_flight_;
  RingQueue<WriteMark> marks_;
  std::uint64_t pushed_ = 0;         ///< entries ever pushed
  std::size_t first_unexpired_ = 0;  ///< callers before this index have been failed
  Clock::time_point latest_deadline_ = Clock::time_point::min();
  std::vector<Early> early_;  ///< min-heap on deadline
  /// Written on the I/O thread only (so a load and a store, not a locked add), read by any.
  std::atomic<std::size_t> awaited_{0};
};

}  // namespace redmux::detail
