// ClusterRouter: Redis Cluster support for one multiplexer. Holds the slot map (which
// primary, and which replicas, serve each of the 16384 slots), one connection per node, and
// the redirection logic: MOVED updates the slot and resends, ASK resends once behind ASKING,
// TRYAGAIN resends after a short pause, each within a hop limit; a MOVED also schedules one
// full refresh of the map (single flight, debounced).
//
// Threads: every public member is safe from any thread. The map is immutable once published
// (copy on write under mutex_); readers take a reference and route without the lock held.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "commands/command_table.hpp"
#include "conn/shared_context.hpp"
#include "net/connection.hpp"
#include "redmux/arg.hpp"
#include "redmux/flags.hpp"
#include "redmux/future.hpp"
#include "redmux/io_pool.hpp"
#include "topology/cluster_map.hpp"
#include "topology/slot.hpp"

namespace redmux::detail {

class TlsContext;

class ClusterRouter : public std::enable_shared_from_this<ClusterRouter> {
 public:
  ClusterRouter(std::shared_ptr<SharedContext> shared, std::shared_ptr<IoPool> pool,
                std::shared_ptr<TlsContext> tls, std::vector<std::shared_ptr<Connection>> seeds);
  ClusterRouter(const ClusterRouter&) = delete;
  ClusterRouter& operator=(const ClusterRouter&) = delete;

  /// Loads the slot map through `via` (CLUSTER SHARDS; CLUSTER SLOTS when the server does not
  /// know SHARDS) and starts a connection to every node. `done` runs on an I/O thread.
  void load(Connection& via, std::function<void(const Error&)> done);
  /// Loads the map again soon: one refresh at a time, at most one every 250 ms.
  void refresh();

  /// The connection for a command: by the slot of its keys (all keys must share one), or
  /// any primary for a keyless command. A replica only for a read-only command under
  /// PreferReplica/DemandReplica. Errors: keys in several slots, no node for the slot.
  Result<Connection*> route(const CommandInfo& info, std::span<const Arg> args, Flags flags);
  /// route() with the key positions already found (key_indexes()).
  Result<Connection*> route_keys(const CommandInfo& info, std::span<const Arg> args,
                                 std::span<const std::size_t> keys, Flags flags);
  /// The node serving `slot` (its primary, or a replica when `replica` and one is known).
  Result<Connection*> for_slot(std::uint16_t slot, bool replica, bool demand_replica);
  /// A primary chosen round-robin; null when the map is empty.
  Connection* any_primary();
  /// Every primary's connection.
  std::vector<Connection*> primaries();
  /// The connection to `endpoint`, created (and started) when there is none yet.
  Connection* connection_to(const Endpoint& endpoint);
  /// A MOVED reply: `slot` lives on `endpoint` now. Updates the map and schedules a refresh.
  void moved(const ClusterRedirect& redirect);
  /// Runs `task` on an I/O thread after `delay` (TRYAGAIN pauses).
  void after(std::chrono::milliseconds delay, std::function<void()> task);

  /// Every node's connection, primaries and replicas, in the order first seen (for the
  /// server handle, mux/server.cpp).
  std::vector<std::shared_ptr<Connection>> node_connections() const {
    std::lock_guard lock(mutex_);
    return connections_;
  }
  /// How many slots have a primary; the number of primaries (for status and tests).
  std::size_t slots_covered() const;
  std::size_t primary_count() const;

  /// Shuts down every node connection; `closed` runs once per connection. Returns how many.
  std::size_t close(const std::function<void()>& closed);

  SharedContext& shared() noexcept { return *shared_; }

 private:
  struct SlotMap {
    std::vector<Connection*> nodes;                   ///< owned by connections_
    std::array<std::int16_t, kSlotCount> primary{};   ///< node index, -1: no node
    std::vector<std::vector<std::int16_t>> replicas;  ///< by node index
  };
  std::shared_ptr<const SlotMap> map() const;
  void install(const std::vector<ClusterShard>& shards);
  void ask_shards(Connection& via, std::function<void(const Error&)> done, bool slots);
  Connection* ready_connection();
  void arm_periodic_refresh();

  std::shared_ptr<SharedContext> shared_;
  std::shared_ptr<IoPool> pool_;
  std::shared_ptr<TlsContext> tls_;
  std::vector<std::shared_ptr<Connection>> seeds_;  ///< owned by MuxCore; asked for the map

  mutable std::mutex mutex_;
  std::shared_ptr<const SlotMap> map_;
  std::vector<std::shared_ptr<Connection>> connections_;  ///< one per node, never removed
  bool closed_ = false;

  std::atomic<bool> refreshing_{false};
  std::atomic<std::int64_t> last_refresh_{0};  ///< steady_clock ticks
  std::atomic<std::size_t> cursor_{0};         ///< round-robin over primaries / replicas
  std::shared_ptr<asio::steady_timer> periodic_;
};

/// For a command the caller queues itself (a batch) on `connection`: a state that follows
/// MOVED / ASK / TRYAGAIN for `target` (taking its own reference to it) by resending the
/// command's bytes, and gives every other outcome to `target`. Returns it with one
/// reference, for the pipeline entry.
CommandState* follow_redirects(ClusterRouter& router, CommandState* target,
                               std::span<const Arg> args, const PendingCommand& prototype, int db,
                               Connection* connection);

/// Sends one command in cluster mode: routed by slot, redirections followed, MGET / MSET /
/// DEL / UNLINK / EXISTS / TOUCH across slots split per slot and reassembled in order, and
/// DBSIZE, FLUSHALL, FLUSHDB, SCRIPT FLUSH and FUNCTION LOAD/DELETE/FLUSH/RESTORE sent to
/// every primary. `state` may be null (fire-and-forget). The queue slot is already taken;
/// on a refusal it is given back here and the error returned (also set on `state`).
Error submit_to_cluster(ClusterRouter& router, int db, const CommandInfo& info,
                        std::span<const Arg> args, CommandState* state, Flags flags,
                        Clock::time_point deadline, std::uint32_t timeout_ms);

}  // namespace redmux::detail
