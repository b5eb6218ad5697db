// MuxCore: the shared heart of a Multiplexer, referenced by the Multiplexer and by every
// Database/Batch value taken from it. Owns the IoPool reference, the shared context and the
// connections, and routes each command (flags, key slot) to one of them.
//
// Threads: route() and submit() are safe from any thread; the connection list is fixed after
// construction.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "commands/command_table.hpp"
#include "conn/shared_context.hpp"
#include "mux/cache_route.hpp"
#include "mux/held_commands.hpp"
#include "net/connection.hpp"
#include "pubsub/shard_router.hpp"
#include "redmux/arg.hpp"
#include "redmux/close_report.hpp"
#include "redmux/flags.hpp"
#include "redmux/future.hpp"
#include "redmux/io_pool.hpp"
#include "topology/server_roles.hpp"

namespace redmux::detail {

class ClusterRouter;
class DedicatedPool;
class SentinelMonitor;
class SubscriptionHub;

/// Where a read-only command under `flags` may run (held_commands.hpp).
constexpr ReplicaUse replica_use_of(Flags flags) noexcept {
  if (has_flag(flags, Flags::DemandReplica)) return ReplicaUse::Demand;
  if (has_flag(flags, Flags::PreferReplica)) return ReplicaUse::Prefer;
  if (has_flag(flags, Flags::DemandMaster)) return ReplicaUse::None;
  return ReplicaUse::Fallback;
}

/// Whether a command must run on the primary: it is not read-only (it writes, or may, as
/// EVAL, EXEC and PUBLISH do), or its caller demands the primary.
constexpr bool needs_primary(bool read_only, Flags flags) noexcept {
  return !read_only || has_flag(flags, Flags::DemandMaster);
}

/// Whether `flags` hold both DemandMaster and DemandReplica: two servers, where a command
/// runs on one. demands_both_error() is the refusal.
constexpr bool demands_both(Flags flags) noexcept {
  return has_flag(flags, Flags::DemandMaster) && has_flag(flags, Flags::DemandReplica);
}
Error demands_both_error(std::string_view name);

class MuxCore final : public ShardRouter {
 public:
  /// `tls`: the TLS settings every connection uses when config.ssl (null otherwise).
  MuxCore(Config config, std::shared_ptr<IoPool> pool, std::shared_ptr<TlsContext> tls = nullptr);
  ~MuxCore();

  /// The configuration the connections use: under Sentinel, the servers the Sentinels named.
  const Config& config() const noexcept { return shared_->config(); }
  /// The configuration the user gave (under Sentinel: the Sentinels and the service).
  const Config& configured() const noexcept { return configured_ ? *configured_ : config(); }
  SharedContext& shared() noexcept { return *shared_; }
  IoPool& pool() noexcept { return *pool_; }
  std::shared_ptr<IoPool> shared_pool() const noexcept { return pool_; }

  /// Starts every connection; `done(errors)` runs once all have reported their first
  /// outcome (errors empty when at least one connected).
  void start(std::function<void(std::vector<Error>)> done);
  /// Closes every connection; waits for them to finish closing unless on an I/O thread.
  void close();
  /// The graceful close (Multiplexer::close(deadline)): refuses new commands and
  /// subscriptions at once; waits until every accepted command has completed, then until the
  /// pub/sub handlers have run the messages already received, both bounded by `deadline`;
  /// then close(). REQUIRES: not on an I/O thread (its replies could not arrive).
  CloseReport close(Clock::time_point deadline);
  /// close() has run: connections are shut down.
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  /// close() or close(deadline) began: new commands are refused.
  bool closing() const noexcept { return closing_.load(std::memory_order_acquire); }

  /// Checks gates, takes a queue slot and hands the command to its connection. `state` may
  /// be null (fire-and-forget); otherwise the connection takes its own reference, or the
  /// state is failed here. Returns the error when the command was refused (also set on
  /// `state`).
  Error submit(int db, const CallOptions& options, std::span<const Arg> args, CommandState* state);

