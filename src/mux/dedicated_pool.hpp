// DedicatedPool: the connections a multiplexer opens for work that must not ride the shared
// connection — blocking commands (BLPOP, XREAD … BLOCK, WAIT) and transactions. Each one is
// an ordinary Connection (same handshake, database switching and reconnects), leased to one
// user at a time: a blocking command or a transaction holds it until its last reply (or
// failure) arrives, then gives it back.
//
// Size: grown on demand up to blockingPoolSize; idle connections are kept for the next lease.
// When every connection is leased, a request waits (FIFO) until one is given back, or until
// its wait deadline passes, when it fails with errc::timeout saying the pool was exhausted.
// A connection whose command timed out is in an unknown state (the server may still be
// blocking on it, or answer later): it is closed and replaced, never leased again.
//
// Threads: every member is safe from any thread. Lease handlers run on the thread that
// called acquire() (a connection was free), on the I/O thread that gave one back, or on the
// I/O thread of the wait timer: they must not block.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conn/shared_context.hpp"
#include "net/connection.hpp"
#include "redmux/io_pool.hpp"

namespace redmux::detail {

class DedicatedPool : public std::enable_shared_from_this<DedicatedPool> {
 public:
  /// Gets the leased connection, or the reason there is none (pool exhausted until the
  /// deadline, multiplexer closed).
  using LeaseHandler = std::function<void(Result<std::shared_ptr<Connection>>)>;

  /// `tls`: the TLS settings of the multiplexer (null without TLS).
  DedicatedPool(std::shared_ptr<SharedContext> shared, std::shared_ptr<IoPool> pool,
                std::shared_ptr<TlsContext> tls = nullptr);
  ~DedicatedPool();

  /// Leases a connection to `endpoint`: at once when one is idle or the pool may grow,
  /// otherwise when one is given back. `what` names the request in errors ("BLPOP",
  /// "transaction"). The wait (not the work on the connection) is bounded by `wait_until`.
  void acquire(const Endpoint& endpoint, Clock::time_point wait_until, std::string_view what,
               LeaseHandler handler);
  /// Gives a leased connection back. `reusable` false: its state is unknown (a command
  /// timed out on it), so it is closed and a waiter gets a new one.
  void give_back(const std::shared_ptr<Connection>& connection, bool reusable);
  /// Closes every connection and fails every waiter (errc::shut_down). Later acquire()
  /// calls fail at once. `closed` runs once per connection when it has shut down.
  std::size_t close(const std::function<void()>& closed);

  /// Connections open now (leased or idle).
  std::size_t size() const;
  /// Those connections (for status()).
  std::vector<std::shared_ptr<Connection>> connections() const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<Connection>> out;
    for (const Member& member : members_) out.push_back(member.connection);
    return out;
  }
  /// The cap (blockingPoolSize).
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  struct Member {
    std::shared_ptr<Connection> connection;
    bool leased = false;
  };
  struct Waiter {
    Endpoint endpoint;
    std::string what;
    Clock::time_point since;
    LeaseHandler handler;
    bool done = false;  ///< served or expired (guarded by mutex_)
  };
  using Grant = std::pair<LeaseHandler, std::shared_ptr<Connection>>;

  /// REQUIRES: mutex_ held. Leases an idle connection to `endpoint`, or opens one when the
  /// cap allows (closing an idle one to another endpoint to make room). Null when neither.
  std::shared_ptr<Connection> lease_locked(const Endpoint& endpoint,
                                           std::vector<std::shared_ptr<Connection>>& to_close);
  /// REQUIRES: mutex_ held. Hands free capacity to waiters, oldest first.
  void serve_waiters_locked(std::vector<Grant>& grants,
                            std::vector<std::shared_ptr<Connection>>& to_close);
  void expire_waiter(const std::shared_ptr<Waiter>& waiter);

  std::shared_ptr<SharedContext> shared_;
  std::shared_ptr<IoPool> pool_;
  std::shared_ptr<TlsContext> tls_;
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::vector<Member> members_;
  std::deque<std::shared_ptr<Waiter>> waiters_;
  bool closed_ = false;
};

}  // namespace redmux::detail
