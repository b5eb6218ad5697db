#include "mux/core.hpp"

#include "commands/command_rules.hpp"
#include "core/countdown.hpp"
#include "mux/blocking.hpp"
#include "mux/cluster.hpp"
#include "mux/dedicated_pool.hpp"
#include "mux/sentinel_monitor.hpp"
#include "net/io_load.hpp"
#include "pubsub/hub.hpp"
#include "resp/classify.hpp"
#include "topology/replica_redirect.hpp"
#include "topology/slot.hpp"

namespace redmux::detail {

MuxCore::MuxCore(Config config, std::shared_ptr<IoPool> pool, std::shared_ptr<TlsContext> tls)
    : pool_(pool ? std::move(pool) : IoPool::create(config.io_threads)),
      shared_(std::make_shared<SharedContext>(std::move(config))),
      cache_route_(shared_->config()),
      tls_(tls) {
  const Config& cfg = shared_->config();
  for (const Endpoint& endpoint : cfg.endpoints) {
    std::vector<std::shared_ptr<Connection>> group;
    for (int i = 0; i < std::max(1, cfg.connections_per_endpoint); ++i) {
      asio::io_context& io = pool_->next_context();
      group.push_back(std::make_shared<Connection>(io, pool_->load_of(io), shared_, endpoint, tls));
      if (cfg.client_cache) {
        // The interactive connections keep the cache: one per connection, since only a
        // connection's reader sees the invalidations of what it read.
        group.back()->enable_client_cache();
        cache_route_.add_cache(group.back()->cache());
      }
    }
    groups_.push_back(std::move(group));
  }
  held_ = std::make_shared<HeldCommands>(*this, shared_, pool_->next_work_context());
  // failoverWait: a command that needs a primary while none is known waits for one (held)
  // instead of being refused; not under failFast, which asks for refusals at once. A single
  // server has no other to wait for.
  several_servers_ = groups_.size() > 1;
  may_hold_ = several_servers_ && cfg.failover_wait && cfg.backlog_policy == BacklogPolicy::Queue;
  // A failover seen on one connection (a replica promoted, a primary demoted) asks every
  // other connection its role at once — the other endpoints' and, under
  // connectionsPerEndpoint, the same server's — instead of waiting for its READONLY reply or
  // periodic check; commands waiting for a primary may go now. `watched` is each endpoint's
  // first connection, by server index (set_locator below).
  auto watched = std::make_shared<std::vector<std::weak_ptr<Connection>>>();
  auto everyone = std::make_shared<std::vector<std::weak_ptr<Connection>>>();
  for (auto& group : groups_) {
    watched->push_back(group.front());
    everyone->insert(everyone->end(), group.begin(), group.end());
  }
  std::weak_ptr<HeldCommands> held = held_;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::size_t i = 0; i < groups_[g].size(); ++i) {
      Connection& connection = *groups_[g][i];
      // Under Sentinel, the Sentinels are asked too: the one that announces the promotion
      // may be out of reach, or refuse redmux the channel that says it.
      connection.set_role_hook([everyone, held, sentinel = role_watch_](Connection& changed) {
        for (const auto& weak : *everyone) {
          auto other = weak.lock();
          if (other && other.get() != &changed) other->check_role();
        }
        if (auto waiting = held.lock()) waiting->try_again();
        if (auto monitor = sentinel->lock()) monitor->role_changed();
      });
      // Which of these servers a replica replicates from (server_roles.hpp's
      // follows_another_primary): INFO names it by the address it was given.
      connection.set_locator([watched](std::string_view host, int port) {
        for (std::size_t s = 0; s < watched->size(); ++s) {
          auto other = (*watched)[s].lock();
          if (!other) continue;
          const Endpoint at = other->endpoint();
          if (!at.is_unix() && at.port == port && at.host == host) return s;
        }
        return ServerProfile::kNoServer;
      });
      // Commands queued on a connection that lost its server go where they may run.
      connection.set_down_hook([held, g, i](Connection& down, bool retargeted) {
        if (auto waiting = held.lock()) waiting->connection_down(down, g, i, retargeted);
      });
      // A write a Valkey replica answered -REDIRECT did not run: it goes to the primary the
      // replica names when that is one of these servers (topology/replica_redirect.hpp). A
      // PreferReplica read a replica answered -MASTERDOWN did not run either: it goes to
      // another replica in sync, or to the primary (HeldCommands::send_refused_read()).
      if (several_servers_) {
        connection.set_redirect_hook(
            [watched, held, g, i](std::string_view reply, const PendingCommand& command) {
              if (resp::says_master_down(reply)) {
                auto placer = held.lock();
                return placer && placer->send_refused_read(command, g, i);
              }
              return redirect_to_primary(*watched, g, reply, command);
            });
      }
    }
  }
  dedicated_ = std::make_shared<DedicatedPool>(shared_, pool_, tls);
  hub_ = std::make_shared<SubscriptionHub>(shared_, pool_, tls);
  // sharedSubscriptionConnection: under RESP3 pushes can share the interactive connection
  // with replies, so subscriptions ride the first one instead of a connection of their own.
  if (cfg.shared_subscription_connection && cfg.protocol == Protocol::Resp3 && !groups_.empty()) {
    hub_->ride_on(groups_.front().front());
  }
}

