// SubscriptionHub: a multiplexer's pub/sub state — which channels, patterns and shard
// channels are subscribed, who listens to each, the connection that carries them, and the
// bounded buffers between the I/O thread that reads messages and the delivery threads that
// run handlers.
//
// The server sees one SUBSCRIBE per name: the first listener of a name sends it, the last
// one to leave sends UNSUBSCRIBE. A SUBSCRIBE is sent at once only when the connection is
// ready; otherwise (and after every reconnect) the connection's ready hook re-subscribes
// every name in one batch, so the server's state always converges on the hub's.
//
// Threads: the public members are safe from any thread. on_push() and on_ready() run on the
// connection's I/O thread; drain tasks run on the delivery executor. One mutex guards the
// maps, the buffers and the scheduling flags; handlers run without it. Lock order: mutex_,
// then a QueueCore's mutex, then a connection's queue lock (submit()).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "conn/shared_context.hpp"
#include "net/connection.hpp"
#include "pubsub/delivery_executor.hpp"
#include "redmux/io_pool.hpp"
#include "redmux/subscriber.hpp"

namespace redmux::detail {

/// The buffer behind one MessageQueue (several names may feed it).
struct QueueCore {
  QueueCore(SubscriptionKind kind_in, std::vector<std::string> names_in, std::size_t capacity_in,
            OverflowPolicy overflow_in)
      : kind(kind_in),
        names(std::move(names_in)),
        capacity(capacity_in == 0 ? 1 : capacity_in),
        overflow(overflow_in) {}
  const SubscriptionKind kind;
  const std::vector<std::string> names;
  const std::size_t capacity;
  const OverflowPolicy overflow;
  mutable std::mutex mutex;
  std::condition_variable arrived;
  std::deque<Message> messages;  ///< guarded by mutex
  bool ended = false;            ///< guarded by mutex; no more messages will come
  Error error;                   ///< guarded by mutex; why it ended
  bool dropping = false;         ///< guarded by mutex; reported this episode of drops
  std::atomic<std::uint64_t> dropped{0};
  /// The subscriptions feeding it; guarded by the hub's mutex.
  std::vector<std::shared_ptr<SubscriptionState>> members;
};

/// One listener (a handler, or one name of a queue) on one name.
struct SubscriptionState {
  SubscriptionKind kind = SubscriptionKind::Channel;
  std::string name;
  MessageHandler handler;            ///< empty for a queue's member
  std::shared_ptr<QueueCore> queue;  ///< null for a handler
  std::size_t capacity = 1;
  OverflowPolicy overflow = OverflowPolicy::DropOldest;
  Delivery delivery = Delivery::Ordered;
  std::atomic<bool> active{true};
  std::atomic<std::uint64_t> dropped{0};
  /// Shared while the handler runs, exclusive in unsubscribe(): once that has it, no
  /// invocation runs and (active being false) none starts.
  std::shared_mutex invoking;
  // Guarded by the hub's mutex:
  std::deque<std::pair<std::uint64_t, std::shared_ptr<const Message>>> buffer;  ///< (seq, msg)
  std::size_t workers = 0;  ///< Concurrent: drain tasks running or posted for it
  bool dropping = false;    ///< reported this episode of drops (ends when the buffer empties)
};

/// One name subscribed on the server, and its listeners.
struct ChannelEntry {
  SubscriptionKind kind = SubscriptionKind::Channel;
  std::string name;
  std::vector<std::shared_ptr<SubscriptionState>> members;
  bool confirmed = false;                   ///< the server confirmed it on the current connection
  std::vector<FutureState<void>*> waiters;  ///< one reference each
  std::optional<Error> refused;  ///< the server refused a subscribe since the last confirmation
  bool draining = false;         ///< an ordered drain task is posted or running (the strand)
};

/// Redis Cluster: what a shard channels' hub tells the multiplexer's slot map. The
/// multiplexer sets them on the hubs it makes (MuxCore::shard_hub()); empty elsewhere.
struct ShardMapHooks {
  /// The node refused an SSUBSCRIBE with MOVED (I/O thread): the map learns the slot's owner.
  std::function<void(NodeSpan reply, std::string_view from_host)> redirected;
  /// The node ended a shard channel itself (its slot moved away): the map is loaded again.
  std::function<void()> slot_moved;
};

class SubscriptionHub : public std::enable_shared_from_this<SubscriptionHub> {
 public:
  /// Threads that run handlers (started with the first handler).
  static constexpr std::size_t kDeliveryThreads = 2;
  /// A handler call running this long is slow: counted (status().slow_handlers), and logged
  /// at Warning once a message waits behind it.
  static constexpr std::chrono::seconds kSlowHandler{1};

