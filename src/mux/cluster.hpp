// ClusterRouter: Redis Cluster support for one multiplexer. Holds the slot map (which
// primary, and which replicas, serve each of the 16384 slots), one connection per node, and
// what keeps commands moving when the map changes: MOVED updates the slot and resends, ASK
// resends once behind ASKING (mux/cluster_redirect.hpp), CLUSTERDOWN and TRYAGAIN are waited
// out within the command's deadline (retryClusterDown), and every new map moves the commands
// still queued for a node that lost their slot to the slot's new owner, in order.
//
// Map refreshes: single flight, at most one every 250 ms; asked by a MOVED, a CLUSTERDOWN, a
// node connection that fails (at once: a dead primary sends no MOVED), every 250 ms while a
// primary of the map is unreachable, every 2 s while any node is, every 30 s otherwise.
//
// Ordering rule of a map change (install()): the commands still queued for a node that lost
// a slot leave its queue, and reach the new owner's, before any command routed by the new
// map can; a command pushed meanwhile with the old map is refused by the old node's queue
// and handed on (forward()) after them. relocate_mutex_ orders the two.
//
// Client-side cache (clientCache=true; docs/caching.md): every node connection keeps its own
// cache, of the reads that node answered. A node that stops serving a slot, as a primary or
// a replica of its primary (a MOVED, or a new map), loses its entries of that slot's keys.
//
// Threads: every public member is safe from any thread. The map is immutable once published
// (copy on write under mutex_); readers take a reference and route without the lock held.
// for_slot() reads it through a per-thread copy of that reference, checked by version
// (Published<T>, core/published.hpp): no lock and no shared count per routed command.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "commands/command_table.hpp"
#include "conn/shared_context.hpp"
#include "core/published.hpp"
#include "net/connection.hpp"
#include "redmux/arg.hpp"
#include "redmux/flags.hpp"
#include "redmux/future.hpp"
#include "redmux/io_pool.hpp"
#include "topology/cluster_map.hpp"
#include "topology/cluster_plan.hpp"
#include "topology/refresh_schedule.hpp"
#include "topology/slot.hpp"
#include "topology/slot_table.hpp"

namespace redmux::detail {

class NodeCaches;
class TlsContext;
class Timer;

/// The refusal of a command under DemandReplica in a cluster, where one cannot run on a
/// replica: it is not read-only, or it has no key (keyless commands run on primaries).
/// No error otherwise.
Error replica_demand_refused(const CommandInfo& info, bool keyless);

class ClusterRouter : public std::enable_shared_from_this<ClusterRouter> {
 public:
  ClusterRouter(std::shared_ptr<SharedContext> shared, std::shared_ptr<IoPool> pool,
                std::shared_ptr<TlsContext> tls, std::vector<std::shared_ptr<Connection>> seeds);
  ClusterRouter(const ClusterRouter&) = delete;
  ClusterRouter& operator=(const ClusterRouter&) = delete;

  /// clientCache=true: each node connection keeps a cache, registered in `caches`.
  /// REQUIRES: before load().
  void set_node_caches(std::shared_ptr<NodeCaches> caches) { node_caches_ = std::move(caches); }
  /// Runs after each new slot map is installed (on the thread that installed it). Set before
  /// load().
  void set_map_hook(std::function<void()> hook) { map_hook_ = std::move(hook); }

  /// Loads the slot map through `via` (CLUSTER SHARDS; CLUSTER SLOTS when the server does not
  /// know SHARDS) and starts a connection to every node. `done` runs on an I/O thread.
  void load(Connection& via, std::function<void(const Error&)> done);
  /// Loads the map again soon: one refresh at a time, at most one every 250 ms.
  void refresh();

