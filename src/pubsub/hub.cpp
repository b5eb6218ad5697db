#include "pubsub/hub.hpp"

#include <algorithm>

#include "net/io_load.hpp"
#include "resp/classify.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

constexpr std::size_t kDeliveryThreads = 2;
/// An ordered drain task hands its thread back after this many messages (re-posting itself
/// at the back of the queue), so one busy channel cannot starve the others.
constexpr int kDrainBatch = 256;

/// The subscription whose handler this thread is running (to let it unsubscribe itself).
thread_local const SubscriptionState* current_invocation = nullptr;

/// The (P|S)(UN)SUBSCRIBE command for one kind of name, and the push confirming each name.
struct PubSubVerb {
  std::string_view command;  ///< static storage
  resp::PushKind confirmed_by;
};

PubSubVerb subscribe_verb(SubscriptionKind kind) noexcept {
  switch (kind) {
    case SubscriptionKind::Channel:
      return {"SUBSCRIBE", resp::PushKind::Subscribe};
    case SubscriptionKind::Pattern:
      return {"PSUBSCRIBE", resp::PushKind::PatternSubscribe};
    case SubscriptionKind::ShardChannel:
      return {"SSUBSCRIBE", resp::PushKind::ShardSubscribe};
  }
  return {"SUBSCRIBE", resp::PushKind::Subscribe};
}

PubSubVerb unsubscribe_verb(SubscriptionKind kind) noexcept {
  switch (kind) {
    case SubscriptionKind::Channel:
      return {"UNSUBSCRIBE", resp::PushKind::Unsubscribe};
    case SubscriptionKind::Pattern:
      return {"PUNSUBSCRIBE", resp::PushKind::PatternUnsubscribe};
    case SubscriptionKind::ShardChannel:
      return {"SUNSUBSCRIBE", resp::PushKind::ShardUnsubscribe};
  }
  return {"UNSUBSCRIBE", resp::PushKind::Unsubscribe};
}

std::string describe(SubscriptionKind kind, std::string_view name) {
  switch (kind) {
    case SubscriptionKind::Channel:
      return "channel \"" + std::string(name) + "\"";
    case SubscriptionKind::Pattern:
      return "pattern \"" + std::string(name) + "\"";
    case SubscriptionKind::ShardChannel:
      return "shard channel \"" + std::string(name) + "\"";
  }
  return std::string(name);
}

/// The server's refusal of one SUBSCRIBE-family command (an ACL channel rule …) fails the
/// confirmation its name awaits. When the connection breaks first it is dropped: the names
/// are subscribed again once a connection is ready.
class SubscribeRefusal final : public CommandState {
 public:
  SubscribeRefusal(std::weak_ptr<SubscriptionHub> hub, SubscriptionKind kind, std::string name)
      : hub_(std::move(hub)), kind_(kind), name_(std::move(name)) {}
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (auto hub = hub_.lock(); hub && is_error_reply(reply)) {
      hub->refused(kind_, name_, server_error_from(reply, subscribe_verb(kind_).command));
    }
    publish();
  }
  void fail(Error) noexcept override {
    if (claim()) publish();
  }

 private:
  std::weak_ptr<SubscriptionHub> hub_;
  SubscriptionKind kind_;
  std::string name_;
};

std::string_view policy_name(OverflowPolicy policy) noexcept {
  switch (policy) {
    case OverflowPolicy::DropOldest:
      return "DropOldest";
    case OverflowPolicy::DropNewest:
      return "DropNewest";
    case OverflowPolicy::DisconnectAndReport:
      return "DisconnectAndReport";
  }
  return "?";
}

