// Future<T>: the result of one command, redmux's own (std::future has no continuations and
// costs too much at millions per second). Also when_all(), a future of many.
//
// Ownership: the caller's Future and the connection that carries the command share one
// reference-counted state (future_state.hpp); whichever lets go last frees it. Every state
// completes exactly once — with a value, a server error, a timeout, a connection error or
// queue-full; a second completion (say a reply arriving after the timeout fired) is dropped.
//
// Threads: a Future may be moved to and used from any thread, but one Future object must
// not be used by two threads at once. `get()`, `wait()`, `wait_for()` and `result()` block
// the calling thread; on one of redmux's I/O threads (or inside a callback that redmux
// runs) they refuse with DeadlockError instead of blocking, because that thread is the one
// that would deliver the reply (wait_policy.hpp). `then()` callbacks and coroutines resumed
// by `co_await` run on the I/O thread that completed the command (or at once on the calling
// thread when the future is already complete): they must not block. For coroutines without
// a promise_type of your own, see Task<T> (task.hpp).
#pragma once

#include <atomic>
#include <chrono>
#include <coroutine>
#include <cstddef>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "redmux/flags.hpp"
#include "redmux/future_state.hpp"
#include "redmux/result.hpp"
#include "redmux/wait_policy.hpp"

namespace redmux {

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

  /// False for a default-constructed or moved-from future, or one consumed by get(),
  /// result(), then() or co_await.
  bool valid() const noexcept { return state_ != nullptr; }
  /// True once the command has completed. Never blocks.
  bool ready() const noexcept { return state_ && state_->ready(); }

  /// Blocks until complete and returns the value, or throws the typed error (ServerError,
  /// TimeoutError, ConnectionError, QueueFullError …). On an I/O thread: DeadlockError.
  /// Consumes the future, as std::future::get() does: valid() is false afterwards, and
  /// another get() throws InvalidArgumentError ("use of an empty Future").
  T get() {
    block("Future::get()");
    const Consumed consumed(std::exchange(state_, nullptr));
    if constexpr (std::is_void_v<T>) {
      consumed.state->result().value();
    } else {
      return std::move(consumed.state->result()).value();
    }
  }

