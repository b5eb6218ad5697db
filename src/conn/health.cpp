#include "conn/health.hpp"

#include <algorithm>

#include "conn/messages.hpp"

namespace redmux::detail {

Health::Tick Health::on_tick(Clock::time_point now, const Pipeline& pipeline, bool is_replica,
                             bool quiet, Clock::time_point last_write) noexcept {
  Tick tick;
  const auto timeout = config_.async_timeout;
  if (!pipeline.empty()) {
    const bool heartbeat_overdue = heartbeat_sent_ > last_read_ && now - heartbeat_sent_ >= timeout;
    const bool subscribe_waiting = pipeline.front().kind == PendingKind::PubSub;
    const Clock::time_point progress = std::max(last_read_, awaiting_since_);
    if ((overdue_ || heartbeat_overdue || subscribe_waiting) && now - progress >= 2 * timeout) {
      tick.dead = true;
      tick.silent_ms = ms_since(progress, now);
      return tick;
    }
  }
  if (now - last_role_check_ >= (is_replica ? std::chrono::seconds(1) : std::chrono::seconds(30))) {
    last_role_check_ = now;
    tick.probe_role = true;
  }
  // Waiting for replies needs no heartbeat.
  if (pipeline.empty() && config_.heartbeat_interval.count() > 0 && quiet &&
      now - std::max(last_read_, last_write) >= config_.heartbeat_interval) {
    heartbeat_sent_ = now;
    tick.heartbeat = true;
  }
  return tick;
}

}  // namespace redmux::detail
