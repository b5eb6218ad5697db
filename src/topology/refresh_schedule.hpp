// RefreshSchedule: when a cluster router asks for the slot map again, sans-IO. Refreshes are
// single flight and debounced: at most one every kSpacing, however many MOVED, CLUSTERDOWN or
// failed connections ask. The periodic look (every kTick; every kFastTick for kFastWindow after
// a node failed while a primary of the map is unreachable, so a promotion is seen within
// moments) refreshes while a primary is unreachable, every kWhileNodeDown while any node is,
// and every kAtRest otherwise. The first look, a kTick after the first map, refreshes: no
// refresh has ended yet, so the map counts as old (a node that joined while the first map was
// read is seen then).
//
// Threads: every member is safe from any thread (atomics); the time is an argument.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace redmux::detail {

class RefreshSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kSpacing{250};
  static constexpr std::chrono::milliseconds kTick{1000};
  static constexpr std::chrono::milliseconds kFastTick{250};
  static constexpr std::chrono::seconds kFastWindow{30};
  static constexpr std::chrono::seconds kWhileNodeDown{2};
  static constexpr std::chrono::seconds kAtRest{30};

  /// A refresh is asked for at `now`. Nullopt when one is under way already (it will do);
  /// else this caller starts it after the wait returned (0: at once). Every start must be
  /// followed by finished().
  std::optional<std::chrono::milliseconds> begin(Clock::time_point now) noexcept;
  /// The refresh begin() started has its answer (or failed) at `now`.
  void finished(Clock::time_point now) noexcept;

  /// A node of the map failed at `now`: the fast periodic look for kFastWindow.
  void node_failed(Clock::time_point now) noexcept;
  /// Whether `now` is within kFastWindow of a node's failure.
  bool fast(Clock::time_point now) const noexcept;
  /// The wait before the next periodic look.
  std::chrono::milliseconds next_tick(Clock::time_point now,
                                      bool primary_unreachable) const noexcept;
  /// At a periodic look: whether to refresh.
  bool due(Clock::time_point now, bool primary_unreachable, bool node_unreachable) const noexcept;
  /// Whether the last refresh ended more than `age` before `now`.
  bool older_than(Clock::time_point now, Clock::duration age) const noexcept;

 private:
  Clock::time_point last() const noexcept;

  std::atomic<bool> refreshing_{false};
  std::atomic<std::int64_t> last_refresh_{0};  ///< Clock ticks
  std::atomic<std::int64_t> fast_until_{0};    ///< Clock ticks
};

}  // namespace redmux::detail
