#include "topology/refresh_schedule.hpp"

namespace redmux::detail {
namespace {

std::int64_t ticks(RefreshSchedule::Clock::time_point at) noexcept {
  return at.time_since_epoch().count();
}

}  // namespace

RefreshSchedule::Clock::time_point RefreshSchedule::last() const noexcept {
  return Clock::time_point{Clock::duration(last_refresh_.load(std::memory_order_acquire))};
}

std::optional<std::chrono::milliseconds> RefreshSchedule::begin(Clock::time_point now) noexcept {
  if (refreshing_.exchange(true, std::memory_order_acq_rel)) return std::nullopt;
  const Clock::time_point earliest = last() + kSpacing;
  if (earliest <= now) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(earliest - now);
}

void RefreshSchedule::finished(Clock::time_point now) noexcept {
  last_refresh_.store(ticks(now), std::memory_order_release);
  refreshing_.store(false, std::memory_order_release);
}

void RefreshSchedule::node_failed(Clock::time_point now) noexcept {
  fast_until_.store(ticks(now + kFastWindow), std::memory_order_release);
}

bool RefreshSchedule::fast(Clock::time_point now) const noexcept {
  return ticks(now) < fast_until_.load(std::memory_order_acquire);
}

std::chrono::milliseconds RefreshSchedule::next_tick(Clock::time_point now,
                                                     bool primary_unreachable) const noexcept {
  return fast(now) && primary_unreachable ? kFastTick : kTick;
}

bool RefreshSchedule::due(Clock::time_point now, bool primary_unreachable,
                          bool node_unreachable) const noexcept {
  const Clock::duration since = now - last();
  return primary_unreachable || (since >= kWhileNodeDown && node_unreachable) || since >= kAtRest;
}

bool RefreshSchedule::older_than(Clock::time_point now, Clock::duration age) const noexcept {
  return now - last() > age;
}

}  // namespace redmux::detail
