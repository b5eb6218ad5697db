#include "redmux/future.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include "redmux/version.hpp"

namespace redmux::detail {
namespace {

thread_local bool t_on_io_thread = false;

// The futex word is phase_ itself: waiters sleep while it holds the value they saw.
long futex_wait(const std::atomic<std::uint32_t>* word, std::uint32_t expected,
                const timespec* timeout) noexcept {
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  return ::syscall(SYS_futex, reinterpret_cast<const std::uint32_t*>(word), FUTEX_WAIT_PRIVATE,
                   expected, timeout, nullptr, 0);
}

void futex_wake_all(const std::atomic<std::uint32_t>* word) noexcept {
  ::syscall(SYS_futex, reinterpret_cast<const std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX,
            nullptr, nullptr, 0);
}

}  // namespace

bool on_io_thread() noexcept {
  return t_on_io_thread;
}

IoThreadScope::IoThreadScope() noexcept : previous_(t_on_io_thread) {
  t_on_io_thread = true;
}
IoThreadScope::~IoThreadScope() {
  t_on_io_thread = previous_;
}

Error deadlock_error(const char* operation) {
  return Error(errc::deadlock,
               std::string(operation) +
                   " would block a redmux I/O thread (or a callback redmux runs on one) while "
                   "waiting for a reply that only that thread can deliver: it would never "
                   "return. Use then() or co_await inside callbacks and coroutines, and call "
                   "get() only from your own threads. (redmux " +
                   std::string(kVersion) + ")");
}

Error server_error_from(NodeSpan reply, std::string_view command_name) {
  std::string message(reply.empty() ? std::string_view("ERR") : reply[0].value);
  message += " (reply to ";
  message += command_name.empty() ? std::string_view("command") : command_name;
  message += ')';
  return Error(errc::server_error, std::move(message));
}

void CommandState::wait() const noexcept {
  for (;;) {
    std::uint32_t phase = phase_.load(std::memory_order_acquire);
    if ((phase & ~kWaiterBit) == kReady) return;
    if (!(phase & kWaiterBit) &&
        !phase_.compare_exchange_weak(phase, phase | kWaiterBit, std::memory_order_acq_rel)) {
      continue;
    }
    futex_wait(&phase_, phase | kWaiterBit, nullptr);
  }
}

bool CommandState::wait_for(std::chrono::nanoseconds timeout) const noexcept {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::uint32_t phase = phase_.load(std::memory_order_acquire);
    if ((phase & ~kWaiterBit) == kReady) return true;
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) return false;
    if (!(phase & kWaiterBit) &&
        !phase_.compare_exchange_weak(phase, phase | kWaiterBit, std::memory_order_acq_rel)) {
      continue;
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    futex_wait(&phase_, phase | kWaiterBit, &ts);
  }
}

void CommandState::publish() noexcept {
  // The result was written before this release; waiters and the continuation acquire it.
  const std::uint32_t previous = phase_.exchange(kReady, std::memory_order_acq_rel);
  if (previous & kWaiterBit) futex_wake_all(&phase_);
  if ((previous & ~kWaiterBit) == kContinuation) continuation_(this);
}

void CommandState::set_continuation(void (*run)(CommandState*)) noexcept {
  continuation_ = run;
  std::uint32_t phase = phase_.load(std::memory_order_acquire);
  for (;;) {
    if ((phase & ~kWaiterBit) == kReady) {
      run(this);
      return;
    }
    if (phase_.compare_exchange_weak(phase, (phase & kWaiterBit) | kContinuation,
                                     std::memory_order_acq_rel)) {
      return;
    }
  }
}

}  // namespace redmux::detail
