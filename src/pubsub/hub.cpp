// SubscriptionHub, part one: subscriptions — adding and removing listeners, the
// (UN)SUBSCRIBE commands, the connection that carries them, status and close. Part two
// (hub_messages.cpp) is what happens to a message.
#include "pubsub/hub.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "net/io_load.hpp"
#include "pubsub/hub_shared.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {

using namespace hub;

SubscriptionHub::SubscriptionHub(std::shared_ptr<SharedContext> shared,
                                 std::shared_ptr<IoPool> pool, std::shared_ptr<TlsContext> tls)
    : shared_(std::move(shared)), pool_(std::move(pool)), tls_(std::move(tls)) {}

SubscriptionHub::~SubscriptionHub() {
  close(nullptr);
}

SubscriptionHub::EntryMap& SubscriptionHub::map_of(SubscriptionKind kind) noexcept {
  switch (kind) {
    case SubscriptionKind::Pattern:
      return patterns_;
    case SubscriptionKind::ShardChannel:
      return shard_channels_;
    case SubscriptionKind::Channel:
      break;
  }
  return channels_;
}

const SubscriptionHub::EntryMap& SubscriptionHub::map_of(SubscriptionKind kind) const noexcept {
  return const_cast<SubscriptionHub*>(this)->map_of(kind);
}

void SubscriptionHub::ride_on(const std::shared_ptr<Connection>& connection) {
  std::weak_ptr<SubscriptionHub> weak = weak_from_this();
  connection->set_push_handler([weak](NodeSpan push) {
    if (auto self = weak.lock()) self->on_push(push);
  });
  connection->set_ready_hook([weak](Connection& ready) {
    if (auto self = weak.lock()) self->on_ready(ready);
  });
  std::lock_guard lock(mutex_);
  connection_ = connection;
  synced_generation_ = kNotSynced;
  shared_mode_ = true;
}

Connection& SubscriptionHub::connection_locked() {
  if (connection_) return *connection_;
  // The subscription connection: an ordinary Connection (handshake, TLS, credentials,
  // reconnects) in subscriber mode, to the first endpoint.
  asio::io_context& io = pool_->next_context();
  auto connection = std::make_shared<Connection>(
      io, pool_->load_of(io), shared_, moved_to_ ? *moved_to_ : shared_->config().endpoints.front(),
      tls_);
  connection->set_subscriber_mode(true);
  connection->set_purpose(shard_hooks_.slot_moved ? ConnectionPurpose::ShardSubscription
                                                  : ConnectionPurpose::Subscription);
  std::weak_ptr<SubscriptionHub> weak = weak_from_this();
  connection->set_push_handler([weak](NodeSpan push) {
    if (auto self = weak.lock()) self->on_push(push);
  });
  connection->set_ready_hook([weak](Connection& ready) {
    if (auto self = weak.lock()) self->on_ready(ready);
  });
  connection_ = connection;
  synced_generation_ = kNotSynced;
  connection->start([](const Error&) {});  // failures are reported as connection events
  return *connection_;
}

void SubscriptionHub::move_to(const Endpoint& endpoint) {
  std::lock_guard lock(mutex_);
  moved_to_ = endpoint;
  // Shared mode rides an interactive connection, which is moved with its group.
  if (connection_ && !shared_mode_) connection_->retarget(endpoint);
}

void SubscriptionHub::fall_back_to_dedicated_locked() {
  // The interactive connection keeps the hooks; they ignore it from now on (on_ready checks
  // the connection, and a RESP2 connection sends no pushes).
  shared_mode_ = false;
  connection_.reset();
  if (listeners_ > 0) connection_locked();  // its ready hook subscribes every name
}

