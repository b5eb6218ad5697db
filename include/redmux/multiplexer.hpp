// Multiplexer: the one object an application opens to talk to Redis or Valkey, and shares.
// Every thread sends its commands through it; commands that arrive while a connection is
// busy are written together in its next write (automatic pipelining) and every reply comes
// back to its caller. Open one per application (per set of servers), not one per request.
//
// Ownership: connect() returns a shared_ptr. Database and Batch values keep the core alive,
// so destruction order cannot go wrong. The I/O threads belong to an IoPool the multiplexer
// creates (ioThreads=N) or shares with others.
//
// Threads: every member is safe from any thread. Blocking members (connect(), close()) must
// not be called on an I/O thread (connect() throws DeadlockError there).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/close_report.hpp"
#include "redmux/config.hpp"
#include "redmux/database.hpp"
#include "redmux/events.hpp"
#include "redmux/future.hpp"
#include "redmux/histogram.hpp"
#include "redmux/hooks.hpp"
#include "redmux/io_pool.hpp"
#include "redmux/server.hpp"
#include "redmux/server_info.hpp"
#include "redmux/subscriber.hpp"
#include "redmux/topology.hpp"

namespace redmux {

namespace detail {
struct ConnectWatch;
}

/// A client-side cache as status() saw it (clientCache=true; docs/caching.md): one
/// connection's, or the sum over every connection's in MultiplexerStatus.
struct ClientCacheStatus {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t stored = 0;   ///< replies stored
  std::uint64_t refused = 0;  ///< replies not stored: an invalidation raced the read (or a break)
  /// Keys taken out of this cache, there or not: by the server's pushes, or by this
  /// multiplexer's writes (before each is queued and again after: 2 per key)
  std::uint64_t invalidations = 0;
  /// Whole cache dropped while it held entries or reads in flight: a nil invalidation, a
  /// break, a write without keys (FLUSHALL … through the multiplexer)
  std::uint64_t flushes = 0;
  std::uint64_t evictions = 0;  ///< entries dropped for room (clientCacheBytes)
  std::uint64_t expired = 0;    ///< entries found past their TTL
  std::size_t entries = 0;      ///< entries holding a value now
  std::size_t bytes = 0;        ///< exactly what the entries and fills in progress are charged
  bool active = false;          ///< the connection's session tracks keys (reads are cached)
  /// Why the server does not track keys for the connection, e.g. "CLIENT TRACKING on
  /// 10.0.0.5:6379 failed: NOPERM …" (empty while it does, or before a session has asked);
  /// in the sum, the first connection's that has one.
  std::string refusal;
};

/// One connection of a multiplexer, as status() saw it.
struct ConnectionStatus {
  /// What the connection is for.
  using Purpose = ConnectionPurpose;
  enum class State { Idle, Connecting, Handshaking, Ready, Reconnecting, Closed };
  /// The server's role: from its handshake and role probes, or for a cluster node from the
  /// slot map (Unknown: never connected, or not in the map). A connection that is not ready
  /// shows the role it last learnt (topology() says "unknown" for a server not connected).
  /// A subscription or dedicated connection shows what a ready connection commands are
  /// routed over knows of its server.
  enum class Role { Unknown, Primary, Replica };

