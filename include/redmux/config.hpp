// Config: everything a multiplexer needs to know before it connects, parsed from a
// StackExchange.Redis-style configuration string ("host:port,name=api,abortConnect=false")
// or from a redis://, rediss:// or unix:// URL. docs/configuration.md is the reference for
// every option: its default, its URL form and which feature reads it.
//
// Sans-IO: parsing opens no socket and resolves no name. Config and Endpoint are plain
// values that own their strings; they are not synchronised, so copy them to share them
// across threads (a const Config may be read from any number of threads at once).
//
// Secrets: to_string() and every error message mask or omit `password` and
// `sentinel_password`; neither ever appears in text redmux produces.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/credentials.hpp"
#include "redmux/resolver.hpp"
#include "redmux/result.hpp"

namespace redmux {

/// One server address: a TCP host and port, or a Unix domain socket path.
struct Endpoint {
  std::string host;           ///< name or address; IPv6 without brackets ("::1")
  std::uint16_t port = 6379;  ///< ignored for a Unix socket
  std::string unix_path;      ///< non-empty for a Unix domain socket ("/run/redis.sock")

  /// True when this endpoint is a Unix domain socket.
  bool is_unix() const noexcept { return !unix_path.empty(); }
  /// "host:port", "[::1]:6379" for IPv6, or the socket path for a Unix socket.
  std::string to_string() const;

  bool operator==(const Endpoint&) const = default;
};

/// The protocol a connection speaks once its handshake is done.
enum class Protocol { Resp3, Resp2 };

/// What a command does when maxQueuedCommands commands are already accepted.
enum class QueueFullPolicy {
  Fail,  ///< the command fails at once with QueueFullError
  Wait,  ///< the caller waits (up to asyncTimeout) for room
};

/// What a command does while its connection is down.
enum class BacklogPolicy {
  Queue,     ///< held until the connection is back (or its deadline passes)
  FailFast,  ///< fails at once with ConnectionError (errc::disconnected)
};

/// How the server tells the client-side cache what changed (CLIENT TRACKING; docs/caching.md).
enum class ClientCacheMode {
  Default,    ///< the server remembers the keys each connection read and invalidates those
  Broadcast,  ///< BCAST: every change of a key under clientCachePrefixes (all keys if none)
  OptIn,      ///< OPTIN: only reads sent after CLIENT CACHING YES (the cached ones) are tracked
};

/// Which cacheable reads the client-side cache serves.
enum class ClientCacheReads {
  All,      ///< every read the command table marks cacheable, unless Flags::NoCache
  Flagged,  ///< only those sent with Flags::Cache
};

/// Connection and behaviour settings of a multiplexer. Every field has the default that
/// docs/configuration.md lists; the comment on each field names its option.
struct Config {
  using Milliseconds = std::chrono::milliseconds;
  using Seconds = std::chrono::seconds;

  // --- where and who -------------------------------------------------------------------
  std::vector<Endpoint> endpoints;      ///< host:port list; at least one is required
  std::string name;                     ///< name=: CLIENT SETNAME; empty sends none
  std::string user;                     ///< user=: ACL user; needs a password
  std::string password;                 ///< password=: never printed
  int default_database = 0;             ///< defaultDatabase= (URL: /db or ?db=)
  Protocol protocol = Protocol::Resp3;  ///< protocol=resp3|resp2
  bool allow_admin = false;             ///< allowAdmin=: permit admin commands (FLUSHALL …)
  /// Resolves host names in place of the system resolver, at every connection attempt
  /// (redmux/resolver.hpp). Set in code only: not part of the configuration string or of
  /// to_string(). Empty: getaddrinfo, on Asio's resolver thread (redmux-dns-N).
  HostResolver resolver;
  /// Asked for the user and password (or token) at every connection attempt and before they
  /// expire, in place of user= and password= (redmux/credentials.hpp). Set in code only; not
  /// part of the configuration string or of to_string().
  CredentialProvider credentials;

  // --- connecting ------------------------------------------------------------------------
  bool abort_connect = true;              ///< abortConnect=: connect() fails if no server answers
  Milliseconds connect_timeout{5000};     ///< connectTimeout=: per connection attempt
  int connect_retry = 3;                  ///< connectRetry=: extra attempts during connect()
  Milliseconds sync_timeout{5000};        ///< syncTimeout=: bound of connect() and close()
  Milliseconds async_timeout{5000};       ///< asyncTimeout=: every command's deadline
  Seconds keep_alive{60};                 ///< keepAlive=: TCP keepalive idle time; 0 = off
  Milliseconds heartbeat_interval{1000};  ///< heartbeatInterval=: idle PING (docs/resilience.md)

  // --- queueing --------------------------------------------------------------------------
  std::size_t max_queued_commands = 100000;                   ///< maxQueuedCommands=: 1 … 2^32-1
  QueueFullPolicy queue_full_policy = QueueFullPolicy::Fail;  ///< queueFullPolicy=fail|wait

  // --- connections and threads -----------------------------------------------------------
  int io_threads = 1;                           ///< ioThreads=
  int connections_per_endpoint = 1;             ///< connectionsPerEndpoint=
  bool shared_subscription_connection = false;  ///< sharedSubscriptionConnection= (pub/sub)
  int blocking_pool_size = 4;                   ///< blockingPoolSize= (blocking commands)