bool MuxCore::redirect_to_primary(const std::vector<std::weak_ptr<Connection>>& servers,
                                  std::size_t from, std::string_view reply,
                                  const PendingCommand& command) {
  const std::optional<Endpoint> primary = parse_replica_redirect(reply);
  if (!primary) return false;
  std::vector<std::shared_ptr<Connection>> connections;
  std::vector<Endpoint> endpoints;
  for (const auto& weak : servers) {
    connections.push_back(weak.lock());
    endpoints.push_back(connections.back() ? connections.back()->endpoint() : Endpoint{});
  }
  const std::size_t to = redirect_target(endpoints, *primary, from);
  if (to == endpoints.size() || !connections[to]) return false;
  connections[to]->send_on(command);  // its reference and its slot go with it
  // The replying server asks its own role again (a -REDIRECT says it changed); the one it
  // names is asked too, so routing learns of the new primary with the old one's demotion
  // rather than at its next periodic check.
  if (connections[to]->is_replica()) connections[to]->check_role();
  return true;
}

MuxCore::~MuxCore() {
  close();
}

void MuxCore::start(std::function<void(std::vector<Error>)> done) {
  struct Tally {
    std::mutex mutex;
    std::size_t remaining;
    bool any_ok = false;
    std::vector<Error> errors;
    std::function<void(std::vector<Error>)> done;
  };
  auto tally = std::make_shared<Tally>();
  std::size_t total = 0;
  for (auto& group : groups_) total += group.size();
  tally->remaining = total;
  tally->done = std::move(done);
  for (auto& group : groups_) {
    for (auto& connection : group) {
      connection->start([tally](const Error& error) {
        std::function<void(std::vector<Error>)> done;
        std::vector<Error> errors;
        {
          std::lock_guard lock(tally->mutex);
          if (error) {
            tally->errors.push_back(error);
          } else {
            tally->any_ok = true;
          }
          if (--tally->remaining != 0) return;
          done = std::move(tally->done);
          if (!tally->any_ok) errors = std::move(tally->errors);
        }
        if (done) done(std::move(errors));
      });
    }
  }
}

CloseReport MuxCore::close(Clock::time_point deadline) {
  if (on_io_thread()) deadlock_error("Multiplexer::close(deadline)").raise();
  CloseReport report;
  if (closing_.exchange(true, std::memory_order_acq_rel)) {  // another close() came first
    close();
    report.drained = shared_->outstanding() == 0;
    return report;
  }
  // Order: refuse new work everywhere first, so what is waited for can only shrink; then the
  // commands (their replies may still be pub/sub confirmations or feed handlers); then the
  // messages already received; then the hard close fails whatever the deadline cut short.
  const std::vector<std::shared_ptr<SubscriptionHub>> hubs = [&] {
    std::vector<std::shared_ptr<SubscriptionHub>> all = shard_hubs();
    all.push_back(hub_);
    return all;
  }();
  for (const auto& hub : hubs) hub->stop_accepting();
  const bool idle = shared_->wait_until_idle(deadline);
  report.commands_failed = idle ? 0 : shared_->outstanding();
  bool handler_running = false;  // at the deadline; the hard close waits for it to return
  for (const auto& hub : hubs) {
    const SubscriptionHub::Drained drained = hub->drain(deadline);
    report.messages_undelivered += drained.undelivered;
    handler_running = handler_running || drained.handler_running;
  }
  report.drained = idle && report.messages_undelivered == 0 && !handler_running;
  if (!idle) {
    shared_->set_close_note(
        "close(deadline): its deadline passed with " + std::to_string(report.commands_failed) +
        (report.commands_failed == 1 ? " command" : " commands") + " not completed");
  }
  close();
  return report;
}