  SubscriptionHub(std::shared_ptr<SharedContext> shared, std::shared_ptr<IoPool> pool,
                  std::shared_ptr<TlsContext> tls);
  ~SubscriptionHub();
  SubscriptionHub(const SubscriptionHub&) = delete;
  SubscriptionHub& operator=(const SubscriptionHub&) = delete;

  /// sharedSubscriptionConnection under RESP3: subscriptions ride `connection` (an
  /// interactive one) as pushes. REQUIRES: before the connection starts.
  void ride_on(const std::shared_ptr<Connection>& connection);

  /// A handler on `name`. Fails with errc::shut_down once closed.
  Result<std::shared_ptr<SubscriptionState>> add(SubscriptionKind kind, std::string_view name,
                                                 MessageHandler handler,
                                                 const SubscribeOptions& options);
  /// A queue fed by its names.
  Error add_queue(const std::shared_ptr<QueueCore>& queue);
  /// Ends one handler; waits for a running invocation unless `wait` is false (see
  /// Subscription::unsubscribe()).
  void remove(const std::shared_ptr<SubscriptionState>& state, bool wait);
  /// Ends a queue with `why` (what it holds can still be popped).
  void end_queue(const std::shared_ptr<QueueCore>& queue, Error why);
  /// Ends every listener on `name`. Returns how many.
  std::size_t remove_all(SubscriptionKind kind, std::string_view name);
  /// Completes once `name` is confirmed by the server (see Subscription::confirmed()).
  Future<void> confirmed(SubscriptionKind kind, std::string_view name);
  /// The server refused the SUBSCRIBE-family command for `name` (I/O thread): `error` is
  /// reported to on_error, then what waits for its confirmation fails with it, and so does
  /// confirmed() until one comes.
  void refused(SubscriptionKind kind, std::string_view name, const Error& error);
  /// For a NOPERM refusal: where and as whom, and what to check — " (on 10.0.0.5:6379 as
  /// user "app": its ACL channel rules do not allow it; ACL GETUSER app shows them)"; with a
  /// credential provider, whose user is not known here, without the name.
  std::string acl_hint() const;
  /// `error` to the multiplexer's on_error.
  void report(const Error& error) { shared_->report_error(error); }
  /// The node refused the SSUBSCRIBE for `name` with MOVED `reply` (I/O thread): the slot map
  /// learns the owner, and the shard channel ends with errc::subscription_ended like one whose
  /// slot moved, so that subscribing again goes to the owner.
  void shard_redirected(std::string_view name, NodeSpan reply);
  /// REQUIRES: before first use. See ShardMapHooks.
  void set_shard_hooks(ShardMapHooks hooks) { shard_hooks_ = std::move(hooks); }

  /// The server the subscription connection of its own goes to from now on (the first
  /// endpoint until then): Sentinel moves it to the new primary. Any thread.
  void move_to(const Endpoint& endpoint);
  /// Redis Cluster, after a new slot map (any thread): the shard channels whose slot
  /// `owner_of` says another node than `node` (this hub's) serves now are ended with
  /// errc::subscription_ended, reported like the server's own sunsubscribe. nullopt: no
  /// node known for the slot (kept). `before_map`: this is the multiplexer's hub for
  /// channels and patterns, which took shard channels only while no slot map was known.
  void end_shard_channels_elsewhere(
      const Endpoint& node, const std::function<std::optional<Endpoint>(std::uint16_t)>& owner_of,
      bool before_map = false);
  /// The server this hub's connection goes to; nullopt before it has one.
  std::optional<Endpoint> node() const;

