// IoPool: the dedicated I/O threads redmux runs its sockets on (StackExchange.Redis calls
// it SocketManager). A multiplexer makes its own pool by default, or shares one passed in;
// it holds a shared reference, so multiplexers and pools may be destroyed in any order.
//
// Each connection lives on one of the pool's threads and its state is touched only there.
// Those threads must never block: redmux refuses (DeadlockError) a blocking wait on them.
//
// Threads: every member is safe to call from any thread. Destroying the last reference on
// one of the pool's own threads is safe too (the threads are then detached, not joined).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace asio {
class io_context;
}

namespace redmux {

class IoPool {
 public:
  /// A pool of `threads` dedicated I/O threads (at least 1), named "redmux-io-N".
  static std::shared_ptr<IoPool> create(int threads = 1);
  /// A pool over the user's own io_context: redmux starts no thread; the user runs it.
  /// REQUIRES: `context` outlives every multiplexer using this pool.
  static std::shared_ptr<IoPool> wrap(asio::io_context& context);

  ~IoPool();
  IoPool(const IoPool&) = delete;
  IoPool& operator=(const IoPool&) = delete;

  /// Number of io_contexts (threads for an owned pool; 1 for a wrapped context).
  std::size_t size() const noexcept;
  /// The io_context a new connection should use (round-robin over the connections).
  asio::io_context& next_context() noexcept;
  /// The io_context for a timer or a task (round-robin of its own, so that what is not a
  /// connection does not shift which thread the next connection gets).
  asio::io_context& next_work_context() noexcept;
  /// "1 I/O thread, busy 3% over the last second" (for diagnostics).
  std::string describe() const;

  /// Per-thread busy accounting (internal; connections report the time their handlers take).
  /// Shared, so a connection's handlers may still report after the pool is gone.
  struct Load;
  std::shared_ptr<Load> load_of(asio::io_context& context) noexcept;

 private:
  IoPool() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redmux
