// Future<T>: the result of one command, redmux's own (std::future has no continuations and
// costs too much at millions per second).
//
// Ownership: the caller's Future and the connection that carries the command share one
// reference-counted state; whichever lets go last frees it. Every state completes exactly
// once — with a value, a server error, a timeout, a connection error or queue-full; a second
// completion (say a reply arriving after the timeout fired) is dropped.
//
// Threads: a Future may be moved to and used from any thread, but one Future object must
// not be used by two threads at once. `get()`, `wait()`, `wait_for()` and `result()` block
// the calling thread; on one of redmux's I/O threads (or inside a callback that redmux
// runs) they refuse with DeadlockError instead of blocking, because that thread is the one
// that would deliver the reply. `then()` callbacks and coroutines resumed by `co_await` run
// on the I/O thread that completed the command (or at once on the calling thread when the
// future is already complete): they must not block.
#pragma once

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "redmux/convert.hpp"
#include "redmux/flags.hpp"
#include "redmux/reply.hpp"
#include "redmux/result.hpp"

namespace redmux {

/// How a thread blocked in get(), wait(), wait_for() or result() waits. Process-wide.
enum class WaitPolicy {
  /// The default. The thread first yields the CPU to other threads, checking for its reply
  /// in between, for about four times as long as recent waits took — but only while the
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
/// recent waits took, or zero when that is more than 20 ms.
std::chrono::nanoseconds wait_spin_budget() noexcept;
/// Feeds how long one blocking wait took into that average (every adaptive wait that found
/// its command still running does; public for tests).
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

/// The message of a server error reply to command `name`: its text and the command.
Error server_error_from(NodeSpan reply, std::string_view command_name);

/// True when the reply's root is an error (simple or bulk).
inline bool is_error_reply(NodeSpan reply) noexcept {
  return !reply.empty() &&
         (reply[0].type == ReplyType::SimpleError || reply[0].type == ReplyType::BulkError);
}

/// State shared by a Future and the connection carrying its command. The connection's
/// queues hold raw pointers with one reference each.
class CommandState {
 public:
  CommandState() noexcept = default;
  CommandState(const CommandState&) = delete;
  CommandState& operator=(const CommandState&) = delete;

  void add_ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  void release() noexcept {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy();
  }

  /// Completes with the reply (converted to the future's type). Dropped when already
  /// complete. An error reply completes with a ServerError naming the command.
  virtual void deliver(NodeSpan reply) noexcept = 0;
  /// Completes with an error. Dropped when already complete.
  virtual void fail(Error error) noexcept = 0;

  /// True once a completion has been claimed (the value may still be being written).
  bool claimed() const noexcept { return claimed_.load(std::memory_order_acquire); }
  bool ready() const noexcept {
    return (phase_.load(std::memory_order_acquire) & kStageMask) == kReady;
  }
  /// True while (or once) a thread blocks waiting for this state: yielding or asleep.
  bool waited_on() const noexcept {
    return (phase_.load(std::memory_order_acquire) & (kWaiterBit | kSpinnerBit)) != 0;
  }

  /// Blocks until ready. REQUIRES: !on_io_thread().
  void wait() const noexcept;
  /// Blocks until ready or `timeout` passes; true when ready. REQUIRES: !on_io_thread().
  bool wait_for(std::chrono::nanoseconds timeout) const noexcept;

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
  // and kSpinnerBit once a thread has started yielding for it (publish() counts the release).
  static constexpr std::uint32_t kEmpty = 0, kContinuation = 1, kReady = 2, kStageMask = 3,
                                 kWaiterBit = 4, kSpinnerBit = 8;
  std::atomic<std::uint32_t> refs_{1};
  std::atomic<bool> claimed_{false};
  mutable std::atomic<std::uint32_t> phase_{kEmpty};
  void (*continuation_)(CommandState*) = nullptr;
};

template <class T>
class FutureState final : public CommandState {
 public:
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (is_error_reply(reply)) {
      result_.emplace(server_error_from(reply, command_name));
    } else {
      try {
        if constexpr (requires { ReplyTraits<T>::convert(reply); }) {
          Result<T> converted = from_nodes<T>(reply);
          if (!converted.has_value() && !command_name.empty()) {
            converted = Error(converted.error().code(), "reply to " + std::string(command_name) +
                                                            ": " + converted.error().message());
          }
          result_.emplace(std::move(converted));
        } else {  // a type only ever completed by set() (when_all's vector of results)
          result_.emplace(Error(errc::unexpected_reply, "redmux: no reply conversion for type"));
        }
      } catch (const std::exception& e) {  // conversion ran out of memory …
        result_.emplace(Error(errc::unexpected_reply, e.what()));
      }
    }
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    result_.emplace(std::move(error));
    publish();
  }
  /// Completes with a value computed without a reply (when_all, ready futures).
  void set(Result<T> result) noexcept {
    if (!claim()) return;
    result_.emplace(std::move(result));
    publish();
  }

  /// REQUIRES: ready().
  Result<T>& result() noexcept { return *result_; }

  /// Installs `callback`; the caller hands over one reference, released after the callback
  /// ran (so the callback may drop every other reference).
  template <class F>
  void then(F&& callback) {
    callback_ = std::forward<F>(callback);
    set_continuation(+[](CommandState* self) { static_cast<FutureState*>(self)->run_callback(); });
  }
  void resume_on_ready(std::coroutine_handle<> handle) {
    coroutine_ = handle;
    set_continuation(
        +[](CommandState* self) { static_cast<FutureState*>(self)->coroutine_.resume(); });
  }