void MuxCore::close() {
  closing_.store(true, std::memory_order_release);
  if (closed_.exchange(true, std::memory_order_acq_rel)) return;
  held_->close();  // first: nothing calls back into the core after it returns
  const auto pending = Countdown::make();
  const std::function<void()> one_closed = pending->done();
  for (auto& group : groups_) pending->add(group.size());
  pending->add(dedicated_->close(one_closed));
  pending->add(hub_->close(one_closed));
  std::shared_ptr<ClusterRouter> cluster;
  {
    std::lock_guard guard(cluster_mutex_);
    cluster = cluster_;
  }
  if (cluster) pending->add(cluster->close(one_closed));
  for (const auto& hub : shard_hubs()) pending->add(hub->close(one_closed));
  if (sentinel_) pending->add(sentinel_->close(one_closed));
  for (auto& group : groups_) {
    for (auto& connection : group) {
      connection->shutdown(one_closed);
    }
  }
  pending->started();
  if (on_io_thread()) return;  // cannot wait for our own thread; shutdown runs after us
  // Wait until each connection has processed its shutdown, so every future is completed
  // before the pool (maybe destroyed right after us) stops its threads. Bounded by
  // syncTimeout: a wedged I/O thread (a callback that blocks) cannot hang close().
  pending->wait_for(shared_->config().sync_timeout);
  // Last, once every command has completed (a handler may be waiting for one): the pub/sub
  // handlers still running return before close() does, so nothing they use is let go of
  // while they run.
  hub_->join_handlers();
  for (const auto& hub : shard_hubs()) hub->join_handlers();
}

std::pair<Clock::time_point, std::uint32_t> MuxCore::deadline_for(
    const CallOptions& options) const {
  const auto timeout =
      options.timeout.count() > 0 ? options.timeout : shared_->config().async_timeout;
  // The precise clock, though it is a vDSO call per command: CLOCK_MONOTONIC_COARSE lags by
  // a tick or more on an idle machine, and deadlines from it came early
  // (MultiplexerTest.ACommandNeverTimesOutBeforeItsTimeout).
  return {Clock::now() + timeout, static_cast<std::uint32_t>(timeout.count())};
}

Error MuxCore::check_allowed(const CommandInfo& info, std::span<const Arg> args, Site site) const {
  if (args.empty() || args[0].bytes().empty()) {
    return Error(errc::invalid_argument, "redmux: empty command");
  }
  if (info.is(CommandFlag::ConnectionState)) {
    if (site == Site::Transaction) {
      // The transaction's connection is its own, but the transaction sends MULTI, EXEC and
      // the WATCHes itself, and runs on the database it was taken from.
      // The name with its subcommand (CLIENT TRACKING): the word alone names a family.
      return Error(errc::not_allowed, std::string(info.name) +
                                          " cannot be queued in a transaction: " +
                                          std::string(transaction_advice(info)));
    }
    return Error(errc::not_allowed,
                 std::string(info.name) +
                     " changes the state of the connection it runs on, and this connection is "
                     "shared by every caller of the multiplexer: " +
                     std::string(connection_state_advice(info)));
  }
  if (info.is(CommandFlag::Admin) && !shared_->config().allow_admin) {
    return Error(errc::admin_required,
                 std::string(info.name) +
                     " is an admin command and is refused unless the configuration says "
                     "allowAdmin=true");
  }
  const bool blocking_harmless = site == Site::Dedicated || site == Site::Transaction;
  if (!blocking_harmless && info.is(CommandFlag::Blocking) && ends_busy_script(info)) {
    return Error(errc::not_allowed,
                 std::string(info.name) +
                     " needs a connection of its own (the shared one may be running the very "
                     "script it ends), which a batch does not give it: send it on its own "
                     "(Database)");
  }
  if (!blocking_harmless && info.is(CommandFlag::Blocking) && is_blocking(info, args)) {
    return Error(errc::not_allowed,
                 std::string(info.name) +
                     " blocks the connection it runs on: in a batch it would stall every other "
                     "caller of the shared connection; send it on its own (Database), which "
                     "runs it on a dedicated connection");
  }
  return Error();
}

