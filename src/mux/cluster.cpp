#include "mux/cluster.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <optional>
#include <string_view>

#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

/// Redirections (MOVED, ASK, TRYAGAIN) followed per command before its last error is given
/// to the caller.
constexpr int kMaxHops = 5;
constexpr auto kRefreshSpacing = std::chrono::milliseconds(250);
constexpr auto kTryAgainPause = std::chrono::milliseconds(25);

std::int64_t ticks(Clock::time_point at) noexcept {
  return at.time_since_epoch().count();
}

/// An internal command whose reply goes to a callback (on the I/O thread).
class CallbackState final : public CommandState {
 public:
  CallbackState(std::function<void(NodeSpan)> on_reply, std::function<void(const Error&)> on_error)
      : on_reply_(std::move(on_reply)), on_error_(std::move(on_error)) {}
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    on_reply_(reply);
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    on_error_(error);
    publish();
  }

 private:
  std::function<void(NodeSpan)> on_reply_;
  std::function<void(const Error&)> on_error_;
};

void submit_internal(Connection& connection, std::initializer_list<Arg> args, std::string_view name,
                     CommandState* state) {
  // The state's one reference goes to the pipeline.
  connection.submit(-1, std::span<const Arg>(args.begin(), args.size()),
                    own_command(name, PendingKind::Internal, state));
}

}  // namespace

// ---------------------------------------------------------------------------------------
// ClusterRouter

ClusterRouter::ClusterRouter(std::shared_ptr<SharedContext> shared, std::shared_ptr<IoPool> pool,
                             std::shared_ptr<TlsContext> tls,
                             std::vector<std::shared_ptr<Connection>> seeds)
    : shared_(std::move(shared)),
      pool_(std::move(pool)),
      tls_(std::move(tls)),
      seeds_(std::move(seeds)) {}

std::shared_ptr<const ClusterRouter::SlotMap> ClusterRouter::map() const {
  std::lock_guard lock(mutex_);
  return map_;
}

void ClusterRouter::load(Connection& via, std::function<void(const Error&)> done) {
  ask_shards(via, std::move(done), /*slots=*/false);
  arm_periodic_refresh();
}

void ClusterRouter::ask_shards(Connection& via, std::function<void(const Error&)> done,
                               bool slots) {
  std::weak_ptr<ClusterRouter> weak = weak_from_this();
  const std::string seed_host = via.endpoint().host;
  Connection* via_ptr = &via;
  auto on_reply = [weak, done, slots, seed_host, via_ptr](NodeSpan reply) {
    auto self = weak.lock();
    if (!self) return;
    Result<std::vector<ClusterShard>> shards =
        slots ? parse_cluster_slots(reply, seed_host) : parse_cluster_shards(reply, seed_host);
    if (!shards && !slots && shards.error().code() == errc::server_error) {
      // Before Redis 7.0 there is no CLUSTER SHARDS.
      self->ask_shards(*via_ptr, done, /*slots=*/true);
      return;
    }
    if (!shards) {
      done(shards.error());
      return;
    }
    self->install(*shards);
    done(Error());
  };
  auto on_error = [done](const Error& error) { done(error); };
  static constexpr std::string_view kShards = "CLUSTER SHARDS";
  static constexpr std::string_view kSlots = "CLUSTER SLOTS";
  submit_internal(via, {Arg("CLUSTER"), Arg(slots ? "SLOTS" : "SHARDS")}, slots ? kSlots : kShards,
                  new CallbackState(std::move(on_reply), std::move(on_error)));
}

void ClusterRouter::install(const std::vector<ClusterShard>& shards) {
  auto next = std::make_shared<SlotMap>();
  next->primary.fill(-1);
  auto index_of = [&](Connection* connection) {
    auto it = std::find(next->nodes.begin(), next->nodes.end(), connection);
    if (it != next->nodes.end()) return static_cast<std::int16_t>(it - next->nodes.begin());
    next->nodes.push_back(connection);
    next->replicas.emplace_back();
    return static_cast<std::int16_t>(next->nodes.size() - 1);
  };
  for (const ClusterShard& shard : shards) {
    const std::int16_t primary = index_of(connection_to(shard.primary));
    for (const Endpoint& replica : shard.replicas) {
      const std::int16_t at = index_of(connection_to(replica));
      next->replicas[primary].push_back(at);
    }
    for (auto [start, end] : shard.ranges) {
      for (std::size_t slot = start; slot <= end; ++slot) next->primary[slot] = primary;
    }
  }
  std::lock_guard lock(mutex_);
  map_ = std::move(next);
}

