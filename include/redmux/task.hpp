// Task<T>: a coroutine that returns T, so that an application can write
//
//   redmux::Task<long long> add_views(redmux::Database db, std::string book) {
//     long long views = co_await db.incr("views:" + book);
//     co_await db.expire("views:" + book, std::chrono::hours(24));
//     co_return views;
//   }
//
// without a promise_type of its own. A Task is lazy: nothing runs until it is
//   co_await-ed from another coroutine (it runs at once; the awaiting coroutine resumes when
//     it finishes, with its value or its exception),
//   run to completion from a plain thread: `long long v = add_views(db, "42").get();`,
//   started and handed over as a Future: `Future<long long> f = add_views(db, "42").start();`
//     (it runs on this thread until its first co_await of a command that is not complete),
//   or started detached on an I/O pool: `add_views(db, "42").start_on(*mux->io_pool());`
//     (the returned Future may be dropped; the task runs to its end regardless).
//
// Ownership: the Task owns the coroutine until it is started or awaited; start() and
// start_on() hand the coroutine over to itself (it frees itself when it ends). Destroying
// a Task that never started destroys the coroutine without running it. Move-only.
//
// Threads: after a co_await of a Future the coroutine continues on the I/O thread that
// completed the command, so a task's body must not block there (get() inside a task throws
// DeadlockError: co_await instead). get() must not be called on an I/O thread (DeadlockError
// before the task starts). An exception that escapes the body reaches the awaiting coroutine
// as it was thrown; through start(), start_on() and get() it becomes the Future's error (a
// RedmuxError keeps its code; any other exception is errc::handler_failed with its what()).
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "redmux/future.hpp"

namespace redmux {

class IoPool;
template <class T = void>
class Task;

namespace detail {

/// Resumes the coroutine at `frame` on one of the pool's threads, inside an IoThreadScope
/// (`resume(frame)`); if the pool stops before it ran, calls `abandon(frame)` instead.
void start_on_pool(IoPool& pool, void* frame, void (*resume)(void*), void (*abandon)(void*));

/// Where a task's co_return value is kept until it is taken.
template <class T>
class TaskValue {
 public:
  void return_value(T value) { value_.emplace(std::move(value)); }

 protected:
  T take() { return std::move(*value_); }
  Result<T> take_result() { return Result<T>(std::move(*value_)); }

 private:
  std::optional<T> value_;
};
template <>
class TaskValue<void> {
 public:
  void return_void() noexcept {}

 protected:
  void take() noexcept {}
  Result<void> take_result() noexcept { return Result<void>(); }
};

template <class T>
class TaskPromise : public TaskValue<T> {
 public:
  using Handle = std::coroutine_handle<TaskPromise>;

  Task<T> get_return_object() noexcept;
  std::suspend_always initial_suspend() noexcept { return {}; }
  auto final_suspend() noexcept {
    struct Final {
      bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(Handle handle) noexcept {
        TaskPromise& promise = handle.promise();
        if (FutureState<T>* future = promise.future_) {  // started: complete it, free the frame
          Result<T> result = promise.result();
          handle.destroy();
          future->set(std::move(result));
          future->release();
          return std::noop_coroutine();
        }
        return promise.continuation_ ? promise.continuation_ : std::noop_coroutine();
      }
      void await_resume() const noexcept {}
    };
    return Final{};
  }
  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  /// The value, or the exception the body threw, rethrown (for co_await).
  T value() {
    if (exception_) std::rethrow_exception(exception_);
    return this->take();
  }
  /// The value, or the body's exception as an Error (for the Future of start()).
  Result<T> result() noexcept {
    if (exception_) return error_from_exception(exception_, "a Task");
    try {
      return this->take_result();
    } catch (...) {  // moving the value out threw (bad_alloc …)
      return error_from_exception(std::current_exception(), "a Task");
    }
  }

  std::coroutine_handle<> continuation_;  ///< the coroutine co_await-ing this one
  FutureState<T>* future_ = nullptr;      ///< set by start(): one reference, completed at the end

 private:
  std::exception_ptr exception_;
};

}  // namespace detail

template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::TaskPromise<T>;
  using value_type = T;

  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  /// False once started (or moved from).
  bool valid() const noexcept { return static_cast<bool>(handle_); }

  /// Runs the task now on this thread, up to its first suspension; the future completes with
  /// its co_return value or its error.
  Future<T> start() && {
    auto [handle, future] = hand_over("Task::start()");
    handle.resume();
    return future;
  }
  /// Runs the task on this thread until it ends and returns its value, or throws its error.
  /// On an I/O thread: DeadlockError, before the task starts.
  T get() && {
    if (detail::on_io_thread()) detail::deadlock_error("Task::get()").raise();
    return std::move(*this).start().get();
  }
  /// Starts the task on one of `pool`'s I/O threads and returns at once. When the pool
  /// stops before the task started, the future fails with errc::shut_down.
  Future<T> start_on(IoPool& pool) && {
    auto [handle, future] = hand_over("Task::start_on()");
    detail::start_on_pool(
        pool, handle.address(),
        +[](void* frame) { promise_type::Handle::from_address(frame).resume(); },
        +[](void* frame) {
          auto unstarted = promise_type::Handle::from_address(frame);
          detail::FutureState<T>* state = unstarted.promise().future_;
          unstarted.destroy();
          state->fail(Error(errc::shut_down, "redmux: task not started: its I/O pool stopped"));
          state->release();
        });
    return future;
  }

  /// `co_await task` runs it and yields its value (or rethrows its exception); the awaiting
  /// coroutine resumes on the thread where the task ended.
  auto operator co_await() && noexcept {
    struct Awaiter {
      typename promise_type::Handle handle;
      bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
        handle.promise().continuation_ = awaiting;
        return handle;
      }
      T await_resume() { return handle.promise().value(); }
    };
    if (!handle_) Error(errc::invalid_argument, "redmux: co_await of an empty Task").raise();
    return Awaiter{handle_};  // this Task still owns the frame and frees it afterwards
  }

 private:
  friend class detail::TaskPromise<T>;
  explicit Task(typename promise_type::Handle handle) noexcept : handle_(handle) {}

  std::pair<typename promise_type::Handle, Future<T>> hand_over(const char* operation) {
    if (!handle_)
      Error(errc::invalid_argument, std::string("redmux: ") + operation + " on an empty Task")
          .raise();
    auto* state = new detail::FutureState<T>();  // the returned Future's reference
    state->add_ref();                            // the coroutine's, released when it ends
    auto handle = std::exchange(handle_, {});
    handle.promise().future_ = state;
    return {handle, Future<T>(state)};
  }
  void reset() noexcept {
    if (handle_) std::exchange(handle_, {}).destroy();
  }

  typename promise_type::Handle handle_;
};

template <class T>
Task<T> detail::TaskPromise<T>::get_return_object() noexcept {
  return Task<T>(Handle::from_promise(*this));
}

}  // namespace redmux
