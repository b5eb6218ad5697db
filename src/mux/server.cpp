// The server handle (include/redmux/server.hpp): which servers a multiplexer knows, with
// their roles, and sending one command on the interactive connection to one of them.
#include "redmux/server.hpp"

#include <algorithm>

#include "commands/command_rules.hpp"
#include "mux/blocking.hpp"
#include "mux/cluster.hpp"
#include "mux/core.hpp"
#include "redmux/multiplexer.hpp"

namespace redmux {
namespace detail {
namespace {

/// One known server: its interactive connection and what the multiplexer knows of it.
struct KnownServer {
  std::shared_ptr<Connection> connection;
  ServerEndpoint entry;
};

ServerEndpoint entry_for(const Connection& connection, bool cluster_node, bool primary_in_map) {
  ServerEndpoint entry;
  entry.endpoint = connection.endpoint();
  entry.connected = connection.state() == ConnectionState::Ready;
  entry.cluster_node = cluster_node;
  if (cluster_node) {
    // The slot map is the authority on a node's role (a node serving slots is a primary).
    entry.role = primary_in_map ? ServerRole::Primary : ServerRole::Replica;
  } else if (entry.connected) {
    entry.role = connection.is_replica() ? ServerRole::Replica : ServerRole::Primary;
  }
  return entry;
}

/// Every server now: the cluster's nodes once the slot map is in, else one per configured
/// endpoint (its first interactive connection).
std::vector<KnownServer> known_servers(MuxCore& core) {
  std::vector<KnownServer> out;
  if (ClusterRouter* router = core.cluster()) {
    const std::vector<Connection*> primaries = router->primaries();
    for (auto& connection : router->node_connections()) {
      const bool primary =
          std::find(primaries.begin(), primaries.end(), connection.get()) != primaries.end();
      out.push_back({connection, entry_for(*connection, true, primary)});
    }
    return out;
  }
  for (const auto& group : core.groups()) {
    out.push_back({group.front(), entry_for(*group.front(), false, false)});
  }
  return out;
}

std::string known_list(const std::vector<KnownServer>& servers) {
  std::string out;
  for (const KnownServer& server : servers) {
    if (!out.empty()) out += ", ";
    out += server.entry.endpoint.to_string();
  }
  return out.empty() ? "none" : out;
}

Error submit_unreported(MuxCore& core, const Endpoint& endpoint, const CallOptions& options,
                        std::span<const Arg> args, CommandState* state) {
  const CommandInfo& info = command_info(args);
  auto refuse = [&](Error error) {
    if (state) state->fail(error);
    return error;
  };
  // Site::Dedicated leaves the blocking check to the message below, which fits a handle.
  if (Error error = core.check_allowed(info, args, MuxCore::Site::Dedicated)) {
    return refuse(std::move(error));
  }
  const bool kill = ends_busy_script(info);  // to this server, on a connection of its own
  if (!kill && info.is(CommandFlag::Blocking) && is_blocking(info, args)) {
    return refuse(Error(errc::not_allowed,
                        std::string(info.name) +
                            " blocks the connection it runs on, which a server handle shares "
                            "with every caller of the multiplexer: send it through a Database, "
                            "which runs it on a dedicated connection"));
  }
  if (state) state->command_name = info.name;
  if (core.closed()) {
    return refuse(
        Error(errc::shut_down, std::string(info.name) + " not sent: the multiplexer was closed"));
  }
  const std::vector<KnownServer> servers = known_servers(core);
  auto at = std::find_if(servers.begin(), servers.end(), [&](const KnownServer& server) {
    return server.entry.endpoint == endpoint;
  });
  if (at == servers.end()) {
    return refuse(Error(errc::invalid_argument,
                        std::string(info.name) + " not sent: the multiplexer no longer knows " +
                            endpoint.to_string() + " (it knows " + known_list(servers) + ")"));
  }
  const int db = core.cluster() ? 0 : core.config().default_database;
  if (kill) return submit_blocking(core, db, options, args, info, state, &endpoint);
  auto [deadline, timeout_ms] = core.deadline_for(options);
  if (!core.take_slot(deadline)) return refuse(core.queue_full_error(info, deadline, timeout_ms));
  return core.hand_over(*at->connection, db, options, args, info, state, deadline, timeout_ms);
}

}  // namespace

Error submit_to_server(MuxCore& core, const Endpoint& endpoint, const CallOptions& options,
                       std::span<const Arg> args, CommandState* state) {
  Error error = submit_unreported(core, endpoint, options, args, state);
  if (error) report_refusal(core, -1, args, state, error);
  return error;
}

ServerEndpoint describe_server(MuxCore& core, const Endpoint& endpoint) {
  for (const KnownServer& server : known_servers(core)) {
    if (server.entry.endpoint == endpoint) return server.entry;
  }
  ServerEndpoint gone;
  gone.endpoint = endpoint;
  return gone;
}

}  // namespace detail

std::string_view to_string(ServerRole role) noexcept {
  switch (role) {
    case ServerRole::Primary:
      return "primary";
    case ServerRole::Replica:
      return "replica";
    case ServerRole::Unknown:
      break;
  }
  return "unknown";
}

std::string ServerEndpoint::to_string() const {
  std::string out = endpoint.to_string() + " " + std::string(redmux::to_string(role)) + " (";
  if (cluster_node) out += "cluster node, ";
  out += connected ? "connected)" : "not connected)";
  return out;
}

std::vector<ServerEndpoint> Multiplexer::servers() const {
  std::vector<ServerEndpoint> out;
  for (const detail::KnownServer& server : detail::known_servers(*core_)) {
    out.push_back(server.entry);
  }
  return out;
}

Server Multiplexer::server(const Endpoint& endpoint) const {
  const auto servers = detail::known_servers(*core_);
  for (const detail::KnownServer& server : servers) {
    if (server.entry.endpoint == endpoint) return Server(core_, endpoint);
  }
  throw InvalidArgumentError(errc::invalid_argument, "no server " + endpoint.to_string() +
                                                         " in this multiplexer; it knows " +
                                                         detail::known_list(servers));
}

Server Multiplexer::server(std::string_view endpoint) const {
  const auto servers = detail::known_servers(*core_);
  for (const detail::KnownServer& server : servers) {
    if (server.entry.endpoint.to_string() == endpoint) return Server(core_, server.entry.endpoint);
  }
  throw InvalidArgumentError(errc::invalid_argument, "no server " + std::string(endpoint) +
                                                         " in this multiplexer; it knows " +
                                                         detail::known_list(servers));
}

std::shared_ptr<IoPool> Multiplexer::io_pool() const {
  return core_->shared_pool();
}

}  // namespace redmux