  /// The checks and the connection choice, without sending (used by Batch as well).
  Result<Connection*> route(const CommandInfo& info, std::span<const Arg> args, Flags flags);
  /// route(), and when `hold` is given: sets *hold instead of refusing a command that must
  /// wait for a primary (failoverWait; held_commands.hpp).
  Result<Connection*> route_command(const CommandInfo& info, std::span<const Arg> args, Flags flags,
                                    bool* hold);
  /// Where a command is headed, for check_allowed(): a blocking command is no harm on a
  /// dedicated connection or inside MULTI (where it answers at once); a connection-state
  /// command is refused everywhere, with advice that fits the place.
  enum class Site : std::uint8_t { Shared, Dedicated, Batch, Transaction };
  /// Refusals that do not depend on the connection (admin gate, connection-state and
  /// blocking commands, empty command). Ok Error when allowed.
  Error check_allowed(const CommandInfo& info, std::span<const Arg> args, Site site) const;
  /// Refuses a database index the connection's server does not have (or a negative one),
  /// and any other than 0 when that server refuses SELECT.
  Error check_database(int db, const Connection& connection, const CommandInfo& info) const;
  /// How many databases the server at `endpoint` has, as the multiplexer's interactive
  /// connections learned it (1 in a cluster; 0: unknown).
  int known_databases(const Endpoint& endpoint) const;
  /// What the server behind `connection` answered when it refused SELECT at a handshake (this
  /// connection's, or, before its own, an interactive one's to the same server); empty when
  /// it accepted it, or when no handshake has said yet.
  std::string select_refusal(const Connection& connection) const;
  /// Takes one maxQueuedCommands slot (waiting until `deadline` under queueFullPolicy=wait);
  /// false, counted in status().queue_full, when none could be had (see queue_full_error()).
  bool take_slot(Clock::time_point deadline) {
    if (shared_->acquire_slot(deadline)) return true;
    shared_->counters().queue_full.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  /// The QueueFullError of a command that found no slot by `deadline` (which came from a
  /// timeout of `timeout_ms`: under queueFullPolicy=wait it says how long it waited).
  Error queue_full_error(const CommandInfo& info, Clock::time_point deadline,
                         std::uint32_t timeout_ms) const;
  /// Hands a checked command that holds a queue slot to `connection` (which takes its own
  /// reference to `state`; null for fire-and-forget). Inline: it is on every command's path.
  /// Returns why the command was refused (a caller's future holds it too).
  [[gnu::always_inline]] Error hand_over(Connection& connection, int db, const CallOptions& options,
                                         std::span<const Arg> args, const CommandInfo& info,
                                         CommandState* state, Clock::time_point deadline,
                                         std::uint32_t timeout_ms) {
    PendingCommand command = caller_command(info, options, state, deadline, timeout_ms);
    shared_->counters().commands.fetch_add(1, std::memory_order_relaxed);
    if (!connection.submit(db, args, command)) [[unlikely]] {
      return connection.refusal_of(info.name);  // a caller's future holds it already
    }
    return Error();
  }
  /// The deadline for a command with these options, and its timeout in ms.
  std::pair<Clock::time_point, std::uint32_t> deadline_for(const CallOptions& options) const;

  const std::vector<std::vector<std::shared_ptr<Connection>>>& groups() const { return groups_; }
  /// The client-side cache's routing (mux/cache_route.hpp); enabled() under clientCache=true.
  const CacheRoute& cache_route() const noexcept { return cache_route_; }
  /// The connections leased to blocking commands and transactions (dedicated_pool.hpp).
  const std::shared_ptr<DedicatedPool>& dedicated_pool() const noexcept { return dedicated_; }
  /// The pub/sub state (pubsub/hub.hpp): its own connection, or the first interactive one.
  const std::shared_ptr<SubscriptionHub>& subscription_hub() const noexcept { return hub_; }
  // ShardRouter (pubsub/shard_router.hpp): shard channels in a Redis Cluster.
  bool routes_shard_channels() const noexcept override { return cluster() != nullptr; }
  Result<Endpoint> shard_node(std::uint16_t slot) override;
  /// The pub/sub state for the shard channels `endpoint` serves — a hub of its own whose
  /// connection goes to that node (created on first use).
  std::shared_ptr<SubscriptionHub> shard_hub(const Endpoint& endpoint) override;
  /// Every shard hub created so far (for status).
  std::vector<std::shared_ptr<SubscriptionHub>> shard_hubs() const override;
  /// After a new slot map: each shard hub ends the shard channels its node no longer serves.
  void end_moved_shard_channels();

  /// The endpoints are Redis Cluster nodes (a connection's HELLO said mode "cluster"): loads
  /// the slot map through that connection and routes every command by slot from then on.
  /// `done` runs on an I/O thread once the map is loaded (or failed to load).
  void enable_cluster(Connection& seed, std::function<void(const Error&)> done);
  /// Non-null in cluster mode (mux/cluster.hpp).
  ClusterRouter* cluster() const noexcept { return cluster_raw_.load(std::memory_order_acquire); }
  /// Sentinel (mux/sentinel_monitor.hpp): the first endpoint is the primary the Sentinels name,
  /// and only it takes writes, even while another endpoint still says it is a primary (after
  /// a failover the old primary accepts writes until it is turned into a replica, and those
  /// writes are lost). close() closes `monitor` too. REQUIRES: before the core is shared.
  /// `configured`: the user's configuration (the Sentinels), which config() is not.
  void follow_sentinels(std::shared_ptr<SentinelMonitor> monitor, Config configured) {
    *role_watch_ = monitor;  // the connections' role hooks tell it of a role change
    sentinel_ = std::move(monitor);
    configured_ = std::make_unique<Config>(std::move(configured));
  }
  bool follows_sentinels() const noexcept { return sentinel_ != nullptr; }

  // --- HeldCommands' questions (held_commands.hpp) ---
  /// Where a held command may go now.
  HeldCommands::Target place_held(const HeldCommands::Entry& entry);
  /// Where a PreferReplica read that the replica of group `from` refused without running it
  /// (-MASTERDOWN) goes instead: another replica in sync, else the primary while it is
  /// connected; null when neither is (the caller then gets the refusal). `index`: the
  /// connection within a group, as the read had.
  std::shared_ptr<Connection> place_refused_read(std::size_t from, std::size_t index);
  /// Whether commands queued on `connection` (of group `group`), which is not connected,
  /// are taken off it: Sentinel moved it, or it is a replica's (or, under Sentinel, any
  /// group but the primary's).
  bool takes_from(const Connection& connection, std::size_t group, bool retargeted) const;
  /// Asks every connected server its role now.
  void check_roles();
  /// Why no primary is known, for messages ("B, the primary the Sentinels name, is a replica").
  std::string why_no_primary() const;
  /// Commands the multiplexer holds (waiting for a primary).
  std::size_t held_count() const { return held_->size(); }
  /// The group writes go to now; groups().size() when no primary is known.
  std::size_t primary_group() const { return roles(false, groups_.size()).primary; }
  /// Whether replica reads may use `connection` now (a replica's, connected, and healthy
  /// enough: conn/replication.hpp). `primary_reachable`: the primary's connection is ready.
  static bool serves_replica_reads(const Connection& connection, bool primary_reachable);
  /// serves_replica_reads() for group `group`'s first connection, with the primary as now,
  /// and not a replica of another primary than the one written to (follows_another_primary).
  bool group_serves_replica_reads(std::size_t group) const {
    const Roles now = roles(false, groups_.size());
    return serves_replica_reads(*groups_[group].front(), now.primary_ready) &&
           !group_follows_another_primary(group, now.primary);
  }
  /// follows_another_primary() for group `group`'s first connection.
  bool group_follows_another_primary(std::size_t group, std::size_t primary) const;
  /// Why a replica that follows another primary serves no reads, for messages.
  static std::string follows_text(const Connection& connection);

 private:
  std::shared_ptr<IoPool> pool_;
  std::shared_ptr<SharedContext> shared_;
  CacheRoute cache_route_;
  /// One group per endpoint; connectionsPerEndpoint connections in each.
  std::vector<std::vector<std::shared_ptr<Connection>>> groups_;
  std::shared_ptr<DedicatedPool> dedicated_;
  std::shared_ptr<SubscriptionHub> hub_;
  std::shared_ptr<ClusterRouter> cluster_;  ///< set once, by enable_cluster()
  mutable std::mutex shard_hubs_mutex_;
  std::vector<std::pair<Endpoint, std::shared_ptr<SubscriptionHub>>> shard_hubs_;
  std::atomic<ClusterRouter*> cluster_raw_{nullptr};
  std::mutex cluster_mutex_;
  std::shared_ptr<TlsContext> tls_;
  std::shared_ptr<SentinelMonitor> sentinel_;  ///< set: only group 0 may be the primary
  /// sentinel_, for the connections' role hooks (set before they start; read on I/O threads).
  std::shared_ptr<std::weak_ptr<SentinelMonitor>> role_watch_ =
      std::make_shared<std::weak_ptr<SentinelMonitor>>();
  std::unique_ptr<Config> configured_;  ///< the user's, when not config() (Sentinel)
  std::shared_ptr<HeldCommands> held_;
  bool several_servers_ = false;  ///< a primary and replicas (set once, in the constructor)
  bool may_hold_ = false;  ///< commands may wait for a primary (set once, in the constructor)
  /// What routing sees (topology/server_roles.hpp): the primary group, and a replica in sync
  /// chosen round-robin (groups_.size() for none), skipping group `exclude`.
  Roles roles(bool want_replica, std::size_t exclude) const;
  /// A connection's redirect hook (ConnectionMachine::RedirectHook): `command`, answered
  /// `reply` by the server of group `from`, queued on the connection of the primary it names
  /// among `servers` (the groups' first connections). False when none is that primary.
  static bool redirect_to_primary(const std::vector<std::weak_ptr<Connection>>& servers,
                                  std::size_t from, std::string_view reply,
                                  const PendingCommand& command);
  /// What roles() knows of a connection's server.
  static ServerView view_of(const Connection& connection);
  /// The PendingCommand for a caller's command (state null: fire-and-forget). Inline: it is
  /// on every command's path.
  [[gnu::always_inline]] PendingCommand caller_command(const CommandInfo& info,
                                                       const CallOptions& options,
                                                       CommandState* state,
                                                       Clock::time_point deadline,
                                                       std::uint32_t timeout_ms) const {
    PendingCommand command =
        timed_command(info.name, deadline, timeout_ms, options.timeout.count() > 0);
    if (state) {
      state->add_ref();  // the connection's reference
      command.state = state;
      command.kind = PendingKind::Caller;
      command.retry_written =
          has_flag(options.flags, Flags::Retryable) ||
          (shared_->config().retry_read_only_commands && info.is(CommandFlag::ReadOnly));
    } else {
      command.kind = PendingKind::FireAndForget;
      command.deadline = Clock::time_point::max();
    }
    return command;
  }
  /// submit() once the checks passed: the connection choice and the hand-over.
  Error submit_routed(int db, const CallOptions& options, std::span<const Arg> args,
                      const CommandInfo& info, CommandState* state);
  /// submit() for a read the client-side cache may serve: a hit completes `state` at once,
  /// a miss goes out as a fill (cache_route.hpp); otherwise submit_routed().
  Error submit_cached(int db, const CallOptions& options, std::span<const Arg> args,
                      const CommandInfo& info, std::size_t key_index, CommandState* state);
  /// submit() for a primary and replicas (or Sentinel): replica choice, and waiting for a
  /// primary. REQUIRES: a queue slot taken (released here on refusal).
  Error submit_to_servers(int db, const CallOptions& options, std::span<const Arg> args,
                          const CommandInfo& info, CommandState* state, Clock::time_point deadline,
                          std::uint32_t timeout_ms);
  std::atomic<bool> closed_{false};
  std::atomic<bool> closing_{false};
  mutable std::atomic<std::size_t> replica_cursor_{0};
  /// Unknown command names already asked about with COMMAND INFO (once each).
  void learn_unknown(const CommandInfo& info);
  std::mutex learning_mutex_;
  struct NameHash {
    using is_transparent = void;  // look up by string_view without building a string
    std::size_t operator()(std::string_view name) const noexcept {
      return std::hash<std::string_view>()(name);
    }
  };
  std::unordered_set<std::string, NameHash, std::equal_to<>> learning_;
};

}  // namespace redmux::detail