Connection* ClusterRouter::connection_to(const Endpoint& endpoint) {
  std::shared_ptr<Connection> created;
  {
    std::lock_guard lock(mutex_);
    for (const auto& connection : connections_) {
      if (connection->endpoint() == endpoint) return connection.get();
    }
    asio::io_context& io = pool_->next_context();
    created = std::make_shared<Connection>(io, pool_->load_of(io), shared_, endpoint, tls_);
    // READONLY on every node connection: a replica then serves the reads routed to it
    // (PreferReplica); on a primary it changes nothing.
    created->set_ready_hook([](Connection& ready) {
      static constexpr std::string_view kReadOnly = "READONLY";
      const Arg args[] = {Arg(kReadOnly)};
      ready.submit(-1, args, own_command(kReadOnly, PendingKind::FireAndForget));
    });
    connections_.push_back(created);
    if (closed_) return created.get();  // never started; commands on it fail at once
  }
  std::weak_ptr<ClusterRouter> weak = weak_from_this();
  created->start([weak](const Error& error) {
    if (!error) return;
    if (auto self = weak.lock()) self->refresh();  // a node we cannot reach: the map moved?
  });
  return created.get();
}

void ClusterRouter::moved(const ClusterRedirect& redirect) {
  Connection* target = connection_to(redirect.endpoint);
  {
    std::lock_guard lock(mutex_);
    if (map_) {
      auto next = std::make_shared<SlotMap>(*map_);
      auto it = std::find(next->nodes.begin(), next->nodes.end(), target);
      std::int16_t index = 0;
      if (it == next->nodes.end()) {
        next->nodes.push_back(target);
        next->replicas.emplace_back();
        index = static_cast<std::int16_t>(next->nodes.size() - 1);
      } else {
        index = static_cast<std::int16_t>(it - next->nodes.begin());
      }
      next->primary[redirect.slot] = index;
      map_ = std::move(next);
    }
  }
  refresh();
}

Connection* ClusterRouter::ready_connection() {
  std::vector<Connection*> candidates;
  {
    std::lock_guard lock(mutex_);
    for (const auto& connection : connections_) {
      if (connection->state() == ConnectionState::Ready) candidates.push_back(connection.get());
    }
  }
  for (const auto& seed : seeds_) {
    if (seed->state() == ConnectionState::Ready) candidates.push_back(seed.get());
  }
  if (candidates.empty()) return nullptr;
  return candidates[cursor_.fetch_add(1, std::memory_order_relaxed) % candidates.size()];
}

void ClusterRouter::refresh() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
  }
  if (refreshing_.exchange(true, std::memory_order_acq_rel)) return;  // single flight
  const Clock::time_point now = Clock::now();
  const Clock::time_point last{Clock::duration(last_refresh_.load(std::memory_order_acquire))};
  const auto wait =
      last + kRefreshSpacing > now
          ? std::chrono::duration_cast<std::chrono::milliseconds>(last + kRefreshSpacing - now)
          : std::chrono::milliseconds(0);
  std::weak_ptr<ClusterRouter> weak = weak_from_this();
  after(wait, [weak] {
    auto self = weak.lock();
    if (!self) return;
    auto finished = [weak](const Error&) {
      if (auto self = weak.lock()) {
        self->last_refresh_.store(ticks(Clock::now()), std::memory_order_release);
        self->refreshing_.store(false, std::memory_order_release);
      }
    };
    Connection* via = self->ready_connection();
    if (!via) {
      finished(Error());
      return;
    }
    self->ask_shards(*via, finished, /*slots=*/false);
  });
}

void ClusterRouter::arm_periodic_refresh() {
  // A primary that died sends no MOVED: every few seconds, while a node is unreachable, the
  // map is asked again so a promoted replica is found; every 30 s otherwise.
  asio::io_context& io = pool_->next_context();
  auto timer = std::make_shared<asio::steady_timer>(io);
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    periodic_ = timer;
  }
  bool all_ready = true;
  {
    std::lock_guard lock(mutex_);
    for (const auto& connection : connections_) {
      all_ready = all_ready && connection->state() == ConnectionState::Ready;
    }
  }
  timer->expires_after(all_ready ? std::chrono::seconds(30) : std::chrono::seconds(2));
  std::weak_ptr<ClusterRouter> weak = weak_from_this();
  timer->async_wait([weak](const asio::error_code& ec) {
    if (ec) return;
    if (auto self = weak.lock()) {
      self->refresh();
      self->arm_periodic_refresh();
    }
  });
}

