// Subscriber: pub/sub for a Multiplexer — `mux->subscriber()`. Subscriptions go to a
// connection of their own (opened on the first subscribe, with the multiplexer's handshake,
// TLS and credentials), or, with RESP3 and sharedSubscriptionConnection=true, ride the
// interactive connection as RESP3 pushes. However many handlers and queues share a channel,
// the server sees one SUBSCRIBE for it, and one UNSUBSCRIBE when the last of them goes.
// After a reconnect every subscription is re-established in one pipelined write.
//
// Delivery: the I/O thread only files each message into bounded buffers; handlers run on
// the subscriber's delivery threads (two, shared by every subscription of the multiplexer),
// never on an I/O thread, so a handler may block and may wait on futures. By default
// (Delivery::Ordered) the handlers of one channel (or pattern) never run concurrently and
// each sees that channel's messages in the order the server sent them; Delivery::Concurrent
// lets one handler run on several delivery threads at once. A handler that throws is
// reported to Multiplexer::on_error (errc::handler_failed) and delivery goes on. A handler
// that falls behind fills its buffer (SubscribeOptions::capacity); then its overflow policy
// applies, drops are counted (Subscription::dropped(), SubscriberStatus::dropped) and
// reported to on_error (errc::subscription_overflow, once per episode of dropping).
//
// Ownership: a Subscriber keeps the multiplexer's core (its memory) alive, not the
// multiplexer open: when the last Multiplexer pointer goes, the multiplexer closes and every
// subscription ends (subscribing then fails: "the multiplexer was closed"), so keep the
// Multiplexer for as long as you subscribe. A Subscription or MessageQueue
// is a handle that ends its subscription when destroyed (RAII) or on unsubscribe();
// unsubscribe() returns once no invocation of the handler is running (unless called from
// that handler itself), so a handler's captures may be destroyed right after.
//
// Threads: every member of Subscriber, Subscription and MessageQueue is safe from any thread
// (one handle object must not be used by two threads at once, like any value).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "redmux/error.hpp"
#include "redmux/future.hpp"

namespace redmux {

namespace detail {
class ShardRouter;
class SubscriptionHub;
struct SubscriptionState;
struct QueueCore;
}  // namespace detail

/// What a subscription listens to.
enum class SubscriptionKind : std::uint8_t {
  Channel,       ///< SUBSCRIBE channel
  Pattern,       ///< PSUBSCRIBE pattern (glob-style)
  ShardChannel,  ///< SSUBSCRIBE shard channel (Redis 7+, also on a standalone server)
};

/// One message as the server delivered it. Binary-safe.
struct Message {
  SubscriptionKind kind = SubscriptionKind::Channel;  ///< which kind of subscription matched
  std::string channel;                                ///< the channel it was published to
  std::string pattern;  ///< the pattern that matched (SubscriptionKind::Pattern only)
  std::string payload;
};

/// What happens when a subscription's buffer is full (the handler or consumer is slower
/// than the publishers).
enum class OverflowPolicy : std::uint8_t {
  DropOldest,  ///< the oldest buffered message makes room (counted as dropped)
  DropNewest,  ///< the arriving message is dropped (counted)
  /// The subscription ends: it is unsubscribed, the error is reported to on_error, and a
  /// MessageQueue hands out what it holds, then throws the error from pop(). (The
  /// connection, shared with other subscriptions, stays.)
  DisconnectAndReport,
};

/// How a handler's messages are run.
enum class Delivery : std::uint8_t {
  Ordered,     ///< one at a time per channel, in order (default)
  Concurrent,  ///< on any free delivery thread: no order, no mutual exclusion
};

struct SubscribeOptions {
  std::size_t capacity = 10000;  ///< messages buffered for this handler before overflow
  OverflowPolicy overflow = OverflowPolicy::DropOldest;
  Delivery delivery = Delivery::Ordered;
};

struct MessageQueueOptions {
  std::size_t capacity = 10000;  ///< messages held before overflow
  OverflowPolicy overflow = OverflowPolicy::DropOldest;
};

/// Called on a delivery thread with each message. May block; an exception it throws is
/// reported to Multiplexer::on_error and does not stop delivery.
using MessageHandler = std::function<void(const Message&)>;

/// Counters since the subscriber started (snapshots; not mutually consistent).
struct SubscriberStatus {
  /// Channels subscribed to (one per name), the ones the server refused included
  std::size_t channels = 0;
  std::size_t patterns = 0;        ///< patterns subscribed to, likewise
  std::size_t shard_channels = 0;  ///< shard channels subscribed to, likewise
  /// Of those, names whose SUBSCRIBE-family command the server refused (an ACL channel rule):
  /// registered still, and asked for again after a reconnect
  std::size_t refused = 0;
  /// Listeners: each handler, and each name of each queue (several may share a channel)
  std::size_t subscriptions = 0;
  std::uint64_t messages = 0;        ///< messages received from the server
  std::uint64_t delivered = 0;       ///< handler calls and queue insertions
  std::uint64_t dropped = 0;         ///< dropped by overflow policies
  std::uint64_t handler_errors = 0;  ///< handler invocations that threw
  /// Handler calls that ran 1 s or longer (each is logged at Warning once a message waits
  /// behind it: docs/pubsub.md, "Delivery")
  std::uint64_t slow_handlers = 0;
  /// How long the handler call running longest right now has been running; zero when none
  /// runs. A value that keeps growing is a handler that is stuck.
  std::chrono::milliseconds longest_running_handler{0};
  std::uint64_t resubscribes = 0;  ///< times the subscriptions were re-established (reconnects)
  bool shared_connection = false;  ///< riding the interactive connection (RESP3 pushes)
};

/// A handler's subscription to one channel, pattern or shard channel. Move-only; ends the
/// subscription when destroyed.
class Subscription {
 public:
  Subscription() = default;
  Subscription(Subscription&&) noexcept = default;
  Subscription& operator=(Subscription&&) noexcept;
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  ~Subscription();

