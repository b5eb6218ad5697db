// CommandState: what a Future and the connection carrying its command share — a reference
// count, the one-time completion (first completer wins), the blocking wait, and the single
// continuation (then() or a resumed coroutine). FutureState<T> (future_state.hpp) adds the
// typed result; connections and queues see only this base.
//
// Threads: add_ref()/release(), deliver()/fail() and the waits are safe from any thread;
// whichever thread completes the state first publishes the result, and a second completion
// is dropped.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>

#include "redmux/error.hpp"
#include "redmux/reply_node.hpp"

namespace redmux::detail {

/// Memory for command states, pooled per thread (src/core/state_pool.cpp): a command's
/// state is allocated and freed once per command, often with thousands alive at once.
void* allocate_state(std::size_t size);
void deallocate_state(void* block, std::size_t size) noexcept;

/// State shared by a Future and the connection carrying its command. The connection's
/// queues hold raw pointers with one reference each.
class CommandState {
 public:
  CommandState() noexcept = default;
  CommandState(const CommandState&) = delete;
  CommandState& operator=(const CommandState&) = delete;

  static void* operator new(std::size_t size) { return allocate_state(size); }
  static void operator delete(void* block, std::size_t size) noexcept {
    deallocate_state(block, size);
  }
  // Over-aligned states (a result type with alignas above 16) bypass the pool.
  static void* operator new(std::size_t size, std::align_val_t align) {
    return ::operator new(size, align);
  }
  static void operator delete(void* block, std::size_t size, std::align_val_t align) noexcept {
    ::operator delete(block, size, align);
  }

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
  }

  /// Completes with the reply (converted to the future's type). Dropped when already
  /// complete. An error reply completes with a ServerError naming the command.
  virtual void deliver(NodeSpan reply) noexcept = 0;
  /// Completes with an error. Dropped when already complete.
  virtual void fail(Error error) noexcept = 0;
  /// For a state standing for several commands (future_state.hpp's BufferedGroup), the
  /// first of them still waiting in a Batch or Transaction not executed; null otherwise.
  virtual CommandState* first_buffered() const noexcept { return nullptr; }

  /// True once a completion has been claimed (the value may still be being written).
  bool claimed() const noexcept { return claimed_.load(std::memory_order_acquire); }
  bool ready() const noexcept {
    return (phase_.load(std::memory_order_acquire) & kStageMask) == kReady;
  }
  /// True while (or once) a thread blocks waiting for this state: yielding or asleep.
  bool waited_on() const noexcept {
    return (phase_.load(std::memory_order_acquire) & (kWaiterBit | kSpinnerBit)) != 0;
  }

  /// Internal: set while the command waits in a Batch or a Transaction that has not been
  /// executed (it cannot complete before execute()), so that get() refuses to wait for it.
  void set_buffered(bool buffered) noexcept {
    if (buffered) {
      phase_.fetch_or(kBufferedBit, std::memory_order_release);
    } else {
      phase_.fetch_and(~kBufferedBit, std::memory_order_release);
    }
  }
  bool buffered() const noexcept {
    return (phase_.load(std::memory_order_acquire) & kBufferedBit) != 0;
  }

  /// Blocks until ready. REQUIRES: !on_io_thread().
  void wait() const noexcept;
  /// Blocks until ready or `timeout` passes; true when ready. REQUIRES: !on_io_thread().
  bool wait_for(std::chrono::nanoseconds timeout) const noexcept;

  /// An I/O thread, around the replies of one read: while one is alive on this thread, a
  /// completion here that releases a thread asleep in wait() wakes it only when flush() is
  /// called or the outermost one ends. A caller woken once then finds the rest of the read's
  /// replies already delivered instead of catching up with the I/O thread and sleeping
  /// again, and the woken thread does not take the CPU from the I/O thread mid-read. The
  /// states keep a reference until they are woken. Threads yielding for their reply see it
  /// at once, as do completions elsewhere.
  class DeferWakes {
   public:
    DeferWakes() noexcept;
    ~DeferWakes();
    DeferWakes(const DeferWakes&) = delete;
    DeferWakes& operator=(const DeferWakes&) = delete;
    /// Wakes the waiters deferred so far on this thread.
    static void flush() noexcept;
  };

  /// An I/O thread, around the delivery of one reply that carried RESP3 attributes (`|`,
  /// before the reply or one of its elements): a command whose result is a Reply keeps them
  /// (Reply::attributes()). They view the read buffer, so only for this scope.
  class WithAttributes {
   public:
    explicit WithAttributes(NodeSpan attributes) noexcept;
    ~WithAttributes();
    WithAttributes(const WithAttributes&) = delete;
    WithAttributes& operator=(const WithAttributes&) = delete;
    /// The attributes of the reply being delivered on this thread; empty outside a scope.
    static NodeSpan current() noexcept;

   private:
    NodeSpan previous_;
  };

  /// The command's name for error messages; static storage (the command table). Written
  /// by the submitting thread before the state is handed to a connection, then only read.
  std::string_view command_name;
  /// Internal: the encoded command, kept only for a command that may be resent after it was
  /// written (Flags::Retryable, or read-only under retryReadOnlyCommands); empty otherwise.
  /// Written under the connection's queue lock, then read only on its I/O thread.
  std::string retained_command;

 protected:
  virtual ~CommandState() = default;
  virtual void destroy() noexcept { delete this; }

  /// First completer wins; everybody else gets false and must not touch the result.
  bool claim() noexcept { return !claimed_.exchange(true, std::memory_order_acq_rel); }
  /// After the result is written: marks ready, wakes waiters, runs the continuation.
  void publish() noexcept;
  /// Installs the continuation; runs it at once (on this thread) if already ready.
  void set_continuation(void (*run)(CommandState*)) noexcept;

 private:
  // phase_: the stage kEmpty → kContinuation (then/co_await installed) → kReady, plus
  // kWaiterBit while a thread sleeps on the futex word (publish() wakes only when it is set)
  // and kSpinnerBit once a thread has started yielding for it (publish() counts the release);
  // kBufferedBit while it waits in a Batch or Transaction not executed yet (set_buffered()).
  static constexpr std::uint32_t kEmpty = 0, kContinuation = 1, kReady = 2, kStageMask = 3,
                                 kWaiterBit = 4, kSpinnerBit = 8, kBufferedBit = 16;
  std::atomic<std::uint32_t> refs_{1};
  std::atomic<bool> claimed_{false};
  mutable std::atomic<std::uint32_t> phase_{kEmpty};
  void (*continuation_)(CommandState*) = nullptr;
};

}  // namespace redmux::detail
