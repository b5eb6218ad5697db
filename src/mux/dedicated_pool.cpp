#include "mux/dedicated_pool.hpp"

#include "net/io_load.hpp"
#include "net/timer.hpp"

namespace redmux::detail {

DedicatedPool::DedicatedPool(std::shared_ptr<SharedContext> shared, std::shared_ptr<IoPool> pool,
                             std::shared_ptr<TlsContext> tls)
    : shared_(std::move(shared)),
      pool_(std::move(pool)),
      tls_(std::move(tls)),
      capacity_(static_cast<std::size_t>(std::max(1, shared_->config().blocking_pool_size))) {}

DedicatedPool::~DedicatedPool() {
  close(nullptr);
}

std::size_t DedicatedPool::size() const {
  std::lock_guard lock(mutex_);
  return members_.size();
}

std::shared_ptr<Connection> DedicatedPool::lease_locked(
    const Endpoint& endpoint, std::vector<std::shared_ptr<Connection>>& to_close) {
  for (Member& member : members_) {
    if (!member.leased && member.connection->endpoint() == endpoint) {
      member.leased = true;
      return member.connection;
    }
  }
  if (members_.size() >= capacity_) {
    // Full: an idle connection to another endpoint (the primary moved) makes room.
    auto idle =
        std::find_if(members_.begin(), members_.end(), [](const Member& m) { return !m.leased; });
    if (idle == members_.end()) return nullptr;
    to_close.push_back(std::move(idle->connection));
    members_.erase(idle);
  }
  asio::io_context& io = pool_->next_context();
  auto connection = std::make_shared<Connection>(io, pool_->load_of(io), shared_, endpoint, tls_);
  connection->set_purpose(ConnectionPurpose::Dedicated);
  connection->set_carry_over(false);  // a lease's commands never move to a new connection
  // Commands submitted before the handshake completes wait in its queue (their deadlines
  // run); later breaks reconnect in the background like any connection.
  connection->start([](const Error&) {});
  members_.push_back(Member{connection, true});
  return connection;
}

void DedicatedPool::acquire(const Endpoint& endpoint, Clock::time_point wait_until,
                            std::string_view what, LeaseHandler handler) {
  std::vector<std::shared_ptr<Connection>> to_close;
  std::shared_ptr<Connection> leased;
  std::unique_lock lock(mutex_);
  if (closed_) {
    lock.unlock();
    handler(Error(errc::shut_down, std::string(what) + " not sent: the multiplexer was closed"));
    return;
  }
  // Waiters keep their turn: a new request leases directly only when nobody waits.
  if (waiters_.empty()) leased = lease_locked(endpoint, to_close);
  if (!leased) {
    auto waiter = std::make_shared<Waiter>();
    waiter->endpoint = endpoint;
    waiter->what = std::string(what);
    waiter->since = Clock::now();
    waiter->handler = std::move(handler);
    waiters_.push_back(waiter);
    lock.unlock();
    auto timer = std::make_shared<Timer>(pool_->next_work_context());
    timer->wait_until(wait_until, [weak = weak_from_this(), waiter, timer](bool) {
      IoThreadScope scope;
      if (auto self = weak.lock()) self->expire_waiter(waiter);
    });
    for (auto& connection : to_close) connection->shutdown();
    return;
  }
  lock.unlock();
  for (auto& connection : to_close) connection->shutdown();
  handler(std::move(leased));
}

void DedicatedPool::expire_waiter(const std::shared_ptr<Waiter>& waiter) {
  LeaseHandler handler;
  std::size_t leased = 0;
  {
    std::lock_guard lock(mutex_);
    if (waiter->done) return;
    waiter->done = true;
    handler = std::move(waiter->handler);
    std::erase(waiters_, waiter);
    for (const Member& member : members_) leased += member.leased ? 1 : 0;
  }
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - waiter->since);
  // Counted before the caller is told, as every timeout is (status().timeouts).
  shared_->counters().timeouts.fetch_add(1, std::memory_order_relaxed);
  handler(Error::never_ran(
      errc::timeout, waiter->what + " timed out after " + std::to_string(waited.count()) +
                         " ms waiting for a dedicated connection: all " + std::to_string(leased) +
                         " are in use by blocking commands or transactions (blockingPoolSize=" +
                         std::to_string(capacity_) +
                         "); raise blockingPoolSize, or shorten the blocking times"));
}

void DedicatedPool::serve_waiters_locked(std::vector<Grant>& grants,
                                         std::vector<std::shared_ptr<Connection>>& to_close) {
  while (!waiters_.empty()) {
    const std::shared_ptr<Waiter>& waiter = waiters_.front();
    std::shared_ptr<Connection> connection = lease_locked(waiter->endpoint, to_close);
    if (!connection) return;
    waiter->done = true;
    grants.emplace_back(std::move(waiter->handler), std::move(connection));
    waiters_.pop_front();
  }
}

void DedicatedPool::give_back(const std::shared_ptr<Connection>& connection, bool reusable) {
  std::vector<Grant> grants;
  std::vector<std::shared_ptr<Connection>> to_close;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(members_.begin(), members_.end(),
                           [&](const Member& m) { return m.connection == connection; });
    if (it == members_.end()) return;  // closed meanwhile
    if (reusable && !closed_) {
      it->leased = false;
    } else {
      to_close.push_back(std::move(it->connection));
      members_.erase(it);
    }
    if (!closed_) serve_waiters_locked(grants, to_close);
  }
  for (auto& closing : to_close) closing->shutdown();
  for (auto& [handler, leased] : grants) handler(std::move(leased));
}

std::size_t DedicatedPool::close(const std::function<void()>& closed) {
  std::vector<Member> members;
  std::deque<std::shared_ptr<Waiter>> waiters;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return 0;
    closed_ = true;
    members.swap(members_);
    waiters.swap(waiters_);
    for (auto& waiter : waiters) waiter->done = true;
  }
  for (auto& waiter : waiters) {
    waiter->handler(Error(errc::shut_down, waiter->what + " not sent: the multiplexer was closed"));
  }
  for (Member& member : members) {
    if (closed) {
      member.connection->shutdown(closed);
    } else {
      member.connection->shutdown();
    }
  }
  return members.size();
}

}  // namespace redmux::detail
