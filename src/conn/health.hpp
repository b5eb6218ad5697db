// Health: whether a ready connection is alive (sans-IO), checked on a tick every
// heartbeatInterval (or asyncTimeout when that is 0).
//
// - The idle heartbeat: nothing written or read for heartbeatInterval → a PING.
// - The dead-connection rule: something in flight is overdue — a caller's command timed
//   out, the PING went unanswered for asyncTimeout, or a SUBSCRIBE (which has no deadline of
//   its own and holds back the PING) is still not confirmed — and nothing has been read for
//   two asyncTimeouts: the peer is gone or frozen, so the connection is replaced.
// - Roles change under a failover: a replica is asked every second whether it was promoted
//   (and, with INFO replication, whether it is still in sync), a primary every 30 s whether
//   it was demoted (conn/server_profile.hpp asks).
//
// Threads: the connection's I/O thread only.
#pragma once

#include <chrono>

#include "conn/pending_command.hpp"
#include "conn/pipeline.hpp"
#include "redmux/config.hpp"

namespace redmux::detail {

class Health {
 public:
  explicit Health(const Config& config) noexcept : config_(config) {}

  /// What a tick found.
  struct Tick {
    bool dead = false;  ///< replace the connection: nothing read for `silent_ms`
    long long silent_ms = 0;
    bool probe_role = false;  ///< ask the server its role (INFO replication or ROLE)
    bool heartbeat = false;   ///< send the idle PING
  };

  /// The time between ticks.
  std::chrono::milliseconds period() const noexcept {
    return config_.heartbeat_interval.count() > 0 ? config_.heartbeat_interval
                                                  : config_.async_timeout;
  }

  /// The connection became ready at `now`.
  void on_ready(Clock::time_point now) noexcept {
    overdue_ = false;
    last_read_ = now;
    last_role_check_ = now;
  }
  void on_read(Clock::time_point now) noexcept { last_read_ = now; }
  /// Replies were read: nothing in flight is overdue any more.
  void on_replies() noexcept { overdue_ = false; }
  /// A command in flight timed out.
  void on_timed_out() noexcept { overdue_ = true; }
  /// The pipeline went from empty to busy.
  void on_busy(Clock::time_point now) noexcept { awaiting_since_ = now; }

  /// One tick at `now`. `quiet`: nothing is being written or queued; `last_write`: when
  /// the socket last accepted bytes.
  Tick on_tick(Clock::time_point now, const Pipeline& pipeline, bool is_replica, bool quiet,
               Clock::time_point last_write) noexcept;

  Clock::time_point last_read() const noexcept { return last_read_; }

 private:
  const Config& config_;
  Clock::time_point last_read_{};
  Clock::time_point awaiting_since_{};  ///< when the pipeline last went from empty to busy
  Clock::time_point heartbeat_sent_{};  ///< when the last idle PING was queued
  Clock::time_point last_role_check_{};
  bool overdue_ = false;
};

}  // namespace redmux::detail