  std::string endpoint;  ///< "host:port" or the Unix socket path
  Purpose purpose = Purpose::Interactive;
  State state = State::Idle;
  Role role = Role::Unknown;
  std::size_t slots = 0;        ///< ClusterNode: slots it serves as a primary in the slot map
  bool cluster_failed = false;  ///< ClusterNode: the cluster marks the node failed
  std::size_t queued = 0;       ///< accepted commands waiting to be written
  std::size_t in_flight = 0;    ///< accepted commands written, awaiting their replies
  std::uint64_t writes = 0;     ///< write calls on this connection (its handshake's not counted)
  std::uint64_t commands_written = 0;  ///< commands those writes carried, redmux's own too
  /// When it last read from and wrote to its socket (steady_clock; time_point{}: never).
  std::chrono::steady_clock::time_point last_read{};
  std::chrono::steady_clock::time_point last_write{};
  /// When not ready: why its last connection attempt failed, or why its last session broke
  /// (a refused port, a failed authentication …); empty when ready or nothing failed yet.
  std::string last_failure;
  ClientCacheStatus cache;  ///< its client-side cache (all zero when it keeps none)
  /// Commands per write on this connection: commands_written / writes (0 before any write).
  double commands_per_write() const noexcept {
    return writes ? static_cast<double>(commands_written) / static_cast<double>(writes) : 0.0;
  }
};

std::string_view to_string(ConnectionStatus::State state) noexcept;
std::string_view to_string(ConnectionStatus::Role role) noexcept;

/// Counters since the multiplexer started, and what its connections hold now. Each field is
/// read on its own, so under traffic they are not one snapshot; what relates them is in
/// docs/errors.md (`status()`): queued + in_flight <= outstanding <= maxQueuedCommands, and
/// connections, connected, queued and in_flight are the sums over `per_connection` (queued
/// also counts the commands held until Sentinel names a primary).
struct MultiplexerStatus {
  std::uint64_t commands = 0;  ///< commands accepted
  std::uint64_t replies = 0;   ///< replies read
  std::uint64_t writes = 0;    ///< write calls (each carries one or more commands)
  /// Commands those writes carried: callers' (each part of a split cluster command) and
  /// redmux's own (PING, SELECT, READONLY …). At least `writes`.
  std::uint64_t commands_written = 0;
  /// Writes before which the I/O thread yielded its CPU once, because the replies it had
  /// just read released blocked callers that had not queued their next commands yet, at
  /// least a quarter as many as the commands still in flight (never under WaitPolicy::Sleep).
  std::uint64_t yields_for_callers = 0;
  std::uint64_t bytes_written = 0;  ///< to every server, handshakes and redmux's own included
  std::uint64_t bytes_read = 0;     ///< from every server, the same
  std::uint64_t timeouts = 0;
  std::uint64_t queue_full = 0;  ///< commands refused by maxQueuedCommands
  std::uint64_t reconnects = 0;
  std::uint64_t fire_and_forget_errors = 0;
  std::uint64_t resent = 0;            ///< commands resent automatically after a connection broke
  std::uint64_t heartbeats = 0;        ///< idle PINGs sent (heartbeatInterval)
  std::uint64_t dead_connections = 0;  ///< declared dead (half-open, frozen) and replaced
  std::uint64_t connection_failures = 0;  ///< failed connection attempts and broken connections
  std::uint64_t loading_waits = 0;  ///< connections that waited for the server to load its data
  std::uint64_t redirects = 0;      ///< MOVED / ASK, Valkey -REDIRECT followed; MASTERDOWN sent on
  /// Redis Cluster: CLUSTERDOWN / TRYAGAIN refusals waited out and sent again
  /// (retryClusterDown).
  std::uint64_t cluster_retries = 0;
  std::uint64_t hook_errors = 0;    ///< hook calls that threw (any of the on_… hooks)
  std::uint64_t slow_hooks = 0;     ///< hook calls that ran longer than 1 ms on an I/O thread
  std::uint64_t slow_commands = 0;  ///< commands over slowCommandThreshold (when set)
  /// Accepted, not yet completed: each holds one slot of maxQueuedCommands (queued, in
  /// flight, or between two sends — a redirection or a CLUSTERDOWN being waited out).
  std::size_t outstanding = 0;
  std::size_t queued = 0;     ///< of those, waiting to be written (all connections, and held)
  std::size_t in_flight = 0;  ///< of those, written and awaiting their replies (all connections)
  std::size_t connections =
      0;                      ///< every connection: interactive, cluster nodes, pub/sub, dedicated
  std::size_t connected = 0;  ///< of those, ready now
  std::vector<ConnectionStatus> per_connection;  ///< each of them
  /// The client-side caches of every connection, summed (`active`: any is active).
  ClientCacheStatus cache;
  /// Commands per write: commands_written / writes (automatic pipelining at work); at least
  /// 1 once anything was written.
  double commands_per_write() const noexcept {
    return writes ? static_cast<double>(commands_written) / static_cast<double>(writes) : 0.0;
  }
};

class Multiplexer {
 public:
  /// Connects using a configuration string or URL ("localhost:6379,name=api", "redis://…").
  /// Throws ConfigError for a bad configuration, and (abortConnect=true, the default)
  /// ConnectionError when no endpoint could be connected, saying what was tried and why.
  static std::shared_ptr<Multiplexer> connect(std::string_view configuration);
  /// As above, from a Config, optionally on a shared IoPool.
  static std::shared_ptr<Multiplexer> connect(const Config& config,
                                              std::shared_ptr<IoPool> pool = nullptr);
  /// Non-blocking connect: the future completes with the multiplexer once connected (or at
  /// once with abortConnect=false), or with the ConnectionError.
  static Future<std::shared_ptr<Multiplexer>> connect_async(const Config& config,
                                                            std::shared_ptr<IoPool> pool = nullptr);
  /// The same from a configuration string or URL; a bad one throws ConfigError at once.
  static Future<std::shared_ptr<Multiplexer>> connect_async(std::string_view configuration);

  ~Multiplexer();
  Multiplexer(const Multiplexer&) = delete;
  Multiplexer& operator=(const Multiplexer&) = delete;

  /// A Database for `index` (-1: defaultDatabase). Cheap; take one per use.
  Database database(int index = -1) const;
  /// Pub/sub: subscribe handlers or queues to channels, patterns and shard channels (see
  /// redmux/subscriber.hpp). The subscription connection opens on the first subscribe.
  Subscriber subscriber() const;