void SubscriptionHub::send_locked(SubscriptionKind kind, bool subscribe, std::string_view name) {
  if (closed_) return;
  Connection& connection = connection_locked();
  // Not ready, or ready but on_ready() has not run for this session yet: on_ready() sends
  // the whole set, this name included, so nothing is sent here (a second copy would reach
  // the server twice). The state is read first: it turns Ready after the generation moved.
  if (connection.state() != ConnectionState::Ready) return;
  if (connection.generation() != synced_generation_) return;
  const PubSubVerb verb = subscribe ? subscribe_verb(kind) : unsubscribe_verb(kind);
  if (!subscribe && kind == SubscriptionKind::ShardChannel) ++unsubscribing_[std::string(name)];
  const Arg args[] = {Arg(verb.command), Arg(name)};
  // The refusal handler's one reference goes to the pipeline.
  CommandState* refusal =
      subscribe ? new SubscribeRefusal(weak_from_this(), kind, std::string(name)) : nullptr;
  connection.submit(-1, args, pubsub_command(verb.command, verb.confirmed_by, 1, refusal));
}

ChannelEntry& SubscriptionHub::join_locked(SubscriptionKind kind, std::string_view name) {
  EntryMap& map = map_of(kind);
  auto it = map.find(name);
  if (it == map.end()) {
    auto entry = std::make_shared<ChannelEntry>();
    entry->kind = kind;
    entry->name = std::string(name);
    it = map.emplace(entry->name, std::move(entry)).first;
    send_locked(kind, /*subscribe=*/true, name);
  }
  return *it->second;
}

DeliveryExecutor& SubscriptionHub::executor_locked() {
  if (!executor_) executor_ = std::make_unique<DeliveryExecutor>(kDeliveryThreads);
  return *executor_;
}

Result<std::shared_ptr<SubscriptionState>> SubscriptionHub::add(SubscriptionKind kind,
                                                                std::string_view name,
                                                                MessageHandler handler,
                                                                const SubscribeOptions& options) {
  if (!handler) {
    return Error(errc::invalid_argument,
                 "redmux: subscribing to " + describe(kind, name) + " needs a handler");
  }
  auto state = std::make_shared<SubscriptionState>();
  state->kind = kind;
  state->name = std::string(name);
  state->handler = std::move(handler);
  state->capacity = std::max<std::size_t>(1, options.capacity);
  state->overflow = options.overflow;
  state->delivery = options.delivery;
  std::lock_guard lock(mutex_);
  if (closed_ || !accepting_) {
    return Error(errc::shut_down,
                 "subscribing to " + describe(kind, name) + ": the multiplexer was closed");
  }
  executor_locked();
  if (shared_mode_ && connection_->state() == ConnectionState::Ready &&
      connection_->identity().protocol != 3) {
    fall_back_to_dedicated_locked();
  }
  join_locked(kind, name).members.push_back(state);
  ++listeners_;
  return state;
}

Error SubscriptionHub::add_queue(const std::shared_ptr<QueueCore>& queue) {
  const SubscriptionKind kind = queue->kind;
  const std::vector<std::string>& names = queue->names;
  if (names.empty()) return Error(errc::invalid_argument, "redmux: a message queue needs a name");
  std::lock_guard lock(mutex_);
  if (closed_ || !accepting_) {
    return Error(errc::shut_down, "subscribing: the multiplexer was closed");
  }
  if (shared_mode_ && connection_->state() == ConnectionState::Ready &&
      connection_->identity().protocol != 3) {
    fall_back_to_dedicated_locked();
  }
  for (const std::string& name : names) {
    auto state = std::make_shared<SubscriptionState>();
    state->kind = kind;
    state->name = name;
    state->queue = queue;
    state->capacity = queue->capacity;
    state->overflow = queue->overflow;
    join_locked(kind, name).members.push_back(state);
    queue->members.push_back(std::move(state));
    ++listeners_;
  }
  return Error();
}

void SubscriptionHub::detach_locked(const std::shared_ptr<SubscriptionState>& state,
                                    Deferred& deferred) {
  state->active.store(false, std::memory_order_release);
  state->buffer.clear();
  EntryMap& map = map_of(state->kind);
  auto it = map.find(state->name);
  if (it == map.end()) return;
  auto& members = it->second->members;
  auto member = std::find(members.begin(), members.end(), state);
  if (member == members.end()) return;
  members.erase(member);
  --listeners_;
  if (!members.empty()) return;
  // The last listener: the server stops sending it. Waiters learn it never came.
  for (FutureState<void>* waiter : it->second->waiters) {
    deferred.fail.emplace_back(
        waiter, Error(errc::shut_down, "unsubscribed from " + describe(state->kind, state->name) +
                                           " before the server confirmed it"));
  }
  it->second->waiters.clear();
  map.erase(it);
  send_locked(state->kind, /*subscribe=*/false, state->name);
}

