#include "mux/held_commands.hpp"

#include "mux/core.hpp"
#include "net/connection.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

long long ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

// A caller's command, or a fire-and-forget one (given asyncTimeout by append_locked()): held
// until its deadline at most.
bool waits_until_deadline(const PendingCommand& command) noexcept {
  return command.kind == PendingKind::Caller || command.kind == PendingKind::FireAndForget;
}

}  // namespace

HeldCommands::HeldCommands(MuxCore& core, std::shared_ptr<SharedContext> shared,
                           asio::io_context& io)
    : core_(core), shared_(std::move(shared)), io_(io), timer_(io) {}

HeldCommands::~HeldCommands() {
  close();
}

std::size_t HeldCommands::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void HeldCommands::hold(int db, std::span<const Arg> args, PendingCommand command,
                        std::size_t index) {
  Entry entry;
  resp::encode_command(entry.bytes, args);
  command.db = db < 0 ? shared_->config().default_database : db;
  if (command.retry_written && command.state) command.state->retained_command = entry.bytes;
  command.bytes_begin = 0;  // offsets into entry.bytes: submit_batch() rebases them
  command.bytes_end = entry.bytes.size();
  entry.command = command;
  entry.index = index;
  std::unique_lock lock(mutex_);
  if (closed_) {
    lock.unlock();
    if (entry.command.state) {
      entry.command.state->fail(
          Error(errc::shut_down,
                std::string(entry.command.name) + " not sent: the multiplexer was closed"));
      entry.command.state->release();
    }
    if (entry.command.counted) shared_->release_slots(1);
    return;
  }
  const bool primary_bound = for_primary(entry.command.replica_use);
  const bool behind_others = flushing_ || (primary_bound && primary_waiters_.load() != 0);
  append_locked(std::move(entry));
  if (behind_others) {
    // It cannot go before those waiting ahead of it: no need to look at every entry again.
    if (flushing_) again_ = true;
    arm_locked();
    return;
  }
  flush(lock);
}

void HeldCommands::connection_down(Connection& connection, std::size_t group, std::size_t index,
                                   bool retargeted) {
  std::unique_lock lock(mutex_);
  if (closed_ || !core_.takes_from(connection, group, retargeted)) return;
  std::string bytes;
  std::vector<PendingCommand> commands;
  connection.take_queued(bytes, commands);
  if (commands.empty()) return;
  for (PendingCommand& command : commands) {
    Entry entry;
    entry.bytes.assign(bytes, command.bytes_begin, command.bytes_end - command.bytes_begin);
    entry.command = command;
    entry.command.bytes_begin = 0;  // offsets into entry.bytes: submit_batch() rebases them
    entry.command.bytes_end = entry.bytes.size();
    entry.index = index;
    entry.from_group = group;
    append_locked(std::move(entry));
  }
  flush(lock);
}

bool HeldCommands::send_refused_read(const PendingCommand& command, std::size_t group,
                                     std::size_t index) {
  std::shared_ptr<Connection> to;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return false;
    to = core_.place_refused_read(group, index);
  }
  if (!to) return false;
  to->send_on(command);
  return true;
}

void HeldCommands::try_again() {
  post_to(io_, [weak = weak_from_this()] {
    if (auto self = weak.lock()) {
      // A role changed: a primary's connection that is down may hold writes that may now run
      // on the server that replaced it (MuxCore::takes_from()). Its next failed attempt hands
      // them over (the down hook, on its own I/O thread): made now, not after its backoff.
      const auto& groups = self->core_.groups();
      for (std::size_t g = 0; g < groups.size(); ++g) {
        for (std::size_t i = 0; i < groups[g].size(); ++i) {
          Connection& connection = *groups[g][i];
          if (connection.state() != ConnectionState::Ready && !connection.is_replica() &&
              self->core_.takes_from(connection, g, /*retargeted=*/false)) {
            connection.reconnect_now();
          }
        }
      }
      std::unique_lock lock(self->mutex_);
      if (!self->closed_ && !self->entries_.empty()) self->flush(lock);
    }
  });
}

void HeldCommands::append_locked(Entry entry) {
  PendingCommand& command = entry.command;
  if (command.kind == PendingKind::FireAndForget && command.deadline == Clock::time_point::max()) {
    // No deadline once sent; while held, asyncTimeout, as a caller's: a write that can never
    // go would keep every command bound for the primary behind it for ever.
    const auto timeout = shared_->config().async_timeout;
    command.deadline = Clock::now() + timeout;
    command.timeout_ms = static_cast<std::uint32_t>(timeout.count());
    command.timeout_source = TimeoutSource::AsyncTimeout;
  }
  if (for_primary(entry.command.replica_use)) {
    primary_waiters_.fetch_add(1, std::memory_order_acq_rel);
  }
  entries_.push_back(std::move(entry));
}

void HeldCommands::recount_locked() {
  std::size_t waiting = flushing_ ? 1 : 0;
  for (const Entry& entry : entries_) {
    if (for_primary(entry.command.replica_use)) ++waiting;
  }
  primary_waiters_.store(waiting, std::memory_order_release);
}

