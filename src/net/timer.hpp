// The seam through which the layers above net (mux, pubsub) wait and hand work to an I/O
// thread without including Asio: post_to() and run_after() run a task on an io_context's
// thread, and Timer is one re-armable timer there. Behind them are asio::post and
// asio::steady_timer; nothing else.
//
// Threads: post_to() and run_after() are safe from any thread. A Timer is not thread-safe
// (as asio::steady_timer): its owner touches it under its own lock, or on its thread only.
// Tasks run on the io_context's thread; a task whose io_context is stopped first never runs
// (it is destroyed with the io_context), so a task must own, or weakly hold, what it uses.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

namespace asio {
class io_context;
}  // namespace asio

namespace redmux::detail {

/// Runs `task` on `io`'s thread soon.
void post_to(asio::io_context& io, std::function<void()> task);

/// Runs `task` on `io`'s thread once `delay` has passed (soon when it is zero or less).
void run_after(asio::io_context& io, std::chrono::milliseconds delay, std::function<void()> task);

/// One timer on one io_context. Arming it again cancels the wait before.
class Timer {
 public:
  using Clock = std::chrono::steady_clock;
  /// Called on the io_context's thread: `fired` is true when the time came, false when the
  /// wait was cancelled (by cancel(), by arming it again, or by destroying the timer).
  using Handler = std::function<void(bool fired)>;

  explicit Timer(asio::io_context& io);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  /// Waits until `at` (after `delay`), then calls `handler`.
  void wait_until(Clock::time_point at, Handler handler);
  void wait_for(Clock::duration delay, Handler handler);
  /// Cancels the pending wait, if any: its handler is called with `fired` false.
  void cancel();
  /// The io_context it runs on (to post a cancel() to its thread).
  asio::io_context& context() noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The handler most owners want: calls `(owner->*method)()` when the time came, if `owner`
/// is still alive (it is held weakly, so a pending wait never keeps it), and nothing when
/// the wait was cancelled.
template <class Owner>
Timer::Handler call_when_fired(std::weak_ptr<Owner> owner, void (Owner::*method)()) {
  return [owner = std::move(owner), method](bool fired) {
    if (!fired) return;
    if (auto self = owner.lock()) ((*self).*method)();
  };
}

}  // namespace redmux::detail
