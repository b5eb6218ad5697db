// Multiplexer::topology(): the servers the core's groups point at now, with their roles.
#include "mux/core.hpp"
#include "redmux/multiplexer.hpp"

namespace redmux {

Topology Multiplexer::topology() const {
  Topology topology;
  const detail::MuxCore& core = *core_;
  if (core.cluster() != nullptr) {
    topology.mode = "cluster";
    return topology;
  }
  const auto& groups = core.groups();
  topology.mode = core.follows_sentinels() ? "sentinel"
                  : groups.size() == 1     ? "standalone"
                                           : "replicas";
  topology.service = core.configured().service_name;
  topology.waiting_for_primary = core.held_count();
  const std::size_t primary = core.primary_group();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const detail::Connection& first = *groups[g].front();
    ServerView view;
    view.endpoint = first.endpoint();
    view.connected = first.state() == detail::ConnectionState::Ready;
    view.state = std::string(detail::to_string(first.state()));
    view.role = !view.connected ? "unknown" : first.is_replica() ? "replica" : "primary";
    view.takes_writes = g == primary;
    if (view.connected && first.is_replica()) {
      view.serves_replica_reads = core.group_serves_replica_reads(g);
      view.replication = first.replication_state();
      if (view.replication.empty() && core.group_follows_another_primary(g, primary)) {
        view.replication = detail::MuxCore::follows_text(first);
      }
    }
    for (const auto& connection : groups[g]) {
      ++view.connections;
      view.queued += connection->queued_count();
      view.in_flight += connection->in_flight_count();
    }
    topology.servers.push_back(std::move(view));
  }
  return topology;
}

std::string Topology::to_string() const {
  std::string text = mode;
  if (!service.empty()) text += " " + service;
  text += ":";
  for (std::size_t i = 0; i < servers.size(); ++i) {
    const ServerView& server = servers[i];
    text += (i == 0 ? " " : "; ") + server.endpoint.to_string() + " " + server.role;
    text += server.connected ? " connected" : " " + server.state;
    if (server.takes_writes) text += " takes-writes";
    if (server.serves_replica_reads) text += " serves-reads";
    if (!server.replication.empty()) text += " (" + server.replication + ")";
  }
  if (waiting_for_primary > 0) {
    text += "; " + std::to_string(waiting_for_primary) + " command(s) waiting for a primary";
  }
  return text;
}

}  // namespace redmux
