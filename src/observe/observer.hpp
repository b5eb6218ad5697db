// Observer: what a multiplexer records about its commands and reports to the application —
// latency histograms (latencyHistograms=true), the command, write and log hooks, the slow
// command log. One per multiplexer, in SharedContext; sans-IO (the clock is a function, so
// tests drive it).
//
// Threads: recording (AtomicHistogram::record(), command_latency(), command_done(),
// write_done(), batch_done(), log()) runs on the I/O threads, several at once: histograms are
// relaxed atomics, the table of command names is filled by compare-and-swap, the hooks are an
// immutable Hooks object published through an atomic pointer. No lock and no allocation
// per command: a command name's histograms are allocated the first time it is seen, an
// endpoint's when a connection becomes ready (under a mutex, at most once per session).
// Installing hooks and reading the histograms may happen from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "redmux/config.hpp"
#include "redmux/histogram.hpp"
#include "redmux/hooks.hpp"

namespace redmux::detail {

/// One latency distribution, recorded lock-free by any number of threads.
struct AtomicHistogram {
  std::array<std::atomic<std::uint64_t>, LatencyHistogram::kBuckets> buckets{};
  std::atomic<std::uint64_t> sum{0};
  std::atomic<std::uint64_t> max{0};

  /// A latency in nanoseconds (steady_clock's unit), negative ones as 0.
  static std::uint64_t nanoseconds(std::chrono::steady_clock::duration latency) noexcept {
    static_assert(std::is_same_v<std::chrono::steady_clock::duration, std::chrono::nanoseconds>);
    return latency.count() < 0 ? 0 : static_cast<std::uint64_t>(latency.count());
  }
  void record(std::chrono::steady_clock::duration latency) noexcept {
    const std::uint64_t ns = nanoseconds(latency);
    record(ns, LatencyHistogram::bucket_of(ns));
  }
  /// The same, its bucket computed once for several histograms.
  void record(std::uint64_t ns, std::size_t bucket) noexcept {
    buckets[bucket].fetch_add(1, std::memory_order_relaxed);
    sum.fetch_add(ns, std::memory_order_relaxed);
    std::uint64_t seen = max.load(std::memory_order_relaxed);
    while (ns > seen && !max.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
    }
  }
  void copy_to(LatencyHistogram& out) const noexcept;
};

/// A command name's or an endpoint's two histograms.
struct LatencyPair {
  explicit LatencyPair(std::string_view of) : name(of) {}
  const std::string name;
  AtomicHistogram to_reply;
  AtomicHistogram to_delivery;
};

/// Records of one kind in the log (Warning) at most once a second from one source: timeouts
/// of a connection or of the commands held for a primary (a frozen server times out every
/// command sent to it, and a record each would flood the log), slow commands. The status
/// counts every one. (One thread, or under a lock.)
class SpacedLog {
 public:
  using Clock = std::chrono::steady_clock;
  /// `many`: what a record that stands for several begins with after their count.
  explicit SpacedLog(std::string_view many = "commands timed out") : many_(many) {}
  /// `count` such events just now (0: none, but a record held back may be due), `latest`
  /// the last one's message: the record to log, or empty when none is due — one was logged
  /// less than a second ago (the next counts these), or none is held back.
  std::string note(Clock::time_point now, std::uint64_t count, std::string_view latest);
  /// Events not logged yet are held back.
  bool holds() const noexcept { return unlogged_ > 0; }
  /// The record held back, if any, to log now whatever the spacing (empty: none): the
  /// source is about to change its name (a connection moved to another server).
  std::string flush(Clock::time_point now);

 private:
  /// The record of what is held back (REQUIRES: some is); the spacing starts at `now`.
  std::string take(Clock::time_point now);

  std::string many_;
  Clock::time_point logged_at_{};
  std::uint64_t unlogged_ = 0;
  std::string latest_;  ///< the last event's message not logged yet
};

class Observer {
 public:
  using Clock = std::chrono::steady_clock;
  using ClockFunction = Clock::time_point (*)();

  explicit Observer(const Config& config);
  ~Observer();
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  /// The hooks installed now; replaced as a whole when one changes (the old ones stay
  /// allocated until the observer goes: a hook may still be running on another thread).
  struct Hooks {
    CommandHook command;
    WriteHook write;
    BatchHook batch;
    LogHook log;
    LogLevel log_level = LogLevel::Off;
  };