  /// Every server the multiplexer knows now, with its role: the configured endpoints
  /// (standalone, primary and replicas), or in a Redis Cluster every node of the slot map.
  std::vector<ServerEndpoint> servers() const;
  /// A handle to send commands to one of them (INFO, CONFIG GET, CLIENT LIST, a SCAN of
  /// its keys …; see redmux/server.hpp). Throws InvalidArgumentError when `endpoint` is not
  /// one of servers(), naming those that are.
  Server server(const Endpoint& endpoint) const;
  /// server() by "host:port" (or a Unix socket path), as ServerEndpoint::endpoint prints.
  Server server(std::string_view endpoint) const;
  /// The I/O threads this multiplexer runs on (to start a Task there: task.hpp).
  std::shared_ptr<IoPool> io_pool() const;

  /// What the application configured, unchanged (under Sentinel: the Sentinels and
  /// serviceName, not the servers they named). See topology() for what redmux found.
  const Config& config() const noexcept;
  /// The servers in use now: which takes writes, which replicas serve reads, which are
  /// connected (redmux/topology.hpp). Changes with failovers; a snapshot.
  Topology topology() const;
  /// What the first connected server said about itself (product, version, mode, role).
  ServerIdentity server_identity() const;
  /// True when at least one connection is ready.
  bool is_connected() const noexcept;
  /// Counters, and every connection with its purpose, state, role and commands.
  MultiplexerStatus status() const;
  /// status() as one line of text: every connection (endpoint, purpose, role, state and
  /// commands), the counters and the I/O threads.
  std::string status_text() const;

  /// Called for errors nobody waits for: an error reply to a FireAndForget command, a
  /// pub/sub handler that threw, a subscription's overflow, a subscription ended or refused,
  /// a refused re-authentication (docs/pubsub.md, docs/credentials.md). It runs on an I/O
  /// thread, or for a handler that threw on that handler's delivery thread, and must not
  /// block: a blocking wait in it (get(), MessageQueue::pop()) throws DeadlockError.
  void on_error(std::function<void(const Error&)> handler);
  /// Called (on an I/O thread; must not block) when a connection connects, fails, schedules
  /// a reconnect, or is restored — see redmux/events.hpp. Replaces any earlier handler.
  void on_connection_event(std::function<void(const ConnectionEvent&)> handler);

  /// Latency histograms per command name and per endpoint (redmux/histogram.hpp), copied
  /// now; empty unless latencyHistograms=true.
  Latencies latencies() const;
  /// Called (on an I/O thread; must not block) when a caller's command ends: its reply was
  /// delivered, it timed out, or its connection broke; and on the caller's thread when it is
  /// refused at the call (redmux/hooks.hpp). Replaces any earlier hook; an empty function
  /// removes it. No hook installed costs nothing.
  void on_command(CommandHook hook);
  /// Called (on an I/O thread; must not block) for each write to a socket: how many
  /// commands and bytes it carried. Replaces any earlier hook.
  void on_write(WriteHook hook);
  /// Called once per Batch::execute() (on the calling thread, once its commands are queued;
  /// one per node in a Redis Cluster) and once per transaction when its outcome is known
  /// (usually on an I/O thread): redmux/hooks.hpp's BatchEvent. Must not block. Replaces
  /// any earlier hook; none installed costs one load per execute().
  void on_batch(BatchHook hook);
  /// Log records at `level` and above (redmux/hooks.hpp says which): called on an I/O
  /// thread, must not block. Silent until one is installed; LogLevel::Off removes it.
  void on_log(LogLevel level, LogHook hook);

  /// Closes every connection at once; pending commands fail: errc::shut_down ("not sent")
  /// when queued, errc::not_sent or errc::outcome_unknown when in flight. Returns once the
  /// pub/sub handlers still running have returned (not waited for when called from a
  /// handler). Idempotent; the destructor calls it.
  void close();
  /// The graceful close. At once: new commands, transactions and subscriptions are refused
  /// (errc::shut_down). Then it waits until every command already accepted has completed
  /// (queued, in flight, held through a failover, blocking commands, transactions), then
  /// until the pub/sub handlers have run every message already received (no new message is
  /// taken in meanwhile), both until `deadline`; then close() fails whatever is left, with
  /// an error saying the deadline passed. Messages left in a Subscriber queue can still be
  /// popped. Returns what the deadline cut short. Blocks the caller; throws DeadlockError on
  /// an I/O thread (the replies it waits for are read there). The shutdown order for an
  /// application is in docs/resilience.md ("Closing").
  CloseReport close(std::chrono::steady_clock::time_point deadline);
  /// close(now + timeout).
  CloseReport close(std::chrono::milliseconds timeout) {
    return close(std::chrono::steady_clock::now() + timeout);
  }

 private:
  explicit Multiplexer(std::shared_ptr<detail::MuxCore> core);
  /// connect_async(); fills `watch` (when not null) for connect(), which may give up at
  /// syncTimeout (mux/connect_watch.hpp).
  static Future<std::shared_ptr<Multiplexer>> start_connect(const Config& config,
                                                            std::shared_ptr<IoPool> pool,
                                                            detail::ConnectWatch* watch);
  std::shared_ptr<detail::MuxCore> core_;
};

}  // namespace redmux