  /// Blocks until complete; the value or the error, never throwing (on an I/O thread, an
  /// errc::deadlock error, and the future stays valid). Consumes the future, like get():
  /// another result() returns an errc::invalid_argument error.
  Result<T> result() {
    if (!state_) return Error(errc::invalid_argument, "redmux: result() on an empty Future");
    if (!state_->ready()) {
      if (detail::on_io_thread()) return detail::deadlock_error("Future::result()");
      if (const detail::CommandState* buffered = state_->buffered_command()) {
        return detail::unexecuted_error("Future::result()", buffered->command_name,
                                        buffered != state_);
      }
    }
    state_->wait();
    const Consumed consumed(std::exchange(state_, nullptr));
    return std::move(consumed.state->result());
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
  /// once on this thread when already complete. It must not block. Consumes this future
  /// (valid() is false afterwards) and returns a future of what the callback returns, so
  /// continuations chain:
  ///   db.get("n").then([](Result<std::optional<std::string>> r) { return r.value()->size(); })
  ///       .then([](Result<std::size_t> n) { … });
  /// A callback returning U gives Future<U> (void gives Future<void>); one returning
  /// Result<U> or Future<U> gives Future<U> completed with that result (a Future<U> — say
  /// the next command — is awaited without blocking). An exception the callback throws
  /// completes the returned future with it: a RedmuxError keeps its code (so `r.value()`
  /// passes a failure on), any other is errc::handler_failed. The returned future may be
  /// dropped: the callback runs all the same, but what it threw is then seen by nobody (it
  /// does not reach Multiplexer::on_error()): catch inside the callback what must be seen.
  template <class F>
  auto then(F&& callback) -> Future<typename detail::ChainValue<
      std::remove_cvref_t<std::invoke_result_t<std::decay_t<F>&, Result<T>>>>::type> {
    using R = std::remove_cvref_t<std::invoke_result_t<std::decay_t<F>&, Result<T>>>;
    using U = typename detail::ChainValue<R>::type;
    check();
    auto* next = new detail::FutureState<U>();
    next->add_ref();  // one for the returned Future, one for the continuation below
    // Waiting for `next` must fail, not hang, while this command waits for execute().
    if (detail::CommandState* source = state_->buffered_source()) {
      next->continue_buffered(source);
    }
    std::exchange(state_, nullptr)
        ->then([next, callback = std::forward<F>(callback)](Result<T> result) mutable {
          chain<R>(*next, callback, std::move(result));
        });
    return Future<U>(next);
  }

  /// `co_await future` yields the value or throws the typed error; the coroutine resumes on
  /// the I/O thread that completed the command. Consumes the future, like get(): a named one
  /// (`co_await f`) is not valid() afterwards.
  auto operator co_await() && { return awaiter(); }
  auto operator co_await() & { return awaiter(); }

 private:
  template <class>
  friend class Future;
  template <class V>
  friend Future<std::vector<Result<V>>> when_all(std::vector<Future<V>> futures);

  /// Runs `callback(result)` and completes `next` with what it returns (see then()); releases
  /// the reference to `next` the continuation held.
  template <class R, class U, class F>
  static void chain(detail::FutureState<U>& next, F& callback, Result<T> result) noexcept {
    try {
      if constexpr (std::is_void_v<R>) {
        callback(std::move(result));
        next.set(Result<void>());
      } else if constexpr (std::is_same_v<R, Future<U>>) {
        Future<U> inner = callback(std::move(result));
        if (!inner.valid()) {
          next.set(
              Error(errc::invalid_argument, "then(): the continuation returned an empty Future"));
        } else {
          next.add_ref();  // held by the inner future's continuation
          std::exchange(inner.state_, nullptr)->then([&next](Result<U> r) {
            next.set(std::move(r));
            next.release();
          });
        }
      } else {
        next.set(Result<U>(callback(std::move(result))));
      }
    } catch (...) {
      next.set(detail::error_from_exception(std::current_exception(), "a then() continuation"));
    }
    next.release();
  }

  void check() const {
    if (!state_) Error(errc::invalid_argument, "redmux: use of an empty Future").raise();
  }
  void block(const char* operation) const {
    check();
    if (state_->ready()) return;
    if (detail::on_io_thread()) detail::deadlock_error(operation).raise();
    if (const detail::CommandState* buffered = state_->buffered_command()) {
      detail::unexecuted_error(operation, buffered->command_name, buffered != state_).raise();
    }
    state_->wait();
  }
  void reset() noexcept {
    if (state_) std::exchange(state_, nullptr)->release();
  }
  /// The state taken out of a future that get() or result() consumes: released once the
  /// value (or the exception) has been built from it.
  struct Consumed {
    detail::FutureState<T>* state;
    explicit Consumed(detail::FutureState<T>* taken) noexcept : state(taken) {}
    Consumed(const Consumed&) = delete;
    Consumed& operator=(const Consumed&) = delete;
    ~Consumed() { state->release(); }
  };

  /// What co_await waits with: it holds the future's reference until the value is taken.
  struct Awaiter {
    Consumed consumed;
    bool await_ready() const noexcept { return consumed.state->ready(); }
    void await_suspend(std::coroutine_handle<> handle) { consumed.state->resume_on_ready(handle); }
    T await_resume() {
      if constexpr (std::is_void_v<T>) {
        consumed.state->result().value();
      } else {
        return std::move(consumed.state->result()).value();
      }
    }
  };
  Awaiter awaiter() {
    check();
    return Awaiter{Consumed(std::exchange(state_, nullptr))};
  }

  detail::FutureState<T>* state_ = nullptr;
};

/// A future that completes when all of `futures` have, with each one's result in order.
/// Consumes the futures. Throws InvalidArgumentError when one of them is empty.
template <class T>
Future<std::vector<Result<T>>> when_all(std::vector<Future<T>> futures) {
  using All = std::vector<Result<T>>;
  // Waiting for the result fails, not hangs, while any of them waits for execute(); they
  // may belong to several Batches, executed one at a time. An empty future among them
  // throws here, before anything is allocated.
  std::vector<detail::CommandState*> buffered;
  for (Future<T>& future : futures) {
    future.check();
    if (detail::CommandState* source = future.state_->buffered_source()) {
      buffered.push_back(source);
    }
  }
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
  if (buffered.size() == 1) {
    out->continue_buffered(buffered.front());
  } else if (!buffered.empty()) {
    auto* group = new detail::BufferedGroup(std::move(buffered));
    out->continue_buffered(group);  // takes a reference of its own
    group->release();
  }
  for (std::size_t i = 0; i < futures.size(); ++i) {
    // The state's own continuation, not then(): no chained future is needed here.
    std::exchange(futures[i].state_, nullptr)->then([gather, i](Result<T> r) {
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
