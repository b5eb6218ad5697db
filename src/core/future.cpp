#include "redmux/future.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <ctime>
#include <utility>

#include "core/reply_hint.hpp"
#include "core/script_commands.hpp"
#include "core/user_context_check.hpp"
#include "redmux/version.hpp"

namespace redmux {
namespace {

std::atomic<WaitPolicy> g_wait_policy{WaitPolicy::Adaptive};

}  // namespace

void set_wait_policy(WaitPolicy policy) noexcept {
  g_wait_policy.store(policy, std::memory_order_relaxed);
}

WaitPolicy wait_policy() noexcept {
  return g_wait_policy.load(std::memory_order_relaxed);
}

}  // namespace redmux

namespace redmux::detail {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::nanoseconds;
using namespace std::chrono_literals;

thread_local bool t_on_io_thread = false;

// The adaptive wait (WaitPolicy::Adaptive). A blocked caller first yields the CPU, checking
// its command between yields; only when that is not worth it does it sleep on the futex.
// Sleeping costs the I/O thread a futex wake per reply and the waiter a wake-up through the
// scheduler (an inter-processor interrupt when it sleeps on another CPU), which caps how
// many blocking callers a machine can serve; a yield that hands the CPU to a thread with
// work costs neither.
//
// What this thread's waits recently took: an exponential moving average over its waits that
// found their command still running (-1: none yet). A thread starts from the value threads
// last published, and publishes its own every kPublishEvery waits, so that the process's
// threads do not all write one cache line on every wait.
thread_local std::int64_t t_typical_wait_ns = -1;
thread_local std::uint32_t t_waits_recorded = 0;
std::atomic<std::int64_t> g_published_wait_ns{100'000};
constexpr std::uint32_t kPublishEvery = 64;

std::int64_t typical_wait_ns() noexcept {
  if (t_typical_wait_ns < 0) {
    t_typical_wait_ns = g_published_wait_ns.load(std::memory_order_relaxed);
  }
  return t_typical_wait_ns;
}

// Replies typically slower than a quarter of this: sleep at once.
constexpr nanoseconds kMaxSpin = 20ms;
// A yield back this fast found nobody else to run: the spin is burning an idle CPU, which
// it may do only this long in total before sleeping.
constexpr nanoseconds kQuickYield = 3us;
constexpr nanoseconds kIdleSpinLimit = 50us;
// Turns of the CPU given to other threads (yields that were not quick) before sleeping.
// With hundreds of blocked callers on a few CPUs, a caller whose reply is still missing
// after two turns is behind a write that has not happened yet; further turns would only be
// context switches that find nothing, so it sleeps and is woken with its reply. (Without
// the cap such callers outnumbered the ready ones and throughput halved in some runs.)
constexpr int kMaxTurnsGiven = 2;

// Completions on this thread that released a blocked waiter (take_released_waiters()).
thread_local std::size_t t_released_waiters = 0;

// Waiters whose wake is deferred (CommandState::DeferWakes), each with a reference held.
// Full, it is flushed at once: a fixed array, so publish() never allocates.
struct DeferredWakes {
  int depth = 0;
  std::size_t count = 0;
  std::array<CommandState*, 64> states{};
};
thread_local DeferredWakes t_deferred_wakes;

}  // namespace

nanoseconds wait_spin_budget() noexcept {
  const std::int64_t typical = typical_wait_ns();
  if (typical > kMaxSpin.count() / 4) return 0ns;
  return nanoseconds(typical * 4);
}

std::size_t take_released_waiters() noexcept {
  return std::exchange(t_released_waiters, 0);
}

void record_wait(nanoseconds waited) noexcept {
  const std::int64_t typical = typical_wait_ns();
  t_typical_wait_ns = typical + (waited.count() - typical) / 16;
  if (++t_waits_recorded % kPublishEvery == 0) {
    g_published_wait_ns.store(t_typical_wait_ns, std::memory_order_relaxed);
  }
}

namespace {

// Yields until `state` is ready (true, with `now` the time it was last read), or until the
// budget or `give_up` passes, or the yields stop finding other work (false).
bool spin_until_ready(const CommandState& state, Clock::time_point& now,
                      Clock::time_point give_up) noexcept {
  const Clock::time_point until = std::min(give_up, now + wait_spin_budget());
  nanoseconds idle = 0ns;
  int turns_given = 0;
  while (!state.ready()) {
    if (now >= until || idle > kIdleSpinLimit || turns_given >= kMaxTurnsGiven) return false;
    ::sched_yield();
    const Clock::time_point after = Clock::now();
    if (after - now < kQuickYield) {
      idle += after - now;
    } else {
      ++turns_given;
    }
    now = after;
  }
  return true;
}

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

namespace {
std::atomic<UserContextCheck> g_user_context_check{nullptr};
}  // namespace

void install_user_context_check(UserContextCheck check) noexcept {
  g_user_context_check.store(check, std::memory_order_release);
}

bool on_io_thread() noexcept {
  if (t_on_io_thread) return true;
  // A user's own handler on a wrapped io_context is not marked (only redmux's handlers
  // are), yet blocking there would stall every connection on that context, the one that
  // would deliver the reply included.
  const UserContextCheck check = g_user_context_check.load(std::memory_order_acquire);
  return check != nullptr && check();
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

Error unexecuted_error(const char* operation, std::string_view command, bool continued) {
  const std::string name = command.empty() ? std::string("the command") : std::string(command);
  return Error(errc::invalid_argument,
               std::string(operation) + " would wait forever: " +
                   (continued ? "it continues " + name + ", which" : name) +
                   " is in a Batch or Transaction that has not been executed; call execute() "
                   "first (the future stays valid)");
}

namespace {
thread_local std::string_view t_reply_hint;
}  // namespace

ReplyHint::ReplyHint(std::string_view hint) noexcept
    : previous_(std::exchange(t_reply_hint, hint)) {}

ReplyHint::~ReplyHint() {
  t_reply_hint = previous_;
}

Error server_error_from(NodeSpan reply, std::string_view command_name) {
  std::string message(reply.empty() ? std::string_view("ERR") : reply[0].value);
  message += " (reply to ";
  message += command_name.empty() ? std::string_view("command") : command_name;
  if (!t_reply_hint.empty()) {
    message += "; ";
    message += t_reply_hint;
  }
  message += ')';
  if (runs_script(command_name)) return Error::script_reply(std::move(message));
  return Error(errc::server_error, std::move(message));
}

Error in_reply_to(Error error, std::string_view command_name) {
  if (error.code() == errc::server_error) {
    // Not the root (deliver() tells those apart first): an element's, so the command ran.
    return Error::inside_reply(error.message() + " (reply to " + std::string(command_name) + ")");
  }
  return Error(error.code(), "reply to " + std::string(command_name) + ": " + error.message());
}

void CommandState::wait() const noexcept {
  (void)wait_for(nanoseconds::max());  // no deadline: returns only when ready
}

bool CommandState::wait_for(nanoseconds timeout) const noexcept {
  if (ready()) return true;
  const Clock::time_point start = Clock::now();
  const bool forever = timeout >= Clock::time_point::max() - start;
  const Clock::time_point deadline = forever ? Clock::time_point::max() : start + timeout;
  const bool adaptive = wait_policy() == WaitPolicy::Adaptive;
  if (adaptive) phase_.fetch_or(kSpinnerBit, std::memory_order_relaxed);
  Clock::time_point now = start;
  if (adaptive && spin_until_ready(*this, now, deadline)) {
    record_wait(now - start);  // `now` was read after the yield that found the reply
    return true;
  }
  for (;;) {
    std::uint32_t phase = phase_.load(std::memory_order_acquire);
    if ((phase & kStageMask) == kReady) {
      if (adaptive) record_wait(Clock::now() - start);
      return true;
    }
    timespec left_ts{};
    if (!forever) {
      const nanoseconds left = deadline - Clock::now();
      if (left <= 0ns) return false;
      left_ts = {static_cast<time_t>(left.count() / 1'000'000'000),
                 static_cast<long>(left.count() % 1'000'000'000)};
    }
    if (!(phase & kWaiterBit) &&
        !phase_.compare_exchange_weak(phase, phase | kWaiterBit, std::memory_order_acq_rel)) {
      continue;
    }
    futex_wait(&phase_, phase | kWaiterBit, forever ? nullptr : &left_ts);
  }
}

void CommandState::publish() noexcept {
  // The result was written before this release; waiters and the continuation acquire it.
  const std::uint32_t previous = phase_.exchange(kReady, std::memory_order_acq_rel);
  if (previous & (kWaiterBit | kSpinnerBit)) ++t_released_waiters;
  if (previous & kWaiterBit) {
    DeferredWakes& deferred = t_deferred_wakes;
    if (deferred.depth == 0) {
      futex_wake_all(&phase_);
    } else {
      if (deferred.count == deferred.states.size()) DeferWakes::flush();
      add_ref();  // the waiter may time out, see the result and free the state meanwhile
      deferred.states[deferred.count++] = this;
    }
  }
  if ((previous & kStageMask) == kContinuation) continuation_(this);
}

namespace {
thread_local NodeSpan t_delivered_attributes;
}  // namespace

CommandState::WithAttributes::WithAttributes(NodeSpan attributes) noexcept
    : previous_(std::exchange(t_delivered_attributes, attributes)) {}

CommandState::WithAttributes::~WithAttributes() {
  t_delivered_attributes = previous_;
}

NodeSpan CommandState::WithAttributes::current() noexcept {
  return t_delivered_attributes;
}

CommandState::DeferWakes::DeferWakes() noexcept {
  ++t_deferred_wakes.depth;
}

CommandState::DeferWakes::~DeferWakes() {
  if (--t_deferred_wakes.depth == 0) flush();
}

void CommandState::DeferWakes::flush() noexcept {
  DeferredWakes& deferred = t_deferred_wakes;
  for (std::size_t i = 0; i < deferred.count; ++i) {
    CommandState* state = std::exchange(deferred.states[i], nullptr);
    futex_wake_all(&state->phase_);
    state->release();
  }
  deferred.count = 0;
}

void CommandState::set_continuation(void (*run)(CommandState*)) noexcept {
  continuation_ = run;
  std::uint32_t phase = phase_.load(std::memory_order_acquire);
  for (;;) {
    if ((phase & kStageMask) == kReady) {
      run(this);
      return;
    }
    if (phase_.compare_exchange_weak(phase, (phase & ~kStageMask) | kContinuation,
                                     std::memory_order_acq_rel)) {
      return;
    }
  }
}

}  // namespace redmux::detail
