#include "redmux/io_pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "core/user_context_check.hpp"
#include "net/io_load.hpp"
#include "redmux/future.hpp"

namespace redmux {
namespace {

// The io_contexts of live wrapped pools (a context wrapped twice is listed twice). Looked
// at only by a blocking wait that is about to block, and only while one exists.
std::mutex g_wrapped_mutex;
std::vector<asio::io_context*> g_wrapped;
std::atomic<std::size_t> g_wrapped_count{0};

bool running_wrapped_context() noexcept {
  if (g_wrapped_count.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard lock(g_wrapped_mutex);
  for (asio::io_context* context : g_wrapped) {
    if (context->get_executor().running_in_this_thread()) return true;
  }
  return false;
}

}  // namespace

struct IoPool::Impl {
  struct Worker {
    std::unique_ptr<asio::io_context> owned;
    asio::io_context* context = nullptr;
    std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> guard;
    std::thread thread;
    std::shared_ptr<Load> load = std::make_shared<Load>();
    /// Set when the pool died on this worker's own thread: the thread then deletes the
    /// worker itself once run() has returned (nobody else can join it).
    bool orphaned = false;
  };
  std::vector<std::unique_ptr<Worker>> workers;
  std::atomic<std::size_t> next{0};
};

std::shared_ptr<IoPool> IoPool::create(int threads) {
  std::shared_ptr<IoPool> pool(new IoPool());
  pool->impl_ = std::make_unique<Impl>();
  const int count = std::max(1, threads);
  for (int i = 0; i < count; ++i) {
    auto worker = std::make_unique<Impl::Worker>();
    worker->owned = std::make_unique<asio::io_context>(1);
    worker->context = worker->owned.get();
    worker->guard = std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
        worker->context->get_executor());
    asio::io_context* context = worker->context;
    Impl::Worker* self = worker.get();
    worker->thread = std::thread([context, self, i] {
      const std::string name = "redmux-io-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      detail::IoThreadScope scope;
      for (;;) {
        try {
          context->run();
          break;
        } catch (...) {
          // A handler threw: redmux's own handlers do not, a user's callback is caught where
          // it runs; keep the thread serving its other connections.
        }
      }
      // `orphaned` was written by this very thread (inside a handler), before run() returned.
      if (self->orphaned) delete self;
    });
    pool->impl_->workers.push_back(std::move(worker));
  }
  return pool;
}

std::shared_ptr<IoPool> IoPool::wrap(asio::io_context& context) {
  std::shared_ptr<IoPool> pool(new IoPool());
  pool->impl_ = std::make_unique<Impl>();
  auto worker = std::make_unique<Impl::Worker>();
  worker->context = &context;
  pool->impl_->workers.push_back(std::move(worker));
  {
    std::lock_guard lock(g_wrapped_mutex);
    g_wrapped.push_back(&context);
    g_wrapped_count.store(g_wrapped.size(), std::memory_order_release);
  }
  detail::install_user_context_check(&running_wrapped_context);
  return pool;
}

IoPool::~IoPool() {
  for (auto& worker : impl_->workers) {
    if (worker->owned) continue;
    std::lock_guard lock(g_wrapped_mutex);
    auto it = std::find(g_wrapped.begin(), g_wrapped.end(), worker->context);
    if (it != g_wrapped.end()) g_wrapped.erase(it);
    g_wrapped_count.store(g_wrapped.size(), std::memory_order_release);
  }
  for (auto& worker : impl_->workers) {
    if (!worker->owned) continue;
    worker->guard.reset();
    worker->context->stop();
  }
  for (auto& worker : impl_->workers) {
    if (!worker->thread.joinable()) continue;
    if (worker->thread.get_id() == std::this_thread::get_id()) {
      // The last reference went away inside one of our own handlers (say a failed connect
      // dropping its multiplexer): joining would wait for ourselves, and the handler still
      // runs on the worker's context and load. The thread deletes its worker once run()
      // returns (the context is stopped).
      worker->thread.detach();
      worker->orphaned = true;
      (void)worker.release();
    } else {
      worker->thread.join();
    }
  }
}

std::size_t IoPool::size() const noexcept {
  return impl_->workers.size();
}

asio::io_context& IoPool::next_context() noexcept {
  const std::size_t i = impl_->next.fetch_add(1, std::memory_order_relaxed);
  return *impl_->workers[i % impl_->workers.size()]->context;
}

std::shared_ptr<IoPool::Load> IoPool::load_of(asio::io_context& context) noexcept {
  for (auto& worker : impl_->workers) {
    if (worker->context == &context) return worker->load;
  }
  return impl_->workers.front()->load;
}

std::string IoPool::describe() const {
  std::string text = std::to_string(impl_->workers.size()) +
                     (impl_->workers.size() == 1 ? " I/O thread" : " I/O threads") +
                     (impl_->workers.front()->owned ? "" : " (user's io_context)") + ", busy ";
  for (std::size_t i = 0; i < impl_->workers.size(); ++i) {
    if (i) text += '/';
    text += std::to_string(impl_->workers[i]->load->busy_percent()) + '%';
  }
  text += " over the last second";
  return text;
}

}  // namespace redmux
