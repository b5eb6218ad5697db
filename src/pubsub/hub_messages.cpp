// SubscriptionHub, part two: messages — on the I/O thread (resubscribing when a connection
// is ready, reading pushes, offering each message to its listeners' buffers) and on the
// delivery threads (running handlers, draining buffers in order). Part one (hub.cpp) is
// the subscriptions themselves.
#include <algorithm>

#include "net/io_load.hpp"
#include "pubsub/hub.hpp"
#include "pubsub/hub_shared.hpp"
#include "resp/encoder.hpp"
#include "topology/slot.hpp"

namespace redmux::detail {

using namespace hub;

namespace {

/// An ordered drain task hands its thread back after this many messages (re-posting itself
/// at the back of the queue), so one busy channel cannot starve the others.
constexpr int kDrainBatch = 256;

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

/// `held`: a queue ended by DisconnectAndReport, the messages it still hands out.
Error overflow_error(SubscriptionKind kind, std::string_view name, std::size_t capacity,
                     OverflowPolicy policy, std::uint64_t dropped, bool queue,
                     std::size_t held = 0) {
  const std::string who = queue ? "message queue" : "handler";
  std::string text = "pub/sub " + who + " on " + describe(kind, name) + ": its buffer of " +
                     std::to_string(capacity) + " messages is full (the " +
                     (queue ? "consumer" : "handler") + " is slower than the publishers); ";
  if (policy == OverflowPolicy::DisconnectAndReport) {
    text += "the subscription was ended (overflow=DisconnectAndReport)";
    if (!queue) {
      text += "; " + std::to_string(dropped) +
              " messages were dropped: the one arriving and those its handler had not run yet";
    } else {
      text += "; 1 message was dropped, the one arriving; the " + std::to_string(held) +
              " it holds are still handed out by pop(), which then throws this error";
    }
  } else {
    text += "messages are being dropped (overflow=" + std::string(policy_name(policy)) +
            ", dropped so far: " + std::to_string(dropped) + ")";
  }
  text += ". Raise the capacity, speed up the " + std::string(queue ? "consumer" : "handler") +
          (queue ? "" : ", or use Delivery::Concurrent");
  return Error(errc::subscription_overflow, std::move(text));
}

}  // namespace

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
  unsubscribing_.clear();  // a new session: nothing sent on it yet
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
  // Ahead of the backlog: a PUBLISH queued while a shared connection was down must not reach
  // the server before the SUBSCRIBE that would let this client receive it.
  connection.submit_first(bytes, commands);
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
  } else if (kind == resp::PushKind::ShardUnsubscribe) {
    on_shard_unsubscribed(parts[1]);
  }
}

void SubscriptionHub::on_shard_unsubscribed(std::string_view name) {
  Deferred deferred;
  {
    std::lock_guard lock(mutex_);
    if (auto ours = unsubscribing_.find(std::string(name)); ours != unsubscribing_.end()) {
      if (--ours->second == 0) unsubscribing_.erase(ours);
      return;
    }
    auto it = shard_channels_.find(name);
    if (it == shard_channels_.end() || !it->second->confirmed) return;
    // Unasked: the server ended it, which Redis does when the channel's slot moves to
    // another node (a resharding). Its listeners end; nothing is sent (the server has
    // already dropped it), and a new ssubscribe() goes to the slot's new node once the map
    // names it: it is loaded again at once (below).
    const std::string where = connection_ ? connection_->describe_endpoint() : std::string();
    end_shard_channel_locked(
        it,
        Error(errc::subscription_ended,
              describe(SubscriptionKind::ShardChannel, name) + " was ended by " + where +
                  " (sunsubscribe): its slot moved to another node; subscribe again"),
        deferred);
  }
  finish(deferred);
  if (shard_hooks_.slot_moved) shard_hooks_.slot_moved();
}