void ClusterRouter::after(std::chrono::milliseconds delay, std::function<void()> task) {
  asio::io_context& io = pool_->next_context();
  if (delay.count() <= 0) {
    asio::post(io, std::move(task));
    return;
  }
  auto timer = std::make_shared<asio::steady_timer>(io, delay);
  timer->async_wait([timer, task = std::move(task)](const asio::error_code& ec) {
    if (!ec) task();
  });
}

Result<Connection*> ClusterRouter::for_slot(std::uint16_t slot, bool replica, bool demand_replica) {
  std::shared_ptr<const SlotMap> current = map();
  if (!current || current->primary[slot] < 0) {
    return Error(errc::not_sent, "no cluster node is known for slot " + std::to_string(slot) +
                                     " (the slot map is being loaded or the slot is not "
                                     "served); retry shortly");
  }
  const std::int16_t primary = current->primary[slot];
  if (replica && current->replicas[static_cast<std::size_t>(primary)].empty()) {
    // No replica known for this slot: a map loaded while the cluster was forming may lack
    // them. Ask again now and then (not on every read of a cluster without replicas).
    const Clock::time_point last{Clock::duration(last_refresh_.load(std::memory_order_acquire))};
    if (Clock::now() - last > std::chrono::seconds(5)) refresh();
  }
  if (replica) {
    std::vector<Connection*> ready;
    for (std::int16_t at : current->replicas[static_cast<std::size_t>(primary)]) {
      Connection* node = current->nodes[static_cast<std::size_t>(at)];
      if (node->state() == ConnectionState::Ready) ready.push_back(node);
    }
    if (!ready.empty()) {
      return ready[cursor_.fetch_add(1, std::memory_order_relaxed) % ready.size()];
    }
    if (demand_replica) {
      return Error(errc::not_allowed,
                   "slot " + std::to_string(slot) + " has no connected replica (DemandReplica)");
    }
  }
  return current->nodes[static_cast<std::size_t>(primary)];
}

std::vector<Connection*> ClusterRouter::primaries() {
  std::shared_ptr<const SlotMap> current = map();
  std::vector<Connection*> out;
  if (!current) return out;
  for (std::int16_t at : current->primary) {
    if (at < 0) continue;
    Connection* node = current->nodes[static_cast<std::size_t>(at)];
    if (std::find(out.begin(), out.end(), node) == out.end()) out.push_back(node);
  }
  return out;
}

Connection* ClusterRouter::any_primary() {
  std::vector<Connection*> all = primaries();
  if (all.empty()) return nullptr;
  return all[cursor_.fetch_add(1, std::memory_order_relaxed) % all.size()];
}

std::size_t ClusterRouter::slots_covered() const {
  std::shared_ptr<const SlotMap> current = map();
  if (!current) return 0;
  return static_cast<std::size_t>(std::count_if(current->primary.begin(), current->primary.end(),
                                                [](std::int16_t at) { return at >= 0; }));
}

std::size_t ClusterRouter::primary_count() const {
  return const_cast<ClusterRouter*>(this)->primaries().size();
}

Result<Connection*> ClusterRouter::route(const CommandInfo& info, std::span<const Arg> args,
                                         Flags flags) {
  std::vector<std::size_t> keys;
  key_indexes(info, args, keys);
  return route_keys(info, args, keys, flags);
}

Result<Connection*> ClusterRouter::route_keys(const CommandInfo& info, std::span<const Arg> args,
                                              std::span<const std::size_t> keys, Flags flags) {
  if (keys.empty()) {
    if (Connection* node = any_primary()) return node;
    return Error(errc::not_sent,
                 std::string(info.name) + " not sent: the cluster's slot map is not loaded yet");
  }
  const std::uint16_t slot = slot_of(args[keys.front()].bytes());
  for (std::size_t i = 1; i < keys.size(); ++i) {
    if (slot_of(args[keys[i]].bytes()) != slot) {
      return Error(errc::invalid_argument,
                   std::string(info.name) + " refused: its keys map to different cluster slots (" +
                       std::to_string(slot) + " and " +
                       std::to_string(slot_of(args[keys[i]].bytes())) +
                       "; CROSSSLOT). Give keys that go together a common {hash tag}, e.g. "
                       "{user:42}:name and {user:42}:email");
    }
  }
  const bool read_only = info.is(CommandFlag::ReadOnly);
  const bool demand_replica = has_flag(flags, Flags::DemandReplica);
  if (demand_replica && !read_only) {
    return Error(errc::not_allowed,
                 std::string(info.name) + " writes and cannot run on a replica (DemandReplica)");
  }
  const bool replica = read_only && (demand_replica || has_flag(flags, Flags::PreferReplica));
  return for_slot(slot, replica, demand_replica);
}

