// Replica health, sans-IO: what a server's INFO replication says about its role and, for a
// replica, whether its data may be read — its link to the primary is up, it is not in a full
// resynchronisation, and (optionally) it heard from the primary recently. A connection asks on
// the role's schedule (conn/health.hpp; the answer is kept by conn/server_profile.hpp) and
// routing keeps reads off a replica that is not in sync (mux/core.cpp). No sockets, no
// threads: unit tests feed INFO text.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace redmux::detail {

/// The fields of INFO replication redmux reads.
struct ReplicationInfo {
  std::string role;                  ///< "master" or "slave"
  std::string master_link_status;    ///< replicas: "up" or "down"
  bool sync_in_progress = false;     ///< replicas: master_sync_in_progress:1
  long long last_io_seconds = -1;    ///< replicas: master_last_io_seconds_ago (-1: link down)
  long long link_down_seconds = -1;  ///< replicas: master_link_down_since_seconds
  std::string master_host;           ///< replicas: the server it replicates from
  int master_port = 0;
};

/// Parses the text of INFO replication ("# Replication\r\nrole:slave\r\n…"). Nullopt when it
/// has no role line (not an INFO reply).
std::optional<ReplicationInfo> parse_replication_info(std::string_view text);

/// Whether a replica may serve reads.
enum class ReplicaHealth : std::uint8_t {
  InSync,  ///< its link to the primary is up (and within the lag limit)
  /// Its link went down a moment ago and it has every write it got until then. Nothing is
  /// newer than its data while the primary cannot be reached by redmux either (the primary
  /// failed: a failover is coming); once the primary is reachable it is behind, and unfit.
  PrimaryLost,
  /// Not to be read: resynchronising (it answers from its old data set until the primary's
  /// snapshot is loaded), not in sync since it started (a restarted server, or one pointed at
  /// a new primary), or its link down longer than the lag limit.
  Unfit,
};

struct ReplicaVerdict {
  ReplicaHealth health = ReplicaHealth::InSync;
  /// Empty when in sync; otherwise what INFO said, for messages and the topology view
  /// ("master_link_status:down for 4 s", "master_sync_in_progress:1 …").
  std::string reason;
};

/// What a replica in this state may serve. `max_lag` zero: no limit on how long ago it heard
/// from its primary (master_last_io_seconds_ago, or master_link_down_since_seconds).
/// REQUIRES: info.role is "slave".
ReplicaVerdict judge_replica(const ReplicationInfo& info, std::chrono::seconds max_lag);

}  // namespace redmux::detail
