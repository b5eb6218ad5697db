// HeldCommands: callers' commands that the multiplexer holds itself, because the connection
// they were meant for cannot take them now (primary/replica sets and Sentinel). Two cases:
//
//  - Moved: a connection lost its server (Sentinel pointed it at another address, or its
//    attempts to connect fail) while commands were queued on it. Reads that may run elsewhere
//    (PreferReplica, DemandReplica) are placed again at once, in order: on a replica in sync,
//    else under PreferReplica on the primary, else (DemandReplica) they fail as not sent.
//  - Waiting for a primary (failoverWait): while no server is known to be the primary — a
//    failover between the old primary's failure and the new one's promotion — a command that
//    needs the primary waits here, in order, until one is known or its own deadline passes
//    (then it fails as a timeout, never sent). Every command bound for the primary waits
//    behind those already waiting, so one caller's commands keep their order.
//
// MuxCore decides where a command may go (place_held()); this class keeps the order, the
// deadlines, and asks the servers their roles every 100 ms while commands wait, so a promotion
// is seen quickly.
//
// Threads: every member is safe from any thread. State is guarded by mutex_; commands are
// submitted to connections and callers' futures completed outside it (a continuation may
// submit again), one flusher at a time so the order holds.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "conn/pending_command.hpp"
#include "conn/shared_context.hpp"
#include "net/timer.hpp"
#include "redmux/arg.hpp"

namespace redmux::detail {

class Connection;
class MuxCore;

class HeldCommands : public std::enable_shared_from_this<HeldCommands> {
 public:
  static constexpr std::size_t kFromCaller = static_cast<std::size_t>(-1);
  static constexpr std::chrono::milliseconds kRoleCheck{100};

  struct Entry {
    PendingCommand command;  ///< owns the state's reference and the queue slot; its
                             ///< offsets are into `bytes` (0 … bytes.size())
    std::string bytes;       ///< the encoded command
    std::size_t index = 0;   ///< connection within a group (a key always rides the same one)
    std::size_t from_group = kFromCaller;  ///< the group it was taken from, if any
  };
  /// Where an entry goes now: a connection; or nowhere yet (`wait`); or `error`.
  struct Target {
    std::shared_ptr<Connection> connection;  ///< shared: it is used outside the lock
    bool wait = false;
    Error error;
  };

  /// `core` outlives every call into it: MuxCore::close() calls close() first, and nothing
  /// reaches the core after close() returns.
  HeldCommands(MuxCore& core, std::shared_ptr<SharedContext> shared, asio::io_context& io);
  ~HeldCommands();

  /// True while commands wait for a primary: a command bound for the primary must then be
  /// held too (hold()), behind them.
  bool holds_primary_commands() const noexcept {
    return primary_waiters_.load(std::memory_order_acquire) != 0;
  }
  /// A command that needs the primary while none is known, or that is bound for the primary
  /// while others wait for it: placed now if it can go (in order), else held.
  void hold(int db, std::span<const Arg> args, PendingCommand command, std::size_t index);
  /// A connection is not connected (connection.hpp's DownHook): its queued callers' commands
  /// are taken off it if MuxCore::takes_from() says so, and placed again or held.
  void connection_down(Connection& connection, std::size_t group, std::size_t index,
                       bool retargeted);
  /// A PreferReplica read that the replica of `group` refused without running it
  /// (-MASTERDOWN, `command` with its bytes kept in its state): sent on at once where
  /// MuxCore::place_refused_read() says, with its reference and its queue slot. False, and
  /// nothing taken, when it cannot go anywhere now (or the multiplexer is closed).
  bool send_refused_read(const PendingCommand& command, std::size_t group, std::size_t index);
  /// Something changed (a role): tries the held commands again, soon, on the I/O thread.
  void try_again();
  /// Commands held now (for the topology view).
  std::size_t size() const;
  /// Fails every held command (shut down); nothing is placed afterwards.
  void close();

 private:
  using After = std::vector<std::function<void()>>;

  void append_locked(Entry entry);
  /// Places what can go now; the rest stays in order. Submits outside the lock.
  void flush(std::unique_lock<std::mutex>& lock);
  void expire_locked(Clock::time_point now, After& after);
  void arm_locked();
  void on_timer();
  void recount_locked();

  MuxCore& core_;
  std::shared_ptr<SharedContext> shared_;
  asio::io_context& io_;
  mutable std::mutex mutex_;
  Timer timer_;  ///< touched under mutex_ only
  Clock::time_point timer_at_ = Clock::time_point::max();
  SpacedLog timeout_log_;  ///< under the mutex
  std::deque<Entry> entries_;
  bool closed_ = false;
  bool flushing_ = false;  ///< a thread is submitting placed entries outside the lock
  bool again_ = false;     ///< flush() was asked for while flushing
  Clock::time_point last_role_check_{};
  std::atomic<std::size_t> primary_waiters_{0};  ///< entries for the primary, +1 while flushing
};

}  // namespace redmux::detail
