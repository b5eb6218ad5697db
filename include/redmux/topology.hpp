// Topology: the servers a multiplexer uses at this moment and what it knows of each — which
// one takes writes, which replicas serve reads, whether each is connected. A snapshot value
// from Multiplexer::topology(); copy it freely, it does not change under you.
//
// Multiplexer::config() stays what the application configured (under Sentinel: the Sentinels
// and the service name); this is what redmux found behind it, and it changes with failovers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "redmux/config.hpp"

namespace redmux {

/// One server, as the multiplexer sees it now.
struct ServerView {
  Endpoint endpoint;  ///< where its connections point now (Sentinel moves them)
  /// What the server last said it is: "primary", "replica", or "unknown" (not connected yet,
  /// or just moved to this address and not answered).
  std::string role;
  bool takes_writes = false;  ///< writes (and PreferMaster reads) go here now
  bool connected = false;     ///< its first connection is ready
  /// Its first connection's state, in status()'s words: "ready", "connecting",
  /// "handshaking", "reconnecting", "idle" or "closed".
  std::string state;
  /// A replica that PreferReplica/DemandReplica reads may use now: connected and, under
  /// replicaHealthCheck, in sync with its primary.
  bool serves_replica_reads = false;
  /// A connected replica that is not in sync: what its last INFO replication said
  /// ("master_link_status:down for 3 s", "master_sync_in_progress:1 …") — why it does not
  /// serve reads, or (while the primary cannot be reached) that it serves them regardless.
  /// Empty when in sync.
  std::string replication;
  std::size_t connections = 0;  ///< connections to it (connectionsPerEndpoint)
  std::size_t queued = 0;       ///< commands queued on them, not yet written
  std::size_t in_flight = 0;    ///< commands written to it, awaiting replies
};

struct Topology {
  /// "standalone" (one server), "replicas" (a listed primary and replicas), "sentinel" or
  /// "cluster". In cluster mode `servers` is empty: the slot map decides, not roles.
  std::string mode;
  std::string service;  ///< the Sentinel service name, or empty
  /// Under Sentinel the server the Sentinels name as primary comes first; otherwise in the
  /// order of the configuration's endpoints.
  std::vector<ServerView> servers;
  /// Commands the multiplexer holds until a primary is known (failoverWait).
  std::size_t waiting_for_primary = 0;

  /// One line, e.g. "sentinel mymaster: 127.0.0.1:7002 primary connected; 127.0.0.1:7001
  /// replica connected serves-reads; 127.0.0.1:7000 unknown reconnecting" (a server whose
  /// connection is not ready shows that connection's state).
  std::string to_string() const;
};

}  // namespace redmux