Error overflow_error(SubscriptionKind kind, std::string_view name, std::size_t capacity,
                     OverflowPolicy policy, std::uint64_t dropped, bool queue) {
  const std::string who = queue ? "message queue" : "handler";
  std::string text = "pub/sub " + who + " on " + describe(kind, name) + ": its buffer of " +
                     std::to_string(capacity) + " messages is full (the " +
                     (queue ? "consumer" : "handler") + " is slower than the publishers); ";
  if (policy == OverflowPolicy::DisconnectAndReport) {
    text += "the subscription was ended (overflow=DisconnectAndReport)";
  } else {
    text += "messages are being dropped (overflow=" + std::string(policy_name(policy)) +
            ", dropped so far: " + std::to_string(dropped) + ")";
  }
  text += ". Raise the capacity, speed up the " + std::string(queue ? "consumer" : "handler") +
          (queue ? "" : ", or use Delivery::Concurrent");
  return Error(errc::subscription_overflow, std::move(text));
}

}  // namespace

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
  if (closed_) {
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
  if (closed_) return Error(errc::shut_down, "subscribing: the multiplexer was closed");
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

void SubscriptionHub::remove(const std::shared_ptr<SubscriptionState>& state, bool wait) {
  Deferred deferred;
  {
    std::lock_guard lock(mutex_);
    detach_locked(state, deferred);
  }
  finish(deferred);
  if (wait && current_invocation != state.get() && !on_io_thread()) {
    std::unique_lock running(state->invoking);  // waits for an invocation in progress
  }
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
    if (!member->queue && current_invocation != member.get() && !on_io_thread()) {
      std::unique_lock running(member->invoking);
    }
  }
  return members.size();
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
  } else if (it->second->confirmed) {
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
    status.subscriptions = listeners_;
    status.shared_connection = shared_mode_;
  }
  status.messages = messages_.load(std::memory_order_relaxed);
  status.delivered = delivered_.load(std::memory_order_relaxed);
  status.dropped = dropped_.load(std::memory_order_relaxed);
  status.handler_errors = handler_errors_.load(std::memory_order_relaxed);
  status.resubscribes = resubscribes_.load(std::memory_order_relaxed);
  return status;
}

