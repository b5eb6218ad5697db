// Sentinel, sans-IO: what redmux reads from Sentinels — the replies to SENTINEL
// GET-MASTER-ADDR-BY-NAME and SENTINEL REPLICAS, the messages a failover publishes
// (+selected-slave, +switch-master, -failover-abort-slave-timeout) — and how a multiplexer's
// fixed groups of connections are moved to follow them. No sockets and no threads: the
// monitor (mux/sentinel_monitor.hpp) feeds replies in and applies the moves; unit tests feed byte
// strings.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "redmux/config.hpp"
#include "redmux/error.hpp"
#include "redmux/future.hpp"
#include "redmux/reply.hpp"
#include "redmux/result.hpp"
#include "redmux/server_info.hpp"

namespace redmux::detail {

/// The subcommand that asks a Sentinel for a service's primary: GET-PRIMARY-ADDR-BY-NAME on a
/// Valkey 8 (or later) Sentinel, which names it so (the older name stays as an alias there),
/// GET-MASTER-ADDR-BY-NAME on Redis and older Valkey. Both answer the same [ip, port].
std::string_view primary_address_subcommand(const ServerIdentity& sentinel) noexcept;

/// The reply to SENTINEL GET-MASTER-ADDR-BY-NAME `service`: [ip, port]. Fails (saying which)
/// on nil — the Sentinel does not know the service —, on an error reply and on any other shape.
Result<Endpoint> parse_master_address(NodeSpan reply, std::string_view service);

/// The reply to SENTINEL REPLICAS `service`: one map (RESP3) or flat field/value array (RESP2)
/// per replica. Replicas the Sentinel flags s_down, o_down or disconnected are left out, and
/// so are entries without a usable ip and port. Fails on an error reply or another shape.
Result<std::vector<Endpoint>> parse_replicas(NodeSpan reply, std::string_view service);

/// A message a Sentinel publishes about a failover of one service.
struct SentinelEvent {
  enum class Kind {
    SelectedReplica,  ///< +selected-slave: `to` is about to be promoted in place of `from`
    SwitchMaster,     ///< +switch-master: the primary moved from `from` to `to`
    FailoverAborted,  ///< -failover-abort-slave-timeout: `from` stays the primary
    /// +convert-to-slave: `from` (an old primary back after a failover, still saying it is a
    /// primary) is being turned into a replica of `to`; it resynchronises now.
    ConvertedToReplica,
  };
  Kind kind = Kind::SwitchMaster;
  std::string service;
  Endpoint from;  ///< the primary being replaced (FailoverAborted: the one that stays)
  Endpoint to;    ///< the new primary (unset for FailoverAborted)
};

/// The channels whose messages parse_sentinel_event() understands (one SUBSCRIBE each).
inline constexpr std::array<std::string_view, 4> kSentinelChannels = {
    "+selected-slave", "+switch-master", "-failover-abort-slave-timeout", "+convert-to-slave"};

/// Parses a message on one of kSentinelChannels; nullopt for another channel or a payload of
/// another shape. Payloads: "<service> <old-ip> <old-port> <new-ip> <new-port>"
/// (+switch-master), "slave <ip>:<port> <ip> <port> @ <service> <ip> <port>"
/// (+selected-slave and +convert-to-slave), "master <service> <ip> <port>"
/// (-failover-abort-slave-timeout).
std::optional<SentinelEvent> parse_sentinel_event(std::string_view channel,
                                                  std::string_view payload);

/// Group `group` of connections should now connect to `to`.
struct Retarget {
  std::size_t group = 0;
  Endpoint to;
  bool operator==(const Retarget&) const = default;
};

/// The moves that make the groups, whose servers are `targets` now, follow a primary and
/// (when given) its replicas. Group 0 is always the primary: when the primary is another
/// group's server, the two swap (the old primary is expected back as a replica); otherwise
/// group 0 alone moves. With `replicas`, groups whose server is no longer a listed replica
/// move to listed replicas no group has, as far as both go. Moves nothing that is in place.
std::vector<Retarget> plan_retargets(std::span<const Endpoint> targets, const Endpoint& primary,
                                     const std::vector<Endpoint>* replicas);

}  // namespace redmux::detail