std::size_t ClusterRouter::close(const std::function<void()>& closed) {
  std::vector<std::shared_ptr<Connection>> all;
  std::shared_ptr<asio::steady_timer> periodic;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return 0;
    closed_ = true;
    all = connections_;
    periodic = std::move(periodic_);
  }
  if (periodic) asio::post(periodic->get_executor(), [periodic] { periodic->cancel(); });
  for (const auto& connection : all) connection->shutdown(closed);
  return all.size();
}

// ---------------------------------------------------------------------------------------
// Sending: redirections and split commands

namespace {

/// Stands between the pipeline and the caller's state: follows MOVED, ASK and TRYAGAIN by
/// resending the command's bytes (kept here) to the node named, up to kMaxHops times; any
/// other reply, and every failure, goes to the caller's state.
class RedirectState final : public CommandState {
 public:
  RedirectState(std::shared_ptr<ClusterRouter> router, CommandState* target, std::string bytes,
                PendingCommand prototype, int db, std::string host)
      : router_(std::move(router)),
        target_(target),
        bytes_(std::move(bytes)),
        prototype_(prototype),
        db_(db),
        host_(std::move(host)) {
    target_->add_ref();
  }

  /// The command was sent by other means (a batch) to `connection`.
  void sent_by_caller(Connection* connection) noexcept {
    sent_to_ = connection;
    host_ = connection->endpoint().host;
  }

  void deliver(NodeSpan reply) noexcept override {
    if (is_error_reply(reply) && hops_ < kMaxHops) {
      const std::string_view text = reply[0].value;
      if (std::optional<ClusterRedirect> redirect = parse_redirect(text, host_)) {
        ++hops_;
        router_->shared().counters().redirects.fetch_add(1, std::memory_order_relaxed);
        if (!redirect->ask) router_->moved(*redirect);
        Connection* next = router_->connection_to(redirect->endpoint);
        if (hops_ == 1) {
          resend(next, redirect->ask);
          return;
        }
        // Redirected again: the nodes disagree for a moment (a slot changing owner is
        // announced node by node). Pause a little longer each time before following.
        add_ref();
        const bool ask = redirect->ask;
        router_->after(kTryAgainPause * (hops_ - 1), [this, next, ask] {
          resend(next, ask);
          release();
        });
        return;
      }
      if (text.starts_with("TRYAGAIN")) {
        // A multi-key command during a slot migration: its keys are split between the two
        // nodes for a moment. Ask again shortly, on the node that answered.
        ++hops_;
        router_->shared().counters().redirects.fetch_add(1, std::memory_order_relaxed);
        add_ref();
        Connection* again = sent_to_;
        router_->after(kTryAgainPause, [this, again] {
          resend(again, false);
          release();
        });
        return;
      }
      if (text.starts_with("CLUSTERDOWN")) router_->refresh();
    }
    target_->deliver(reply);
  }
  void fail(Error error) noexcept override { target_->fail(std::move(error)); }

  /// Sends the command (first time, or again) to `connection`, behind ASKING when `ask`.
  void resend(Connection* connection, bool ask) noexcept {
    sent_to_ = connection;
    host_ = connection->endpoint().host;
    PendingCommand command = prototype_;
    command.state = this;
    add_ref();                               // the pipeline's reference
    if (hops_ > 0) command.counted = false;  // the first send's slot was given back
    if (!ask) {
      command.bytes_begin = 0;
      command.bytes_end = bytes_.size();
      connection->submit_batch(db_, bytes_, std::span<PendingCommand>(&command, 1));
      return;
    }
    static constexpr std::string_view kAsking = "ASKING";
    std::string bytes;
    resp::encode_command(bytes, {Arg(kAsking)});
    PendingCommand asking = own_command(kAsking, PendingKind::FireAndForget);
    asking.bytes_end = bytes.size();
    command.bytes_begin = bytes.size();
    bytes += bytes_;
    command.bytes_end = bytes.size();
    PendingCommand both[] = {asking, command};
    connection->submit_batch(db_, bytes, both);
  }