  /// The connection for a command: by the slot of its keys (all keys must share one), or
  /// any primary for a keyless command. A replica only for a read-only command under
  /// PreferReplica/DemandReplica. Errors: keys in several slots, no node for the slot.
  Result<Connection*> route(const CommandInfo& info, std::span<const Arg> args, Flags flags);
  /// route() with the slots of its `keys` keys already found (key_slots()).
  Result<Connection*> route_keys(const CommandInfo& info, std::size_t keys, const KeySlots& slots,
                                 Flags flags);
  /// The node serving `slot` (its primary, or a replica when `replica` and one is known).
  Result<Connection*> for_slot(std::uint16_t slot, bool replica, bool demand_replica);
  /// A primary chosen round-robin, preferring connected ones; null when the map is empty.
  Connection* any_primary();
  /// Every primary's connection.
  std::vector<Connection*> primaries();
  /// The connection to `endpoint`, created (and started) when there is none yet.
  Connection* connection_to(const Endpoint& endpoint);
  /// The slots the node at `endpoint` does not serve in the current map (as their primary,
  /// or a replica of it) while another node does: what a connection of its own to that node
  /// (a dedicated one) must not keep queued. Null when there are none, or no map yet.
  std::shared_ptr<const SlotSet> served_elsewhere(const Endpoint& endpoint) const;
  /// A MOVED reply: `slot` lives on `endpoint` now. Updates the map and schedules a refresh.
  void moved(const ClusterRedirect& redirect);
  /// A reply nobody follows (a transaction's, a blocking command's) from the node at
  /// `from_host`: when it is a MOVED, the map learns it (moved()), so that the next command
  /// on the slot goes to its new owner. Never throws.
  void learn_redirect(NodeSpan reply, std::string_view from_host) noexcept;
  /// Runs `task` on an I/O thread after `delay` (refresh spacing).
  void after(std::chrono::milliseconds delay, std::function<void()> task);
  /// Holds `command` (a reference of its own) for `delay`, then runs `task` on an I/O
  /// thread — unless the router closes first: then `command` fails at once with
  /// errc::shut_down and `task` never runs. For commands waiting between two sends.
  void park(CommandState* command, std::chrono::milliseconds delay, std::function<void()> task);

  /// Commands a node's queue refused because their slot moved (Connection::ForwardHook):
  /// each goes to its slot's owner in the newest map (ASKING entries are dropped: their
  /// command is asked again where it lands). Any thread.
  void forward(int db, std::string_view bytes, std::span<PendingCommand> commands);

  /// Every node's connection, primaries and replicas, in the order first seen (for the
  /// server handle, mux/server.cpp).
  std::vector<std::shared_ptr<Connection>> node_connections() const {
    std::lock_guard lock(mutex_);
    return connections_;
  }
  /// How many slots have a primary; the number of primaries (for status and tests).
  std::size_t slots_covered() const;
  std::size_t primary_count() const;

  /// One node connection as the map sees it (for status()).
  struct NodeView {
    std::shared_ptr<Connection> connection;
    bool primary = false;   ///< serves slots as a primary in the map
    bool replica = false;   ///< listed as a replica of a primary
    std::size_t slots = 0;  ///< slots it serves as primary
    bool failed = false;    ///< the cluster marks it failed (health "fail")
  };
  std::vector<NodeView> nodes() const;

  /// Shuts down every node connection; `closed` runs once per connection. Returns how many.
  std::size_t close(const std::function<void()>& closed);

  SharedContext& shared() noexcept { return *shared_; }
  std::shared_ptr<SharedContext> shared_context() const { return shared_; }

 private:
  /// The slot map (over node indexes) and each node's connection, by index.
  struct SlotMap {
    SlotTable table;
    std::vector<Connection*> nodes;  ///< owned by connections_
  };
  std::shared_ptr<const SlotMap> map() const;
  /// The current map without taking mutex_ or touching its reference count once this
  /// thread has seen it (Published::read(), through a thread_local): for_slot() runs for
  /// every routed command on every caller thread. Valid until this thread's next call; null
  /// when no map is loaded. A thread keeps the last map it read alive until it reads again.
  const SlotMap* current_map() const;
  /// The map forward() routes by: the one being installed, else the current one.
  std::shared_ptr<const SlotMap> newest_map() const;
  void install(const std::vector<ClusterShard>& shards);
  /// READONLY on `connection` while the map names its node a replica (PreferReplica reads
  /// are served there), READWRITE once it names it a primary. A primary's connection is never
  /// READONLY: when that node is demoted before the map knows, a read routed there by the old
  /// map gets MOVED to the new primary instead of the demoted node's possibly older data.
  void set_read_only(Connection& connection, bool read_only);
  /// The client-side cache: each node of `previous` that serves fewer slots in `next` (as a
  /// primary, or a replica of one) drops its entries of the slots it lost.
  static void drop_moved_entries(const SlotMap* previous, const SlotMap& next);
  /// Sends `commands` (bytes in `bytes`) to their slots' owners in `map`; fails those whose
  /// slot has none. REQUIRES: relocate_mutex_ held.
  void hand_over(const SlotMap& map, int db, std::string_view bytes,
                 std::span<PendingCommand> commands);
  /// `abandoned`: once true, an answer is no longer installed (the asker gave up on it).
  void ask_shards(Connection& via, std::function<void(const Error&)> done, bool slots,
                  std::shared_ptr<std::atomic<bool>> abandoned = nullptr);
  Connection* ready_connection();
  /// True when a primary of the current map has no ready connection.
  bool primary_unreachable() const;
  bool any_node_unreachable() const;
  void arm_periodic_refresh();
  void on_event(const ConnectionEvent& event);

