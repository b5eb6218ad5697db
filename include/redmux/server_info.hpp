// ServerIdentity: what a server said about itself during the handshake (HELLO and INFO
// server). A plain value; copy it freely.
#pragma once

#include <string>

namespace redmux {

struct ServerIdentity {
  std::string product;  ///< "redis" or "valkey"
  /// The product's own version: Valkey's version for Valkey (never the Redis version it
  /// reports for compatibility), Redis's for Redis.
  std::string version;
  std::string mode;              ///< "standalone", "cluster" or "sentinel"
  std::string role;              ///< "master" or "replica" (empty when the server did not say)
  int protocol = 2;              ///< the RESP version the connection speaks: 2 or 3
  long long connection_id = -1;  ///< CLIENT ID of the connection, when known
  /// Number of logical databases (CONFIG GET databases; 1 in cluster mode); 0 when the server
  /// would not say (CONFIG refused by ACL).
  int databases = 0;
  /// The availability zone the server says it runs in (Valkey 8: `availability-zone` in its
  /// configuration, reported in INFO server and, from Valkey 8.1, in HELLO); empty when the
  /// server has none (Redis, or a Valkey without one configured).
  std::string availability_zone;
  /// The server's answer when it refused the handshake's `SELECT 0` (an ACL without
  /// +select, a proxy without SELECT); empty when it accepted it. A connection whose server
  /// refuses SELECT serves database 0 only: commands for another database are refused
  /// before they are sent.
  std::string select_refusal;
};

}  // namespace redmux