  // --- reconnecting ----------------------------------------------------------------------
  Milliseconds reconnect_base_delay{100};               ///< reconnectBaseDelay=
  Milliseconds reconnect_max_delay{10000};              ///< reconnectMaxDelay=
  BacklogPolicy backlog_policy = BacklogPolicy::Queue;  ///< backlogPolicy=queue|failFast
  bool retry_read_only_commands = false;  ///< retryReadOnlyCommands= (docs/resilience.md)
  /// retryClusterDown=: Redis Cluster — a command refused with CLUSTERDOWN or TRYAGAIN (it did
  /// not run) is sent again after a pause, until its own deadline (docs/topology.md).
  bool retry_cluster_down = true;

  // --- TLS (docs/tls.md; needs a build with REDMUX_WITH_TLS) ------------------------------
  bool ssl = false;         ///< ssl= (set by rediss://)
  std::string ssl_host;     ///< sslHost=: name to verify and send as SNI; empty = endpoint host
  std::string ssl_ca_file;  ///< sslCaFile=: PEM bundle of trusted CAs
  std::string ssl_ca_path;  ///< sslCaPath=: directory of trusted CAs
  std::string ssl_cert;     ///< sslCert=: client certificate (PEM); needs sslKey
  std::string ssl_key;      ///< sslKey=: client private key file (PEM); needs sslCert
  bool ssl_verify = true;   ///< sslVerify=: verify the server's certificate and name

  // --- Sentinel (docs/topology.md#sentinel) ---------------------------------------------
  std::string service_name;       ///< serviceName=: endpoints are then Sentinels
  std::string sentinel_user;      ///< sentinelUser=
  std::string sentinel_password;  ///< sentinelPassword=: never printed
  /// The Sentinels' own credential provider, in place of sentinelUser= and sentinelPassword=
  /// (redmux/credentials.hpp). Set in code only.
  CredentialProvider sentinel_credentials;

  // --- replicas and failovers (docs/topology.md) ----------------------------------------
  /// replicaHealthCheck=: reads go only to replicas whose INFO replication says they are in
  /// sync (link to the primary up, no full resynchronisation in progress).
  bool replica_health_check = true;
  Seconds replica_max_lag{0};  ///< replicaMaxLag=: and heard from the primary within; 0 = off
  /// availabilityZone=: the client's own availability zone. Reads sent to replicas
  /// (PreferReplica, DemandReplica) go to replicas that report this zone when one can serve
  /// them, to the others otherwise. Empty: every replica alike.
  std::string availability_zone;
  /// failoverWait=: a command that needs the primary while none is known (a failover in
  /// progress) waits for one, within its own deadline, instead of failing as not sent.
  bool failover_wait = true;

  // --- client-side cache (docs/caching.md; needs RESP3) ----------------------------------
  bool client_cache = false;                          ///< clientCache=: serve reads from memory
  std::size_t client_cache_bytes = 64 * 1024 * 1024;  ///< clientCacheBytes=: per connection
  Milliseconds client_cache_max_ttl{60000};           ///< clientCacheMaxTtl=: no entry lives longer
  ClientCacheMode client_cache_mode = ClientCacheMode::Default;  ///< clientCacheMode=
  /// clientCachePrefixes=: under clientCacheMode=bcast, the key prefixes tracked, separated
  /// by spaces; only keys under them are cached. Empty: every key.
  std::string client_cache_prefixes;
  ClientCacheReads client_cache_reads = ClientCacheReads::All;  ///< clientCacheReads=all|flagged

  // --- observability (docs/observability.md) --------------------------------------------
  /// latencyHistograms=: record time to reply and until delivered per command name and per
  /// endpoint (Multiplexer::latencies(), status_text()).
  bool latency_histograms = false;
  /// slowCommandThreshold=: a command that takes longer (accepted → delivered) is logged at
  /// Warning with its phases (Multiplexer::on_log()); 0 = off.
  Milliseconds slow_command_threshold{0};

  /// Parses a configuration string or a redis://, rediss://, valkey://, valkeys:// or
  /// unix:// URL. Keys are case-insensitive. Fails with errc::invalid_config and a message
  /// naming the option and its bad value (never a password) for an unknown option, a
  /// malformed value, a value out of range, an option given twice, no endpoint, or settings
  /// that contradict each other (see validate()).
  /// Example: Config::parse("cache-1:6379,cache-2:6379,name=api,asyncTimeout=250ms").
  static Result<Config> parse(std::string_view text);
  /// parse(), also listing in `named` the name of each option the text gives, as
  /// docs/configuration.md spells it ("password", "defaultDatabase" …; a URL's user,
  /// password and /db count as "user", "password" and "defaultDatabase", and rediss:// as
  /// "ssl"). For a tool that merges its own settings with a configuration string and must
  /// not silently let one override the other.
  static Result<Config> parse(std::string_view text, std::vector<std::string>& named);

  /// Like parse(), but throws ConfigError instead of returning the error.
  static Config from_string(std::string_view text);

  /// The configuration string of this Config: endpoints, then every option that differs
  /// from its default, in the order docs/configuration.md lists them. Passwords print as
  /// "*****", so parse(to_string()) equals *this in every field but the passwords and the
  /// resolver.
  std::string to_string() const;

  /// Checks what parse() checks: at least one endpoint, every value in range, no
  /// contradictions (user without password, TLS options without ssl, Sentinel credentials
  /// without serviceName, reconnectBaseDelay > reconnectMaxDelay …) and a client name the
  /// server would refuse (a space, or any byte outside ! to ~). Use it on a Config built in code;
  /// parse() already calls it.
  Result<void> validate() const;

  bool operator==(const Config&) const = default;
};

}  // namespace redmux
