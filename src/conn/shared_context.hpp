// SharedContext: what a multiplexer's connections share — the configuration, the slots of
// maxQueuedCommands, counters, the user's callbacks, and the Observer (histograms, hooks,
// log). Thread-safe: atomics, and a mutex around the callbacks and the wait for room.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "observe/observer.hpp"
#include "redmux/config.hpp"
#include "redmux/error.hpp"
#include "redmux/events.hpp"
#include "redmux/future.hpp"
#include "redmux/wait_policy.hpp"

namespace redmux::detail {

struct Counters {
  std::atomic<std::uint64_t> commands{0};  ///< accepted
  std::atomic<std::uint64_t> replies{0};   ///< replies read
  std::atomic<std::uint64_t> bytes_written{0};
  std::atomic<std::uint64_t> bytes_read{0};
  std::atomic<std::uint64_t> writes{0};              ///< write syscalls (batches)
  std::atomic<std::uint64_t> commands_written{0};    ///< by those writes, redmux's own too
  std::atomic<std::uint64_t> yields_for_callers{0};  ///< writes that first let callers run
  std::atomic<std::uint64_t> timeouts{0};
  std::atomic<std::uint64_t> queue_full{0};
  std::atomic<std::uint64_t> reconnects{0};
  std::atomic<std::uint64_t> fire_and_forget_errors{0};
  std::atomic<std::uint64_t> pushes{0};            ///< out-of-band push messages
  std::atomic<std::uint64_t> resent{0};            ///< commands resent automatically after a break
  std::atomic<std::uint64_t> heartbeats{0};        ///< idle PINGs sent
  std::atomic<std::uint64_t> dead_connections{0};  ///< declared dead (half-open) and replaced
  std::atomic<std::uint64_t> connection_failures{0};  ///< failed attempts and breaks
  std::atomic<std::uint64_t> loading_waits{0};        ///< handshakes that found the server loading
  std::atomic<std::uint64_t> redirects{0};  ///< MOVED/ASK (cluster), -REDIRECT (a replica) followed
  std::atomic<std::uint64_t> cluster_retries{0};  ///< CLUSTERDOWN/TRYAGAIN waited out, resent
};

class SharedContext {
 public:
  /// `to_sentinels`: the connections are a Sentinel monitor's (they talk to Sentinels on
  /// purpose); otherwise a Sentinel at the other end is a mistake worth saying.
  explicit SharedContext(Config config, bool to_sentinels = false)
      : config_(std::move(config)), to_sentinels_(to_sentinels), observer_(config_) {}

  const Config& config() const noexcept { return config_; }
  bool to_sentinels() const noexcept { return to_sentinels_; }
  Counters& counters() noexcept { return counters_; }
  Observer& observer() noexcept { return observer_; }
  const Observer& observer() const noexcept { return observer_; }