void SubscriptionHub::refused(SubscriptionKind kind, std::string_view name, const Error& error) {
  Deferred deferred;
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

std::size_t SubscriptionHub::close(const std::function<void()>& closed) {
  Deferred deferred;
  std::shared_ptr<Connection> dedicated;
  std::unique_ptr<DeliveryExecutor> executor;
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
    if (executor_) executor_->stop();
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

// ---------------------------------------------------------------------------------------
// I/O thread

void SubscriptionHub::on_ready(Connection& connection) {
  // Every name in one batch (one write), one command per name: the server refuses a
  // SUBSCRIBE as a whole when any of its names is not allowed (ACL), so names sharing a
  // command would fail with a neighbour; and in a cluster the names of one SSUBSCRIBE must
  // share a slot. Confirmations arrive as pushes and mark the entries confirmed again.
  std::lock_guard lock(mutex_);
  if (closed_ || &connection != connection_.get()) return;
  if (shared_mode_ && connection.identity().protocol != 3) {
    fall_back_to_dedicated_locked();
    return;
  }
  ++ready_count_;
  synced_generation_ = connection.generation();
  std::string bytes;
  std::vector<PendingCommand> commands;
  for (SubscriptionKind kind :
       {SubscriptionKind::Channel, SubscriptionKind::Pattern, SubscriptionKind::ShardChannel}) {
    const PubSubVerb verb = subscribe_verb(kind);
    for (auto& [name, entry] : map_of(kind)) {
      entry->confirmed = false;
      PendingCommand pending =
          pubsub_command(verb.command, verb.confirmed_by, 1,
                         new SubscribeRefusal(weak_from_this(), kind, std::string(name)));
      pending.bytes_begin = bytes.size();
      const Arg args[] = {Arg(verb.command), Arg(name)};
      resp::encode_command(bytes, args);
      pending.bytes_end = bytes.size();
      commands.push_back(pending);
    }
  }
  if (commands.empty()) return;
  if (ready_count_ > 1) resubscribes_.fetch_add(1, std::memory_order_relaxed);
  connection.submit_batch(-1, bytes, commands);
}

void SubscriptionHub::on_push(NodeSpan push) {
  // [kind, name, …]: message/smessage [kind, channel, payload]; pmessage [kind, pattern,
  // channel, payload]; confirmations [kind, name, count]. Anything else (client-side
  // caching invalidations …) is not ours.
  if (push.empty() || push[0].size < 3) return;
  std::string_view parts[4];
  std::size_t count = 0;
  for (std::size_t i = 1; i < push.size() && count < 4; i = subtree_end(push, i)) {
    parts[count++] = push[i].value;
  }
  const resp::PushKind kind = resp::push_kind(push);
  if (kind == resp::PushKind::Message && count == 3) {
    dispatch(SubscriptionKind::Channel, parts[1],
             Message{SubscriptionKind::Channel, std::string(parts[1]), {}, std::string(parts[2])});
  } else if (kind == resp::PushKind::PatternMessage && count == 4) {
    dispatch(SubscriptionKind::Pattern, parts[1],
             Message{SubscriptionKind::Pattern, std::string(parts[2]), std::string(parts[1]),
                     std::string(parts[3])});
  } else if (kind == resp::PushKind::ShardMessage && count == 3) {
    dispatch(
        SubscriptionKind::ShardChannel, parts[1],
        Message{SubscriptionKind::ShardChannel, std::string(parts[1]), {}, std::string(parts[2])});
  } else if (kind == resp::PushKind::Subscribe || kind == resp::PushKind::PatternSubscribe ||
             kind == resp::PushKind::ShardSubscribe) {
    const SubscriptionKind which =
        kind == resp::PushKind::PatternSubscribe ? SubscriptionKind::Pattern
        : kind == resp::PushKind::ShardSubscribe ? SubscriptionKind::ShardChannel
                                                 : SubscriptionKind::Channel;
    Deferred deferred;
    {
      std::lock_guard lock(mutex_);
      EntryMap& map = map_of(which);
      auto it = map.find(parts[1]);
      if (it == map.end()) return;  // unsubscribed meanwhile
      it->second->confirmed = true;
      it->second->refused.reset();
      deferred.confirm.swap(it->second->waiters);
    }
    finish(deferred);
  }
}

void SubscriptionHub::dispatch(SubscriptionKind kind, std::string_view name, Message message) {
  Deferred deferred;
  std::vector<std::shared_ptr<SubscriptionState>> ended;
  std::vector<std::shared_ptr<QueueCore>> ended_queues;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    messages_.fetch_add(1, std::memory_order_relaxed);
    EntryMap& map = map_of(kind);
    auto it = map.find(name);
    if (it == map.end()) return;  // unsubscribed; the server has not caught up yet
    const std::shared_ptr<ChannelEntry> entry = it->second;
    const std::uint64_t seq = ++seq_;
    auto shared_message = std::make_shared<const Message>(std::move(message));
    for (const auto& member : entry->members) {
      if (member->queue) {
        offer_queue_locked(member, *shared_message, deferred, ended_queues);
      } else {
        offer_locked(entry, member, seq, shared_message, deferred, ended);
      }
    }
    for (const auto& state : ended) detach_locked(state, deferred);
    for (const auto& queue : ended_queues) {
      end_queue_locked(queue,
                       overflow_error(kind, name, queue->capacity,
                                      OverflowPolicy::DisconnectAndReport, 0, /*queue=*/true),
                       deferred);
    }
  }
  finish(deferred);
}

void SubscriptionHub::note_drop_locked(SubscriptionState& state, Deferred& deferred) {
  const std::uint64_t dropped = state.dropped.fetch_add(1, std::memory_order_relaxed) + 1;
  dropped_.fetch_add(1, std::memory_order_relaxed);
  if (state.dropping) return;
  state.dropping = true;  // reported once per episode: until the buffer drains
  deferred.reports.push_back(
      overflow_error(state.kind, state.name, state.capacity, state.overflow, dropped, false));
}

void SubscriptionHub::offer_locked(const std::shared_ptr<ChannelEntry>& entry,
                                   const std::shared_ptr<SubscriptionState>& member,
                                   std::uint64_t seq, const std::shared_ptr<const Message>& message,
                                   Deferred& deferred,
                                   std::vector<std::shared_ptr<SubscriptionState>>& ended) {
  if (!member->active.load(std::memory_order_relaxed)) return;
  if (member->buffer.size() >= member->capacity) {
    switch (member->overflow) {
      case OverflowPolicy::DropOldest:
        member->buffer.pop_front();
        note_drop_locked(*member, deferred);
        break;
      case OverflowPolicy::DropNewest:
        note_drop_locked(*member, deferred);
        return;
      case OverflowPolicy::DisconnectAndReport:
        member->dropped.fetch_add(1, std::memory_order_relaxed);
        dropped_.fetch_add(1, std::memory_order_relaxed);
        deferred.reports.push_back(overflow_error(member->kind, member->name, member->capacity,
                                                  member->overflow, 0, false));
        ended.push_back(member);
        return;
    }
  }
  member->buffer.emplace_back(seq, message);
  std::weak_ptr<SubscriptionHub> weak = weak_from_this();
  if (member->delivery == Delivery::Concurrent) {
    if (member->workers < kDeliveryThreads) {
      ++member->workers;
      deferred.posts.push_back([weak, member] {
        if (auto self = weak.lock()) self->drain_concurrent(member);
      });
    }
  } else if (!entry->draining) {
    entry->draining = true;
    deferred.posts.push_back([weak, entry] {
      if (auto self = weak.lock()) self->drain_entry(entry);
    });
  }
}

void SubscriptionHub::offer_queue_locked(const std::shared_ptr<SubscriptionState>& member,
                                         const Message& message, Deferred& deferred,
                                         std::vector<std::shared_ptr<QueueCore>>& ended) {
  QueueCore& queue = *member->queue;
  {
    std::lock_guard lock(queue.mutex);
    if (queue.ended) return;
    if (queue.messages.size() >= queue.capacity) {
      if (queue.overflow == OverflowPolicy::DisconnectAndReport) {
        queue.dropped.fetch_add(1, std::memory_order_relaxed);
        dropped_.fetch_add(1, std::memory_order_relaxed);
        ended.push_back(member->queue);
        deferred.reports.push_back(
            overflow_error(member->kind, member->name, queue.capacity, queue.overflow, 0, true));
        return;
      }
      const std::uint64_t dropped = queue.dropped.fetch_add(1, std::memory_order_relaxed) + 1;
      dropped_.fetch_add(1, std::memory_order_relaxed);
      if (!queue.dropping) {
        queue.dropping = true;
        deferred.reports.push_back(overflow_error(member->kind, member->name, queue.capacity,
                                                  queue.overflow, dropped, true));
      }
      if (queue.overflow == OverflowPolicy::DropNewest) return;
      queue.messages.pop_front();
    }
    queue.messages.push_back(message);
  }
  delivered_.fetch_add(1, std::memory_order_relaxed);
  queue.arrived.notify_one();
}

// ---------------------------------------------------------------------------------------
// Delivery threads

void SubscriptionHub::invoke(SubscriptionState& state, const Message& message) {
  std::shared_lock running(state.invoking);
  if (!state.active.load(std::memory_order_acquire)) return;  // unsubscribed meanwhile
  current_invocation = &state;
  try {
    state.handler(message);
    delivered_.fetch_add(1, std::memory_order_relaxed);
  } catch (const std::exception& e) {
    handler_errors_.fetch_add(1, std::memory_order_relaxed);
    shared_->report_error(
        Error(errc::handler_failed, "pub/sub handler on " + describe(state.kind, state.name) +
                                        " threw: " + e.what() +
                                        "; the message was skipped, delivery goes on"));
  } catch (...) {
    handler_errors_.fetch_add(1, std::memory_order_relaxed);
    shared_->report_error(
        Error(errc::handler_failed, "pub/sub handler on " + describe(state.kind, state.name) +
                                        " threw a non-standard exception; the message was skipped, "
                                        "delivery goes on"));
  }
  current_invocation = nullptr;
}

void SubscriptionHub::drain_entry(const std::shared_ptr<ChannelEntry>& entry) {
  // The channel's strand: one task at a time per entry (draining), so its ordered handlers
  // never run concurrently; taking the lowest sequence number first hands each message to
  // all of them before the next message.
  for (int done = 0;; ++done) {
    std::shared_ptr<SubscriptionState> member;
    std::shared_ptr<const Message> message;
    {
      std::lock_guard lock(mutex_);
      if (done == kDrainBatch && executor_) {
        std::weak_ptr<SubscriptionHub> weak = weak_from_this();
        executor_->post([weak, entry] {
          if (auto self = weak.lock()) self->drain_entry(entry);
        });
        return;  // still draining: the re-posted task continues
      }
      for (const auto& candidate : entry->members) {
        if (candidate->queue || candidate->delivery != Delivery::Ordered ||
            candidate->buffer.empty()) {
          continue;
        }
        if (!member || candidate->buffer.front().first < member->buffer.front().first) {
          member = candidate;
        }
      }
      if (!member) {
        entry->draining = false;
        return;
      }
      message = std::move(member->buffer.front().second);
      member->buffer.pop_front();
      if (member->buffer.empty()) member->dropping = false;
    }
    invoke(*member, *message);
  }
}

void SubscriptionHub::drain_concurrent(const std::shared_ptr<SubscriptionState>& state) {
  for (;;) {
    std::shared_ptr<const Message> message;
    {
      std::lock_guard lock(mutex_);
      if (state->buffer.empty()) {
        --state->workers;
        state->dropping = false;
        return;
      }
      message = std::move(state->buffer.front().second);
      state->buffer.pop_front();
    }
    invoke(*state, *message);
  }
}

}  // namespace redmux::detail