void MuxCore::learn_unknown(const CommandInfo& info) {
  // DESIGN: a command the table does not know is looked up once with COMMAND INFO and cached
  // (key positions, read-only …). This first command goes out with the generic entry.
  if (is_shared_unknown(info) || closed()) return;  // past the table's bound of unknown names
  const std::string_view name = info.name;
  {
    std::lock_guard lock(learning_mutex_);
    // Learned entries keep the Unknown mark, so this runs on every use: no allocation here.
    if (learning_.find(name) != learning_.end()) return;
    learning_.emplace(name);
  }
  // redmux's own command, not a caller's: no queue slot, no deadline (a break fails it), and
  // not observed (the command hook, the latency histograms, status()'s counts).
  Connection* connection = nullptr;
  if (ClusterRouter* router = cluster()) {
    connection = router->any_primary();
  } else if (!groups_.empty()) {
    connection = groups_.front().front().get();
  }
  if (connection == nullptr) {
    std::lock_guard lock(learning_mutex_);
    learning_.erase(learning_.find(name));  // the next use asks again
    return;
  }
  auto* state = new FutureState<Reply>();
  state->command_name = "COMMAND INFO";
  state->add_ref();  // one reference for the pipeline (own_command() hands it over)
  const Arg args[] = {"COMMAND", "INFO", name};
  connection->submit(-1, args, own_command("COMMAND INFO", PendingKind::Internal, state));
  Future<Reply>(state).then([learned = std::string(name)](Result<Reply> reply) {
    if (!reply) return;  // refused by an ACL, or the connection dropped: stay generic
    const std::vector<Node> nodes = reply->nodes();
    learn_command_from_reply(learned, nodes);
  });
}

Error MuxCore::check_database(int db, const Connection& connection, const CommandInfo& info) const {
  if (db == shared_->config().default_database) return Error();
  // A SELECT that fails would let the commands pipelined behind it run in the wrong
  // database, so an index the server does not have is refused here, before sending, and so
  // is any other database when the server refused SELECT at the handshake.
  if (const std::string refusal = select_refusal(connection); !refusal.empty()) {
    return Error(errc::invalid_argument, std::string(info.name) + " refused, not sent: database " +
                                             std::to_string(db) + " needs SELECT " +
                                             std::to_string(db) + ", which " +
                                             connection.describe_endpoint() + " refuses (" +
                                             refusal + "); this connection serves database 0 only");
  }
  int databases = connection.databases();
  if (databases == 0) databases = known_databases(connection.endpoint());
  if (db >= 0 && (databases == 0 || db < databases)) return Error();
  return Error(errc::invalid_argument, std::string(info.name) + " refused: database " +
                                           std::to_string(db) + " does not exist on " +
                                           connection.describe_endpoint() +
                                           " (databases=" + std::to_string(databases) + ")");
}

int MuxCore::known_databases(const Endpoint& endpoint) const {
  // A dedicated connection is leased before its handshake has counted the server's databases
  // (a blocking command's or a transaction's first lease): the interactive connections to
  // that server have. A cluster has database 0 only.
  if (cluster()) return 1;
  for (const auto& group : groups_) {
    for (const auto& connection : group) {
      const int databases = connection->databases();
      if (databases != 0 && connection->endpoint() == endpoint) return databases;
    }
  }
  return 0;
}

std::string MuxCore::select_refusal(const Connection& connection) const {
  using Answer = ServerProfile::SelectAnswer;
  const auto refusal_of = [](const Connection& said) {
    return said.select_answer() == Answer::Refused ? said.identity().select_refusal : std::string();
  };
  if (connection.select_answer() != Answer::Unknown) return refusal_of(connection);
  // Before its own handshake (a dedicated connection just leased): as the interactive
  // connections to that server found.
  const Endpoint endpoint = connection.endpoint();
  for (const auto& group : groups_) {
    for (const auto& other : group) {
      if (other->select_answer() != Answer::Unknown && other->endpoint() == endpoint) {
        return refusal_of(*other);
      }
    }
  }
  return {};
}