void SubscriptionHub::shard_redirected(std::string_view name, NodeSpan reply) {
  // The map learns the owner first, so that a subscribe made when the error is seen goes
  // there. The SSUBSCRIBE is not followed: the entry and its handles belong to this node's
  // hub, and a shard channel whose slot moves ends the same way (on_shard_unsubscribed()).
  // A shard hub's node, or for the hub for channels and patterns (which takes shard
  // channels while no slot map is known) the first endpoint.
  std::string where;
  std::string host;
  if (const std::optional<Endpoint> at = node()) {
    where = at->to_string();
    host = at->host;
  }
  if (shard_hooks_.redirected) shard_hooks_.redirected(reply, host);
  Deferred deferred;
  {
    std::lock_guard lock(mutex_);
    auto it = shard_channels_.find(name);
    if (it == shard_channels_.end() || it->second->confirmed) return;
    end_shard_channel_locked(
        it,
        Error(errc::subscription_ended,
              describe(SubscriptionKind::ShardChannel, name) + " was refused by " + where + " (" +
                  std::string(reply[0].value) +
                  "): its slot is served by another node; subscribe again"),
        deferred);
  }
  finish(deferred);
}

void SubscriptionHub::end_shard_channel_locked(EntryMap::iterator it, const Error& ended,
                                               Deferred& deferred) {
  const std::shared_ptr<ChannelEntry> entry = it->second;
  shard_channels_.erase(it);
  for (FutureState<void>* waiter : entry->waiters) deferred.fail.emplace_back(waiter, ended);
  entry->waiters.clear();
  for (const auto& member : entry->members) {
    member->active.store(false, std::memory_order_release);
    member->buffer.clear();
    --listeners_;
    if (member->queue) end_queue_locked(member->queue, ended, deferred);
  }
  deferred.reports.push_back(ended);
}

void SubscriptionHub::end_shard_channels_elsewhere(
    const Endpoint& node, const std::function<std::optional<Endpoint>(std::uint16_t)>& owner_of,
    bool before_map) {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, entry] : shard_channels_) names.push_back(name);
  }
  // Asked outside the lock: the owner comes from the cluster's slot map.
  std::vector<std::pair<std::string, Endpoint>> moved;
  for (std::string& name : names) {
    const std::uint16_t slot = slot_of(name);
    if (std::optional<Endpoint> owner = owner_of(slot); owner && *owner != node) {
      moved.emplace_back(std::move(name), std::move(*owner));
    }
  }
  if (moved.empty()) return;
  Deferred deferred;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    for (const auto& [name, owner] : moved) {
      auto it = shard_channels_.find(name);
      if (it == shard_channels_.end()) continue;
      // A failover promoted another node (or a resharding moved the slot and its node's
      // sunsubscribe has not come): this node's connection no longer carries the channel's
      // messages, whether it is down or up. Ended and said so, never left silent.
      const std::string slot = std::to_string(slot_of(name));
      end_shard_channel_locked(
          it,
          Error(errc::subscription_ended,
                before_map
                    ? describe(SubscriptionKind::ShardChannel, name) +
                          " was ended: it was subscribed before the cluster's slot map was known, "
                          "on the subscription connection to " +
                          node.to_string() + ", and its slot " + slot + " is served by " +
                          owner.to_string() + "; subscribe again"
                    : describe(SubscriptionKind::ShardChannel, name) +
                          " was ended: its slot moved to " + owner.to_string() + " (slot " + slot +
                          ", from " + node.to_string() +
                          ": a failover or a resharding); subscribe "
                          "again"),
          deferred);
    }
  }
  finish(deferred);
}

