// The Redis Cluster slot map as the server describes it (CLUSTER SHARDS, CLUSTER SLOTS), and
// the redirections it sends (MOVED, ASK). Pure parsing, no I/O: the router (mux/cluster.hpp)
// builds its connections from these.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "redmux/config.hpp"
#include "redmux/error.hpp"
#include "redmux/reply.hpp"

namespace redmux::detail {

/// One primary, its slot ranges (inclusive) and its replicas.
struct ClusterShard {
  std::vector<std::pair<std::uint16_t, std::uint16_t>> ranges;
  Endpoint primary;
  /// CLUSTER SHARDS says the primary failed ("health" is "fail", or "failed" as the
  /// documentation spells it): the cluster is about to promote a replica. Always false from
  /// CLUSTER SLOTS, which does not say.
  bool primary_failed = false;
  std::vector<Endpoint> replicas;  ///< not failed ("health" neither "fail" nor "failed")
};

/// CLUSTER SHARDS (Redis 7.0+), RESP3 maps or RESP2 flat arrays. Shards without slots are
/// left out. A node with an empty address gets `seed_host` (the node we asked). An error
/// reply or a shape that is not CLUSTER SHARDS' is an error naming what was wrong. `tls`: the
/// client connects with TLS, so a node's "tls-port" is its address when it lists one.
Result<std::vector<ClusterShard>> parse_cluster_shards(NodeSpan reply, std::string_view seed_host,
                                                       bool tls = false);
/// CLUSTER SLOTS (Redis 3.0+): [start, end, [ip, port, id …], [replica …] …] per range.
Result<std::vector<ClusterShard>> parse_cluster_slots(NodeSpan reply, std::string_view seed_host);

/// A redirection error reply: "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381".
struct ClusterRedirect {
  bool ask = false;  ///< ASK: this command only, the map is unchanged
  std::uint16_t slot = 0;
  Endpoint endpoint;
};
/// The redirection in `error_text`, or nullopt when it is not one. An empty host (":6381",
/// cluster-preferred-endpoint-type unknown-endpoint) means `current_host`.
std::optional<ClusterRedirect> parse_redirect(std::string_view error_text,
                                              std::string_view current_host);

}  // namespace redmux::detail