Error demands_both_error(std::string_view name) {
  return Error(errc::invalid_argument,
               std::string(name) +
                   " refused: Flags::DemandMaster and Flags::DemandReplica together demand two "
                   "servers, and a command runs on one");
}

Result<Connection*> MuxCore::route(const CommandInfo& info, std::span<const Arg> args,
                                   Flags flags) {
  return route_command(info, args, flags, nullptr);
}

Result<Connection*> MuxCore::route_command(const CommandInfo& info, std::span<const Arg> args,
                                           Flags flags, bool* hold) {
  if (closing())
    return Error(errc::shut_down, std::string(info.name) + " not sent: the multiplexer was closed");
  if (ClusterRouter* router = cluster()) return router->route(info, args, flags);
  if (demands_both(flags)) [[unlikely]]
    return demands_both_error(info.name);
  // Role-based choice among endpoints: a replica only when the flags allow it and the command
  // only reads; a write never goes to a replica.
  const bool demand_replica = has_flag(flags, Flags::DemandReplica);
  std::size_t g = 0;
  // With one endpoint the roles matter only to the Demand flags: that endpoint may be the
  // wrong kind of server.
  if (several_servers_ || demand_replica || has_flag(flags, Flags::DemandMaster)) {
    const bool read_only = info.is(CommandFlag::ReadOnly);
    const bool want_replica =
        read_only && (demand_replica || has_flag(flags, Flags::PreferReplica));
    const std::size_t none = groups_.size();
    const Roles roles = this->roles(want_replica, none);
    if (demand_replica && (roles.replica == none || !read_only)) {
      std::string why = read_only ? " demands a replica, but none is connected"
                        : info.is(CommandFlag::Write)
                            ? " writes and cannot run on a replica"
                            : " is not a read-only command and cannot run on a replica";
      if (read_only && roles.unsynced > 0) {
        why = " demands a replica, but none of those connected is in sync (replicaHealthCheck):";
        for (std::size_t g = 0; g < groups_.size(); ++g) {
          const Connection& first = *groups_[g].front();
          if (!first.is_replica() || first.state() != ConnectionState::Ready) continue;
          if (!serves_replica_reads(first, roles.primary_ready)) {
            why += " " + first.describe_endpoint() + ": " + first.replication_state() + ";";
          } else if (group_follows_another_primary(g, roles.primary)) {
            why += " " + first.describe_endpoint() + ": " + follows_text(first) + ";";
          }
        }
        why.pop_back();
      } else if (read_only && groups_.size() == 1 && !sentinel_ &&
                 groups_.front().front()->state() == ConnectionState::Ready &&
                 !groups_.front().front()->is_replica()) {
        // Replicas are not discovered from a primary: a lone endpoint has none to offer.
        why = " demands a replica, but the only endpoint listed, " +
              groups_.front().front()->describe_endpoint() +
              ", is not one (replicas are not discovered: list them among the endpoints)";
        return Error(errc::not_allowed, std::string(info.name) + why + " (DemandReplica)");
      }
      std::string message = std::string(info.name) + why + " (DemandReplica)";
      // A read refused for want of a replica now may find one later (one connects, or
      // catches up): never sent, so safe to retry. A write never can.
      return read_only ? Error::never_ran(errc::not_allowed, std::move(message))
                       : Error(errc::not_allowed, std::move(message));
    }
    // Only a read-only command may run on a replica: a write, and any other (EVAL, which may
    // write; PUBLISH; the EXEC of a transaction …), needs the primary.
    const bool must_use_primary = needs_primary(read_only, flags);
    if (roles.primary == none && must_use_primary && hold) {
      *hold = true;  // failoverWait: it waits for a primary (held_commands.hpp)
      return static_cast<Connection*>(nullptr);
    }
    if (has_flag(flags, Flags::DemandMaster) && roles.primary == none) {
      const Connection& lone = *groups_.front().front();
      if (groups_.size() == 1 && !sentinel_ && lone.state() == ConnectionState::Ready) {
        // A primary is not discovered from its replica: a lone endpoint listed has none to
        // offer (under Sentinel the endpoints are Sentinels, which name it).
        const std::string master = lone.master();
        return Error(
            errc::not_allowed,
            std::string(info.name) + " demands the primary, but the only endpoint listed, " +
                lone.describe_endpoint() + ", is a replica" +
                (master.empty() ? std::string() : " of " + master) +
                " (a primary is not discovered: list it among the endpoints) (DemandMaster)");
      }
      // A failover in progress ends with a primary: never sent, so safe to retry.
      return Error::never_ran(
          errc::not_allowed,
          std::string(info.name) + " demands the primary, but none is known (DemandMaster)");
    }
    if (roles.primary == none && must_use_primary) {
      // Not to a replica. Not sent, so safe to retry (a failover in progress ends with a
      // primary).
      const char* what = info.is(CommandFlag::Write)
                             ? " writes, but "
                             : " is not read-only and needs the primary, but ";
      return Error(errc::not_sent, std::string(info.name) + what + why_no_primary() +
                                       "; not sent: retry once it ends");
    }
    g = roles.primary == none ? 0 : roles.primary;
    if (want_replica && roles.replica != none) {
      g = roles.replica;
    } else if (hold && held_->holds_primary_commands()) {
      *hold = true;  // bound for the primary while others wait for it: behind them, in order
      return static_cast<Connection*>(nullptr);
    } else if (read_only && !must_use_primary && !roles.primary_ready) {
      // PreferMaster: a read goes to a replica that may serve it while the primary is not
      // known, or not connected (crashed, restarting), instead of queuing for it.
      const Roles readable = this->roles(true, none);
      if (readable.replica != none) g = readable.replica;
    }
  }
  const auto& group = groups_[g];
  if (group.size() == 1) return group.front().get();
  // Several connections to one endpoint: a key always rides the same one (per-key order).
  const auto key = first_key_index(info, args);
  const std::size_t index = key ? slot_of(args[*key].bytes()) % group.size() : 0;
  return group[index].get();
}

