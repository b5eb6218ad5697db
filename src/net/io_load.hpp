// IoPool::Load: how busy one I/O thread is, from the time redmux's handlers take on it.
// Written by that thread only; read by anyone (relaxed atomics: a diagnostic, not a clock).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "redmux/future.hpp"
#include "redmux/io_pool.hpp"

namespace redmux {

struct IoPool::Load {
  using Clock = std::chrono::steady_clock;

  /// Adds one handler's run time; rolls the one-second window.
  void add(Clock::time_point start, Clock::time_point end) noexcept {
    const auto busy = std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
    current_busy_ns.fetch_add(static_cast<std::uint64_t>(busy), std::memory_order_relaxed);
    const auto window_start = window_start_ns.load(std::memory_order_relaxed);
    const auto now_ns = end.time_since_epoch().count();
    if (now_ns - window_start >= 1'000'000'000) {
      const auto total = static_cast<double>(now_ns - window_start);
      const auto spent =
          static_cast<double>(current_busy_ns.exchange(0, std::memory_order_relaxed));
      last_percent.store(static_cast<int>(window_start == 0 ? 0 : 100.0 * spent / total),
                         std::memory_order_relaxed);
      window_start_ns.store(now_ns, std::memory_order_relaxed);
    }
  }
  int busy_percent() const noexcept { return last_percent.load(std::memory_order_relaxed); }

  std::atomic<std::uint64_t> current_busy_ns{0};
  std::atomic<std::int64_t> window_start_ns{0};
  std::atomic<int> last_percent{0};
};

/// Times one handler on an I/O thread and marks the thread as an I/O thread meanwhile (so a
/// blocking wait inside a callback it runs is refused even on a user's io_context).
class BusyScope {
 public:
  explicit BusyScope(IoPool::Load& load) noexcept
      : load_(load), start_(IoPool::Load::Clock::now()) {}
  ~BusyScope() { load_.add(start_, IoPool::Load::Clock::now()); }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  IoPool::Load& load_;
  IoPool::Load::Clock::time_point start_;
  detail::IoThreadScope io_scope_;
};

}  // namespace redmux