 protected:
  ~RedirectState() override { target_->release(); }

 private:
  std::shared_ptr<ClusterRouter> router_;
  CommandState* target_;
  std::string bytes_;
  PendingCommand prototype_;
  int db_;
  std::string host_;
  Connection* sent_to_ = nullptr;
  int hops_ = 0;
};

/// Reassembles a command split per slot (or sent to every primary).
struct Gather {
  enum class Mode { Mget, Sum, AllOk, FirstReply };
  std::mutex mutex;
  Mode mode = Mode::AllOk;
  CommandState* target = nullptr;  ///< one reference; null for fire-and-forget
  std::string_view name;
  std::size_t remaining = 0;
  std::optional<Error> error;
  long long sum = 0;
  std::vector<std::optional<std::string>> values;  ///< Mget: by the key's position
  std::vector<Node> first;                         ///< FirstReply: a copy of part 0's reply
  std::deque<std::string> first_texts;

  ~Gather() {
    if (target) target->release();
  }

  void part_reply(const std::vector<std::size_t>& positions, bool keep, NodeSpan reply) {
    std::unique_lock lock(mutex);
    if (is_error_reply(reply)) {
      if (!error) error = server_error_from(reply, name);
    } else if (mode == Mode::Mget) {
      std::size_t k = 0;
      for (std::size_t i = 1; i < reply.size() && k < positions.size(); ++i, ++k) {
        if (reply[i].type == ReplyType::Null) continue;
        values[positions[k]] = std::string(reply[i].value);
      }
    } else if (mode == Mode::Sum && !reply.empty()) {
      long long part = 0;
      std::from_chars(reply[0].value.data(), reply[0].value.data() + reply[0].value.size(), part);
      sum += part;
    } else if (mode == Mode::FirstReply && keep) {
      first.assign(reply.begin(), reply.end());
      for (Node& node : first) {
        if (node.value.empty()) continue;
        first_texts.emplace_back(node.value);
        node.value = first_texts.back();
      }
    }
    finish_one(lock);
  }
  void part_error(const Error& failure) {
    std::unique_lock lock(mutex);
    if (!error) error = failure;
    finish_one(lock);
  }

 private:
  void finish_one(std::unique_lock<std::mutex>& lock) {
    if (--remaining != 0 || !target) return;
    lock.unlock();
    if (error) {
      target->fail(*error);
      return;
    }
    switch (mode) {
      case Mode::Mget: {
        std::vector<Node> nodes;
        nodes.reserve(values.size() + 1);
        nodes.push_back(Node{ReplyType::Array, 0, values.size(), {}});
        for (const auto& value : values) {
          if (value) {
            nodes.push_back(Node{ReplyType::BulkString, 1, value->size(), *value});
          } else {
            nodes.push_back(Node{ReplyType::Null, 1, 0, {}});
          }
        }
        target->deliver(nodes);
        break;
      }
      case Mode::Sum: {
        const std::string text = std::to_string(sum);
        const Node node{ReplyType::Integer, 0, text.size(), text};
        target->deliver(NodeSpan(&node, 1));
        break;
      }
      case Mode::AllOk: {
        static constexpr std::string_view kOk = "OK";
        const Node node{ReplyType::SimpleString, 0, kOk.size(), kOk};
        target->deliver(NodeSpan(&node, 1));
        break;
      }
      case Mode::FirstReply:
        target->deliver(first);
        break;
    }
  }
};

/// One part of a Gather: the replies of its keys' positions.
class PartState final : public CommandState {
 public:
  PartState(std::shared_ptr<Gather> gather, std::vector<std::size_t> positions, bool keep)
      : gather_(std::move(gather)), positions_(std::move(positions)), keep_(keep) {}
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    gather_->part_reply(positions_, keep_, reply);
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    gather_->part_error(error);
    publish();
  }

 private:
  std::shared_ptr<Gather> gather_;
  std::vector<std::size_t> positions_;
  bool keep_;
};

/// SCAN over a whole cluster: the caller's cursor carries the primary (its index among the
/// primaries ordered by address) in its top 16 bits and that node's own cursor below; each
/// reply's cursor is rewritten so that when one primary is done the walk moves to the next,
/// and 0 comes back only after the last one.
constexpr int kScanNodeShift = 48;
constexpr std::uint64_t kScanCursorMask = (std::uint64_t{1} << kScanNodeShift) - 1;