Result<Endpoint> MuxCore::shard_node(std::uint16_t slot) {
  ClusterRouter* router = cluster();
  if (!router) return Error(errc::invalid_argument, "shard channels need a Redis Cluster");
  Result<Connection*> owner = router->for_slot(slot, false, false);
  if (!owner) return std::move(owner).error();
  return (*owner)->endpoint();
}

void MuxCore::end_moved_shard_channels() {
  const auto owner_of = [this](std::uint16_t slot) -> std::optional<Endpoint> {
    Result<Endpoint> owner = shard_node(slot);
    if (!owner) return std::nullopt;
    return *owner;
  };
  for (const auto& [node, hub] : [this] {
         std::lock_guard lock(shard_hubs_mutex_);
         return shard_hubs_;
       }()) {
    hub->end_shard_channels_elsewhere(node, owner_of);
  }
  // Shard channels subscribed before the map was known rode the hub for channels and
  // patterns, to the first endpoint: those of slots another node serves end now, said so,
  // rather than wait there (for a seed that is down, or for its MOVED).
  if (std::optional<Endpoint> first = hub_->node()) {
    hub_->end_shard_channels_elsewhere(*first, owner_of, /*before_map=*/true);
  }
}

std::shared_ptr<SubscriptionHub> MuxCore::shard_hub(const Endpoint& endpoint) {
  std::lock_guard lock(shard_hubs_mutex_);
  for (const auto& [at, hub] : shard_hubs_) {
    if (at == endpoint) return hub;
  }
  auto hub = std::make_shared<SubscriptionHub>(shared_, pool_, tls_);
  hub->move_to(endpoint);  // before first use: its connection opens to this node
  std::weak_ptr<ClusterRouter> router;
  {
    std::lock_guard lock(cluster_mutex_);
    router = cluster_;
  }
  hub->set_shard_hooks({.redirected =
                            [router](NodeSpan reply, std::string_view from_host) {
                              if (auto map = router.lock()) map->learn_redirect(reply, from_host);
                            },
                        .slot_moved =
                            [router] {
                              if (auto map = router.lock()) map->refresh();
                            }});
  shard_hubs_.emplace_back(endpoint, hub);
  if (closing()) hub->stop_accepting();
  if (closed()) hub->close(nullptr);
  return hub;
}