  /// Takes one slot of maxQueuedCommands; false when none is free. Under the wait policy,
  /// waits up to `deadline` for one.
  bool acquire_slot(std::chrono::steady_clock::time_point deadline) {
    if (try_acquire()) return true;
    // Never wait on an I/O thread: only that thread's replies would free a slot.
    if (!waits_for_room()) return false;
    std::unique_lock lock(room_mutex_);
    waiters_.fetch_add(1, std::memory_order_acq_rel);
    bool got = room_.wait_until(lock, deadline, [this] { return try_acquire(); });
    waiters_.fetch_sub(1, std::memory_order_acq_rel);
    return got;
  }
  /// The refusal when acquire_slot(deadline) failed for `name`, whose deadline came from
  /// `timeout`: under the wait policy it waited from then until the deadline, and says so.
  Error queue_full_error(std::string_view name, std::chrono::steady_clock::time_point deadline,
                         std::chrono::milliseconds timeout) const {
    std::chrono::milliseconds waited{0};
    if (waits_for_room()) {
      waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - (deadline - timeout));
    }
    return queue_full_error(name, waited);
  }
  /// The same, given how long it waited for room (zero: it did not wait).
  Error queue_full_error(std::string_view name, std::chrono::milliseconds waited) const {
    const std::string what = std::to_string(outstanding()) +
                             " commands are already queued or awaiting replies "
                             "(maxQueuedCommands=" +
                             std::to_string(config_.max_queued_commands);
    if (waited.count() > 0) {
      return Error(errc::queue_full,
                   std::string(name) + " refused: waited " + std::to_string(waited.count()) +
                       " ms for room in the queue, until its deadline: " + what +
                       ", queueFullPolicy=wait); the server is slow or unreachable — back off "
                       "and retry");
    }
    const bool wait_policy = config_.queue_full_policy == QueueFullPolicy::Wait;
    return Error(
        errc::queue_full,
        std::string(name) + " refused: " + what + ")" +
            (wait_policy && on_io_thread() ? "; queueFullPolicy=wait does not wait on an I/O thread"
                                           : "") +
            "; the server is slow or unreachable — back off and retry");
  }
  void release_slots(std::size_t n) noexcept {
    if (n == 0) return;
    outstanding_.fetch_sub(n, std::memory_order_acq_rel);
    if (waiters_.load(std::memory_order_acquire) > 0) {
      std::lock_guard lock(room_mutex_);
      room_.notify_all();
    }
  }
  std::size_t outstanding() const noexcept { return outstanding_.load(std::memory_order_relaxed); }
  /// Waits until no command holds a slot (every accepted command completed), or until
  /// `deadline`; true when none does. Rides the wait for room: release_slots() notifies
  /// while anyone waits, so the hot path pays nothing more. The wait wakes every 5 ms as
  /// well, so a notification that crossed the waiter's registration cannot be missed.
  bool wait_until_idle(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(room_mutex_);
    waiters_.fetch_add(1, std::memory_order_seq_cst);
    bool idle = false;
    while (!(idle = outstanding_.load(std::memory_order_seq_cst) == 0)) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      room_.wait_until(lock, std::min(deadline, now + std::chrono::milliseconds(5)));
    }
    waiters_.fetch_sub(1, std::memory_order_acq_rel);
    return idle;
  }
  /// What close(deadline) adds to the errors of the commands it fails (empty for close()).
  /// Set once, before the connections are shut down; read by them while shutting down.
  void set_close_note(std::string note) {
    std::lock_guard lock(callback_mutex_);
    close_note_ = std::move(note);
  }
  std::string close_note() const {
    std::lock_guard lock(callback_mutex_);
    return close_note_;
  }

  void set_error_handler(std::function<void(const Error&)> handler) {
    std::lock_guard lock(callback_mutex_);
    on_error_ = std::make_shared<std::function<void(const Error&)>>(std::move(handler));
  }
  void set_event_handler(std::function<void(const ConnectionEvent&)> handler) {
    std::lock_guard lock(callback_mutex_);
    on_event_ = std::make_shared<std::function<void(const ConnectionEvent&)>>(std::move(handler));
  }
  /// redmux's own observer of connection events, called before the application's handler
  /// (the cluster router: a node connection that fails asks for a new slot map at once).
  void set_topology_observer(std::function<void(const ConnectionEvent&)> observer) {
    std::lock_guard lock(callback_mutex_);
    on_topology_event_ =
        std::make_shared<std::function<void(const ConnectionEvent&)>>(std::move(observer));
  }
  /// Reports a server's change of role (ConnectionEventKind::RoleChanged) once: several
  /// connections to one server (connectionsPerEndpoint, a subscription, dedicated ones)
  /// each learn it, and only the first to differ from what was last reported is told.
  void report_role_change(const ConnectionEvent& event) noexcept {
    try {
      std::string role = event.primary ? std::string("primary") : "replica of " + event.master;
      {
        std::lock_guard lock(callback_mutex_);
        std::string& last = reported_roles_[event.endpoint];
        if (last == role) return;
        last = std::move(role);
      }
      report_event(event);
    } catch (...) {  // out of memory: routing follows the role all the same
    }
  }
  /// Reports a connection event (on the connection's I/O thread).
  void report_event(const ConnectionEvent& event) noexcept {
    log_event(event);
    std::shared_ptr<std::function<void(const ConnectionEvent&)>> handler;
    std::shared_ptr<std::function<void(const ConnectionEvent&)>> observer;
    {
      std::lock_guard lock(callback_mutex_);
      handler = on_event_;
      observer = on_topology_event_;
    }
    if (observer && *observer) {
      try {
        (*observer)(event);
      } catch (...) {  // e.g. bad_alloc: the next event or the periodic refresh tries again
      }
    }
    if (handler && *handler) {
      try {
        (*handler)(event);
      } catch (...) {  // a throwing handler must not take down an I/O thread
      }
    }
  }
  /// Reports an error nobody waits for (an error reply to a fire-and-forget command …).
  void report_error(const Error& error) noexcept {
    std::shared_ptr<std::function<void(const Error&)>> handler;
    {
      std::lock_guard lock(callback_mutex_);
      handler = on_error_;
    }
    if (handler && *handler) {
      // It must not block wherever it runs (an I/O thread; the delivery thread of a pub/sub
      // handler that threw, which other channels wait for): a blocking wait in it fails
      // with DeadlockError, as on an I/O thread.
      IoThreadScope scope;
      try {
        (*handler)(error);
      } catch (...) {  // a throwing handler must not take down an I/O thread
      }
    }
  }

 private:
  void log_event(const ConnectionEvent& event) noexcept {
    const bool bad =
        event.kind == ConnectionEventKind::Failed || event.kind == ConnectionEventKind::AuthRefused;
    const LogLevel level = bad ? LogLevel::Warning : LogLevel::Info;
    if (!observer_.logs(level)) return;
    try {
      if (event.kind == ConnectionEventKind::RoleChanged) {
        observer_.log(level, event.endpoint,
                      event.primary
                          ? std::string("role changed: now the primary; writes go here")
                          : "role changed: now a replica" +
                                (event.master.empty() ? std::string() : " of " + event.master) +
                                "; writes go to the primary");
        return;
      }
      // An interactive connection is "connection"; the others say what they are for.
      std::string text = event.purpose == ConnectionPurpose::Interactive ||
                                 event.purpose == ConnectionPurpose::ClusterNode
                             ? std::string("connection ")
                             : std::string(to_string(event.purpose)) + " connection ";
      text += to_string(event.kind);
      if (event.kind == ConnectionEventKind::Failed) {
        text += " (attempt " + std::to_string(event.attempt) + "): " + event.error.message();
      } else if (event.kind == ConnectionEventKind::AuthRefused) {
        text += ": " + event.error.message();
      } else if (event.kind == ConnectionEventKind::Reconnecting) {
        text += event.delay.count() == 0 ? std::string(" now")
                                         : " in " + std::to_string(event.delay.count()) + " ms";
      }
      observer_.log(level, event.endpoint, text);
    } catch (...) {  // out of memory building the message: the event itself still goes out
    }
  }
  bool waits_for_room() const noexcept {
    return config_.queue_full_policy == QueueFullPolicy::Wait && !on_io_thread();
  }
  bool try_acquire() noexcept {
    std::size_t current = outstanding_.load(std::memory_order_relaxed);
    while (current < config_.max_queued_commands) {
      if (outstanding_.compare_exchange_weak(current, current + 1, std::memory_order_acq_rel)) {
        return true;
      }
    }
    return false;
  }

  const Config config_;
  bool to_sentinels_ = false;
  Counters counters_;
  Observer observer_;
  std::atomic<std::size_t> outstanding_{0};
  std::atomic<int> waiters_{0};
  std::mutex room_mutex_;
  std::condition_variable room_;
  mutable std::mutex callback_mutex_;
  /// The role last reported per endpoint (report_role_change()), under callback_mutex_.
  std::map<std::string, std::string, std::less<>> reported_roles_;
  std::string close_note_;
  std::shared_ptr<std::function<void(const Error&)>> on_error_;
  std::shared_ptr<std::function<void(const ConnectionEvent&)>> on_event_;
  std::shared_ptr<std::function<void(const ConnectionEvent&)>> on_topology_event_;
};

}  // namespace redmux::detail