namespace {

// Handlers waiting in unsubscribe() for another handler's invocation to end, as edges
// waiter → awaited: process-wide, since handlers of different multiplexers may wait for one
// another. Only touched by an unsubscribe() inside a handler. The states are keys, never
// dereferenced (one may be gone by the time another waiter walks past it).
std::mutex g_waits_mutex;
std::unordered_map<const SubscriptionState*, const SubscriptionState*> g_waits;

/// Returns once no invocation of `state`'s handler runs, except where waiting would never
/// end: in that handler itself, on an I/O thread, and in a handler whose wait would close a
/// cycle of handlers each waiting for the next (two unsubscribing each other, or three or
/// more in a ring): the handler that closes it goes on, and the others' waits then end one
/// after another as their awaited invocations return.
void wait_for_invocation(SubscriptionState& state) {
  const SubscriptionState* self = current_invocation;
  if (self == &state || on_io_thread()) return;
  if (self) {
    std::lock_guard lock(g_waits_mutex);
    // Edges are added under the mutex, so of the handlers forming a cycle the last to add its
    // edge finds the whole cycle. A walk ends at a handler that waits for nobody; at most as
    // many steps as there are waiters, which bounds a walk into a cycle that excludes us.
    const SubscriptionState* at = &state;
    for (std::size_t steps = 0; steps <= g_waits.size(); ++steps) {
      if (at == self) return;
      const auto next = g_waits.find(at);
      if (next == g_waits.end()) break;
      at = next->second;
    }
    g_waits[self] = &state;
  }
  { std::unique_lock running(state.invoking); }
  if (self) {
    std::lock_guard lock(g_waits_mutex);
    g_waits.erase(self);
  }
}

}  // namespace

void SubscriptionHub::remove(const std::shared_ptr<SubscriptionState>& state, bool wait) {
  Deferred deferred;
  {
    std::lock_guard lock(mutex_);
    detach_locked(state, deferred);
  }
  finish(deferred);
  if (wait) wait_for_invocation(*state);
}

void SubscriptionHub::end_queue_locked(const std::shared_ptr<QueueCore>& queue, Error why,
                                       Deferred& deferred) {
  {
    std::lock_guard lock(queue->mutex);
    if (queue->ended) return;
    queue->ended = true;
    queue->error = std::move(why);
  }
  queue->arrived.notify_all();
  std::vector<std::shared_ptr<SubscriptionState>> members;
  members.swap(queue->members);  // breaks the queue ↔ member cycle
  for (const auto& member : members) detach_locked(member, deferred);
}

void SubscriptionHub::end_queue(const std::shared_ptr<QueueCore>& queue, Error why) {
  Deferred deferred;
  {
    std::lock_guard lock(mutex_);
    end_queue_locked(queue, std::move(why), deferred);
  }
  finish(deferred);
}

std::size_t SubscriptionHub::remove_all(SubscriptionKind kind, std::string_view name) {
  Deferred deferred;
  std::vector<std::shared_ptr<SubscriptionState>> members;
  {
    std::lock_guard lock(mutex_);
    EntryMap& map = map_of(kind);
    auto it = map.find(name);
    if (it == map.end()) return 0;
    members = it->second->members;
    for (const auto& member : members) {
      if (member->queue) {
        end_queue_locked(member->queue,
                         Error(errc::shut_down, "unsubscribed from " + describe(kind, name)),
                         deferred);
      } else {
        detach_locked(member, deferred);
      }
    }
  }
  finish(deferred);
  for (const auto& member : members) {
    if (!member->queue) wait_for_invocation(*member);
  }
  return members.size();
}