  /// Completes once the server has confirmed the subscription on the current connection (at
  /// once when it already has); fails with errc::shut_down when the multiplexer closes first.
  Future<void> confirmed() const;
  /// Stops delivery: buffered messages are discarded; UNSUBSCRIBE is sent when this was the
  /// channel's last handler. Returns once the handler is not running (from inside the handler
  /// itself, and on an I/O thread, it does not wait; nor in a handler whose wait would close
  /// a ring of handlers each unsubscribing the next: docs/pubsub.md). Idempotent.
  void unsubscribe();
  /// False after unsubscribe(), after DisconnectAndReport ended it, or when empty.
  bool active() const noexcept;
  /// Messages this subscription dropped (overflow).
  std::uint64_t dropped() const noexcept;
  SubscriptionKind kind() const noexcept;
  /// The channel, pattern or shard channel.
  const std::string& name() const;

 private:
  friend class Subscriber;
  Subscription(std::shared_ptr<detail::SubscriptionHub> hub,
               std::shared_ptr<detail::SubscriptionState> state);
  std::shared_ptr<detail::SubscriptionHub> hub_;
  std::shared_ptr<detail::SubscriptionState> state_;
};

/// Messages of one or more channels (or patterns …) in one bounded, ordered queue, for a
/// consumer that pulls. Move-only; unsubscribes when destroyed.
class MessageQueue {
 public:
  MessageQueue() = default;
  MessageQueue(MessageQueue&&) noexcept = default;
  MessageQueue& operator=(MessageQueue&&) noexcept;
  MessageQueue(const MessageQueue&) = delete;
  MessageQueue& operator=(const MessageQueue&) = delete;
  ~MessageQueue();

  /// Blocks until a message arrives. Throws the error that ended the queue (overflow under
  /// DisconnectAndReport: errc::subscription_overflow; a shard channel whose slot moved:
  /// errc::subscription_ended; unsubscribe() or the multiplexer closing: errc::shut_down)
  /// once nothing is left in it. On an I/O thread: DeadlockError.
  Message pop();
  /// Like pop() but waits at most `timeout`; nullopt when nothing arrived in time.
  std::optional<Message> pop_for(std::chrono::milliseconds timeout);
  /// A message if one is waiting, nullopt otherwise (also once the queue has ended and is
  /// empty: see error()). Never blocks.
  std::optional<Message> try_pop();
  /// Messages waiting now.
  std::size_t size() const;
  /// Messages dropped by the overflow policy.
  std::uint64_t dropped() const noexcept;
  /// Why the queue ended (ok Error while it runs).
  Error error() const;
  /// Completes once the server has confirmed every channel of the queue.
  Future<void> confirmed() const;
  /// Ends the queue: unsubscribes its channels (where it was their last subscriber); what it
  /// holds can still be popped, then pop() throws errc::shut_down. Idempotent.
  void unsubscribe();