std::vector<std::shared_ptr<SubscriptionHub>> MuxCore::shard_hubs() const {
  std::lock_guard lock(shard_hubs_mutex_);
  std::vector<std::shared_ptr<SubscriptionHub>> out;
  for (const auto& [at, hub] : shard_hubs_) out.push_back(hub);
  return out;
}

void MuxCore::enable_cluster(Connection& seed, std::function<void(const Error&)> done) {
  std::shared_ptr<ClusterRouter> router;
  {
    std::lock_guard lock(cluster_mutex_);
    if (cluster_ || closed()) {
      done(closed() ? Error(errc::shut_down, "the multiplexer was closed") : Error());
      return;
    }
    std::vector<std::shared_ptr<Connection>> seeds;
    for (auto& group : groups_) seeds.insert(seeds.end(), group.begin(), group.end());
    router = std::make_shared<ClusterRouter>(shared_, pool_, tls_, std::move(seeds));
    if (cache_route_.enabled()) router->set_node_caches(cache_route_.node_caches());
    // A shard channel whose slot another node now serves (a failover, a resharding) is
    // ended, not left on a node that no longer carries its messages.
    // A blocking command still queued on a dedicated connection to a node that lost its
    // slot goes to the new owner; a transaction's step there fails, not sent.
    router->set_map_hook([this, raw = router.get()] {
      end_moved_shard_channels();
      move_unsent_dedicated_commands(*this, *raw);
    });
    cluster_ = router;
  }
  // Routing by slot starts once the map is in; until then commands keep going to the seeds.
  router->load(seed, [this, router, done = std::move(done)](const Error& error) {
    if (!error) {
      cluster_raw_.store(router.get(), std::memory_order_release);
      // The map hook ran before routing by slot started: shard channels subscribed before
      // it (on the first endpoint) are looked at now that their owners can be named.
      end_moved_shard_channels();
    }
    done(error);
  });
}

Error MuxCore::submit(int db, const CallOptions& options, std::span<const Arg> args,
                      CommandState* state) {
  const CommandInfo& info = command_info(args);
  auto refuse = [&](Error error) {
    if (state) state->fail(error);
    return error;
  };
  // Blocking commands never ride the shared connection: they get one of their own.
  const bool blocking = info.is(CommandFlag::Blocking) && is_blocking(info, args);
  if (Error error = check_allowed(info, args, blocking ? Site::Dedicated : Site::Shared)) {
    return refuse(std::move(error));
  }
  if (blocking && has_flag(options.flags, Flags::FireAndForget)) {
    // Its reply is what it took (an element, a stream entry): nobody would receive it, and
    // it would hold a dedicated connection until something came.
    return refuse(Error(errc::not_allowed,
                        std::string(info.name) +
                            " refused: a blocking command's reply is what it took or waited "
                            "for, which under Flags::FireAndForget nobody would receive; await "
                            "its future instead"));
  }
  if (info.is(CommandFlag::Unknown)) learn_unknown(info);
  if (state) state->command_name = info.name;
  if (blocking && closing()) {
    return refuse(
        Error(errc::shut_down, std::string(info.name) + " not sent: the multiplexer was closed"));
  }
  if (cache_route_.enabled()) {
    if (state && !blocking) {
      if (auto key = cache_route_.cacheable_key(info, args, options.flags)) {
        return submit_cached(db, options, args, info, *key, state);
      }
    }
    // Read your own write (cache_route.hpp): the keys leave every cache before the write
    // is queued and again after.
    cache_route_.invalidate_written(info, args);
    // With several connections to the server, or on a dedicated one, a third time at the
    // reply (cache_route.hpp): a blocking write runs when the server unblocks it.
    CommandState* sent =
        blocking    ? cache_route_.clear_at_reply(info, args, state, CacheRoute::Ride::Dedicated)
        : cluster() ? state
                    : cache_route_.clear_at_reply(info, args, state, CacheRoute::Ride::Alone);
    Error error = blocking ? submit_blocking(*this, db, options, args, info, sent)
                           : submit_routed(db, options, args, info, sent);
    cache_route_.invalidate_written(info, args);
    if (sent != state) sent->release();  // its maker's reference; the connection took its own
    return error;
  }
  if (blocking) return submit_blocking(*this, db, options, args, info, state);
  return submit_routed(db, options, args, info, state);
}