bool SubscriptionHub::session_current_locked() const {
  // A confirmation holds for the session it came on: not while the connection is down, nor
  // on a new session before on_ready() has subscribed again.
  return connection_ && connection_->state() == ConnectionState::Ready &&
         connection_->generation() == synced_generation_;
}

Future<void> SubscriptionHub::confirmed(SubscriptionKind kind, std::string_view name) {
  auto* state = new FutureState<void>();
  std::unique_lock lock(mutex_);
  const EntryMap& map = map_of(kind);
  auto it = map.find(name);
  if (closed_) {
    lock.unlock();
    state->set(Error(errc::shut_down, "the multiplexer was closed"));
  } else if (it == map.end()) {
    lock.unlock();
    state->set(Error(errc::invalid_argument,
                     "not subscribed to " + describe(kind, name) + " (unsubscribed?)"));
  } else if (it->second->confirmed && session_current_locked()) {
    lock.unlock();
    state->set(Result<void>());
  } else if (it->second->refused) {
    const Error refused = *it->second->refused;
    lock.unlock();
    state->set(refused);
  } else {
    state->add_ref();  // the entry's reference
    it->second->waiters.push_back(state);
  }
  return Future<void>(state);
}

void SubscriptionHub::finish(Deferred& deferred) {
  if (!deferred.posts.empty()) {
    std::lock_guard lock(mutex_);
    if (executor_) {
      for (auto& task : deferred.posts) executor_->post(std::move(task));
    }
  }
  for (const Error& error : deferred.reports) shared_->report_error(error);
  for (const std::string& warning : deferred.warnings) {
    shared_->observer().log(LogLevel::Warning, deferred.endpoint, warning);
  }
  for (FutureState<void>* waiter : deferred.confirm) {
    waiter->set(Result<void>());
    waiter->release();
  }
  for (auto& [waiter, error] : deferred.fail) {
    waiter->set(std::move(error));
    waiter->release();
  }
}

SubscriberStatus SubscriptionHub::status() const {
  SubscriberStatus status;
  {
    std::lock_guard lock(mutex_);
    status.channels = channels_.size();
    status.patterns = patterns_.size();
    status.shard_channels = shard_channels_.size();
    for (const EntryMap* map : {&channels_, &patterns_, &shard_channels_}) {
      for (const auto& [name, entry] : *map) status.refused += entry->refused ? 1 : 0;
    }
    status.subscriptions = listeners_;
    status.shared_connection = shared_mode_;
  }
  status.messages = messages_.load(std::memory_order_relaxed);
  status.delivered = delivered_.load(std::memory_order_relaxed);
  status.dropped = dropped_.load(std::memory_order_relaxed);
  status.handler_errors = handler_errors_.load(std::memory_order_relaxed);
  status.resubscribes = resubscribes_.load(std::memory_order_relaxed);
  status.slow_handlers = slow_handlers_.load(std::memory_order_relaxed);
  const auto now = std::chrono::steady_clock::now();
  for (const Running& slot : running_) {
    const auto since = slot.since.load(std::memory_order_relaxed);
    if (since == 0) continue;
    const auto ran = std::chrono::duration_cast<std::chrono::milliseconds>(
        now - std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(since)));
    status.longest_running_handler = std::max(status.longest_running_handler, ran);
  }
  return status;
}

std::optional<Endpoint> SubscriptionHub::node() const {
  std::lock_guard lock(mutex_);
  if (moved_to_) return moved_to_;
  if (connection_) return connection_->endpoint();
  return std::nullopt;
}

std::string SubscriptionHub::acl_hint() const {
  std::string endpoint;
  {
    std::lock_guard lock(mutex_);
    if (connection_) endpoint = connection_->describe_endpoint();
  }
  if (shared_->config().credentials) {  // the provider names the user: not known here
    return " (on " + endpoint +
           ": the ACL channel rules of the credential provider's user do not allow it; ACL "
           "GETUSER <user> shows them)";
  }
  const std::string& configured = shared_->config().user;
  const std::string user = configured.empty() ? std::string("default") : configured;
  return " (on " + endpoint + " as user \"" + user +
         "\": its ACL channel rules do not allow it; ACL GETUSER " + user + " shows them)";
}

