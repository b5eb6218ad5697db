// The choice among a primary and its replicas (standalone endpoints, or Sentinel's groups),
// sans-IO: given what is known of each server — a replica or not, connected or not, fit to
// serve reads — which one is the primary, and which replica a read goes to. The multiplexer
// (mux/replica_choice.cpp) describes its groups' first connections and routes by the answer.
//
// Pure functions; safe from any thread.
#pragma once

#include <cstddef>

namespace redmux::detail {

/// What the multiplexer knows of one server now.
struct ServerView {
  bool replica = false;  ///< it says it is a replica
  bool ready = false;    ///< its connection is ready
  bool in_sync = false;  ///< a replica whose link to its primary is up (replicaHealthCheck)
  /// A replica whose link went down a moment ago, with every write it got until then.
  bool primary_lost = false;
  /// It reports the client's own availability zone (availabilityZone=).
  bool in_zone = false;
  /// A replica: the server among these it replicates from (kNotAmong: none, or unknown).
  std::size_t follows = kNotAmong;
  static constexpr std::size_t kNotAmong = static_cast<std::size_t>(-1);
};

/// A replica may serve reads when connected and in sync — or when its link went down just
/// now while no primary can be reached (the primary failed: nothing newer than its data
/// exists, and a failover is coming).
constexpr bool serves_replica_reads(const ServerView& server, bool primary_reachable) noexcept {
  return server.replica && server.ready &&
         (server.in_sync || (server.primary_lost && !primary_reachable));
}

/// A replica of another of these servers that says it is a primary and is not `primary`,
/// the one written to, has none of the writes sent there: a graceful failover in progress
/// (the demoted primary still says primary, and its replicas follow it until the Sentinels
/// point them at the new one), or two primaries listed. A replica of a replica (a chain)
/// is not: its data comes from the primary through the other. `view(i)` describes server i.
template <typename View>
bool follows_another_primary(const ServerView& server, std::size_t primary, std::size_t count,
                             View&& view) {
  return server.follows < count && server.follows != primary && !view(server.follows).replica;
}

/// The roles among `count` servers. `none` (= count) where there is no such server.
struct Roles {
  std::size_t primary;
  bool primary_ready = false;
  std::size_t replica;
  std::size_t unsynced = 0;  ///< replicas connected that may not serve reads
};

/// The primary: the first server not known to be a replica, preferring a connected one
/// (after a failover the old primary may be down while the promoted one is up); under
/// Sentinel (`first_is_primary`) only server 0, the one the Sentinels name, unless it says it
/// is a replica. With `want_replica`, the replica a read goes to: round-robin (`turn()`) over
/// those that may serve reads, never `exclude` — over those in the client's availability zone
/// when any of them may (availabilityZone=). `view(i)` describes server i.
template <typename View, typename Turn>
Roles choose_roles(std::size_t count, View&& view, bool first_is_primary, bool want_replica,
                   std::size_t exclude, Turn&& turn) {
  const std::size_t none = count;
  Roles roles{none, false, none, 0};
  for (std::size_t i = 0; i < count; ++i) {
    const ServerView server = view(i);
    if (server.replica) continue;
    if (first_is_primary ? i == 0
                         : roles.primary == none || (server.ready && !roles.primary_ready)) {
      roles.primary = i;
      roles.primary_ready = server.ready;
    }
  }
  const bool primary_reachable = roles.primary != none && roles.primary_ready;
  std::size_t readable = 0;
  std::size_t readable_in_zone = 0;
  const auto may_read = [&](const ServerView& server) {
    return serves_replica_reads(server, primary_reachable) &&
           !follows_another_primary(server, roles.primary, count, view);
  };
  for (std::size_t i = 0; i < count; ++i) {
    const ServerView server = view(i);
    if (i == exclude || !server.replica || !server.ready) continue;
    const bool serves = may_read(server);
    ++(serves ? readable : roles.unsynced);
    if (serves && server.in_zone) ++readable_in_zone;
  }
  if (want_replica && readable > 0) {
    const bool zone_only = readable_in_zone > 0;
    std::size_t n = turn() % (zone_only ? readable_in_zone : readable);
    for (std::size_t i = 0; i < count; ++i) {
      if (i == exclude) continue;
      const ServerView server = view(i);
      if (may_read(server) && (!zone_only || server.in_zone) && n-- == 0) {
        roles.replica = i;
        break;
      }
    }
  }
  return roles;
}

}  // namespace redmux::detail
