// The client-side cache's part of routing (clientCache=true; docs/caching.md): which reads
// the cache may serve, how a miss is sent so that its reply can be stored (PTTL of the key
// first, and CLIENT CACHING YES under OPTIN, in the same write), and how a write through
// this multiplexer takes its keys out of every cache.
//
// Read your own write: a write's keys are invalidated in every cache before it is queued
// and again after. A read that looked its key up before the second invalidation had its
// fill (if any) removed by it, so its reply is not stored; a read that looks it up after is
// queued after the write on the same connection, and reads the new value.
// With several connections to one server (connectionsPerEndpoint > 1) that last step fails
// for a key the write does not ride with: a read of it on another connection, looked up
// after the second invalidation, may run before the write and be stored before the server's
// invalidation reaches that connection. Such a write (several keys, none, or in a Batch)
// clears its keys a third time at its reply, before its caller hears of it
// (clear_at_reply()): a read looked up after that runs after the write. So does a blocking
// write, on a dedicated connection that no read rides, and a Transaction's writes at EXEC's
// reply (TransactionRun::clear_written()).
//
// Threads: any (the caches lock themselves).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cache/client_cache.hpp"
#include "commands/command_table.hpp"
#include "conn/pending_command.hpp"
#include "redmux/arg.hpp"
#include "redmux/config.hpp"
#include "redmux/flags.hpp"

namespace redmux::detail {

class Connection;

/// The caches of Redis Cluster node connections, which the router creates as it meets nodes
/// (any thread): a write through the multiplexer clears its keys from these too.
class NodeCaches {
 public:
  using List = std::vector<std::shared_ptr<ClientCache>>;
  void add(std::shared_ptr<ClientCache> cache);
  /// Every node cache so far (an immutable snapshot; empty when none).
  std::shared_ptr<const List> list() const { return list_.load(std::memory_order_acquire); }

 private:
  std::mutex adding_;
  std::atomic<std::shared_ptr<const List>> list_{std::make_shared<const List>()};
};

/// The reads the cache may serve and the caches a write must clear, fixed at construction.
class CacheRoute {
 public:
  explicit CacheRoute(const Config& config);

  bool enabled() const noexcept { return enabled_; }
  /// The caches a write must clear (the interactive connections').
  void add_cache(std::shared_ptr<ClientCache> cache);
  /// Where the cluster router registers its node connections' caches (null when disabled).
  const std::shared_ptr<NodeCaches>& node_caches() const noexcept { return node_caches_; }

  /// The index of the one key of a read the cache may serve with these flags (the command
  /// table marks it Cacheable, it names exactly one key, under BCAST the key is under a
  /// tracked prefix, under clientCacheReads=flagged it carries Flags::Cache), else nullopt.
  std::optional<std::size_t> cacheable_key(const CommandInfo& info, std::span<const Arg> args,
                                           Flags flags) const;

  /// What a command writes, for the caches: false when nothing (a read, or a keyless command
  /// that is not a write); else `keys` holds the indexes of the keys it writes, empty for
  /// every key (FLUSHALL, FLUSHDB, SWAPDB, FUNCTION …). A script (EVAL, EVALSHA, FCALL,
  /// which the table flags neither read-only nor write) writes the keys it declares.
  static bool written_keys(const CommandInfo& info, std::span<const Arg> args,
                           std::vector<std::size_t>& keys);
  /// A write's keys (as written_keys() says) leave every cache. No-op for a command that
  /// does not write.
  void invalidate_written(const CommandInfo& info, std::span<const Arg> args) const;
  /// The same for keys recorded earlier (a Batch's writes); `everything`: every cache.
  void invalidate_keys(std::span<const std::string> keys, bool everything) const;

  /// How a write rides to its server, for clear_at_reply().
  enum class Ride : std::uint8_t {
    Alone,     ///< by itself on the shared connections (not a cluster's)
    InBatch,   ///< in a Batch, on its first keyed command's connection
    Dedicated  ///< a blocking write (BLMOVE …) on a dedicated connection, cluster or not
  };
  /// `caller` wrapped so that the write's keys leave every cache again at its reply (or
  /// failure), before `caller` completes: for a write on one of several connections to its
  /// server, or on a dedicated one, which no read rides. The wrapper holds a reference to
  /// `caller`; it comes with one reference, its maker's. `caller` itself when there is
  /// nothing to do: no cache, not a write, or on the shared connections one connection per
  /// endpoint, or (Alone) a write of one key, which rides that key's connection with every
  /// read of it.
  CommandState* clear_at_reply(const CommandInfo& info, std::span<const Arg> args,
                               CommandState* caller, Ride ride) const;

  /// Builds the write of a read that fills `cache` with `ticket`: [CLIENT CACHING YES] PTTL
  /// key, then the read, whose PendingCommand `read` becomes the fill's (its state wraps
  /// the caller's). Appends to `bytes` and `commands`. REQUIRES: read.state is the caller's,
  /// with the connection's reference taken.
  ///
  /// `cluster`: a Redis Cluster node's cache. read.state is then the read's RedirectState
  /// (it follows a MOVED or ASK of the read) and every entry stays in this node's queue
  /// whatever the map says (follow_map false): the reply stored must be the one this node
  /// gave, since only this node's invalidations reach this cache; a redirected read is not
  /// stored. And a key the node does not hold (PTTL -2) is not stored: nothing would tell
  /// this cache when its slot goes to another node that then creates the key.
  void build_fill(std::shared_ptr<ClientCache> cache, std::uint64_t ticket, int db,
                  std::span<const Arg> args, std::size_t key_index, Clock::time_point queued_at,
                  PendingCommand read, bool cluster, std::string& bytes,
                  std::vector<PendingCommand>& commands) const;

 private:
  bool enabled_ = false;
  bool opt_in_ = false;
  bool flagged_ = false;
  std::vector<std::string> prefixes_;  ///< BCAST: only keys under these are cached
  bool several_connections_ = false;   ///< connectionsPerEndpoint > 1
  std::vector<std::shared_ptr<ClientCache>> caches_;
  /// caches_ as a write's reply clears them (shared with clear_at_reply()'s wrappers).
  std::shared_ptr<const std::vector<std::shared_ptr<ClientCache>>> shared_caches_;
  std::shared_ptr<NodeCaches> node_caches_;  ///< Redis Cluster's node connections' caches
};

/// The keys a Batch or a Transaction writes, recorded as its commands are added, so that
/// they leave every cache again when it is sent and at its reply (read your own write).
struct WrittenKeys {
  std::vector<std::string> keys;
  bool everything = false;  ///< a write without keys (FLUSHALL …)

  /// What one command added: its keys, or `everything`.
  struct Added {
    std::span<const std::string> keys;
    bool everything = false;
  };
  /// Records what the command writes when `route` caches; nullopt when it caches nothing or
  /// the command writes nothing.
  std::optional<Added> note(const CacheRoute& route, const CommandInfo& info,
                            std::span<const Arg> args);
  /// Takes every key recorded out of `route`'s caches (they stay recorded).
  void leave_caches(const CacheRoute& route) const { route.invalidate_keys(keys, everything); }
  void clear() noexcept {
    keys.clear();
    everything = false;
  }
};

}  // namespace redmux::detail
