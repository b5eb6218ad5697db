// DeliveryExecutor: the few threads that run pub/sub handlers, so that a handler that blocks
// (or is merely slow) never holds up an I/O thread. A plain FIFO of tasks; ordering per
// channel is the caller's business (SubscriptionHub runs at most one task per ordered
// channel at a time).
//
// Threads: post() and stop() are safe from any thread. The destructor stops and joins the
// threads; run on one of them (the last reference dropped by a handler), it detaches that
// one instead of joining itself.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace redmux::detail {

class DeliveryExecutor {
 public:
  explicit DeliveryExecutor(std::size_t threads);
  ~DeliveryExecutor();
  DeliveryExecutor(const DeliveryExecutor&) = delete;
  DeliveryExecutor& operator=(const DeliveryExecutor&) = delete;

  /// Queues `task`; dropped after stop().
  void post(std::function<void()> task);
  /// Tasks not yet started are dropped; running ones finish. Idempotent.
  void stop();
  std::size_t threads() const noexcept { return threads_.size(); }
  /// True on one of this executor's threads.
  bool on_delivery_thread() const noexcept;
  /// On a thread of a DeliveryExecutor: its place among that executor's threads (0 …
  /// threads() - 1); 0 elsewhere.
  static std::size_t thread_index() noexcept;

 private:
  /// Owned jointly by the executor and its threads: a detached thread still finds it.
  struct Queue {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void()>> tasks;
    bool stopping = false;
  };
  static void run(const std::shared_ptr<Queue>& queue);

  std::shared_ptr<Queue> queue_ = std::make_shared<Queue>();
  std::vector<std::thread> threads_;
};

}  // namespace redmux::detail
