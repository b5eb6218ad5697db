// The public pub/sub handles (redmux/subscriber.hpp) over SubscriptionHub.
#include "redmux/subscriber.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "pubsub/hub.hpp"
#include "pubsub/shard_router.hpp"
#include "topology/slot.hpp"

namespace redmux {
namespace {

/// The move-assignment of Subscription and MessageQueue: `self` first ends what it holds
/// (its unsubscribe()), then takes `other`'s hub and core.
template <class Handle, class Core>
Handle& end_then_take(Handle& self, Handle& other,
                      std::shared_ptr<detail::SubscriptionHub> Handle::*hub,
                      std::shared_ptr<Core> Handle::*core) {
  if (&self != &other) {
    self.unsubscribe();
    self.*hub = std::move(other.*hub);
    self.*core = std::move(other.*core);
  }
  return self;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Subscription

Subscription::Subscription(std::shared_ptr<detail::SubscriptionHub> hub,
                           std::shared_ptr<detail::SubscriptionState> state)
    : hub_(std::move(hub)), state_(std::move(state)) {}

Subscription& Subscription::operator=(Subscription&& other) noexcept {
  return end_then_take(*this, other, &Subscription::hub_, &Subscription::state_);
}

Subscription::~Subscription() {
  unsubscribe();
}

void Subscription::unsubscribe() {
  // Neither pointer is written here: the handler may call this on a delivery thread while the
  // owner's destructor, on another thread, runs it too (and waits for the handler). Removing
  // twice is harmless; the handles are released by the destructor.
  if (!state_) return;
  hub_->remove(state_, /*wait=*/true);
}

bool Subscription::active() const noexcept {
  return state_ && state_->active.load(std::memory_order_acquire);
}

std::uint64_t Subscription::dropped() const noexcept {
  return state_ ? state_->dropped.load(std::memory_order_relaxed) : 0;
}

SubscriptionKind Subscription::kind() const noexcept {
  return state_ ? state_->kind : SubscriptionKind::Channel;
}

const std::string& Subscription::name() const {
  static const std::string empty;
  return state_ ? state_->name : empty;
}

Future<void> Subscription::confirmed() const {
  if (!state_) {
    return Future<void>::ready_with(
        Error(errc::invalid_argument, "redmux: confirmed() on an empty Subscription"));
  }
  return hub_->confirmed(state_->kind, state_->name);
}

// ---------------------------------------------------------------------------------------
// MessageQueue

MessageQueue::MessageQueue(std::shared_ptr<detail::SubscriptionHub> hub,
                           std::shared_ptr<detail::QueueCore> queue)
    : hub_(std::move(hub)), queue_(std::move(queue)) {}

MessageQueue& MessageQueue::operator=(MessageQueue&& other) noexcept {
  return end_then_take(*this, other, &MessageQueue::hub_, &MessageQueue::queue_);
}

MessageQueue::~MessageQueue() {
  unsubscribe();
}

void MessageQueue::unsubscribe() {
  if (!queue_) return;
  hub_->end_queue(queue_, Error(errc::shut_down, "the message queue was unsubscribed"));
}

Message MessageQueue::pop() {
  if (!queue_) Error(errc::invalid_argument, "redmux: pop() on an empty MessageQueue").raise();
  std::unique_lock lock(queue_->mutex);
  if (queue_->messages.empty() && !queue_->ended && detail::on_io_thread()) {
    detail::deadlock_error("MessageQueue::pop()").raise();
  }
  queue_->arrived.wait(lock, [&] { return !queue_->messages.empty() || queue_->ended; });
  if (queue_->messages.empty()) queue_->error.raise();
  Message message = std::move(queue_->messages.front());
  queue_->messages.pop_front();
  if (queue_->messages.empty()) queue_->dropping = false;
  return message;
}

std::optional<Message> MessageQueue::pop_for(std::chrono::milliseconds timeout) {
  if (!queue_) return std::nullopt;
  std::unique_lock lock(queue_->mutex);
  if (queue_->messages.empty() && !queue_->ended && detail::on_io_thread()) {
    detail::deadlock_error("MessageQueue::pop_for()").raise();
  }
  if (!queue_->arrived.wait_for(lock, timeout,
                                [&] { return !queue_->messages.empty() || queue_->ended; })) {
    return std::nullopt;
  }
  if (queue_->messages.empty()) queue_->error.raise();
  Message message = std::move(queue_->messages.front());
  queue_->messages.pop_front();
  if (queue_->messages.empty()) queue_->dropping = false;
  return message;
}

std::optional<Message> MessageQueue::try_pop() {
  if (!queue_) return std::nullopt;
  std::lock_guard lock(queue_->mutex);
  if (queue_->messages.empty()) return std::nullopt;
  Message message = std::move(queue_->messages.front());
  queue_->messages.pop_front();
  if (queue_->messages.empty()) queue_->dropping = false;
  return message;
}

std::size_t MessageQueue::size() const {
  if (!queue_) return 0;
  std::lock_guard lock(queue_->mutex);
  return queue_->messages.size();
}

std::uint64_t MessageQueue::dropped() const noexcept {
  return queue_ ? queue_->dropped.load(std::memory_order_relaxed) : 0;
}

Error MessageQueue::error() const {
  if (!queue_) return Error(errc::invalid_argument, "redmux: empty MessageQueue");
  std::lock_guard lock(queue_->mutex);
  return queue_->ended ? queue_->error : Error();
}

Future<void> MessageQueue::confirmed() const {
  if (!queue_) {
    return Future<void>::ready_with(
        Error(errc::invalid_argument, "redmux: confirmed() on an empty MessageQueue"));
  }
  std::vector<Future<void>> each;
  for (const std::string& name : queue_->names) each.push_back(hub_->confirmed(queue_->kind, name));
  auto* out = new detail::FutureState<void>();
  out->add_ref();  // released by the continuation
  when_all(std::move(each)).then([out](Result<std::vector<Result<void>>> all) {
    Result<void> result;
    if (!all) {
      result = std::move(all).error();
    } else {
      for (Result<void>& one : *all) {
        if (!one) {
          result = std::move(one).error();
          break;
        }
      }
    }
    out->set(std::move(result));
    out->release();
  });
  return Future<void>(out);
}

// ---------------------------------------------------------------------------------------
// Subscriber

Subscriber::Subscriber(std::shared_ptr<detail::ShardRouter> shards,
                       std::shared_ptr<detail::SubscriptionHub> hub)
    : shards_(std::move(shards)), hub_(std::move(hub)) {}

std::shared_ptr<detail::SubscriptionHub> Subscriber::hub_for(
    SubscriptionKind kind, const std::vector<std::string>& names) const {
  if (kind != SubscriptionKind::ShardChannel || !shards_ || !shards_->routes_shard_channels() ||
      names.empty()) {
    return hub_;
  }
  // A shard channel lives on the node serving its slot: SSUBSCRIBE must go there.
  std::optional<Endpoint> node;
  for (const std::string& name : names) {
    Result<Endpoint> owner = shards_->shard_node(detail::slot_of(name));
    if (!owner) owner.error().raise();
    const Endpoint endpoint = *owner;
    if (node && !(*node == endpoint)) {
      Error(errc::invalid_argument,
            "ssubscribe_queue refused: shard channels \"" + names.front() + "\" and \"" + name +
                "\" are served by different cluster nodes; use one queue per node, or give "
                "them a common {hash tag}")
          .raise();
    }
    node = endpoint;
  }
  return shards_->shard_hub(*node);
}

Subscription Subscriber::add(SubscriptionKind kind, std::string_view name, MessageHandler handler,
                             const SubscribeOptions& options) {
  std::shared_ptr<detail::SubscriptionHub> hub = hub_for(kind, {std::string(name)});
  auto state = hub->add(kind, name, std::move(handler), options);
  if (!state) state.error().raise();
  return Subscription(hub, std::move(*state));
}

Subscription Subscriber::subscribe(std::string_view channel, MessageHandler handler,
                                   SubscribeOptions options) {
  return add(SubscriptionKind::Channel, channel, std::move(handler), options);
}

Subscription Subscriber::psubscribe(std::string_view pattern, MessageHandler handler,
                                    SubscribeOptions options) {
  return add(SubscriptionKind::Pattern, pattern, std::move(handler), options);
}

Subscription Subscriber::ssubscribe(std::string_view shard_channel, MessageHandler handler,
                                    SubscribeOptions options) {
  return add(SubscriptionKind::ShardChannel, shard_channel, std::move(handler), options);
}

MessageQueue Subscriber::add_queue(SubscriptionKind kind, const std::vector<std::string>& given,
                                   const MessageQueueOptions& options) {
  // A name given twice is one subscription: as a member twice, the queue would get each of
  // its messages twice. The first place of each name is kept.
  std::vector<std::string> names;
  names.reserve(given.size());
  std::unordered_set<std::string_view> seen;
  for (const std::string& name : given) {
    if (seen.insert(name).second) names.push_back(name);
  }
  std::shared_ptr<detail::SubscriptionHub> hub = hub_for(kind, names);
  auto queue = std::make_shared<detail::QueueCore>(kind, names, options.capacity, options.overflow);
  if (Error error = hub->add_queue(queue)) error.raise();
  return MessageQueue(hub, std::move(queue));
}

MessageQueue Subscriber::subscribe_queue(std::initializer_list<std::string_view> channels,
                                         MessageQueueOptions options) {
  std::vector<std::string> names(channels.begin(), channels.end());
  return add_queue(SubscriptionKind::Channel, names, options);
}

MessageQueue Subscriber::subscribe_queue(const std::vector<std::string>& channels,
                                         MessageQueueOptions options) {
  return add_queue(SubscriptionKind::Channel, channels, options);
}

MessageQueue Subscriber::psubscribe_queue(const std::vector<std::string>& patterns,
                                          MessageQueueOptions options) {
  return add_queue(SubscriptionKind::Pattern, patterns, options);
}

MessageQueue Subscriber::ssubscribe_queue(const std::vector<std::string>& shard_channels,
                                          MessageQueueOptions options) {
  return add_queue(SubscriptionKind::ShardChannel, shard_channels, options);
}

std::size_t Subscriber::unsubscribe(std::string_view channel) {
  return hub_->remove_all(SubscriptionKind::Channel, channel);
}

std::size_t Subscriber::punsubscribe(std::string_view pattern) {
  return hub_->remove_all(SubscriptionKind::Pattern, pattern);
}

std::size_t Subscriber::sunsubscribe(std::string_view shard_channel) {
  return hub_for(SubscriptionKind::ShardChannel, {std::string(shard_channel)})
      ->remove_all(SubscriptionKind::ShardChannel, shard_channel);
}

SubscriberStatus Subscriber::status() const {
  SubscriberStatus status = hub_->status();
  if (!shards_) return status;
  for (const auto& hub : shards_->shard_hubs()) {  // Redis Cluster: shard channels per node
    const SubscriberStatus node = hub->status();
    status.channels += node.channels;
    status.patterns += node.patterns;
    status.shard_channels += node.shard_channels;
    status.refused += node.refused;
    status.subscriptions += node.subscriptions;
    status.messages += node.messages;
    status.delivered += node.delivered;
    status.dropped += node.dropped;
    status.handler_errors += node.handler_errors;
    status.resubscribes += node.resubscribes;
    status.slow_handlers += node.slow_handlers;
    status.longest_running_handler =
        std::max(status.longest_running_handler, node.longest_running_handler);
  }
  return status;
}

}  // namespace redmux