void SubscriptionHub::dispatch(SubscriptionKind kind, std::string_view name, Message message) {
  Deferred deferred;
  std::vector<std::shared_ptr<SubscriptionState>> ended;
  std::vector<std::shared_ptr<QueueCore>> ended_queues;
  {
    std::lock_guard lock(mutex_);
    if (closed_ || draining_) return;  // close(deadline) drains what came before, only
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
      std::size_t held = 0;
      {
        std::lock_guard queue_lock(queue->mutex);  // after the hub's mutex: the lock order
        held = queue->messages.size();
      }
      end_queue_locked(queue,
                       overflow_error(kind, name, queue->capacity,
                                      OverflowPolicy::DisconnectAndReport, 1, /*queue=*/true, held),
                       deferred);
    }
    note_slow_handlers_locked(deferred);
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
      case OverflowPolicy::DisconnectAndReport: {
        // Ending it discards what its handler has not run yet (detach_locked()): dropped too,
        // with the arriving message, and counted so.
        const std::uint64_t lost = 1 + member->buffer.size();
        member->dropped.fetch_add(lost, std::memory_order_relaxed);
        dropped_.fetch_add(lost, std::memory_order_relaxed);
        deferred.reports.push_back(overflow_error(member->kind, member->name, member->capacity,
                                                  member->overflow, lost, false));
        ended.push_back(member);
        return;
      }
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
        deferred.reports.push_back(overflow_error(member->kind, member->name, queue.capacity,
                                                  queue.overflow, 1, true, queue.messages.size()));
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
  Running& slot = running_[DeliveryExecutor::thread_index() % kDeliveryThreads];
  const auto start = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(slot.mutex);
    slot.state = &state;
    slot.reported = false;
    slot.since.store(start.time_since_epoch().count(), std::memory_order_relaxed);
  }
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
  bool reported = false;
  std::string endpoint;
  {
    std::lock_guard lock(slot.mutex);
    slot.state = nullptr;
    reported = slot.reported;
    if (reported) endpoint = std::move(slot.endpoint);
    slot.since.store(0, std::memory_order_relaxed);
  }
  const auto ran = std::chrono::steady_clock::now() - start;
  if (ran < kSlowHandler) return;
  slow_handlers_.fetch_add(1, std::memory_order_relaxed);
  Observer& observer = shared_->observer();
  if (!reported || !observer.logs(LogLevel::Info)) return;
  try {  // the end of what was logged at Warning
    observer.log(LogLevel::Info, endpoint,
                 "pub/sub handler on " + describe(state.kind, state.name) + " returned after " +
                     seconds_text(ran));
  } catch (...) {  // out of memory for the text: the count stands
  }
}

void SubscriptionHub::note_slow_handlers_locked(Deferred& deferred) {
  // The records' endpoint, read under mutex_ (held): the carrying connection's.
  const auto endpoint = [&] {
    if (deferred.endpoint.empty() && connection_) {
      deferred.endpoint = connection_->describe_endpoint();
    }
    return deferred.endpoint;
  };
  using std::chrono::steady_clock;
  steady_clock::rep oldest = 0;
  for (const Running& slot : running_) {
    const steady_clock::rep since = slot.since.load(std::memory_order_relaxed);
    if (since != 0 && (oldest == 0 || since < oldest)) oldest = since;
  }
  if (oldest == 0) return;  // no handler runs: the common case costs two loads
  const steady_clock::time_point now = steady_clock::now();
  if (now - steady_clock::time_point(steady_clock::duration(oldest)) < kSlowHandler) return;
  std::size_t held = 0;  // delivery threads in a slow call
  for (const Running& slot : running_) {
    const steady_clock::rep since = slot.since.load(std::memory_order_relaxed);
    if (since != 0 &&
        now - steady_clock::time_point(steady_clock::duration(since)) >= kSlowHandler) {
      ++held;
    }
  }
  for (Running& slot : running_) {
    std::lock_guard lock(slot.mutex);
    const steady_clock::rep since = slot.since.load(std::memory_order_relaxed);
    if (slot.state == nullptr || slot.reported) continue;
    const steady_clock::duration ran =
        now - steady_clock::time_point(steady_clock::duration(since));
    if (ran < kSlowHandler) continue;
    slot.reported = true;
    slot.endpoint = endpoint();  // for the record of its return
    // Its own buffer is guarded by mutex_, which the caller holds.
    std::string text = "pub/sub handler on " + describe(slot.state->kind, slot.state->name) +
                       " has been running for " + seconds_text(ran);
    const std::size_t waiting = slot.state->buffer.size();
    if (waiting > 0) {
      text += " (" + std::to_string(waiting) +
              (waiting == 1 ? " message waits" : " messages wait") + " for it)";
    }
    text += held == kDeliveryThreads
                ? "; every delivery thread is in a handler running 1 s or longer, so no "
                  "channel's handler runs until one returns"
                : "; it holds one of the " + std::to_string(kDeliveryThreads) +
                      " delivery threads that every channel's handlers share";
    deferred.warnings.push_back(std::move(text));
  }
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
        if (draining_) drained_.notify_all();
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
        if (draining_) drained_.notify_all();
        return;
      }
      message = std::move(state->buffer.front().second);
      state->buffer.pop_front();
    }
    invoke(*state, *message);
  }
}

}  // namespace redmux::detail