 private:
  friend class Subscriber;
  MessageQueue(std::shared_ptr<detail::SubscriptionHub> hub,
               std::shared_ptr<detail::QueueCore> queue);
  std::shared_ptr<detail::SubscriptionHub> hub_;
  std::shared_ptr<detail::QueueCore> queue_;
};

/// The pub/sub entry point of a multiplexer. Cheap to copy; take one per use or keep it.
class Subscriber {
 public:
  /// Subscribes `handler` to `channel` (SUBSCRIBE, sent once per channel). Throws
  /// InvalidArgumentError for an empty handler, ConnectionError when the multiplexer closed.
  ///   auto sub = mux->subscriber().subscribe("news", [](const redmux::Message& m) { … });
  Subscription subscribe(std::string_view channel, MessageHandler handler,
                         SubscribeOptions options = {});
  /// Subscribes `handler` to channels matching the glob-style `pattern` (PSUBSCRIBE).
  /// Message::pattern says which pattern matched, Message::channel the actual channel.
  Subscription psubscribe(std::string_view pattern, MessageHandler handler,
                          SubscribeOptions options = {});
  /// Subscribes `handler` to a shard channel (SSUBSCRIBE; Redis 7+ / Valkey).
  Subscription ssubscribe(std::string_view shard_channel, MessageHandler handler,
                          SubscribeOptions options = {});

  /// One queue for the messages of all `channels` (SUBSCRIBE), in arrival order.
  MessageQueue subscribe_queue(std::initializer_list<std::string_view> channels,
                               MessageQueueOptions options = {});
  MessageQueue subscribe_queue(const std::vector<std::string>& channels,
                               MessageQueueOptions options = {});
  /// One queue for the messages of all `patterns` (PSUBSCRIBE).
  MessageQueue psubscribe_queue(const std::vector<std::string>& patterns,
                                MessageQueueOptions options = {});
  /// One queue for the messages of all `shard_channels` (SSUBSCRIBE).
  MessageQueue ssubscribe_queue(const std::vector<std::string>& shard_channels,
                                MessageQueueOptions options = {});

  /// The same for one name: subscribe_queue("jobs"), psubscribe_queue(pattern) with a
  /// std::string … (A braced list, {"a", "b"}, takes the overloads above.)
  template <class Name>
  requires std::is_convertible_v<const Name&, std::string_view> MessageQueue
  subscribe_queue(const Name& channel, MessageQueueOptions options = {}) {
    return subscribe_queue(one_name(channel), std::move(options));
  }
  template <class Name>
  requires std::is_convertible_v<const Name&, std::string_view> MessageQueue
  psubscribe_queue(const Name& pattern, MessageQueueOptions options = {}) {
    return psubscribe_queue(one_name(pattern), std::move(options));
  }
  template <class Name>
  requires std::is_convertible_v<const Name&, std::string_view> MessageQueue
  ssubscribe_queue(const Name& shard_channel, MessageQueueOptions options = {}) {
    return ssubscribe_queue(one_name(shard_channel), std::move(options));
  }

  /// Ends every handler and queue on `channel` (they become inactive) and sends UNSUBSCRIBE.
  /// Returns the number of subscriptions ended.
  std::size_t unsubscribe(std::string_view channel);
  /// Same for a pattern (PUNSUBSCRIBE).
  std::size_t punsubscribe(std::string_view pattern);
  /// Same for a shard channel (SUNSUBSCRIBE).
  std::size_t sunsubscribe(std::string_view shard_channel);

  SubscriberStatus status() const;

 private:
  static std::vector<std::string> one_name(std::string_view name) { return {std::string(name)}; }
  friend class Multiplexer;
  Subscriber(std::shared_ptr<detail::ShardRouter> shards,
             std::shared_ptr<detail::SubscriptionHub> hub);
  Subscription add(SubscriptionKind kind, std::string_view name, MessageHandler handler,
                   const SubscribeOptions& options);
  MessageQueue add_queue(SubscriptionKind kind, const std::vector<std::string>& names,
                         const MessageQueueOptions& options);
  /// The hub for these names: in a Redis Cluster shard channels go to the node serving
  /// their slot (all names of one call must share that node); everything else to hub_.
  std::shared_ptr<detail::SubscriptionHub> hub_for(SubscriptionKind kind,
                                                   const std::vector<std::string>& names) const;
  std::shared_ptr<detail::ShardRouter> shards_;  ///< the multiplexer, for shard channels
  std::shared_ptr<detail::SubscriptionHub> hub_;
};

}  // namespace redmux