class ScanState final : public CommandState {
 public:
  ScanState(CommandState* target, std::uint64_t node, std::uint64_t nodes)
      : target_(target), node_(node), nodes_(nodes) {
    target_->add_ref();
  }
  void deliver(NodeSpan reply) noexcept override {
    if (!claim()) return;
    if (is_error_reply(reply) || reply.size() < 2) {
      target_->deliver(reply);
    } else {
      std::uint64_t cursor = 0;
      std::from_chars(reply[1].value.data(), reply[1].value.data() + reply[1].value.size(), cursor);
      std::uint64_t next = 0;
      if (cursor != 0) {
        next = (node_ << kScanNodeShift) | (cursor & kScanCursorMask);
      } else if (node_ + 1 < nodes_) {
        next = (node_ + 1) << kScanNodeShift;
      }
      const std::string text = std::to_string(next);
      std::vector<Node> nodes(reply.begin(), reply.end());
      nodes[1].value = text;
      nodes[1].size = text.size();
      target_->deliver(nodes);
    }
    publish();
  }
  void fail(Error error) noexcept override {
    if (!claim()) return;
    target_->fail(std::move(error));
    publish();
  }

 protected:
  ~ScanState() override { target_->release(); }

 private:
  CommandState* target_;
  std::uint64_t node_;
  std::uint64_t nodes_;
};

bool name_is(const CommandInfo& info, std::string_view name) noexcept {
  return info.name == name;
}

/// Sends `args` to `connection` through a RedirectState for `target` (or fire-and-forget).
void send_one(ClusterRouter& router, Connection* connection, int db, const CommandInfo& info,
              std::span<const Arg> args, CommandState* target, Clock::time_point deadline,
              std::uint32_t timeout_ms, bool counted) {
  PendingCommand command;
  command.name = info.name;
  command.deadline = deadline;
  command.timeout_ms = timeout_ms;
  command.counted = counted;
  if (!target) {
    command.kind = PendingKind::FireAndForget;
    command.deadline = Clock::time_point::max();
    connection->submit(db, args, command);
    return;
  }
  command.kind = PendingKind::Caller;
  std::string bytes;
  resp::encode_command(bytes, args);
  auto* redirect = new RedirectState(router.shared_from_this(), target, std::move(bytes), command,
                                     db, connection->endpoint().host);
  redirect->resend(connection, false);
  redirect->release();  // the pipeline holds it now
}

}  // namespace

CommandState* follow_redirects(ClusterRouter& router, CommandState* target,
                               std::span<const Arg> args, const PendingCommand& prototype, int db,
                               Connection* connection) {
  std::string bytes;
  resp::encode_command(bytes, args);
  auto* redirect = new RedirectState(router.shared_from_this(), target, std::move(bytes), prototype,
                                     db, connection->endpoint().host);
  redirect->sent_by_caller(connection);
  return redirect;
}