  bool histograms() const noexcept { return histograms_; }
  /// Whether anything wants to see each command end: the histograms, a command hook, or
  /// the slow-command log. The one check on the hot path when nothing is installed.
  bool watching() const noexcept {
    return histograms_ || events_wanted_.load(std::memory_order_acquire);
  }
  /// Whether command_done() has anything to do (a command hook, or slowCommandThreshold set:
  /// the slow commands are counted, and logged while a log hook at Warning is installed).
  bool wants_events() const noexcept { return events_wanted_.load(std::memory_order_acquire); }
  bool wants_writes() const noexcept { return writes_wanted_.load(std::memory_order_acquire); }
  /// Whether a batch hook is installed (checked once per Batch::execute() or transaction).
  bool wants_batches() const noexcept { return batches_wanted_.load(std::memory_order_acquire); }
  Clock::time_point now() const noexcept { return clock_(); }
  /// Tests: the clock command events read (delivered, and a hook's duration).
  void set_clock(ClockFunction clock) noexcept { clock_ = clock; }

  /// The histograms of a command name (static storage: the command table's), found by
  /// the address of its characters. Null when latencyHistograms is off, or out of memory
  /// the first time the name is seen.
  LatencyPair* command_latency(std::string_view name) noexcept;
  /// The histograms of an endpoint ("host:port"); null when off. Takes a lock: call it when
  /// a connection becomes ready, not per command.
  LatencyPair* endpoint_latency(std::string_view endpoint);
  /// Every histogram, copied (Multiplexer::latencies()).
  Latencies latencies() const;

  void set_command_hook(CommandHook hook);
  void set_write_hook(WriteHook hook);
  void set_batch_hook(BatchHook hook);
  void set_log_hook(LogLevel level, LogHook hook);

  /// A command ended: its hook runs, and the slow-command log hears of it.
  void command_done(const CommandEvent& event) noexcept;
  void write_done(const WriteEvent& event) noexcept;
  void batch_done(const BatchEvent& event) noexcept;
  /// Whether a record of `level` would go anywhere (build the message only then).
  bool logs(LogLevel level) const noexcept {
    return level >= log_level_.load(std::memory_order_acquire);
  }
  void log(LogLevel level, std::string_view endpoint, std::string_view message) noexcept;

  std::uint64_t hook_errors() const noexcept {
    return hook_errors_.load(std::memory_order_relaxed);
  }
  std::uint64_t slow_hooks() const noexcept { return slow_hooks_.load(std::memory_order_relaxed); }
  std::uint64_t slow_commands() const noexcept {
    return slow_commands_.load(std::memory_order_relaxed);
  }

 private:
  static constexpr std::size_t kNames = 512;  ///< distinct command names with histograms

  /// Publishes a copy of the current hooks with `edit` applied (one hook replaced).
  template <typename Edit>
  void update_hooks(Edit&& edit);
  void publish(std::unique_ptr<Hooks> hooks);  // REQUIRES: hooks_mutex_ held
  template <typename Call>
  void run_hook(Call&& call, std::string_view what) noexcept;
  /// Counts a hook that threw and logs it at Error with the exception's text.
  void hook_threw(std::string_view what, std::string_view exception) noexcept;
  /// The record of one slow command.
  std::string slow_text(const CommandEvent& event) const;
  /// A slow command (`slow`) or none (nullptr) ended now: logs what is due (slow_log_).
  void note_slow(const CommandEvent* slow, Clock::time_point now) noexcept;

  const bool histograms_;
  const Clock::duration slow_threshold_;
  ClockFunction clock_ = &Clock::now;

  std::array<std::atomic<LatencyPair*>, kNames> names_{};
  std::atomic<LatencyPair*> other_names_{nullptr};  ///< past kNames distinct names
  mutable std::mutex endpoints_mutex_;
  std::vector<std::unique_ptr<LatencyPair>> endpoints_;

  std::mutex hooks_mutex_;
  std::atomic<const Hooks*> hooks_{nullptr};
  std::vector<std::unique_ptr<Hooks>> all_hooks_;  ///< every Hooks ever published
  std::atomic<bool> events_wanted_{false};
  std::atomic<bool> writes_wanted_{false};
  std::atomic<bool> batches_wanted_{false};
  std::atomic<LogLevel> log_level_{LogLevel::Off};

  std::atomic<std::uint64_t> hook_errors_{0};
  std::atomic<std::uint64_t> slow_hooks_{0};
  std::atomic<std::uint64_t> slow_commands_{0};
  /// Slow commands at most once a second per multiplexer (their records come from every I/O
  /// thread); slow_held_ says, without the mutex, that one is held back.
  std::mutex slow_log_mutex_;
  SpacedLog slow_log_{"slow commands"};  ///< under slow_log_mutex_
  std::string slow_endpoint_;            ///< under slow_log_mutex_: the latest one's
  std::atomic<bool> slow_held_{false};
};

}  // namespace redmux::detail