  SubscriberStatus status() const;
  /// Its subscription connection of its own, for the multiplexer's status(): null before the
  /// first subscribe, and when subscriptions ride an interactive connection (shared mode).
  std::shared_ptr<Connection> own_connection() const {
    std::lock_guard lock(mutex_);
    return shared_mode_ ? nullptr : connection_;
  }
  /// close(deadline), first step: refuses new subscriptions (errc::shut_down); messages for
  /// those in place are still delivered. Any thread.
  void stop_accepting();
  /// close(deadline), after the commands: takes no new message from here on and waits until
  /// the handlers have run every message already buffered, or until `deadline`. Returns how
  /// many are left in the buffers, and whether a handler was still running at the deadline.
  /// Not on a delivery thread or an I/O thread.
  struct Drained {
    std::size_t undelivered = 0;
    bool handler_running = false;
  };
  Drained drain(Clock::time_point deadline);
  /// Ends everything (futures fail with errc::shut_down) and shuts the dedicated connection
  /// down; `closed` runs when it has. Returns the number of connections shut down (0 or 1).
  std::size_t close(const std::function<void()>& closed);
  /// After close(): waits until the handlers still running have returned, so that none runs
  /// once the multiplexer's close() returns. Not on a delivery thread (returns at once there)
  /// nor an I/O thread.
  void join_handlers();

 private:
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const noexcept {
      return std::hash<std::string_view>()(name);
    }
  };
  using EntryMap =
      std::unordered_map<std::string, std::shared_ptr<ChannelEntry>, NameHash, std::equal_to<>>;
  /// Work collected under the mutex, done after it is released.
  struct Deferred {
    std::vector<std::function<void()>> posts;
    std::vector<Error> reports;
    std::vector<std::string> warnings;  ///< logged at Warning, with `endpoint`
    std::string endpoint;
    std::vector<FutureState<void>*> confirm;  ///< completed ok
    std::vector<std::pair<FutureState<void>*, Error>> fail;
  };

  EntryMap& map_of(SubscriptionKind kind) noexcept;
  const EntryMap& map_of(SubscriptionKind kind) const noexcept;
  /// REQUIRES: mutex_ held. The entry for a listener about to join (sends SUBSCRIBE when new).
  ChannelEntry& join_locked(SubscriptionKind kind, std::string_view name);
  /// REQUIRES: mutex_ held. Takes `state` out of its entry (UNSUBSCRIBE when it was the last).
  void detach_locked(const std::shared_ptr<SubscriptionState>& state, Deferred& deferred);
  void end_queue_locked(const std::shared_ptr<QueueCore>& queue, Error why, Deferred& deferred);
  /// REQUIRES: mutex_ held. The connection carrying subscriptions (opened on first use).
  Connection& connection_locked();
  /// True while the connection is ready and on_ready() has run for its session: confirmed
  /// entries are confirmed on it.
  bool session_current_locked() const;
  /// REQUIRES: mutex_ held. Shared mode, but the interactive connection negotiated RESP2
  /// (the server refused HELLO 3): subscriptions move to a connection of their own.
  void fall_back_to_dedicated_locked();
  /// REQUIRES: mutex_ held. Sends (P|S)(UN)SUBSCRIBE for one name when the connection is ready.
  void send_locked(SubscriptionKind kind, bool subscribe, std::string_view name);
  void finish(Deferred& deferred);
  /// REQUIRES: mutex_ held. For drain(): messages buffered for handlers, and whether a drain
  /// task is still posted or running.
  std::size_t buffered_locked(bool& busy) const;

