// How a thread waits for a command's reply: the process-wide WaitPolicy of blocking waits
// (get(), wait(), wait_for(), result()), and the rule that makes those waits safe — a thread
// running redmux I/O work (an IoPool thread, or any thread inside a callback redmux runs)
// must not block, because it is the thread that would deliver the reply; such a wait is
// refused with DeadlockError instead.
//
// Threads: every function here is safe from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

#include "redmux/error.hpp"

namespace redmux {

/// How a thread blocked in get(), wait(), wait_for() or result() waits. Process-wide.
enum class WaitPolicy {
  /// The default. The thread first yields the CPU to other threads, checking for its reply
  /// in between, for about four times as long as its recent waits took — but only while the
  /// yields find other threads with work (at most 50 µs on an otherwise idle CPU), for at
  /// most two turns of the CPU to other threads, and never when replies typically take more
  /// than 5 ms; then it sleeps until woken. With many blocked threads on few CPUs this saves
  /// a wake-up through the scheduler per command.
  Adaptive,
  /// The thread sleeps at once and is woken by the I/O thread when the reply arrives. Nor
  /// does the I/O thread yield its CPU for the callers it released before it writes.
  Sleep,
};
/// Sets the wait policy for every blocking wait that starts afterwards.
void set_wait_policy(WaitPolicy policy) noexcept;
WaitPolicy wait_policy() noexcept;

namespace detail {

/// True on a thread that is running redmux I/O work: an IoPool thread, any thread while it
/// runs one of redmux's completion handlers, or a thread inside the run() of an io_context
/// handed to IoPool::wrap() (the user's own handlers there included).
bool on_io_thread() noexcept;

/// Under WaitPolicy::Adaptive, the longest a blocking wait starting now would yield before
/// sleeping (it also stops sooner when its yields find nobody else to run): four times what
/// this thread's recent waits took (a new thread starts from the average other threads last
/// published), or zero when that is more than 20 ms.
std::chrono::nanoseconds wait_spin_budget() noexcept;
/// Feeds how long one blocking wait took into this thread's average (every adaptive wait
/// that found its command still running does; public for tests).
void record_wait(std::chrono::nanoseconds waited) noexcept;
/// How many completions on this thread released a thread blocked waiting for them (yielding
/// or asleep) since the last call; resets the count. An I/O thread reads it after a read's
/// replies: the threads released are about to queue their next commands.
std::size_t take_released_waiters() noexcept;

/// Marks the current thread as running redmux I/O work for the guard's lifetime.
class IoThreadScope {
 public:
  IoThreadScope() noexcept;
  ~IoThreadScope();
  IoThreadScope(const IoThreadScope&) = delete;
  IoThreadScope& operator=(const IoThreadScope&) = delete;

 private:
  bool previous_;
};

/// The error a blocking wait on an I/O thread gets, naming the operation tried.
Error deadlock_error(const char* operation);
/// The error of a wait (`operation`) for `command` in a Batch or a Transaction that has not
/// been executed: it would never end. `continued`: the future waited on is not `command`'s
/// own but a then() or when_all() of it.
Error unexecuted_error(const char* operation, std::string_view command, bool continued = false);

}  // namespace detail
}  // namespace redmux
