// Connection events: what a multiplexer's connections go through, reported to a callback the
// application registers with Multiplexer::on_connection_event(). Plain values.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "redmux/error.hpp"

namespace redmux {

/// What a connection is for (ConnectionStatus::Purpose names the same values).
enum class ConnectionPurpose {
  Interactive,        ///< every caller's commands (in Redis Cluster: a configured seed)
  ClusterNode,        ///< Redis Cluster: one node of the slot map
  Subscription,       ///< pub/sub (Multiplexer::subscriber())
  ShardSubscription,  ///< Redis Cluster: the shard channels one node serves
  Dedicated,          ///< leased to blocking commands and transactions
};

/// "interactive", "cluster node", "subscription", "shard subscription", "dedicated".
std::string_view to_string(ConnectionPurpose purpose) noexcept;

enum class ConnectionEventKind {
  Connected,  ///< first successful handshake of a connection (those connect() made come
              ///< before a handler installed on what it returns)
  /// A connection attempt failed, or a ready connection broke (`error` says why). A broken
  /// connection is already out of the ready state when this is reported.
  Failed,
  Reconnecting,  ///< the next attempt is scheduled after `delay` (0: at once, a Sentinel move)
  Restored,      ///< a connection is ready again after a break
  /// A ready connection's re-authentication (AUTH with the credential provider's new
  /// credentials) was refused or could not be built: `error` names the user and what the
  /// server said, never the secret. The connection keeps its session; it is not retried.
  AuthRefused,
  /// The server behind a ready connection changed its role, as the connection learned from
  /// its probe, a READONLY reply or a reconnect (a failover among the servers listed, a
  /// REPLICAOF by hand): `primary` says whether it is now the primary, `master` names the
  /// primary a replica now follows. Writes go to the new primary from now on.
  RoleChanged,
};

std::string_view to_string(ConnectionEventKind kind) noexcept;

struct ConnectionEvent {
  ConnectionEventKind kind = ConnectionEventKind::Connected;
  std::string endpoint;  ///< "host:port" or the Unix socket path
  /// What the connection is for: a subscription connection's break is a window in which
  /// messages published are lost (docs/pubsub.md).
  ConnectionPurpose purpose = ConnectionPurpose::Interactive;
  Error error;      ///< Failed, AuthRefused: the cause; otherwise empty
  int attempt = 0;  ///< Failed / Reconnecting: attempts in the current series (1 = first)
  std::chrono::milliseconds delay{0};  ///< Reconnecting: backoff before the next attempt
  bool primary = false;  ///< RoleChanged: the server is now a primary (false: a replica)
  std::string master;    ///< RoleChanged to a replica: "host:port" of its primary, if it said
};

}  // namespace redmux