Error MuxCore::submit_routed(int db, const CallOptions& options, std::span<const Arg> args,
                             const CommandInfo& info, CommandState* state) {
  auto refuse = [&](Error error) {
    if (state) state->fail(error);
    return error;
  };
  auto [deadline, timeout_ms] = deadline_for(options);
  if (!take_slot(deadline)) return refuse(queue_full_error(info, deadline, timeout_ms));
  if (ClusterRouter* router = cluster()) {
    if (db != 0 && db != -1) {
      shared_->release_slots(1);
      return refuse(Error(errc::invalid_argument,
                          std::string(info.name) + " refused: database " + std::to_string(db) +
                              " does not exist in a Redis Cluster (only database 0)"));
    }
    return submit_to_cluster(*router, db, info, args, state, options.flags, deadline, timeout_ms,
                             options.timeout.count() > 0);
  }
  if (several_servers_)
    return submit_to_servers(db, options, args, info, state, deadline, timeout_ms);
  Result<Connection*> connection = route_command(info, args, options.flags, nullptr);
  if (!connection) {
    shared_->release_slots(1);
    return refuse(std::move(connection).error());
  }
  if (Error error = check_database(db, **connection, info)) {
    shared_->release_slots(1);
    return refuse(std::move(error));
  }
  return hand_over(**connection, db, options, args, info, state, deadline, timeout_ms);
}

Error MuxCore::submit_to_servers(int db, const CallOptions& options, std::span<const Arg> args,
                                 const CommandInfo& info, CommandState* state,
                                 Clock::time_point deadline, std::uint32_t timeout_ms) {
  auto refuse = [&](Error error) {
    shared_->release_slots(1);
    if (state) state->fail(error);
    return error;
  };
  bool hold = false;
  Result<Connection*> connection =
      route_command(info, args, options.flags, may_hold_ ? &hold : nullptr);
  if (!connection) return refuse(std::move(connection).error());
  // A held command is checked against the primary's group (the one it waits for).
  if (Error error = check_database(db, hold ? *groups_.front().front() : **connection, info)) {
    return refuse(std::move(error));
  }
  PendingCommand command = caller_command(info, options, state, deadline, timeout_ms);
  if (info.is(CommandFlag::ReadOnly)) {  // where else it may run (held_commands.hpp)
    command.replica_use = replica_use_of(options.flags);
  }
  // A command keeps its bytes where a server may refuse it without running it and it could
  // run elsewhere: a write where a replica could answer it -REDIRECT (the session announced
  // CLIENT CAPA redirect), which goes to the primary then; a PreferReplica read on a
  // replica that has answered -MASTERDOWN before (replica-serve-stale-data no), which goes
  // to another replica in sync or to the primary then. Only there: it costs a copy and an
  // allocation, about 380 instructions a read in windows of 64.
  command.keep_for_redirect =
      state && !hold &&
      (info.is(CommandFlag::Write)
           ? (*connection)->redirects()
           : command.replica_use == ReplicaUse::Prefer && (*connection)->refuses_stale_reads());
  shared_->counters().commands.fetch_add(1, std::memory_order_relaxed);
  if (hold) {
    const std::size_t size = groups_.front().size();
    const auto key = size > 1 ? first_key_index(info, args) : std::nullopt;
    held_->hold(db, args, command, key ? slot_of(args[*key].bytes()) % size : 0);
    return Error();
  }
  if (!(*connection)->submit(db, args, command) && !state) {
    return (*connection)->refusal_of(info.name);  // fire-and-forget: its future fails with it
  }
  return Error();
}

Error MuxCore::queue_full_error(const CommandInfo& info, Clock::time_point deadline,
                                std::uint32_t timeout_ms) const {
  return shared_->queue_full_error(info.name, deadline, std::chrono::milliseconds(timeout_ms));
}

}  // namespace redmux::detail
