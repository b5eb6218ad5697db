#include "redmux/io_pool.hpp"

#include <pthread.h>

#include <algorithm>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "core/user_context_check.hpp"
#include "net/io_load.hpp"
#include "net/orphans.hpp"
#include "redmux/future.hpp"

namespace redmux {
namespace {

// The io_contexts of live wrapped pools (a context wrapped twice is listed twice). Looked
// at only by a blocking wait that is about to block, and only while one exists.
std::mutex g_wrapped_mutex;
std::vector<asio::io_context*> g_wrapped;
std::atomic<std::size_t> g_wrapped_count{0};

// Threads of pools that died on their own thread (the last reference dropped in one of its
// handlers): nobody could join them there. Each is joined once it has finished, by the next
// pool made or orphaned, and every one left is joined at exit, before OpenSSL's exit handler
// (which frees locks a TLS handshake took) runs: see net/orphans.hpp. Never
// destroyed: a thread orphaned during exit stays joinable rather than terminate the process.
struct Orphan {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> finished;
};
std::mutex g_orphans_mutex;
std::vector<Orphan>& orphans() {
  static auto* list = new std::vector<Orphan>();
  return *list;
}

/// Joins the orphans that have finished (all of them with `all`), never the calling thread.
void join_orphans(bool all) {
  std::vector<Orphan> ready;
  {
    std::lock_guard lock(g_orphans_mutex);
    auto& list = orphans();
    for (auto it = list.begin(); it != list.end();) {
      const bool self = it->thread.get_id() == std::this_thread::get_id();
      if (!self && (all || it->finished->load(std::memory_order_acquire))) {
        ready.push_back(std::move(*it));
        it = list.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Orphan& orphan : ready) orphan.thread.join();
}

void adopt_orphan(Orphan orphan) {
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit([] { join_orphans(true); }); });
  {
    std::lock_guard lock(g_orphans_mutex);
    orphans().push_back(std::move(orphan));
  }
  join_orphans(false);
}

}  // namespace

namespace detail {
void join_orphans_before_tls_cleanup() {
  static std::once_flag registered;
  std::call_once(registered, [] { std::atexit([] { join_orphans(true); }); });
}
}  // namespace detail

namespace {

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
    /// worker itself once run() has returned, and is joined as an orphan.
    bool orphaned = false;
    /// Set by the thread as it ends; read by join_orphans().
    std::shared_ptr<std::atomic<bool>> finished = std::make_shared<std::atomic<bool>>(false);
  };
  std::vector<std::unique_ptr<Worker>> workers;
  std::atomic<std::size_t> next{0};       ///< next_context()'s turn
  std::atomic<std::size_t> next_work{0};  ///< next_work_context()'s turn

  /// The worker whose turn `turns` says it is (round-robin), moving it on.
  asio::io_context& take_turn(std::atomic<std::size_t>& turns) noexcept {
    const std::size_t i = turns.fetch_add(1, std::memory_order_relaxed);
    return *workers[i % workers.size()]->context;
  }
};

std::shared_ptr<IoPool> IoPool::create(int threads) {
  join_orphans(false);
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
    worker->thread = std::thread([context, self, i, finished = worker->finished] {
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
      finished->store(true, std::memory_order_release);
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
      // returns (the context is stopped); another thread joins it.
      worker->orphaned = true;
      adopt_orphan(Orphan{std::move(worker->thread), worker->finished});
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
  return impl_->take_turn(impl_->next);
}

asio::io_context& IoPool::next_work_context() noexcept {
  return impl_->take_turn(impl_->next_work);
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
