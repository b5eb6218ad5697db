#include "mux/cluster.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <optional>
#include <string_view>

#include "conn/callback_state.hpp"
#include "mux/cache_route.hpp"
#include "mux/cluster_redirect.hpp"
#include "net/timer.hpp"
#include "resp/encoder.hpp"

namespace redmux::detail {
namespace {

using namespace std::chrono_literals;

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
  return map_.get();
}

const ClusterRouter::SlotMap* ClusterRouter::current_map() const {
  thread_local Published<SlotMap>::Seen seen;
  return map_.read(seen, mutex_);
}

std::shared_ptr<const ClusterRouter::SlotMap> ClusterRouter::newest_map() const {
  std::lock_guard lock(mutex_);
  return installing_ ? installing_ : map_.get();
}

void ClusterRouter::load(Connection& via, std::function<void(const Error&)> done) {
  std::weak_ptr<ClusterRouter> weak = weak_from_this();
  shared_->set_topology_observer([weak](const ConnectionEvent& event) {
    if (auto self = weak.lock()) self->on_event(event);
  });
  ask_shards(via, std::move(done), /*slots=*/false);
  arm_periodic_refresh();
}

void ClusterRouter::ask_shards(Connection& via, std::function<void(const Error&)> done, bool slots,
                               std::shared_ptr<std::atomic<bool>> abandoned) {
  std::weak_ptr<ClusterRouter> weak = weak_from_this();
  const std::string seed_host = via.endpoint().host;
  Connection* via_ptr = &via;
  auto on_reply = [weak, done, slots, seed_host, via_ptr, abandoned](NodeSpan reply) {
    auto self = weak.lock();
    if (!self) return;
    if (abandoned && abandoned->load()) return;  // given up on: a newer map may be in
    // CLUSTER SLOTS answers with the ports of the connection's kind (TLS or not) itself.
    Result<std::vector<ClusterShard>> shards =
        slots ? parse_cluster_slots(reply, seed_host)
              : parse_cluster_shards(reply, seed_host, self->tls_ != nullptr);
    if (!shards && !slots && shards.error().code() == errc::server_error) {
      // Before Redis 7.0 there is no CLUSTER SHARDS.
      self->ask_shards(*via_ptr, done, /*slots=*/true, abandoned);
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
  next->table = SlotTable::from_shards(shards);
  for (const Endpoint& node : next->table.nodes) next->nodes.push_back(connection_to(node));

  // The commands still queued for a node that lost a slot go to the slot's new owner before
  // the new map routes any command there (see the class comment).
  std::lock_guard relocating(relocate_mutex_);
  std::shared_ptr<const SlotMap> previous;
  std::vector<std::shared_ptr<Connection>> all;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    installing_ = next;
    previous = map_.get();
    all = connections_;
  }
  for (std::size_t i = 0; i < next->nodes.size(); ++i) {
    Connection& node = *next->nodes[i];
    set_read_only(node, next->table.is_replica(i));
    // The map says otherwise than the node last did (a graceful failover: the demoted
    // primary asks its role only every 30 s): ask now, so that its replica reads resume.
    if (node.state() == ConnectionState::Ready && node.is_replica() != next->table.is_replica(i)) {
      node.check_role();
    }
  }
  const std::vector<SlotSet> served = next->table.served();
  const SlotSet covered = next->table.covered();
  for (const auto& connection : all) {
    auto it = std::find(next->nodes.begin(), next->nodes.end(), connection.get());
    SlotSet elsewhere = covered;
    if (it != next->nodes.end())
      elsewhere &= ~served[static_cast<std::size_t>(it - next->nodes.begin())];
    std::string bytes;
    std::vector<PendingCommand> moved;
    connection->reroute(elsewhere.none() ? nullptr : std::make_shared<const SlotSet>(elsewhere),
                        bytes, moved);
    if (!moved.empty()) hand_over(*next, -1, bytes, moved);
  }
  {
    std::lock_guard lock(mutex_);
    map_.set(next);
    installing_.reset();
  }
  if (node_caches_) drop_moved_entries(previous.get(), *next);
  if (map_hook_) map_hook_();
  // A node the cluster lists (healthy) again — a restarted one rejoining — is dialled now,
  // not after a reconnect backoff grown while it was down.
  for (std::size_t i = 0; i < next->nodes.size(); ++i) {
    if (next->table.failed[i]) continue;
    bool listed_before = false;
    if (previous) {
      auto at = std::find(previous->nodes.begin(), previous->nodes.end(), next->nodes[i]);
      listed_before =
          at != previous->nodes.end() &&
          !previous->table.failed[static_cast<std::size_t>(at - previous->nodes.begin())];
    }
    if (listed_before) continue;
    next->nodes[i]->reconnect_now();
    const Endpoint endpoint = next->nodes[i]->endpoint();
    for (const auto& seed : seeds_) {
      if (seed->endpoint() == endpoint) seed->reconnect_now();
    }
  }
}

std::shared_ptr<const SlotSet> ClusterRouter::served_elsewhere(const Endpoint& endpoint) const {
  const std::shared_ptr<const SlotMap> current = map();
  if (!current) return nullptr;
  SlotSet elsewhere = current->table.covered();
  const std::vector<SlotSet> served = current->table.served();
  for (std::size_t i = 0; i < current->nodes.size() && i < served.size(); ++i) {
    if (current->nodes[i]->endpoint() == endpoint) elsewhere &= ~served[i];
  }
  if (elsewhere.none()) return nullptr;
  return std::make_shared<const SlotSet>(elsewhere);
}

void ClusterRouter::drop_moved_entries(const SlotMap* previous, const SlotMap& next) {
  if (!previous) return;
  const std::vector<SlotTable::Slots> before = previous->table.served();
  const std::vector<SlotTable::Slots> after = next.table.served();
  for (std::size_t i = 0; i < previous->nodes.size() && i < before.size(); ++i) {
    Connection* node = previous->nodes[i];
    const std::shared_ptr<ClientCache>& cache = node->cache();
    if (!cache) continue;
    auto at = std::find(next.nodes.begin(), next.nodes.end(), node);
    SlotTable::Slots lost = before[i];
    if (at != next.nodes.end()) {
      const auto index = static_cast<std::size_t>(at - next.nodes.begin());
      if (index < after.size()) lost &= ~after[index];
    }
    if (lost.none()) continue;
    cache->invalidate_where([&lost](std::string_view key) { return lost.test(slot_of(key)); });
  }
}

void ClusterRouter::hand_over(const SlotMap& map, int db, std::string_view bytes,
                              std::span<PendingCommand> commands) {
  struct Part {
    Connection* to;
    std::string bytes;
    std::vector<PendingCommand> commands;
  };
  std::vector<Part> parts;
  std::size_t slots = 0;
  for (PendingCommand& command : commands) {
    const std::string_view encoded =
        bytes.substr(command.bytes_begin, command.bytes_end - command.bytes_begin);
    // redmux's own ASKING (named by the very constant it was written with, not by its
    // text), for the command after it: asked again where that lands.
    if (command.kind == PendingKind::FireAndForget && !command.counted &&
        command.name.data() == kAsking.data()) {
      continue;
    }
    const std::int16_t owner =
        command.slot == kNoSlot ? SlotTable::kNoNode : map.table.owner(command.slot);
    if (owner < 0) {
      const Error error(errc::not_sent, std::string(command.name) + " not sent: no cluster node " +
                                            "serves slot " + std::to_string(command.slot) +
                                            " in the newest slot map; safe to retry");
      if (command.state) {
        command.state->fail(error);
        command.state->release();
      } else {
        shared_->report_error(error);
      }
      slots += command.counted ? 1 : 0;
      continue;
    }
    Connection* to = map.nodes[static_cast<std::size_t>(owner)];
    if (auto* redirect = dynamic_cast<RedirectState*>(command.state)) redirect->relocated(to);
    auto part = std::find_if(parts.begin(), parts.end(), [&](const Part& p) { return p.to == to; });
    if (part == parts.end()) {
      parts.push_back(Part{to, {}, {}});
      part = parts.end() - 1;
    }
    command.follow_map = false;  // placed by the map already: the new owner takes it
    command.bytes_begin = part->bytes.size();
    part->bytes.append(encoded);
    command.bytes_end = part->bytes.size();
    part->commands.push_back(command);
  }
  shared_->release_slots(slots);
  // Each part keeps the order its commands had in the old queue.
  for (Part& part : parts) part.to->submit_batch(db, part.bytes, part.commands);
}

void ClusterRouter::forward(int db, std::string_view bytes, std::span<PendingCommand> commands) {
  std::lock_guard relocating(relocate_mutex_);
  std::shared_ptr<const SlotMap> current = newest_map();
  if (!current) {  // cannot happen: a queue forwards only under a map
    hand_over(SlotMap{}, db, bytes, commands);
    return;
  }
  hand_over(*current, db, bytes, commands);
}

namespace {

/// READONLY (`read_only`) or READWRITE on `connection`: ahead of its queue (`first`, a new
/// session's ready hook) or after what is queued.
void send_read_mode(Connection& connection, bool read_only, bool first) {
  static constexpr std::string_view kReadOnly = "READONLY";
  static constexpr std::string_view kReadWrite = "READWRITE";
  const std::string_view name = read_only ? kReadOnly : kReadWrite;
  const Arg args[] = {Arg(name)};
  if (!first) {
    connection.submit(-1, args, own_command(name, PendingKind::FireAndForget));
    return;
  }
  std::string bytes;
  resp::encode_command(bytes, args);
  PendingCommand command = own_command(name, PendingKind::FireAndForget);
  command.bytes_begin = 0;
  command.bytes_end = bytes.size();
  connection.submit_first(bytes, std::span<PendingCommand>(&command, 1));
}

}  // namespace

void ClusterRouter::set_read_only(Connection& connection, bool read_only) {
  std::shared_ptr<std::atomic<bool>> flag;
  {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < connections_.size(); ++i) {
      if (connections_[i].get() == &connection) flag = read_only_[i];
    }
  }
  if (!flag || flag->exchange(read_only, std::memory_order_acq_rel) == read_only) return;
  // Queued now: before any command the new map routes here. A connection not ready yet
  // sends it after its handshake (its ready hook may send READONLY too: harmless).
  send_read_mode(connection, read_only, false);
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
    created->set_purpose(ConnectionPurpose::ClusterNode);
    if (node_caches_) {  // only this node's reader sees the invalidations of what it read
      created->enable_client_cache();
      node_caches_->add(created->cache());
    }
    // READONLY, on a node the map names a replica, before anything else each session sends
    // (set_read_only()): a replica then serves the reads routed to it (PreferReplica).
    auto read_only = std::make_shared<std::atomic<bool>>(false);
    created->set_ready_hook([read_only](Connection& ready) {
      if (read_only->load(std::memory_order_acquire)) send_read_mode(ready, true, true);
    });
    read_only_.push_back(std::move(read_only));
    std::weak_ptr<ClusterRouter> weak = weak_from_this();
    created->set_forward_hook([weak](int db, std::string_view bytes,
                                     std::span<PendingCommand> commands) {
      if (auto self = weak.lock()) {
        self->forward(db, bytes, commands);
        return;
      }
      for (PendingCommand& command : commands) {  // the multiplexer is going away
        if (!command.state) continue;
        command.state->fail(Error(
            errc::shut_down, std::string(command.name) + " not sent: the multiplexer was closed"));
        command.state->release();
      }
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

void ClusterRouter::learn_redirect(NodeSpan reply, std::string_view from_host) noexcept {
  if (!is_error_reply(reply)) return;
  try {
    const std::optional<ClusterRedirect> redirect = parse_redirect(reply[0].value, from_host);
    if (redirect && !redirect->ask) moved(*redirect);
  } catch (...) {  // out of memory updating the map: the next refresh brings the change
  }
}

void ClusterRouter::moved(const ClusterRedirect& redirect) {
  Connection* target = connection_to(redirect.endpoint);
  std::vector<Connection*> losing;  // the slot's old primary and its replicas
  {
    std::lock_guard lock(mutex_);
    if (const std::shared_ptr<const SlotMap> current = map_.get()) {
      const std::int16_t owner = current->table.owner(redirect.slot);
      const auto old = static_cast<std::size_t>(owner);
      if (owner >= 0 && old < current->nodes.size() && current->nodes[old] != target) {
        losing.push_back(current->nodes[old]);
        if (old < current->table.replicas.size()) {
          for (std::int16_t replica : current->table.replicas[old]) {
            const auto at = static_cast<std::size_t>(replica);
            if (at < current->nodes.size()) losing.push_back(current->nodes[at]);
          }
        }
      }
      auto next = std::make_shared<SlotMap>(*current);
      next->table.moved(redirect.slot, redirect.endpoint);
      if (next->nodes.size() < next->table.nodes.size()) next->nodes.push_back(target);
      map_.set(std::move(next));
    }
  }
  for (Connection* node : losing) {
    if (const std::shared_ptr<ClientCache>& cache = node->cache()) {
      const std::uint16_t slot = redirect.slot;
      cache->invalidate_where([slot](std::string_view key) { return slot_of(key) == slot; });
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
  const std::optional<std::chrono::milliseconds> wait = schedule_.begin(Clock::now());
  if (!wait) return;  // single flight: the one under way will do
  std::weak_ptr<ClusterRouter> weak = weak_from_this();
  after(*wait, [weak] {
    auto self = weak.lock();
    if (!self) return;
    // Finished once: by the answer, or after syncTimeout without one. The connection asked
    // may break before writing the request and hold it for a reconnect to a node that is
    // gone; without the limit no refresh would start again. A late answer is then ignored.
    auto given_up = std::make_shared<std::atomic<bool>>(false);
    auto finished = [weak, given_up](const Error&) {
      if (given_up->exchange(true)) return;
      if (auto self = weak.lock()) self->schedule_.finished(Clock::now());
    };
    Connection* via = self->ready_connection();
    if (!via) {
      finished(Error());
      return;
    }
    const auto limit =
        std::chrono::duration_cast<std::chrono::milliseconds>(self->shared_->config().sync_timeout);
    self->after(limit, [finished] { finished(Error()); });
    self->ask_shards(*via, finished, /*slots=*/false, given_up);
  });
}

bool ClusterRouter::primary_unreachable() const {
  std::shared_ptr<const SlotMap> current = map();
  if (!current) return false;
  for (std::size_t i = 0; i < current->nodes.size(); ++i) {
    if (current->table.slots[i] > 0 && current->nodes[i]->state() != ConnectionState::Ready) {
      return true;
    }
  }
  return false;
}

bool ClusterRouter::any_node_unreachable() const {
  std::lock_guard lock(mutex_);
  return std::any_of(connections_.begin(), connections_.end(), [](const auto& connection) {
    return connection->state() != ConnectionState::Ready;
  });
}

void ClusterRouter::on_event(const ConnectionEvent& event) {
  // A primary that died sends no MOVED, and its callers' commands just wait in its queue:
  // ask for the map at once, and every 250 ms while the failover runs, so the promoted
  // replica is seen within moments of its promotion.
  if (event.kind != ConnectionEventKind::Failed) return;
  std::shared_ptr<const SlotMap> current = map();
  if (!current) return;
  const bool a_node =
      std::any_of(current->nodes.begin(), current->nodes.end(),
                  [&](Connection* node) { return node->describe_endpoint() == event.endpoint; });
  if (!a_node) return;
  schedule_.node_failed(Clock::now());
  refresh();
}

void ClusterRouter::arm_periodic_refresh() {
  std::shared_ptr<Timer> timer;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    if (!periodic_) periodic_ = std::make_shared<Timer>(pool_->next_work_context());
    timer = periodic_;
  }
  const Clock::time_point now = Clock::now();
  const bool fast = schedule_.fast(now);  // the map is asked for primary_unreachable() only then
  std::weak_ptr<ClusterRouter> weak = weak_from_this();
  timer->wait_for(schedule_.next_tick(now, fast && primary_unreachable()), [weak](bool fired) {
    if (!fired) return;
    auto self = weak.lock();
    if (!self) return;
    if (self->schedule_.due(Clock::now(), self->primary_unreachable(),
                            self->any_node_unreachable())) {
      self->refresh();
    }
    self->arm_periodic_refresh();
  });
}

void ClusterRouter::after(std::chrono::milliseconds delay, std::function<void()> task) {
  run_after(pool_->next_work_context(), delay, std::move(task));
}

void ClusterRouter::park(CommandState* command, std::chrono::milliseconds delay,
                         std::function<void()> task) {
  command->add_ref();
  // Released with the handler, whether it runs or is destroyed with a stopped io_context.
  std::shared_ptr<CommandState> held(command, [](CommandState* state) { state->release(); });
  bool closed = false;
  {
    std::lock_guard lock(mutex_);
    closed = closed_;
    if (!closed) parked_.insert(command);
  }
  if (closed) {
    command->fail(Error(errc::shut_down, std::string(command->command_name) +
                                             " not sent: the multiplexer was closed"));
    return;
  }
  std::weak_ptr<ClusterRouter> weak = weak_from_this();
  run_after(pool_->next_work_context(), delay, [weak, held, task = std::move(task)] {
    auto self = weak.lock();
    if (!self) return;
    {
      std::lock_guard lock(self->mutex_);
      if (self->parked_.erase(held.get()) == 0) return;  // close() failed it already
    }
    task();
  });
}

std::size_t ClusterRouter::close(const std::function<void()>& closed) {
  std::vector<std::shared_ptr<Connection>> all;
  std::shared_ptr<Timer> periodic;
  std::vector<CommandState*> parked;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return 0;
    closed_ = true;
    all = connections_;
    periodic = std::move(periodic_);
    for (CommandState* command : parked_) {
      command->add_ref();  // its timer's handler may run (and let go of it) meanwhile
      parked.push_back(command);
    }
    parked_.clear();
  }
  for (CommandState* command : parked) {
    command->fail(Error(errc::shut_down, std::string(command->command_name) +
                                             " not sent: the multiplexer was closed"));
    command->release();
  }
  if (periodic) post_to(periodic->context(), [periodic] { periodic->cancel(); });
  for (const auto& connection : all) connection->shutdown(closed);
  return all.size();
}

}  // namespace redmux::detail