void SubscriptionHub::refused(SubscriptionKind kind, std::string_view name, const Error& error) {
  Deferred deferred;
  deferred.reports.push_back(error);  // before anyone waiting sees the refusal
  {
    std::lock_guard lock(mutex_);
    EntryMap& map = map_of(kind);
    auto it = map.find(name);
    if (it == map.end() || it->second->confirmed) return;
    it->second->refused = error;
    for (FutureState<void>* waiter : it->second->waiters) deferred.fail.emplace_back(waiter, error);
    it->second->waiters.clear();
  }
  finish(deferred);
}

void SubscriptionHub::join_handlers() {
  std::unique_ptr<DeliveryExecutor> executor;
  {
    std::lock_guard lock(mutex_);
    // On a delivery thread (a handler closing the multiplexer) nothing is waited for: not
    // that handler itself, nor the other thread's, which may be waiting for it.
    if (!stopped_executor_ || stopped_executor_->on_delivery_thread()) return;
    executor = std::move(stopped_executor_);
  }
  executor.reset();  // joins its threads: their handlers have returned
}

void SubscriptionHub::stop_accepting() {
  std::lock_guard lock(mutex_);
  accepting_ = false;
}

std::size_t SubscriptionHub::buffered_locked(bool& busy) const {
  std::size_t buffered = 0;
  busy = false;
  for (const EntryMap* map : {&channels_, &patterns_, &shard_channels_}) {
    for (const auto& [name, entry] : *map) {
      busy = busy || entry->draining;
      for (const auto& member : entry->members) {
        buffered += member->buffer.size();
        busy = busy || member->workers > 0;
      }
    }
  }
  return buffered;
}

SubscriptionHub::Drained SubscriptionHub::drain(Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  if (closed_) return {};
  draining_ = true;
  bool busy = false;
  std::size_t left = buffered_locked(busy);
  // Called from a handler, the wait would wait for that handler itself.
  const bool own_thread = executor_ && executor_->on_delivery_thread();
  while ((left > 0 || busy) && !own_thread) {
    if (drained_.wait_until(lock, deadline) == std::cv_status::timeout) {
      left = buffered_locked(busy);
      break;
    }
    left = buffered_locked(busy);
  }
  return {.undelivered = left, .handler_running = busy && !own_thread};
}

std::size_t SubscriptionHub::close(const std::function<void()>& closed) {
  Deferred deferred;
  std::shared_ptr<Connection> dedicated;
  std::vector<std::shared_ptr<QueueCore>> queues;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return 0;
    closed_ = true;
    for (EntryMap* map : {&channels_, &patterns_, &shard_channels_}) {
      for (auto& [name, entry] : *map) {
        for (FutureState<void>* waiter : entry->waiters) {
          deferred.fail.emplace_back(waiter, Error(errc::shut_down, "the multiplexer was closed"));
        }
        entry->waiters.clear();
        for (const auto& member : entry->members) {
          member->active.store(false, std::memory_order_release);
          member->buffer.clear();
          if (member->queue) queues.push_back(member->queue);
        }
      }
      map->clear();
    }
    listeners_ = 0;
    if (!shared_mode_) dedicated = std::move(connection_);
    connection_.reset();
    if (executor_) {
      executor_->stop();
      stopped_executor_ = std::move(executor_);  // join_handlers() waits for its threads
    }
  }
  for (const auto& queue : queues) {
    {
      std::lock_guard lock(queue->mutex);
      if (!queue->ended) {
        queue->ended = true;
        queue->error = Error(errc::shut_down, "the multiplexer was closed");
      }
    }
    queue->arrived.notify_all();
    std::lock_guard lock(mutex_);
    queue->members.clear();
  }
  finish(deferred);
  if (!dedicated) return 0;
  if (closed) {
    dedicated->shutdown(closed);
  } else {
    dedicated->shutdown();
  }
  return 1;
}

}  // namespace redmux::detail