void HeldCommands::flush(std::unique_lock<std::mutex>& lock) {
  if (flushing_) {
    again_ = true;
    return;
  }
  flushing_ = true;
  do {
    again_ = false;
    std::vector<std::pair<std::shared_ptr<Connection>, Entry>> placed;
    After after;
    std::deque<Entry> kept;
    bool primary_blocked = false;  // one waits for the primary: those behind it wait too
    for (Entry& entry : entries_) {
      const bool primary_bound = for_primary(entry.command.replica_use);
      if (primary_bound && primary_blocked) {
        kept.push_back(std::move(entry));
        continue;
      }
      Target target = core_.place_held(entry);
      if (target.connection != nullptr) {
        placed.emplace_back(std::move(target.connection), std::move(entry));
      } else if (target.wait) {
        primary_blocked = primary_blocked || primary_bound;
        kept.push_back(std::move(entry));
      } else {
        after.push_back([this, command = entry.command, error = std::move(target.error)] {
          if (command.state) {
            command.state->fail(error);
            command.state->release();
          }
          if (command.counted) shared_->release_slots(1);
        });
      }
    }
    entries_ = std::move(kept);
    recount_locked();  // counts this flush too: new commands for the primary queue behind
    lock.unlock();
    // In order: a placed command never overtakes one placed before it on the same connection.
    for (auto& [connection, entry] : placed) {
      // Placed: a fire-and-forget command has no deadline any more, as one never held.
      if (entry.command.kind == PendingKind::FireAndForget) {
        entry.command.deadline = Clock::time_point::max();
      }
      connection->submit_batch(entry.command.db, entry.bytes,
                               std::span<PendingCommand>(&entry.command, 1));
    }
    for (auto& task : after) task();
    lock.lock();
  } while (again_ && !closed_);
  flushing_ = false;
  recount_locked();
  arm_locked();
}

void HeldCommands::expire_locked(Clock::time_point now, After& after) {
  std::deque<Entry> kept;
  std::string last_message;  // the last timeout's, for the log
  for (Entry& entry : entries_) {
    const PendingCommand& command = entry.command;
    if (!waits_until_deadline(command) || command.deadline > now) {
      kept.push_back(std::move(entry));
      continue;
    }
    const long long waited = ms_between(created_at(command), now);
    // Names the setting the deadline came from, as a connection's timeout does.
    const bool call = command.timeout_source == TimeoutSource::Call;
    const std::string which = call ? "this call's timeout" : "asyncTimeout";
    std::string message =
        "Timeout awaiting reply to " + std::string(command.name) + " after " +
        std::to_string(waited) + " ms (" + which + " " + std::to_string(command.timeout_ms) +
        " ms): command was still queued, not sent; it waited for a primary (" +
        core_.why_no_primary() + "; failoverWait=true). Raise " +
        (call ? "this call's CallOptions::timeout" : which) + " to wait longer for failovers.";
    last_message = message;
    // Never written here; one held after a break may have been written before it (resends).
    Error error = command.resends == 0 ? Error::never_ran(errc::timeout, std::move(message))
                                       : Error(errc::timeout, std::move(message));
    after.push_back([this, command, error = std::move(error)] {
      if (command.state) {
        command.state->fail(error);
        command.state->release();
      } else {
        shared_->report_error(error);  // fire-and-forget: nobody else hears of it
      }
      if (command.counted) shared_->release_slots(1);
    });
  }
  if (kept.size() != entries_.size()) {
    const std::size_t timed_out = entries_.size() - kept.size();
    shared_->counters().timeouts.fetch_add(timed_out, std::memory_order_relaxed);
    Observer& observer = shared_->observer();
    if (observer.logs(LogLevel::Warning)) {
      std::string record = timeout_log_.note(now, timed_out, last_message);
      if (!record.empty()) {  // logged after the mutex is released, like the failures
        after.push_back([&observer, record = std::move(record)] {
          observer.log(LogLevel::Warning, "", record);
        });
      }
    }
  }
  entries_ = std::move(kept);
  recount_locked();
}

void HeldCommands::arm_locked() {
  if (closed_ || entries_.empty()) {
    if (timer_at_ != Clock::time_point::max()) {
      timer_.cancel();
      timer_at_ = Clock::time_point::max();
    }
    return;
  }
  // The next deadline, or the next look at the roles while commands wait for a primary.
  Clock::time_point at = Clock::now() + kRoleCheck;
  for (const Entry& entry : entries_) {
    if (waits_until_deadline(entry.command)) at = std::min(at, entry.command.deadline);
  }
  if (at >= timer_at_) return;
  timer_at_ = at;
  timer_.wait_until(at, call_when_fired(weak_from_this(), &HeldCommands::on_timer));
}

void HeldCommands::on_timer() {
  std::unique_lock lock(mutex_);
  if (closed_) return;
  timer_at_ = Clock::time_point::max();
  const Clock::time_point now = Clock::now();
  After after;
  expire_locked(now, after);
  const bool ask_roles = primary_waiters_.load() != 0 && now - last_role_check_ >= kRoleCheck;
  if (ask_roles) last_role_check_ = now;
  // The promotion is seen by asking (a replica is otherwise asked once a second). Under the
  // lock: the core is alive while it is held (MuxCore::close() takes it first).
  if (ask_roles) core_.check_roles();
  if (!entries_.empty()) {
    flush(lock);
  } else {
    arm_locked();
  }
  lock.unlock();
  for (auto& task : after) task();
}

void HeldCommands::close() {
  std::deque<Entry> entries;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    entries.swap(entries_);
    primary_waiters_.store(0, std::memory_order_release);
  }
  for (Entry& entry : entries) {
    if (entry.command.state) {
      entry.command.state->fail(
          Error(errc::shut_down,
                std::string(entry.command.name) + " not sent: the multiplexer was closed"));
      entry.command.state->release();
    }
    if (entry.command.counted) shared_->release_slots(1);
  }
}

}  // namespace redmux::detail