  // I/O thread
  void on_push(NodeSpan push);
  void on_ready(Connection& connection);
  void dispatch(SubscriptionKind kind, std::string_view name, Message message);
  /// An sunsubscribe push: the answer to ours, or the server ending a shard channel whose
  /// slot moved to another node (its listeners end with errc::subscription_ended).
  void on_shard_unsubscribed(std::string_view name);
  /// REQUIRES: mutex_ held. Ends a shard channel's entry and its listeners with `ended`.
  void end_shard_channel_locked(EntryMap::iterator it, const Error& ended, Deferred& deferred);
  void offer_locked(const std::shared_ptr<ChannelEntry>& entry,
                    const std::shared_ptr<SubscriptionState>& member, std::uint64_t seq,
                    const std::shared_ptr<const Message>& message, Deferred& deferred,
                    std::vector<std::shared_ptr<SubscriptionState>>& ended);
  void offer_queue_locked(const std::shared_ptr<SubscriptionState>& member, const Message& message,
                          Deferred& deferred, std::vector<std::shared_ptr<QueueCore>>& ended);
  void note_drop_locked(SubscriptionState& state, Deferred& deferred);
  /// REQUIRES: mutex_ held. A message waits for a handler: each handler call running
  /// kSlowHandler or longer is logged once (I/O thread).
  void note_slow_handlers_locked(Deferred& deferred);

  // delivery threads
  void drain_entry(const std::shared_ptr<ChannelEntry>& entry);
  void drain_concurrent(const std::shared_ptr<SubscriptionState>& state);
  void invoke(SubscriptionState& state, const Message& message);
  DeliveryExecutor& executor_locked();

  std::shared_ptr<SharedContext> shared_;
  std::shared_ptr<IoPool> pool_;
  std::shared_ptr<TlsContext> tls_;

  mutable std::mutex mutex_;
  EntryMap channels_;
  EntryMap patterns_;
  EntryMap shard_channels_;
  std::size_t listeners_ = 0;
  /// Shard channels whose SUNSUBSCRIBE this session sent and the server has not answered:
  /// an sunsubscribe push for one of them is that answer, any other one the server's own.
  std::unordered_map<std::string, int> unsubscribing_;
  std::shared_ptr<Connection> connection_;  ///< dedicated, or the interactive one (shared)
  std::optional<Endpoint> moved_to_;        ///< move_to(): where a dedicated one goes
  ShardMapHooks shard_hooks_;               ///< set before first use, then only read
  bool shared_mode_ = false;
  bool closed_ = false;
  bool accepting_ = true;  ///< stop_accepting() clears it: new subscriptions are refused
  bool draining_ = false;  ///< drain() runs: no new message is taken; drain tasks notify
  std::condition_variable drained_;
  std::uint64_t seq_ = 0;
  std::size_t ready_count_ = 0;  ///< times the carrying connection became ready
  /// connection_->generation() when on_ready() last sent every name; send_locked() sends
  /// only while it still matches (else on_ready() is about to send the name with the rest).
  std::uint64_t synced_generation_ = kNotSynced;
  static constexpr std::uint64_t kNotSynced = ~std::uint64_t{0};
  std::unique_ptr<DeliveryExecutor> executor_;          ///< started with the first handler
  std::unique_ptr<DeliveryExecutor> stopped_executor_;  ///< close() stopped it; joined later

  std::atomic<std::uint64_t> messages_{0};
  std::atomic<std::uint64_t> delivered_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> handler_errors_{0};
  std::atomic<std::uint64_t> resubscribes_{0};
  std::atomic<std::uint64_t> slow_handlers_{0};

  /// The handler call one delivery thread is running (running_[its thread_index()]), for
  /// the slow-handler report and status(). `state` lives while set (the drain task holds
  /// it); the mutex keeps a reader from describing one whose call has ended.
  struct Running {
    std::mutex mutex;
    const SubscriptionState* state = nullptr;  ///< guarded by mutex; null: none running
    bool reported = false;                     ///< guarded by mutex: logged as slow
    std::string endpoint;  ///< guarded by mutex: the connection's, when reported
    /// When the call started, in steady_clock ticks (0: none running); written under the
    /// mutex, read without it
    std::atomic<std::chrono::steady_clock::rep> since{0};
  };
  mutable std::array<Running, kDeliveryThreads> running_;
};

}  // namespace redmux::detail