Error submit_to_cluster(ClusterRouter& router, int db, const CommandInfo& info,
                        std::span<const Arg> args, CommandState* state, Flags flags,
                        Clock::time_point deadline, std::uint32_t timeout_ms) {
  auto refuse = [&](Error error) {
    router.shared().release_slots(1);
    if (state) state->fail(error);
    return error;
  };
  router.shared().counters().commands.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::size_t> keys;
  key_indexes(info, args, keys);

  // Keyless commands that mean "the whole cluster": every primary, replies combined.
  const bool every_primary =
      keys.empty() && (name_is(info, "DBSIZE") || name_is(info, "FLUSHALL") ||
                       name_is(info, "FLUSHDB") || name_is(info, "SCRIPT FLUSH") ||
                       name_is(info, "FUNCTION LOAD") || name_is(info, "FUNCTION DELETE") ||
                       name_is(info, "FUNCTION FLUSH") || name_is(info, "FUNCTION RESTORE"));
  if (every_primary) {
    std::vector<Connection*> nodes = router.primaries();
    if (nodes.empty()) {
      return refuse(Error(errc::not_sent, std::string(info.name) +
                                              " not sent: the cluster's slot map is not loaded"));
    }
    auto gather = std::make_shared<Gather>();
    gather->mode = name_is(info, "DBSIZE")          ? Gather::Mode::Sum
                   : name_is(info, "FUNCTION LOAD") ? Gather::Mode::FirstReply
                                                    : Gather::Mode::AllOk;
    gather->name = info.name;
    gather->remaining = nodes.size();
    if (state) {
      state->add_ref();
      gather->target = state;
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      auto* part = new PartState(gather, {}, i == 0);
      send_one(router, nodes[i], db, info, args, part, deadline, timeout_ms, i == 0);
      part->release();
    }
    return Error();
  }

  if (name_is(info, "SCAN") && args.size() >= 2 && state) {
    std::vector<Connection*> nodes = router.primaries();
    std::sort(nodes.begin(), nodes.end(), [](Connection* a, Connection* b) {
      return a->describe_endpoint() < b->describe_endpoint();
    });
    std::uint64_t cursor = 0;
    const std::string_view text = args[1].bytes();
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), cursor);
    const std::uint64_t node = cursor >> kScanNodeShift;
    if (parsed.ec != std::errc() || nodes.empty() || node >= nodes.size()) {
      return refuse(Error(errc::invalid_argument, "SCAN refused: cursor " + std::string(text) +
                                                      " is not one redmux gave for this cluster (" +
                                                      std::to_string(nodes.size()) +
                                                      " primaries)"));
    }
    std::vector<Arg> node_args(args.begin(), args.end());
    const std::string node_cursor = std::to_string(cursor & kScanCursorMask);
    node_args[1] = Arg(node_cursor);
    auto* scan = new ScanState(state, node, nodes.size());
    send_one(router, nodes[node], db, info, node_args, scan, deadline, timeout_ms, true);
    scan->release();
    return Error();
  }

  // One slot (or none): one node.
  bool one_slot = true;
  if (!keys.empty()) {
    const std::uint16_t slot = slot_of(args[keys.front()].bytes());
    for (std::size_t i = 1; i < keys.size() && one_slot; ++i) {
      one_slot = slot_of(args[keys[i]].bytes()) == slot;
    }
  }
  const bool splittable = name_is(info, "MGET") || name_is(info, "MSET") || name_is(info, "DEL") ||
                          name_is(info, "UNLINK") || name_is(info, "EXISTS") ||
                          name_is(info, "TOUCH");
  if (one_slot || !splittable) {
    Result<Connection*> connection = router.route_keys(info, args, keys, flags);
    if (!connection) return refuse(std::move(connection).error());
    send_one(router, *connection, db, info, args, state, deadline, timeout_ms, true);
    return Error();
  }

  // Split per slot, in the order each slot first appears; reassembled in the caller's order.
  const bool mset = name_is(info, "MSET");
  const std::size_t step = mset ? 2 : 1;
  struct Part {
    std::uint16_t slot;
    std::vector<Arg> args;
    std::vector<std::size_t> positions;
  };
  std::vector<Part> parts;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const std::size_t at = keys[k];
    if (at + step > args.size()) break;
    const std::uint16_t slot = slot_of(args[at].bytes());
    auto part =
        std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.slot == slot; });
    if (part == parts.end()) {
      parts.push_back(Part{slot, {args[0]}, {}});
      part = parts.end() - 1;
    }
    for (std::size_t i = 0; i < step; ++i) part->args.push_back(args[at + i]);
    part->positions.push_back(k);
  }
  const bool read_only = info.is(CommandFlag::ReadOnly);
  const bool replica =
      read_only && (has_flag(flags, Flags::PreferReplica) || has_flag(flags, Flags::DemandReplica));
  std::vector<Connection*> targets;
  for (const Part& part : parts) {
    Result<Connection*> connection =
        router.for_slot(part.slot, replica, has_flag(flags, Flags::DemandReplica));
    if (!connection) return refuse(std::move(connection).error());
    targets.push_back(*connection);
  }
  auto gather = std::make_shared<Gather>();
  gather->mode = name_is(info, "MGET") ? Gather::Mode::Mget
                 : mset                ? Gather::Mode::AllOk
                                       : Gather::Mode::Sum;
  gather->name = info.name;
  gather->remaining = parts.size();
  gather->values.resize(keys.size());
  if (state) {
    state->add_ref();
    gather->target = state;
  }
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto* part = new PartState(gather, parts[i].positions, false);
    send_one(router, targets[i], db, info, parts[i].args, part, deadline, timeout_ms, i == 0);
    part->release();
  }
  return Error();
}

}  // namespace redmux::detail