 private:
  void run_callback() noexcept {
    {
      IoThreadScope scope;  // a callback must not block, even when run on the caller's thread
      auto callback = std::move(callback_);
      callback_ = nullptr;
      try {
        callback(std::move(*result_));
      } catch (...) {
        // A throwing callback must not take the I/O thread down; the exception is dropped.
      }
    }
    release();  // the reference then() was given; may free this state
  }

  std::optional<Result<T>> result_;
  std::function<void(Result<T>)> callback_;
  std::coroutine_handle<> coroutine_;
};

}  // namespace detail

/// The result of a command, available later.
template <class T>
class Future {
 public:
  using value_type = T;

  Future() = default;
  /// Adopts one reference to `state`.
  explicit Future(detail::FutureState<T>* state) noexcept : state_(state) {}
  Future(Future&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  Future& operator=(Future&& other) noexcept {
    if (this != &other) {
      reset();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  Future(const Future&) = delete;
  Future& operator=(const Future&) = delete;
  ~Future() { reset(); }

  /// A future that is already complete.
  static Future ready_with(Result<T> result) {
    auto* state = new detail::FutureState<T>();
    state->set(std::move(result));
    return Future(state);
  }

  /// False for a default-constructed or moved-from future (or one consumed by then()).
  bool valid() const noexcept { return state_ != nullptr; }
  /// True once the command has completed. Never blocks.
  bool ready() const noexcept { return state_ && state_->ready(); }

  /// Blocks until complete and returns the value, or throws the typed error (ServerError,
  /// TimeoutError, ConnectionError, QueueFullError …). On an I/O thread: DeadlockError.
  T get() {
    block("Future::get()");
    if constexpr (std::is_void_v<T>) {
      state_->result().value();
    } else {
      return std::move(state_->result()).value();
    }
  }

  /// Blocks until complete; the value or the error, never throwing (on an I/O thread, an
  /// errc::deadlock error).
  Result<T> result() {
    if (!state_) return Error(errc::invalid_argument, "redmux: result() on an empty Future");
    if (!state_->ready() && detail::on_io_thread())
      return detail::deadlock_error("Future::result()");
    state_->wait();
    return std::move(state_->result());
  }

  /// Blocks until complete. Throws DeadlockError on an I/O thread.
  void wait() const { block("Future::wait()"); }

  /// Waits up to `timeout`; true when complete. Throws DeadlockError on an I/O thread.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    check();
    if (state_->ready()) return true;
    if (detail::on_io_thread()) detail::deadlock_error("Future::wait_for()").raise();
    return state_->wait_for(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout));
  }

  /// Runs `callback(Result<T>)` once complete: on the I/O thread that completes it, or at
  /// once on this thread when already complete. It must not block; an exception it throws
  /// is dropped. Consumes the future (valid() is false afterwards).
  template <class F>
  void then(F&& callback) {
    check();
    std::exchange(state_, nullptr)->then(std::forward<F>(callback));  // hands over our reference
  }

  /// `co_await future` yields the value or throws the typed error; the coroutine resumes on
  /// the I/O thread that completed the command.
  auto operator co_await() && noexcept {
    struct Awaiter {
      detail::FutureState<T>* state;
      bool await_ready() const noexcept { return state->ready(); }
      void await_suspend(std::coroutine_handle<> handle) { state->resume_on_ready(handle); }
      T await_resume() {
        if constexpr (std::is_void_v<T>) {
          state->result().value();
        } else {
          return std::move(state->result()).value();
        }
      }
    };
    check();
    return Awaiter{state_};
  }

 private:
  void check() const {
    if (!state_) Error(errc::invalid_argument, "redmux: use of an empty Future").raise();
  }
  void block(const char* operation) const {
    check();
    if (state_->ready()) return;
    if (detail::on_io_thread()) detail::deadlock_error(operation).raise();
    state_->wait();
  }
  void reset() noexcept {
    if (state_) std::exchange(state_, nullptr)->release();
  }

  detail::FutureState<T>* state_ = nullptr;
};

/// A future that completes when all of `futures` have, with each one's result in order.
/// Consumes the futures.
template <class T>
Future<std::vector<Result<T>>> when_all(std::vector<Future<T>> futures) {
  using All = std::vector<Result<T>>;
  auto* out = new detail::FutureState<All>();
  if (futures.empty()) {
    out->set(All{});
    return Future<All>(out);
  }
  struct Gather {
    std::vector<std::optional<Result<T>>> slots;
    std::atomic<std::size_t> remaining;
    detail::FutureState<All>* out;
  };
  auto gather = std::make_shared<Gather>();
  gather->slots.resize(futures.size());
  gather->remaining.store(futures.size());
  gather->out = out;
  out->add_ref();  // held by the gather until it completes
  for (std::size_t i = 0; i < futures.size(); ++i) {
    futures[i].then([gather, i](Result<T> r) {
      gather->slots[i].emplace(std::move(r));
      if (gather->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        All all;
        all.reserve(gather->slots.size());
        for (auto& slot : gather->slots) all.push_back(std::move(*slot));
        gather->out->set(std::move(all));
        gather->out->release();
      }
    });
  }
  return Future<All>(out);
}

}  // namespace redmux
