#include "pubsub/delivery_executor.hpp"

#include <pthread.h>

#include <algorithm>
#include <string>

namespace redmux::detail {

namespace {
thread_local std::size_t t_thread_index = 0;
}  // namespace

std::size_t DeliveryExecutor::thread_index() noexcept {
  return t_thread_index;
}

DeliveryExecutor::DeliveryExecutor(std::size_t threads) {
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([queue = queue_, i] {
      // Named like the I/O threads (redmux-io-N), for top -H and debuggers.
      const std::string name = "redmux-sub-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      t_thread_index = i;
      run(queue);
    });
  }
}

DeliveryExecutor::~DeliveryExecutor() {
  stop();
  const std::thread::id self = std::this_thread::get_id();
  for (std::thread& thread : threads_) {
    if (thread.get_id() == self) {
      thread.detach();  // it owns its queue; run() ends when its task does
    } else if (thread.joinable()) {
      thread.join();
    }
  }
}

bool DeliveryExecutor::on_delivery_thread() const noexcept {
  const std::thread::id self = std::this_thread::get_id();
  return std::any_of(threads_.begin(), threads_.end(),
                     [&](const std::thread& thread) { return thread.get_id() == self; });
}

void DeliveryExecutor::post(std::function<void()> task) {
  {
    std::lock_guard lock(queue_->mutex);
    if (queue_->stopping) return;
    queue_->tasks.push_back(std::move(task));
  }
  queue_->wake.notify_one();
}

void DeliveryExecutor::stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(queue_->mutex);
    queue_->stopping = true;
    dropped.swap(queue_->tasks);
  }
  queue_->wake.notify_all();
  // `dropped` is destroyed here, outside the lock: tasks may own the last reference to
  // subscription state.
}

void DeliveryExecutor::run(const std::shared_ptr<Queue>& queue) {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(queue->mutex);
      queue->wake.wait(lock, [&] { return queue->stopping || !queue->tasks.empty(); });
      if (queue->stopping) return;
      task = std::move(queue->tasks.front());
      queue->tasks.pop_front();
    }
    task();  // tasks catch what handlers throw
  }
}

}  // namespace redmux::detail