  std::shared_ptr<SharedContext> shared_;
  std::shared_ptr<IoPool> pool_;
  std::shared_ptr<TlsContext> tls_;
  std::shared_ptr<NodeCaches> node_caches_;         ///< clientCache=true; set before load()
  std::function<void()> map_hook_;                  ///< set_map_hook(); set before load()
  std::vector<std::shared_ptr<Connection>> seeds_;  ///< owned by MuxCore; asked for the map

  mutable std::mutex mutex_;
  Published<SlotMap> map_;                                ///< set() and get() under mutex_
  std::shared_ptr<const SlotMap> installing_;             ///< set while install() moves commands
  std::vector<std::shared_ptr<Connection>> connections_;  ///< one per node, never removed
  /// By connections_'s index: whether the map names that node a replica, so that its
  /// connection is in READONLY mode (set_read_only()). Shared with its ready hook.
  std::vector<std::shared_ptr<std::atomic<bool>>> read_only_;
  std::unordered_set<CommandState*> parked_;  ///< see park()
  bool closed_ = false;
  /// Held by install() while it moves queued commands, and by forward(): a command a queue
  /// refused is handed on only after the commands moved out of that queue. Recursive: a
  /// command failed while handing over may run a continuation that sends again.
  std::recursive_mutex relocate_mutex_;

  RefreshSchedule schedule_;
  std::atomic<std::size_t> cursor_{0};  ///< round-robin over primaries / replicas
  std::shared_ptr<Timer> periodic_;
};

/// For a command the caller queues itself (a batch) on `connection`: makes `command` (whose
/// name, deadline and bytes are set) a cluster entry — for a caller (`target` not null) a
/// state that follows MOVED / ASK / TRYAGAIN / CLUSTERDOWN for `target` (taking its own
/// reference to it, and the command's slot of maxQueuedCommands) by resending the command's
/// bytes; for fire-and-forget, the slot that lets it move if its node loses the slot.
void prepare_cluster_entry(ClusterRouter& router, CommandState* target, std::span<const Arg> args,
                           PendingCommand& command, int db, Connection* connection);

/// For a batch: a command that a lone send splits per slot (MGET, MSET, DEL, UNLINK, EXISTS,
/// TOUCH) whose keys span slots is split here, in the order each slot first appears, and the
/// result is true; any other command is left alone (false, nothing added). Each part goes to
/// `add` with its node, its arguments and its entry (`prototype`'s name, deadline and
/// timeout; the caller encodes the arguments and sets the entry's bytes): a state that
/// follows redirections for it, whose replies are reassembled for `target` (null:
/// fire-and-forget) as a lone split command's are. The command's slot of maxQueuedCommands
/// (taken already) is given back once every part is done. An error, and nothing added, when
/// the arguments leave a key without its value or a slot has no node.
Result<bool> split_into_batch(
    ClusterRouter& router, const CommandInfo& info, std::span<const Arg> args, CommandState* target,
    const PendingCommand& prototype, int db, Flags flags,
    const std::function<void(Connection*, std::span<const Arg>, PendingCommand)>& add);

/// Sends one command in cluster mode: routed by slot, redirections followed, MGET / MSET /
/// DEL / UNLINK / EXISTS / TOUCH across slots split per slot and reassembled in order, and
/// DBSIZE, KEYS, FLUSHALL, FLUSHDB, SCRIPT FLUSH and FUNCTION LOAD/DELETE/FLUSH/RESTORE sent to
/// every primary. `state` may be null (fire-and-forget). The queue slot is already taken;
/// on a refusal it is given back here and the error returned (also set on `state`).
/// `call_timeout`: `timeout_ms` is the call's own timeout, not asyncTimeout (its errors say
/// which).
Error submit_to_cluster(ClusterRouter& router, int db, const CommandInfo& info,
                        std::span<const Arg> args, CommandState* state, Flags flags,
                        Clock::time_point deadline, std::uint32_t timeout_ms, bool call_timeout);

}  // namespace redmux::detail
